"""The JSON contract: see ``mpdoctor/doctor/report.py`` and the shipped JSON Schema."""

from __future__ import annotations

import json

from mpdoctor.doctor.report import Report, report_data
from mpdoctor.schema.serde import to_data
from mpdoctor.snapshot import Snapshot


def render_json(report: Report) -> str:
    return json.dumps(report_data(report), indent=2) + "\n"


def render_snapshot_json(snapshot: Snapshot) -> str:
    """A snapshot file for ``--save-snapshot``; pass it back with ``--snapshot``."""
    return json.dumps(to_data(snapshot), indent=2) + "\n"
