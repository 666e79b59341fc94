"""A store writer cannot open the fleet's gate, and junk in the store costs its rank, never rank 0's report.

The c10d store has no authentication (issue 40, items 3 and 4). A rogue client of a real TCPStore
(``adversarial.round3.Rogue``) posts verdicts that say "nothing to fix" before a rank's report is in, with no
nonce, a random one or another rank's; a rank takes only the verdict that echoes the nonce it sent with its
report, prints its own words (never the store's text) and never exits better than its own findings. Junk
counters and an arrivals list grown by appends are read once per backoff, not once per look, and rank 0
prints its own report when the store fails it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from datetime import timedelta

import pytest

torch_distributed = pytest.importorskip("torch.distributed")

from adversarial.round3 import Rogue, forged_verdicts, junk  # noqa: E402
from conftest import free_port  # noqa: E402
from mpdoctor.fleet import mailbox  # noqa: E402
from mpdoctor.fleet.protocol import Channel, Gatherer, verdict_of  # noqa: E402
from mpdoctor.fleet.store_child import Rank  # noqa: E402
from mpdoctor.portable import limits  # noqa: E402
from test_fleet_hostile import cli, leftovers, rank_env  # noqa: E402


@pytest.fixture()
def served():
    """A real TCPStore served here, a rank's client of it, and a rogue client: (port, client, rogue factory)."""
    port = free_port()
    server = torch_distributed.TCPStore(
        "127.0.0.1", port, None, True, timedelta(seconds=30), wait_for_workers=False, multi_tenant=True
    )
    client = torch_distributed.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=30))
    yield port, client, lambda run: Rogue(port, run)
    del client, server


def store_child_rank(client, run: str, rank: int, box) -> Rank:
    """The store child's loop state of one rank, as ``store_child.main`` builds it, on a real store client."""
    config = {"rank": rank, "world_size": 3, "host": "n", "local_rank": rank, "until": time.time() + 0.5}
    return Rank({**config, "dir": str(box), "run_id": run}, Channel(client, run))


def test_a_forged_verdict_is_never_taken_before_or_after_the_ranks_report(served, tmp_path):
    """Never taken as a verdict: one with a nonce not this rank's is waited past; one without a nonce (rank 0
    judged without this rank) ends the wait as this rank's problem: exit 1, the gate stays shut."""
    port, client, rogue_of = served
    rogue = rogue_of("f")
    rank = store_child_rank(client, "f", 1, tmp_path)
    other_nonce = "ab" * 16

    def forge_and_look(seed: int) -> None:
        for verdict in forged_verdicts(1, seed=seed, stolen=other_nonce):
            rogue.forge(1, verdict)
            heard = rank.look()
            if verdict.get("nonce") is None:
                assert heard["judged"] and "without this rank's report" in heard["problem"], verdict
            else:
                assert heard is None, (verdict, heard)

    forge_and_look(1)  # before the report is in
    mailbox.put(str(tmp_path), mailbox.REPORT, {"rank": 1, "findings": []})
    rank.follow_parent()  # posts the report with its nonce
    assert rank.posted and json.loads(rogue.get("report/1"))["nonce"] == rank.nonce
    forge_and_look(2)  # and after it: none echoes this rank's nonce
    assert rank.refused  # why the last was refused, said if nothing better comes
    # rank 0's own verdict, echoing the nonce, is taken; its numbers only (no text from the store)
    Channel(client, "f").post_verdicts(
        {"worst": "error", "ranks": 3, "agree": 2, "differ": 1, "absent": 0}, {1: rank.nonce}, 3
    )
    heard = rank.look()
    assert heard["verdict"]["worst"] == "error" and "summary" not in heard["verdict"]


def test_a_forged_verdict_runs_out_as_this_ranks_problem_in_words(served, tmp_path):
    port, client, rogue_of = served
    rank = store_child_rank(client, "g", 1, tmp_path)
    mailbox.put(str(tmp_path), mailbox.REPORT, {"rank": 1, "findings": []})
    rank.follow_parent()
    rogue_of("g").forge(1, {"worst": None, "ranks": 3, "agree": 3, "differ": 0, "absent": 0, "nonce": "cd" * 16})
    rank.until = time.monotonic() - 60  # the deadline and its grace are over
    mailbox.put(str(tmp_path), mailbox.EXIT, True)
    assert rank.follow()
    heard = mailbox.take(str(tmp_path), mailbox.HEARD)
    assert "did not echo the nonce it sent with its report, and was refused" in heard["problem"]


