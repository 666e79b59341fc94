"""``mpdoctor check`` end to end: gather, judge, and the report that renderers format."""

from __future__ import annotations

from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.doctor.gather import Options, gather
from mpdoctor.doctor.judge import judge
from mpdoctor.doctor.report import Report
from mpdoctor.snapshot import utc_timestamp


def diagnose(options: Options) -> Report:
    snapshot = gather(options)
    return Report(created=utc_timestamp(), findings=judge(snapshot, options.select, options.ignore), snapshot=snapshot,
                  gpus=device_table(snapshot))
