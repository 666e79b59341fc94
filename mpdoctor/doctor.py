"""One run of ``mpdoctor check``: facts in, triaged findings out. No printing here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.findings import Finding, Severity, triage
from mpdoctor.gpu_map import device_table
from mpdoctor.registry import builtin_registry, run_checks
from mpdoctor.report import Report
from mpdoctor.snapshot import Snapshot, load_snapshot, utc_timestamp


@dataclass
class Options:
    python: str
    timeout: float = 60.0
    kernels: str = "quick"  # microkernel sizes: quick or full; "off" skips them
    snapshot: Optional[str] = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)


def gather(options: Options) -> Snapshot:
    """Load the snapshot the user gave, or take a fresh one.

    The microkernels are the slow probe: they only run when a precision check
    is selected.
    """
    if options.snapshot:
        return load_snapshot(options.snapshot)
    from mpdoctor.probes.collect import take_snapshot

    checks = builtin_registry().select(options.select, options.ignore)
    wanted = any(entry.family == "precision" for entry in checks)
    return take_snapshot(options.python, options.timeout, options.kernels if wanted else "off")


def judge(snapshot: Snapshot, select: list[str] = (), ignore: list[str] = ()) -> list[Finding]:
    checks = builtin_registry().select(select, ignore)
    return triage(run_checks(snapshot, checks))


def diagnose(options: Options) -> Report:
    snapshot = gather(options)
    return Report(created=utc_timestamp(), findings=judge(snapshot, options.select, options.ignore), snapshot=snapshot,
                  gpus=device_table(snapshot))


def exit_code(findings: list[Finding], fail_on: str) -> int:
    """1 when any finding is at or above ``fail_on``, else 0."""
    if fail_on == "never":
        return 0
    threshold = Severity(fail_on).rank
    return 1 if any(f.level.rank >= threshold for f in findings) else 0
