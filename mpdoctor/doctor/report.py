"""The report: findings plus the snapshot they were judged from. Its JSON is a contract.

``schema_version`` is shared with the snapshot: it changes when a field is removed,
renamed or changes type. The JSON Schema shipped in ``mpdoctor/schema/`` is
generated from these dataclasses (``python -m mpdoctor.schema``), and a test
fails when the shipped file is out of date.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpdoctor import __version__
from mpdoctor.schema.contract import ordered_data, schema_document, schema_path, version_fact
from mpdoctor.findings import Finding
from mpdoctor.analysis.gpu_table import GpuView
from mpdoctor.analysis.kernel_table import KernelView
from mpdoctor.portable.redact import redact_tree
from mpdoctor.schema.serde import fact, from_data, to_data
from mpdoctor.snapshot import SCHEMA_VERSION, Snapshot

SCHEMA_PATH = schema_path("report", SCHEMA_VERSION)


@dataclass
class Report:
    """An mpdoctor report: what is wrong, and the facts it was judged from."""

    created: str = fact("When the checks ran (ISO 8601, UTC)")
    findings: list[Finding] = fact("Findings, errors first", factory=list)
    snapshot: Snapshot = fact("The facts the checks judged", factory=Snapshot)
    gpus: GpuView = fact(
        "The device table: every GPU as NVML and CUDA see it, derived from the snapshot", factory=GpuView
    )
    kernels: KernelView = fact(
        "The microkernels' verdicts: per device, each test's accuracy and speed class "
        "against fp32 (conclusive or not, and why) and the capability matrix, judged once "
        "from snapshot.kernels",
        factory=KernelView,
    )
    schema_version: int = version_fact("Version of this JSON layout; see docs/json.md", SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote the report", __version__)


def redacted(report: Report) -> Report:
    """A copy with every secret-looking value masked; all renderers use this."""
    return from_data(Report, redact_tree(to_data(report)))


def report_data(report: Report) -> dict:
    return ordered_data(report, ("schema_version", "mpdoctor_version", "created"))


def report_schema() -> dict:
    return schema_document(Report, "report", SCHEMA_VERSION, "mpdoctor report")
