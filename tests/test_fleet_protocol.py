"""The store side of `mpdoctor fleet`, over a real torch.distributed.TCPStore in this process.

No collectives: gathering and waiting for the verdict poll with `check` up to a
deadline, so a rank that never posts costs only the wait (tests use deadlines of a
second or two, and assert on what was gathered, never on how long it took).
"""

from __future__ import annotations

import time

import pytest

torch_distributed = pytest.importorskip("torch.distributed")

from mpdoctor.fleet.protocol import Beater, Channel, Gathered, new_nonce  # noqa: E402
from mpdoctor.fleet.gathered import absent_states  # noqa: E402


def test_rank_zero_gathers_every_report(store):
    channel = Channel(store, "run")
    for rank in range(3):
        channel.post_report(rank, {"rank": rank})
    got = channel.gather(3, time.monotonic() + 30)
    assert got.reports == {0: {"rank": 0}, 1: {"rank": 1}, 2: {"rank": 2}}
    assert got.heartbeats == {}


def test_a_silent_rank_is_given_up_at_the_deadline_with_its_last_heartbeat(store):
    channel = Channel(store, "run")
    channel.post_report(0, {"rank": 0})
    channel.heartbeat(
        1,
        {
            "host": "node-b",
            "local_rank": 1,
            "step": "checking",
            "step_seconds": 12.0,
            "beat": 7,
            "state": "running",
            "detail": "",
        },
    )
    got = channel.gather(3, time.monotonic() + 1.0)
    assert list(got.reports) == [0]
    assert got.heartbeats[1]["step"] == "checking" and 2 not in got.heartbeats
    states = {s.rank: s for s in absent_states(got, 3)}
    assert (states[1].host, states[1].local_rank, states[1].last_step, states[1].status) == (
        "node-b",
        1,
        "checking",
        "missing",
    )
    assert states[1].step_seconds >= 12.0
    assert states[2].host == "" and "never reached the store" in states[2].detail


def test_a_crashed_rank_ends_the_gathering_without_the_deadline(store):
    channel = Channel(store, "run")
    channel.post_report(0, {"rank": 0})
    channel.heartbeat(
        1,
        {
            "host": "h",
            "local_rank": 1,
            "step": "checking",
            "step_seconds": 1.0,
            "beat": 3,
            "state": "crashed",
            "detail": "mpdoctor's process on this rank ended before it finished",
        },
    )
    got = channel.gather(2, time.monotonic() + 600)  # returns as soon as only crashed ranks are left
    (state,) = absent_states(got, 2)
    assert state.status == "crashed" and state.detail.startswith("mpdoctor's process")


def test_the_verdict_reaches_the_other_ranks_and_is_acknowledged(store):
    channel = Channel(store, "run")
    nonce = new_nonce()
    assert channel.wait_verdict(1, nonce, time.monotonic() + 0.5) is None  # none yet: the wait ends at its deadline
    verdict = {"worst": "warning", "ranks": 3, "agree": 2, "differ": 1, "absent": 0}
    channel.post_verdicts(verdict, {1: nonce}, 3)
    assert channel.wait_verdict(1, nonce, time.monotonic() + 30) == {**verdict, "nonce": nonce}
    assert channel.verdict(2)["nonce"] is None  # rank 2 sent no nonce: its verdict says it was not counted
    channel.ack()
    assert channel.wait_acks(1, time.monotonic() + 30) == 1


def test_runs_do_not_see_each_others_keys(store):
    Channel(store, "first").post_report(0, {"rank": 0})
    got = Channel(store, "second").gather(1, time.monotonic() + 0.5)
    assert got.reports == {}


def test_the_heartbeat_carries_the_step(store):
    channel = Channel(store, "run")
    beater = Beater(channel, 4, "node-e", 0)
    beater.step("checking")
    got = channel.gather(5, time.monotonic() + 0.3)
    assert got.heartbeats[4]["step"] == "checking" and got.heartbeats[4]["host"] == "node-e"


def test_gathered_round_trips_through_json():
    got = Gathered({1: {"rank": 1}}, {2: {"step": "checking"}}, {2: 3.0}, 1.5)
    assert Gathered.from_data(got.to_data()) == got


def test_rank_zero_decodes_every_field_of_a_report():
    """Reports travel as JSON; decoding them (shared parts once) loses nothing."""
    from fixtures.base import capture
    from mpdoctor.findings import info
    from mpdoctor.fleet.fingerprint import rank_report
    from mpdoctor.fleet.launcher import Launch
    from mpdoctor.fleet.gathered import judge_gathered
    from mpdoctor.schema.serde import to_data

    reports = [rank_report(rank, "h", rank, capture("cpu-kernels"), [info("x")], 1.5) for rank in range(2)]
    fleet = judge_gathered(
        Gathered({r.rank: to_data(r) for r in reports}), Launch("torchrun", 0, 2, 0, "h", "h", 1, "r")
    )
    assert reports[0].node_kernels and [s.status for s in fleet.ranks] == ["reported", "reported"]
    broken = judge_gathered(
        Gathered({0: to_data(reports[0]), 1: {"rank": "one"}}), Launch("torchrun", 0, 2, 0, "h", "h", 1, "r")
    )
    assert broken.ranks[1].status == "missing" and "could not be read" in broken.ranks[1].detail


class NoAppend:
    """A store without ``append`` (an older c10d): rank 0 falls back to looking for every rank's key."""

    def __init__(self, store) -> None:
        self.store = store

    def __getattr__(self, name):
        if name == "append":
            raise AttributeError(name)
        return getattr(self.store, name)


def test_reports_are_found_without_the_arrivals_list(store):
    channel = Channel(NoAppend(store), "old")
    channel.post_report(1, {"rank": 1})
    assert channel.gather(2, time.monotonic() + 0.5).reports == {1: {"rank": 1}}


def report_of(rank: int, nccl: str, device: str) -> dict:
    return {
        "rank": rank,
        "fingerprint": {"nccl": nccl, "device": device, "kernels": {device: {"matmul": rank}}},
        "snapshot": {"rank": rank},
    }


def test_one_whole_snapshot_per_group_goes_through_the_store(store):
    channel = Channel(store, "reps")
    # Two groups: ranks 0, 1, 3 (their devices and timings are their own, not compared) and rank 2.
    for rank, nccl in enumerate(["2.19.3", "2.19.3", "2.20.5", "2.19.3"]):
        channel.post_report(rank, report_of(rank, nccl, f"cuda:{rank}"))
    got = channel.gather(4, time.monotonic() + 30)
    assert sorted(rank for rank, data in got.reports.items() if "snapshot" in data) == [0, 2]
    assert all("fingerprint" in data for data in got.reports.values())


def test_full_snapshots_send_every_one(store):
    channel = Channel(store, "all")
    for rank in range(3):
        channel.post_report(rank, report_of(rank, "2.19.3", "cuda:0"), full_snapshots=True)
    got = channel.gather(3, time.monotonic() + 30)
    assert all(data["snapshot"] == {"rank": rank} for rank, data in got.reports.items())