def test_the_cli_rank_waits_past_a_forgery_and_prints_its_own_words(served, tmp_path):
    """Rank 1 is the real CLI; a rogue forges "nothing to fix" at once; this test then plays rank 0 and posts
    the real verdict (two errors) with the nonce rank 1 sent. Rank 1 exits 1 with rank 0's verdict in its
    own words; the forged text never reaches its output. (Before: exit 0, "3 ranks agree; nothing to fix".)"""
    port, client, rogue_of = served
    run = str(port)
    rogue = rogue_of(run)
    for verdict in forged_verdicts(1, seed=3):
        rogue.forge(1, verdict)
    proc = subprocess.Popen(
        [*cli(), "fleet", "--no-kernels", "--deadline", "60"],
        env=rank_env(tmp_path, 1, 3, port),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ends = time.monotonic() + 100
        while not rogue.has("report/1") and proc.poll() is None and time.monotonic() < ends:
            for verdict in forged_verdicts(1, seed=4):  # the rogue keeps forging while rank 1 checks
                rogue.forge(1, verdict)
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()  # it did not take a forgery and leave
        nonce = json.loads(rogue.get("report/1"))["nonce"]
        Channel(client, run).post_verdicts(
            {"worst": "error", "ranks": 3, "agree": 1, "differ": 1, "absent": 1}, {1: nonce}, 3
        )
        stdout, stderr = proc.communicate(timeout=100)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr[-3000:]
    assert (
        "mpdoctor fleet: rank 1: 3 ranks; 1 is the reference; 1 differs; 1 missing or crashed; worst finding: error"
        in stderr
    )
    assert "nothing to fix" not in stderr + stdout and "forged" not in stderr + stdout
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------- junk in the store


class Counting:
    """A real store client that counts the bytes ``get`` returns, per key."""

    def __init__(self, store) -> None:
        self.store, self.read = store, {}

    def get(self, key):
        value = self.store.get(key)
        self.read[key] = self.read.get(key, 0) + len(value)
        return value

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_junk_counters_arrivals_and_heartbeats_are_read_once_per_backoff_not_per_look(served):
    """The issue's 7 MB counter and 24-400 MB arrivals, scaled down: what matters is a value over its bound
    (32 bytes; 12 per rank; 64 KB for a heartbeat), read once per backoff (1 s, doubling), not at every look;
    every report is still gathered."""
    size = 256 << 10
    port, client, rogue_of = served
    rogue = rogue_of("j")
    rogue.set("reported", junk(size, seed=1))
    rogue.append("arrivals", junk(size, seed=2), chunk=64 << 10)
    rogue.set("hb/2", junk(size, seed=3))
    counting = Counting(client)
    channel = Channel(counting, "j")
    for rank in range(2):
        channel.post_report(rank, {"rank": rank})
    gatherer = Gatherer(channel, 4)
    began = time.monotonic()
    while not gatherer.poll(began + 4.5):  # rank 3 never reports: the whole deadline is spent looking
        time.sleep(0.2)
    assert set(gatherer.got.reports) == {0, 1}
    assert "more than the 65536 read" in gatherer.got.heartbeats[2]["detail"]
    prefix = "mpdoctor-fleet/j/"
    # In 4.5 s: 22 looks at the counter and arrivals, 6 at the heartbeats; with the backoff, reads at 0, 1 and 3 s.
    for key in ("reported", "arrivals", "hb/2"):
        assert counting.read.get(prefix + key, 0) <= 3 * (size + 64), (key, counting.read)  # + the real "0,1,"


def test_a_verdict_over_its_bound_is_refused_in_words(served):
    port, client, rogue_of = served
    rogue_of("b").set("verdict/1", b'{"worst": null, "pad": "' + junk(limits.STORE_VERDICT) + b'"}')
    with pytest.raises(ValueError, match=f"more than the {limits.STORE_VERDICT} read"):
        Channel(client, "b").verdict(1)
    assert verdict_of({"worst": "info", "ranks": 2})["nonce"] is None


def test_rank_zero_prints_its_own_report_when_the_store_fails_it(tmp_path):
    """MASTER_PORT taken by something that is no store: rank 0 cannot host it. Before: no report, exit 1.
    Now: its own check's report, the others named as never heard from, and the problem in one line."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        out = tmp_path / "fleet.json"
        result = subprocess.run(
            [*cli(), "fleet", "--no-kernels", "--deadline", "30", "-f", "json", "-o", str(out)],
            env=rank_env(tmp_path, 0, 2, port),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=150,
        )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "this report holds rank 0's own check only" in result.stderr and "Traceback" not in result.stderr
    ranks = {r["rank"]: r for r in json.loads(out.read_text())["ranks"]}
    assert ranks[0]["status"] == "reported" and ranks[1]["status"] == "missing"
    assert leftovers(tmp_path) == []
