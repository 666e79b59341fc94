"""Judge a snapshot: run the selected checks, let superseded findings stand down, triage the rest."""

from __future__ import annotations

from mpdoctor.checks.registry import builtin_registry, run_checks
from mpdoctor.findings import Finding, triage
from mpdoctor.snapshot import Snapshot


def judge(snapshot: Snapshot, select: list[str] = (), ignore: list[str] = ()) -> list[Finding]:
    """Findings of the snapshot checks selected by ``select``/``ignore`` (code prefixes).

    Selection comes first; a finding then stands down only when a *selected* check
    that supersedes it fired (see ``mpdoctor.checks.registry``).
    """
    checks = builtin_registry().select(select, ignore)
    return triage(run_checks(snapshot, checks))
