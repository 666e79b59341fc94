"""The ranks' own findings, shared out: one entry per finding with the ranks it was found on.

A serious finding on some ranks only is itself a FLEET finding (``FINDING_ON_SOME``): the
ranks of one job should see the same machine problems. A rank that ran no kernels takes
the kernel findings of its node's rank that did.
"""

from __future__ import annotations

from mpdoctor.checks import fleet as rules
from mpdoctor.checks.registry import builtin_registry
from mpdoctor.findings import Finding, FixStep, warning
from mpdoctor.fleet.model import RankReport, SharedFinding
from mpdoctor.fleet.naming import rank_list, who


def kernel_codes() -> frozenset[str]:
    """The codes of the checks that judge the microkernels (``needs=("kernels",)``)."""
    return frozenset(entry.code for entry in builtin_registry() if "kernels" in entry.needs)


def _findings_of(report: RankReport, runners: dict[str, RankReport], measured: frozenset[str]) -> list[Finding]:
    """A rank's findings; one that ran no kernels takes the kernel findings of its node's rank that did."""
    runner = runners.get(report.host)
    if report.node_kernels or runner is None:
        return report.findings
    return [f for f in report.findings if f.code not in measured] + [f for f in runner.findings if f.code in measured]


def rank_findings(reports: list[RankReport]) -> tuple[list[SharedFinding], list[Finding]]:
    everyone = {r.rank for r in reports}
    hosts = {r.rank: r.host for r in reports}
    runners = {r.host: r for r in reports if r.node_kernels}
    measured = kernel_codes()
    shared: dict[tuple[str, str], SharedFinding] = {}
    for report in reports:
        for finding in _findings_of(report, runners, measured):
            entry = shared.setdefault((finding.code, finding.title), SharedFinding(finding=finding))
            if report.rank not in entry.ranks:
                entry.ranks.append(report.rank)
    some = []
    for entry in shared.values():
        entry.on_all = set(entry.ranks) == everyone
        if not entry.on_all and entry.finding.level.rank >= 2:
            without = sorted(everyone - set(entry.ranks))
            some.append(
                rules.FINDING_ON_SOME.stamp(
                    warning(
                        f"{entry.finding.code or 'a finding'} on {who(entry.ranks, [hosts[r] for r in entry.ranks])} "
                        f"only: {entry.finding.title}",
                        [f"found on: ranks {rank_list(entry.ranks)}", f"not found on: ranks {rank_list(without)}"],
                        [
                            FixStep(
                                f"Read its fix: mpdoctor rule {entry.finding.code}"
                                if entry.finding.code
                                else "Follow the finding's own fix on those ranks"
                            )
                        ],
                    )
                )
            )
    ordered = sorted(shared.values(), key=lambda s: (-s.finding.level.rank, not s.on_all, s.finding.code))
    return ordered, some
