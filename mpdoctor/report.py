"""The report: findings plus the snapshot they were judged from. Its JSON is a contract.

``schema_version`` is shared with the snapshot: it changes when a field is removed,
renamed or changes type. The JSON Schema shipped in ``mpdoctor/schema/`` is
generated from these dataclasses (``python -m mpdoctor.report``), and a test
fails when the shipped file is out of date.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from mpdoctor import __version__
from mpdoctor.findings import Finding
from mpdoctor.gpu_table import GpuView
from mpdoctor.redact import redact_tree
from mpdoctor.serde import fact, from_data, json_schema, to_data
from mpdoctor.snapshot import SCHEMA_VERSION, Snapshot

SCHEMA_PATH = Path(__file__).parent / "schema" / f"report-v{SCHEMA_VERSION}.schema.json"


@dataclass
class Report:
    """An mpdoctor report: what is wrong, and the facts it was judged from."""

    created: str = fact("When the checks ran (ISO 8601, UTC)")
    findings: list[Finding] = fact("Findings, errors first", factory=list)
    snapshot: Snapshot = fact("The facts the checks judged", factory=Snapshot)
    gpus: GpuView = fact("The device table: every GPU as NVML and CUDA see it, derived from the snapshot",
                         factory=GpuView)
    schema_version: int = fact("Version of this JSON layout; see the README", SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote the report", __version__)


def redacted(report: Report) -> Report:
    """A copy with every secret-looking value masked; all renderers use this."""
    return from_data(Report, redact_tree(to_data(report)))


def report_data(report: Report) -> dict:
    data = to_data(report)
    # Readers look for the version first; put the header keys on top.
    head = ("schema_version", "mpdoctor_version", "created")
    return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}


def report_schema() -> dict:
    defs: dict = {}
    root = json_schema(Report, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://mpdoctor.dev/schema/report-v{SCHEMA_VERSION}.schema.json",
        "title": "mpdoctor report",
        **root,
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(report_schema(), indent=2) + "\n"


if __name__ == "__main__":  # regenerate the shipped schema
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
