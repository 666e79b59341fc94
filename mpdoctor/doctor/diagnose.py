"""``mpdoctor check`` end to end: gather, judge, and the report that renderers format."""

from __future__ import annotations

from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.analysis.kernel_matrix import kernel_table
from mpdoctor.doctor.gather import Options, gather
from mpdoctor.doctor.judge import judge
from mpdoctor.doctor.report import Report
from mpdoctor.snapshot import Snapshot, utc_timestamp


def diagnose(options: Options) -> Report:
    return report_of(gather(options), options.select, options.ignore)


def report_of(snapshot: Snapshot, select: list[str] = (), ignore: list[str] = ()) -> Report:
    """The report of ``snapshot``: the selected checks' findings, and its device table. The one report builder:
    ``mpdoctor check`` and each rank of ``mpdoctor fleet`` (``fleet.rank``) build theirs here."""
    return Report(
        created=utc_timestamp(),
        findings=judge(snapshot, select, ignore),
        snapshot=snapshot,
        gpus=device_table(snapshot),
        kernels=kernel_table(snapshot),
    )
