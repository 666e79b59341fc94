"""``mpdoctor fleet compare A.json B.json ...``: the fleet comparison over saved snapshots or reports.

Each file is a snapshot (``check --save-snapshot``) or a JSON report (``check
--format json``) taken on one node, collected any way; file N plays rank N. A
report's findings are used as they are; a bare snapshot is judged here, by the same
checks ``mpdoctor check`` runs. With two files it is the "works on my machine, not
on the cluster" diff.
"""

from __future__ import annotations

import os

from mpdoctor.doctor.judge import judge
from mpdoctor.findings import Finding
from mpdoctor.fleet.compare import compare
from mpdoctor.fleet.fingerprint import measured, rank_report, unmeasured
from mpdoctor.fleet.judging import ManyJudge
from mpdoctor.fleet.loading import SectionCache
from mpdoctor.fleet.model import Fingerprint, FleetReport, RankReport
from mpdoctor.schema.serde import DataError, from_data
from mpdoctor.snapshot import SnapshotError, read_json_document, snapshot_from_data


def _read_json(path: str):
    """A file's JSON through the bounded reader ``check --snapshot`` uses: regular files only, at most
    MAX_SNAPSHOT_BYTES, nesting and integers bounded. ``/dev/zero``, a FIFO or a 5,000-digit number is a refusal
    in one line, never an unbounded read, a hang or a crash."""
    return read_json_document(path, f"cannot read {path}", f"{path}: not a JSON snapshot or report")


def read_rank(path: str, rank: int, select: list[str] = (), ignore: list[str] = ()) -> RankReport:
    """File ``path`` as rank ``rank``, judged on its own; raises SnapshotError with a one-line message for the user.

    The plain way, one file at a time: ``compare_files`` must give what this gives for each file.
    """
    data = _read_json(path)
    try:
        snapshot = snapshot_from_data(data)
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    if "findings" in data and "snapshot" in data:
        try:
            findings = [from_data(Finding, item) for item in data["findings"]]
        except (DataError, TypeError) as exc:
            raise SnapshotError(f"{path}: corrupt findings: {exc}") from None
    else:
        findings = judge(snapshot, list(select), list(ignore))
    label = os.path.basename(path)
    return rank_report(rank, label, 0, snapshot, findings, label=label)


def compare_files(paths: list[str], select: list[str] = (), ignore: list[str] = ()) -> FleetReport:
    """The fleet report of ``paths`` (file N plays rank N): as ``read_rank`` of each, with what repeats done once.

    Sections repeated across files are decoded once (``loading``), snapshots that
    differ only in identity facts are judged once (``judging``), and ranks with the
    same sections share one fingerprint.
    """
    cache, judge = SectionCache(), ManyJudge(select, ignore)
    prints: dict[tuple, Fingerprint] = {}
    reports = []
    for rank, path in enumerate(paths):
        data = _read_json(path)
        try:
            snapshot, ident = cache.snapshot(data)
        except SnapshotError as exc:
            raise SnapshotError(f"{path}: {exc}") from None
        if "findings" in data and "snapshot" in data:
            try:
                findings = cache.findings(data["findings"])
            except (DataError, TypeError) as exc:
                raise SnapshotError(f"{path}: corrupt findings: {exc}") from None
        else:
            findings = judge.judge(snapshot, ident)
        # What the fingerprint reads but its timings is in the sections' keys (identity facts aside, which it
        # does not read): ranks with the same keys share it.
        key = tuple(ident.section_key(name) for name in ("environment", "torch", "machine"))
        if key not in prints:
            prints[key] = unmeasured(snapshot, 0)
        label = os.path.basename(path)
        reports.append(
            rank_report(rank, label, 0, snapshot, findings, label=label, print_=measured(prints[key], snapshot))
        )
    return compare(reports, len(reports), "compare")
