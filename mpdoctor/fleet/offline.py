"""``mpdoctor fleet compare A.json B.json ...``: the fleet comparison over saved snapshots or reports.

Each file is a snapshot (``check --save-snapshot``) or a JSON report (``check
--format json``) taken on one node, collected any way; file N plays rank N. A
report's findings are used as they are; a bare snapshot is judged here, by the same
checks ``mpdoctor check`` runs. With two files it is the "works on my machine, not
on the cluster" diff.
"""

from __future__ import annotations

import json
import os

from mpdoctor.doctor.judge import judge
from mpdoctor.findings import Finding
from mpdoctor.fleet.compare import compare
from mpdoctor.fleet.fingerprint import rank_report
from mpdoctor.fleet.model import FleetReport, RankReport
from mpdoctor.schema.serde import DataError, from_data
from mpdoctor.snapshot import SnapshotError, snapshot_from_data


def read_rank(path: str, rank: int, select: list[str] = (), ignore: list[str] = ()) -> RankReport:
    """File ``path`` as rank ``rank``; raises SnapshotError with a one-line message for the user."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a JSON snapshot or report ({type(exc).__name__})") from None
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
    reports = [read_rank(path, rank, select, ignore) for rank, path in enumerate(paths)]
    return compare(reports, len(reports), "compare")
