"""Fleet judges what arrives: a malformed, deep, huge or wrong-typed value in the store costs only its rank.

Any rank, or anyone who reaches MASTER_PORT, can write under the run's keys. Each
value here once ended rank 0 (the store child exited 1, or rank 0 exited 3) or
rank 1 (exit 3). Now the rank that wrote it is named in the report, with why, and
every other rank goes on. The values are written with a real c10d TCPStore, as the
protocol tests do; the end-to-end tests run the real CLI as one rank of a job whose
other ranks are this test, and check that its temporary directory is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

torch_distributed = pytest.importorskip("torch.distributed")

from mpdoctor.fleet.gathered import judge_gathered  # noqa: E402
from mpdoctor.fleet.launcher import Launch  # noqa: E402
from mpdoctor.fleet.protocol import Channel, Malformed  # noqa: E402
from conftest import free_port  # noqa: E402

DEEP = "[" * 100_000
HUGE_INT = '{"rank": ' + "9" * 5000 + "}"


def put(store, run: str, key: str, value) -> None:
    store.set(f"mpdoctor-fleet/{run}/{key}", value)


def plant_report(store, run: str, rank: int, value) -> None:
    """A report as a rank posts one (its key, the arrivals list), but with ``value`` as its bytes."""
    put(store, run, f"report/{rank}", value)
    store.append(f"mpdoctor-fleet/{run}/arrivals", f"{rank},")


def judged(got, world: int):
    return judge_gathered(got, Launch("env", 0, world, 0, "h", "127.0.0.1", 1, "run"))


REPORTS = {
    "not UTF-8": (b"\xff{", "not UTF-8 text"),
    "100k deep": (DEEP, "nested too deeply"),
    "5000 digits": (HUGE_INT, "an integer of 5000 digits"),
    "a list": ("[1,2,3]", "expected an object, got list"),
    "not JSON": ("{", "not JSON"),
}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_a_report_that_cannot_be_read_names_its_rank_and_ends_nothing(store, name):
    value, why = REPORTS[name]
    channel = Channel(store, "r")
    channel.post_report(0, {"rank": 0})
    plant_report(store, "r", 1, value)
    got = channel.gather(2, time.monotonic() + 30)  # not the deadline: rank 1 is no longer waited for
    assert got.reports == {0: {"rank": 0}} and why in got.unreadable[1]
    state = {s.rank: s for s in judged(got, 2).ranks}[1]
    assert state.status == "missing" and "its report could not be read" in state.detail and why in state.detail
    finding = [f for f in judged(got, 2).findings if "rank 1" in f.title][0]
    assert "could not read" in finding.title


BEATS = {
    "a list": ("[1,2,3]", "expected an object, got list"),
    "step_seconds a string": (
        json.dumps({"host": "n1", "step": "checking", "step_seconds": "x", "beat": 1, "state": "running"}),
        "step_seconds: expected seconds, got 'x'",
    ),
    "unknown state": (json.dumps({"state": "exploded"}), "state: expected one of running, crashed, done"),
    "not UTF-8": (b"\xff{", "not UTF-8 text"),
    "5000 digits": ('{"beat": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
}


@pytest.mark.parametrize("name", sorted(BEATS))
def test_a_heartbeat_that_cannot_be_read_names_its_rank(store, name):
    value, why = BEATS[name]
    channel = Channel(store, "b")
    channel.post_report(0, {"rank": 0})
    put(store, "b", "hb/1", value)
    got = channel.gather(2, time.monotonic() + 30)  # given up at once, like a crashed rank: no mpdoctor wrote it
    state = {s.rank: s for s in judged(got, 2).ranks}[1]
    assert state.status == "missing" and "its heartbeat in the store could not be read" in state.detail
    assert why in state.detail


def test_a_counter_that_is_not_a_number_does_not_cut_the_connection(store):
    """c10d's server closes the connection of a client that `add`s to "abc"; every later read would fail."""
    channel = Channel(store, "c")
    put(store, "c", "reported", "abc")
    put(store, "c", "ack", "9" * 5000)
    channel.post_report(0, {"rank": 0})
    channel.post_report(1, {"rank": 1})
    channel.ack()
    got = channel.gather(2, time.monotonic() + 30)
    assert got.reports == {0: {"rank": 0}, 1: {"rank": 1}}
    assert channel.acks() == 0 and store.get("mpdoctor-fleet/c/reported") == b"abc"  # still connected


@pytest.mark.parametrize(
    "value, why",
    [
        (json.dumps({"worst": "bogus"}), "worst: expected one of error, warning, info or null, got 'bogus'"),
        (json.dumps({"worst": "error", "ranks": "3"}), "ranks: expected a count of ranks, got '3'"),
        (json.dumps({"worst": "error", "nonce": "x" * 32}), "nonce: expected 32 hex digits"),
        ("[]", "expected an object, got list"),
        ("[" * 1000, "nested too deeply"),
        (DEEP, "100000 bytes, more than the 4096 read"),  # a verdict's bound (portable/limits.py)
    ],
)
def test_a_verdict_that_is_not_one_is_refused_in_words(store, value, why):
    put(store, "v", "verdict/1", value)
    with pytest.raises(Malformed, match=why.replace("(", r"\(").replace(")", r"\)")):
        Channel(store, "v").verdict(1)


