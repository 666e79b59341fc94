"""Compare ranks: group identical fingerprints, name the odd ranks out, and the FLEET findings.

Pure functions of the ranks' reports: no store, no process. Identical fingerprints
are grouped first, so the differences are computed across groups, not ranks (a
1,024-rank job usually has a handful of groups). Each kind of finding is judged in a
module of its own: ``missing.py`` (ranks that sent no report), ``differences.py``
(how the groups differ, and each difference's fix), ``slow_gpus.py``, ``own_gpu.py``
(ranks without a GPU of their own), ``rank_findings.py`` (the ranks' own findings);
this module groups the ranks and puts the report together.
"""

from __future__ import annotations

import copy
import json
from dataclasses import fields, replace
from typing import Iterable, Optional

from mpdoctor.findings import triage
from mpdoctor.fleet.differences import (  # noqa: F401  (the differences' words, moved there; still importable here)
    PRECISION_PACKAGES,
    STACK_FIELDS,
    STACK_LABELS,
    STACK_PACKAGE_PREFIXES,
    differences,
    flatten,
)
from mpdoctor.fleet.fingerprint import NCCL_WHEELS
from mpdoctor.fleet.missing import GROUP_ABSENT, UNREADABLE, clipped, missing_all, never_reached  # noqa: F401
from mpdoctor.fleet.model import PER_RANK, Fingerprint, FleetReport, Group, RankReport, RankState
from mpdoctor.fleet.naming import who
from mpdoctor.fleet.own_gpu import without_own_gpu
from mpdoctor.fleet.rank_findings import rank_findings
from mpdoctor.fleet.slow_gpus import slow_gpus
from mpdoctor.snapshot import utc_timestamp


def compare(
    reports: Iterable[RankReport], world_size: int, launcher: str, absent: Iterable[RankState] = ()
) -> FleetReport:
    """The fleet report of ``reports`` (one per rank that reported) and ``absent`` (ranks that did not)."""
    reports = _with_node_facts(sorted(reports, key=lambda r: r.rank))
    groups = _groups(reports)
    states = [
        RankState(
            rank=r.rank,
            host=r.host,
            local_rank=r.local_rank,
            status="reported",
            group=next(i for i, g in enumerate(groups) if r.rank in g.ranks),
            last_step="done",
            label=r.label,
        )
        for r in reports
    ]
    absent = sorted(absent, key=lambda s: s.rank)
    findings = missing_all(absent, world_size)
    findings += differences(groups, reports)
    findings += slow_gpus(reports)
    findings += without_own_gpu(reports)
    shared, some = rank_findings(reports)
    findings += some
    return FleetReport(
        created=utc_timestamp(),
        launcher=launcher,
        world_size=world_size,
        ranks=sorted(states + absent, key=lambda s: s.rank),
        groups=groups,
        findings=triage(findings),
        rank_findings=shared,
    )


def worst(report: FleetReport) -> Optional[str]:
    """The worst severity in the report (fleet findings and the ranks' own), or None when it has none."""
    found = report.all_findings()
    return max(found, key=lambda f: f.level.rank).severity if found else None


# ---------------------------------------------------------------- groups


def _with_node_facts(reports: list[RankReport]) -> list[RankReport]:
    """Ranks that ran no kernels take their GPU's bf16 support from the rank of their node that did."""
    measured = {(r.host, device): bf16 for r in reports for device, bf16 in r.fingerprint.kernel_bf16.items()}
    out = []
    for report in reports:
        print_ = report.fingerprint  # may be shared by many ranks (decoded once): replaced, never changed
        if print_.bf16_native is None and (report.host, print_.device) in measured:
            report = replace(report, fingerprint=replace(print_, bf16_native=measured[(report.host, print_.device)]))
        out.append(report)
    return out


COMPARED = tuple(f.name for f in fields(Fingerprint) if f.name not in PER_RANK)


def _comparable(print_: Fingerprint) -> dict:
    # The fields are flat (text, or dicts of text): no deep copy needed (dataclasses.asdict was 4 s at 1,024 ranks).
    same = {name: getattr(print_, name) for name in COMPARED}
    # The nvidia-nccl wheels are compared as `nccl` (the NCCL torch loads, else the wheel's), as flatten shows them.
    same["packages"] = {name: version for name, version in print_.packages.items() if not name.startswith(NCCL_WHEELS)}
    return same


def _groups(reports: list[RankReport]) -> list[Group]:
    by_key: dict[str, Group] = {}
    for report in reports:
        key = json.dumps(_comparable(report.fingerprint), sort_keys=True)
        group = by_key.get(key)
        if group is None:
            shared = Fingerprint(
                **copy.deepcopy(_comparable(report.fingerprint)),
                executable=report.fingerprint.executable,
                device=report.fingerprint.device,
            )
            group = by_key[key] = Group(fingerprint=shared)
        group.ranks.append(report.rank)
        if report.host not in group.hosts:
            group.hosts.append(report.host)
    return sorted(by_key.values(), key=lambda g: (-len(g.ranks), g.ranks[0]))


def group_lines(report: FleetReport, limit: int = 5) -> list[str]:
    """One line per group: the largest "agree"; each other group with how it differs from the largest."""
    if not report.groups:
        return []
    base = flatten(report.groups[0].fingerprint)
    hosts = {s.rank: s.host or s.label for s in report.ranks}
    lines = [
        f"{who(report.groups[0].ranks, [hosts[r] for r in report.groups[0].ranks])} "
        f"{'agree' if len(report.groups[0].ranks) > 1 else 'is the reference'}"
    ]
    for group in report.groups[1:]:
        flat = flatten(group.fingerprint)
        diffs = [
            f"{label} {flat.get(label) or '(unset)'} (others: {base.get(label) or '(unset)'})"
            for label in sorted(set(base) | set(flat))
            if base.get(label, "") != flat.get(label, "")
        ]
        more = f", and {len(diffs) - limit} more" if len(diffs) > limit else ""
        lines.append(
            f"{who(group.ranks, [hosts[r] for r in group.ranks])} differ{'s' if len(group.ranks) == 1 else ''}"
            f": {'; '.join(diffs[:limit])}{more}"
        )
    return lines
