"""The rank's store child: imports torch, holds the TCPStore connection, beats, gathers and carries the verdict.

Run by ``mpdoctor.fleet.rank`` through ``run_child`` (``child.own_argv``: its ``main(CONFIG)``, with nothing
from the working directory on the path) in the job's own interpreter, because ``import
torch`` can hang or crash and mpdoctor's own process never imports it. It talks to
its parent through files in one directory (``mailbox``), in one loop, with no
thread: the parent writes its ``step``, its ``report`` (or why it has none) and, on
rank 0, the ``verdict``; the child writes ``connected`` (or ``error``), on rank 0
``gathered``, on the others ``heard`` (the verdict meant for this rank, or why none can be trusted), then
``done``. The rank's nonce is made here: it goes with the report (and the heartbeats after it), and a verdict
that does not echo it is refused (``protocol.accepted``). A parent that
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
from mpdoctor.portable import limits
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.portable.redact import redact_clip
from mpdoctor.fleet.protocol import (
    COUNTED,
    POLL,
    UNCOUNTED,
    Beater,
    Channel,
    Gatherer,
    Malformed,
    accepted,
    new_nonce,
    nonces_of,
)

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
        # The rank's pid as it gave it: a parent that died while this child was still connecting (importing torch)
        # has already left, and getppid() now would name the process that adopted this child.
        self.parent = int(config.get("parent") or os.getppid())
        self.beater = Beater(channel, self.rank, config["host"], config["local_rank"])
        self.gatherer = Gatherer(channel, self.world) if self.rank == 0 else None
        self.posted = self.gathered = False
        self.next_verdict_look = 0.0
        self.nonce = new_nonce()
        self.refused = ""  # why a verdict found for this rank was not taken

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
            self.beater.sign(self.nonce)
            self.channel.post_report(self.rank, report, bool(self.config.get("full_snapshots")), self.nonce)
            self.posted = True
            return
        failure = mailbox.take(self.box, mailbox.FAIL)
        if failure is not None:  # the check itself failed: no report will come, so say why in the heartbeat
            self.beater.sign(self.nonce)
            self.beater.post(state="crashed", detail=str(failure))
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
        # Stopped by the launcher (SIGTERM): one last look at the store now; the deadline will not be reached.
        until = 0.0 if mailbox.has(self.box, mailbox.HURRY) else self.until
        if not self.gathered and self.gatherer.poll(until):
            self.beater.step(activity.COMPARING)
            mailbox.put(self.box, mailbox.GATHERED, self.gatherer.got.to_data())
            self.gathered = True
        verdict = mailbox.take(self.box, mailbox.VERDICT)
        if verdict is None:
            return False
        got = self.gatherer.got
        nonces = nonces_of(got)
        self.channel.post_verdicts(verdict["verdict"], nonces, self.world)
        self.beater.post(state="done", step=activity.DONE)
        expected = sum(1 for rank in got.reports if rank and rank in nonces)  # the others will not read it
        until = time.monotonic() + ACK_WAIT
        while self.channel.acks() < expected and time.monotonic() < until and not self.parent_died():
            self.beater.tick()
            time.sleep(POLL)
        mailbox.put(self.box, mailbox.DONE, True)
        return True

    def follow(self) -> bool:
        """The other ranks: look for this rank's verdict (every POLL s) once its report is in, until the deadline
        and a grace; hand over the one that echoes its nonce, or why none came."""
        now = time.monotonic()
        if now < self.next_verdict_look:
            return False
        self.next_verdict_look = now + POLL
        verdict = self.look()
        if verdict is None and now < self.until + GRACE:
            return False
        if verdict is None and self.refused:
            verdict = {"problem": self.refused}
        self.beater.post(state="done", step=activity.DONE)
        mailbox.put(self.box, mailbox.HEARD, verdict)
        until = time.monotonic() + ACK_WAIT  # the parent prints the verdict, then says exit
        while not mailbox.has(self.box, mailbox.EXIT) and time.monotonic() < until and not self.parent_died():
            time.sleep(TICK)
        if verdict is not None and "problem" not in verdict:
            self.channel.ack()
        mailbox.put(self.box, mailbox.DONE, True)
        return True

    def look(self):
        """One look at this rank's verdict: ``{"verdict": ...}`` when it echoes this rank's nonce (so never before
        its report is in); ``{"problem": ..., "judged": True}`` when it says rank 0 judged without this rank's
        report (a failure either way: a forged one only ends the wait early, with exit 1); else None, to go on
        waiting: anyone can write the key, so a verdict that cannot be read or echoes another nonce ends nothing
        (rank 0's own may still come). Why the last one was refused is kept (``refused``)."""
        try:
            found = self.channel.verdict(self.rank)
        except Malformed as exc:
            self.refused = f"rank 0's verdict in the store could not be read: {exc}"
            return None
        if found is None:
            return None
        how = accepted(found, self.nonce)
        if how == COUNTED and self.posted:
            return {"verdict": found}
        if how == UNCOUNTED:
            problem = "rank 0 judged the fleet without this rank's report (it came too late, or could not be read)"
            return {"problem": problem, "judged": True}
        if self.posted:
            self.refused = (
                "a verdict in the store for this rank did not echo the nonce it sent with its report, and was refused"
                " (written by something other than rank 0 for this run); none that does came"
            )
        return None


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    try:
        channel = Channel(connect(config), config["run_id"])
    except Exception as exc:  # noqa: BLE001 - the parent reports it in one line
        first = split_lines(str(exc))[0] if str(exc) else ""
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
        mailbox.put(
            config["dir"],
            mailbox.ERROR,
            f"the store child failed: {type(exc).__name__}: {redact_clip(exc, limits.ERROR_TEXT)}",
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
