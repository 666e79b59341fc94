"""The rank's store child: imports torch, holds the TCPStore connection, beats, gathers and carries the verdict.

Run by ``mpdoctor.fleet.rank`` through ``run_child`` (``child.own_argv``: its ``main(CONFIG)``, with nothing
from the working directory on the path) in the job's own interpreter, because ``import
torch`` can hang or crash and mpdoctor's own process never imports it. It talks to
its parent through files in one directory (``mailbox``), in one loop, with no
thread: the parent writes its ``step``, its ``report`` (or why it has none) and, on
rank 0, the ``verdict``; the child writes ``connected`` (or ``error``), on rank 0
``gathered``, on the others ``heard`` (the verdict), then ``done``. A parent that
dies (the child is re-parented) makes the child mark the rank crashed in its
heartbeat, with the last step it announced, and exit, so rank 0 stops waiting for it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import timedelta

from mpdoctor.fleet import activity, mailbox
from mpdoctor.fleet.protocol import POLL, Beater, Channel, Gatherer, Malformed

GRACE = 15.0  # seconds the other ranks wait for the verdict beyond the deadline: rank 0 compares and renders
ACK_WAIT = 5.0  # seconds rank 0 waits for the others to be done with the verdict; they wait as long to be let go
TICK = 0.1  # seconds between looks at the parent's files


def connect(config: dict):
    """The TCPStore: rank 0 hosts it unless torchrun's agent already does; nobody waits for workers."""
    from torch.distributed import TCPStore

    host_it = config["rank"] == 0 and not config["agent_store"]
    remaining = max(1.0, config["until"] - time.time())
    return TCPStore(
        config["addr"],
        config["port"],
        None,
        host_it,
        timeout=timedelta(seconds=remaining),
        wait_for_workers=False,
        multi_tenant=True,
    )


class Rank:
    """One loop's state: what was read from the parent, what was posted, what was heard."""

    def __init__(self, config: dict, channel: Channel) -> None:
        self.config, self.channel, self.box = config, channel, config["dir"]
        self.rank, self.world = config["rank"], config["world_size"]
        self.until = time.monotonic() + (config["until"] - time.time())  # the deadline, on this clock
        self.parent = os.getppid()
        self.beater = Beater(channel, self.rank, config["host"], config["local_rank"])
        self.gatherer = Gatherer(channel, self.world) if self.rank == 0 else None
        self.posted = self.gathered = False
        self.next_verdict_look = 0.0

    def parent_died(self) -> bool:
        return os.getppid() != self.parent

    def follow_parent(self) -> None:
        """Forward the parent's step and, once written, its report (or why it has none)."""
        step = mailbox.take(self.box, mailbox.STEP)
        if step:
            self.beater.step(step)
        if self.posted:
            return
        report = mailbox.take(self.box, mailbox.REPORT)
        if report is not None:
            self.channel.post_report(self.rank, report, bool(self.config.get("full_snapshots")))
            self.posted = True
        failure = mailbox.take(self.box, mailbox.FAIL)
        if failure is not None:  # the check itself failed: no report will come, so say why in the heartbeat
            self.beater.post(state="crashed", detail=failure)
            self.posted = True

    def step(self) -> bool:
        """One turn of the loop; True when this child is done."""
        self.follow_parent()  # first: a parent that just died left its last step in its file
        if self.parent_died():
            self.beater.post(state="crashed", detail="mpdoctor's process on this rank ended before it finished")
            shutil.rmtree(self.box, ignore_errors=True)  # the parent cannot clean up any more
            return True
        self.beater.tick()
        if self.gatherer is not None:
            return self.lead()
        return self.follow()

    def lead(self) -> bool:
        """Rank 0: gather until everyone reported or the deadline; hand over; post the verdict the parent wrote."""
        if not self.gathered and self.gatherer.poll(self.until):
            self.beater.step(activity.COMPARING)
            mailbox.put(self.box, mailbox.GATHERED, self.gatherer.got.to_data())
            self.gathered = True
        verdict = mailbox.take(self.box, mailbox.VERDICT)
        if verdict is None:
            return False
        self.channel.post_verdict(verdict["verdict"])
        self.beater.post(state="done", step=activity.DONE)
        expected = self.world - 1 - verdict.get("not_waiting", 0)
        until = time.monotonic() + ACK_WAIT
        while self.channel.acks() < expected and time.monotonic() < until and not self.parent_died():
            self.beater.tick()
            time.sleep(POLL)
        mailbox.put(self.box, mailbox.DONE, True)
        return True

    def follow(self) -> bool:
        """The other ranks: look for the verdict (every POLL s) until the deadline and a grace; hand it over."""
        now = time.monotonic()
        if now < self.next_verdict_look:
            return False
        self.next_verdict_look = now + POLL
        try:
            verdict = self.channel.verdict()
        except Malformed as exc:  # handed over as this rank's problem: no verdict it can trust came
            verdict = {"problem": f"rank 0's verdict in the store could not be read: {exc}"}
        if verdict is None and now < self.until + GRACE:
            return False
        self.beater.post(state="done", step=activity.DONE)
        mailbox.put(self.box, mailbox.HEARD, verdict)
        until = time.monotonic() + ACK_WAIT  # the parent prints the verdict, then says exit
        while not mailbox.has(self.box, mailbox.EXIT) and time.monotonic() < until and not self.parent_died():
            time.sleep(TICK)
        if verdict is not None and "problem" not in verdict:
            self.channel.ack()
        mailbox.put(self.box, mailbox.DONE, True)
        return True


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    try:
        channel = Channel(connect(config), config["run_id"])
    except Exception as exc:  # noqa: BLE001 - the parent reports it in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        mailbox.put(
            config["dir"],
            mailbox.ERROR,
            f"cannot reach the store at {config['addr']}:{config['port']}: {type(exc).__name__}: {first}",
        )
        return 1
    rank = Rank(config, channel)
    rank.beater.post()
    mailbox.put(config["dir"], mailbox.CONNECTED, True)
    try:
        while not rank.step():
            time.sleep(TICK)
    except Exception as exc:  # noqa: BLE001 - the parent names it in one line, not "exited with status 1"
        mailbox.put(config["dir"], mailbox.ERROR, f"the store child failed: {type(exc).__name__}: {str(exc)[:500]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
