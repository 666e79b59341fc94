"""Rank 0's side: from what was gathered to the fleet report, and the verdict in one line.

Pure functions of the gathered data (``protocol.Gathered``): the ranks that
reported are decoded (identical parts once) and compared (``compare``); the others
become ``RankState``s from their last heartbeat.
"""

from __future__ import annotations

import json
from dataclasses import replace

from mpdoctor.findings import Finding
from mpdoctor.fleet.compare import UNREADABLE, compare, worst
from mpdoctor.fleet.missing import CUT_SHORT
from mpdoctor.fleet.naming import who
from mpdoctor.fleet.launcher import Launch
from mpdoctor.fleet.model import Fingerprint, FleetReport, RankReport, RankState
from mpdoctor.fleet.protocol import Malformed, heartbeat_of, unreadable_beat
from mpdoctor.schema.serde import DataError, from_data


def summary_line(report: FleetReport) -> str:
    """The verdict in one line: "3 ranks; ranks 0-1 (2 ranks on 1 node) agree; 1 differs; worst finding: warning"."""
    reported = [s for s in report.ranks if s.status == "reported"]
    absent = [s for s in report.ranks if s.status != "reported"]
    parts = [f"{report.world_size} rank{'' if report.world_size == 1 else 's'}"]
    if report.groups:
        parts.append(
            f"{who(report.groups[0].ranks, report.groups[0].hosts)} "
            + ("agree" if len(report.groups[0].ranks) > 1 else "is the reference")
        )
        odd = len(reported) - len(report.groups[0].ranks)
        if odd:
            parts.append(f"{odd} differ{'s' if odd == 1 else ''}")
    if absent:
        parts.append(f"{len(absent)} missing or crashed ({', '.join(str(s.rank) for s in absent[:8])})")
    return "; ".join(parts) + f"; worst finding: {worst(report) or 'none'}"


def verdict_numbers(report: FleetReport) -> dict:
    """The verdict rank 0 posts for the other ranks: the worst severity and counts, no text (``protocol.verdict_of``):
    each rank words it itself (``protocol.verdict_line``), so nothing a store writer puts there is printed."""
    reported = [s for s in report.ranks if s.status == "reported"]
    agree = len(report.groups[0].ranks) if report.groups else 0
    return {
        "worst": worst(report),
        "ranks": report.world_size,
        "agree": agree,
        "differ": max(0, len(reported) - agree) if report.groups else 0,
        "absent": len(report.ranks) - len(reported),
    }


def absent_states(gathered, world_size: int, cut: str = "") -> list[RankState]:
    """A state for each rank whose report is not in ``gathered``, from its last heartbeat. ``cut``: what cut the
    run short (the launcher's SIGTERM, a deadline shorter than rank 0's own check), so that a rank whose heartbeat
    was still moving is said to have been cut short, not to be stuck (``missing.CUT_SHORT``)."""
    beats = {}
    for rank in range(world_size):
        if rank in gathered.reports or rank in gathered.unreadable:
            continue
        beat = gathered.heartbeats.get(rank)
        if beat:
            try:  # the Gatherer checked it; a Gathered from elsewhere (a file, fleet_check's caller) is checked too
                beat = heartbeat_of(beat)
            except Malformed as exc:
                beat = unreadable_beat(str(exc))
        beats[rank] = beat
    # Cut short after a rank crashed: that crash ended the job, and a rank not yet in the store was still starting,
    # not at fault (without a crash seen, a rank that never reached the store is the likeliest to have exited).
    crash_seen = bool(cut) and any(beat and beat.get("state") == "crashed" for beat in beats.values())
    states = []
    for rank, beat in beats.items():
        if not beat:
            states.append(
                RankState(
                    rank=rank,
                    status="missing",
                    detail=(
                        f"{CUT_SHORT} {cut} before it reached the store (still starting)"
                        if crash_seen
                        else "never reached the store: not started, stuck before connecting (e.g. importing torch), "
                        "or MASTER_ADDR:MASTER_PORT unreachable from its node"
                    ),
                )
            )
            continue
        silent = gathered.silent.get(rank, 0.0)
        crashed = beat.get("state") == "crashed"
        detail = beat.get("detail") or (
            f"its heartbeat stopped {silent:.0f} s before the deadline (process gone or network lost)"
            if silent >= 5
            else f"{CUT_SHORT} {cut}"
            if cut
            else "still running at the deadline"
        )
        states.append(
            RankState(
                rank=rank,
                host=beat.get("host", ""),
                local_rank=beat.get("local_rank"),
                status="crashed" if crashed else "missing",
                last_step=beat.get("step", ""),
                step_seconds=round(beat.get("step_seconds", 0.0) + (0 if crashed else silent), 1),
                detail=detail,
            )
        )
    return states


def judge_gathered(gathered, launch: Launch, cut: str = "") -> FleetReport:
    """The fleet report of what rank 0 gathered; ``cut``: what cut the run short, if anything (``absent_states``)."""
    reports, absent = [], []
    decoded: dict[str, object] = {}  # identical fingerprints and finding lists are validated and decoded once
    for rank, data in sorted(gathered.reports.items()):
        try:
            reports.append(_decode(data, decoded))
        except (DataError, TypeError, KeyError, ValueError) as exc:
            absent.append(RankState(rank=rank, status="missing", detail=f"{UNREADABLE}: {exc}"))
    for rank, why in sorted(gathered.unreadable.items()):  # not even JSON: what the store held, said in words
        absent.append(RankState(rank=rank, status="missing", detail=f"{UNREADABLE}: {why}"))
    return compare(
        reports, launch.world_size, launch.launcher, absent_states(gathered, launch.world_size, cut) + absent
    )


def _decode(data: dict, decoded: dict) -> RankReport:
    """A rank's report from its JSON; most ranks share their fingerprint and findings with others (from_data
    costs ~2 ms a report, 2 s at 1,024 ranks, without this)."""
    if not isinstance(data, dict):
        raise DataError(f"$: expected an object, got {type(data).__name__}")
    shared = {}
    for name, cls in (("fingerprint", Fingerprint), ("findings", list[Finding])):
        key = name + json.dumps(data.get(name), sort_keys=True)
        if key not in decoded:
            decoded[key] = from_data(cls, data.get(name), f"$.{name}") if name in data else None
        shared[name] = decoded[key]
    rest = from_data(RankReport, {k: v for k, v in data.items() if k not in shared})
    return replace(rest, fingerprint=shared["fingerprint"] or Fingerprint(), findings=list(shared["findings"] or []))
