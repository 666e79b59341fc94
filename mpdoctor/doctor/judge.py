"""Judge a snapshot: run the selected checks, triage what they found."""

from __future__ import annotations

from mpdoctor.checks.registry import builtin_registry, run_checks
from mpdoctor.findings import Finding, triage
from mpdoctor.snapshot import Snapshot


def judge(snapshot: Snapshot, select: list[str] = (), ignore: list[str] = ()) -> list[Finding]:
    checks = builtin_registry().select(select, ignore)
    return triage(run_checks(snapshot, checks))