def test_a_malformed_arrivals_list_falls_back_to_the_keys(store):
    channel = Channel(store, "a")
    channel.post_report(1, {"rank": 1})
    store.append("mpdoctor-fleet/a/arrivals", "9" * 5000 + ",\xff,")
    assert channel.gather(2, time.monotonic() + 1).reports == {1: {"rank": 1}}


# ---------------------------------------------------------------- the real CLI, one rank of a job


def cli() -> list[str]:
    """mpdoctor as a user runs it (its console script), not `python -m` with this checkout first on the path."""
    script = Path(sys.executable).with_name("mpdoctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mpdoctor"]


def rank_env(tmp_path: Path, rank: int, world: int, port: int) -> dict:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI_", "TORCHELASTIC_"))}
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TMPDIR=str(temp),  # its /tmp/mpdoctor-fleet-* directory lands here, where nothing else runs
    )
    return env


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("mpdoctor-fleet-"))


def test_rank_zero_reports_every_hostile_rank_and_exits_with_its_verdict(tmp_path):
    """Rank 0 is the real CLI (it hosts the store); ranks 1-5 are this test, each writing one bad value."""
    port, world = free_port(), 6
    out = tmp_path / "fleet.json"
    proc = subprocess.Popen(
        [*cli(), "fleet", "--no-kernels", "--deadline", "60", "-f", "json", "-o", str(out), "--fail-on", "never"],
        env=rank_env(tmp_path, 0, world, port),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        client = torch_distributed.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=60))
        run = str(port)  # the env launcher's run id
        put(client, run, "reported", "abc")  # the counter every rank adds to
        plant_report(client, run, 1, b"\xff{")
        plant_report(client, run, 2, DEEP)
        plant_report(client, run, 3, HUGE_INT)
        put(client, run, "hb/4", "[1,2,3]")
        put(client, run, "hb/5", json.dumps({"host": "n5", "step": "checking", "step_seconds": "x", "beat": 1}))
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    ranks = {r["rank"]: r for r in json.loads(out.read_text())["ranks"]}
    assert ranks[0]["status"] == "reported"
    for rank, why in [(1, "not UTF-8"), (2, "nested too deeply"), (3, "5000 digits")]:
        assert ranks[rank]["status"] == "missing" and "its report could not be read" in ranks[rank]["detail"]
        assert why in ranks[rank]["detail"]
    assert "got list" in ranks[4]["detail"] and "step_seconds: expected seconds" in ranks[5]["detail"]
    assert leftovers(tmp_path) == []


def test_a_bogus_verdict_is_this_ranks_problem_in_words_not_a_crash(tmp_path):
    """Rank 1 is the real CLI; this test hosts the store as rank 0 and posts a verdict no mpdoctor writes."""
    port = free_port()
    server = torch_distributed.TCPStore(
        "127.0.0.1", port, None, True, timedelta(seconds=60), wait_for_workers=False, multi_tenant=True
    )
    put(server, str(port), "verdict/1", json.dumps({"worst": "bogus", "summary": "x"}))
    result = subprocess.run(
        [*cli(), "fleet", "--no-kernels", "--deadline", "3"],
        env=rank_env(tmp_path, 1, 2, port),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=150,
    )
    del server
    # No verdict it can trust came: exit 1, as for any rank without a verdict (never 3, never a traceback).
    assert result.returncode == 1, result.stderr[-3000:]
    assert "rank 0's verdict in the store could not be read: worst: expected one of" in result.stderr
    assert "Traceback" not in result.stderr
    assert leftovers(tmp_path) == []


HOSTILE = "\x1b[2J\x1b]0;owned\x07\u202e\x9b"  # clear screen, retitle, a bidi override, a C1 CSI


def test_what_a_rank_sent_through_the_store_reaches_text_and_markdown_inert(store):
    """A rank's heartbeat (its host and step, as it sent them) is quoted in rank 0's report: every control and
    bidi character shows as its escape (``render/sanitise.py``), in text and in Markdown."""
    import io

    from rich.console import Console

    from mpdoctor.render.fleet import render_fleet_markdown, render_fleet_text

    channel = Channel(store, "s")
    channel.post_report(0, {"rank": 0})
    beat = {"host": f"n1{HOSTILE}", "step": f"checking{HOSTILE}", "step_seconds": 1.0, "beat": 3, "state": "crashed"}
    put(store, "s", "hb/1", json.dumps(beat))
    report = judged(channel.gather(2, time.monotonic() + 30), 2)
    state = {s.rank: s for s in report.ranks}[1]
    assert "\x1b" in state.detail + state.host  # the raw value arrived: the renderers are what is tested
    buffer = io.StringIO()
    render_fleet_text(report, Console(file=buffer, width=120, force_terminal=False, color_system=None))
    for shown in (buffer.getvalue(), render_fleet_markdown(report)):
        assert not any(ch in shown for ch in "\x1b\x07\u202e\x9b"), repr(shown)
        assert "\\x1b" in shown and "\\u202e" in shown
