"""Compare ranks: group identical fingerprints, name the odd ranks out, and the FLEET findings.

Pure functions of the ranks' reports: no store, no process. Identical fingerprints
are grouped first, so the differences are computed across groups, not ranks (a
1,024-rank job usually has a handful of groups).
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from dataclasses import fields, replace
from typing import Iterable, Optional

from mpdoctor.checks import fleet as rules
from mpdoctor.checks.fixes import command, index_for
from mpdoctor.findings import Finding, FixStep, error, info, triage, warning
from mpdoctor.fleet.fingerprint import NCCL_WHEELS
from mpdoctor.fleet.model import PER_RANK, Fingerprint, FleetReport, Group, RankReport, RankState
from mpdoctor.fleet.naming import rank_list, who
from mpdoctor.fleet.rank_findings import rank_findings
from mpdoctor.fleet.slow_gpus import slow_gpus
from mpdoctor.snapshot import utc_timestamp

# The torch stack: a difference here hangs or corrupts collectives, so it is an error.
STACK_FIELDS = {"torch": "torch", "torch_cuda": "torch's CUDA", "cudnn": "cuDNN", "python": "Python"}
STACK_LABELS = (*STACK_FIELDS.values(), "NCCL")
STACK_PACKAGE_PREFIXES = ("nvidia-nccl", "nvidia-cudnn", "nvidia-cublas", "nvidia-cuda-runtime", "torch", "triton")
PRECISION_PACKAGES = (
    "apex",
    "transformers",
    "accelerate",
    "deepspeed",
    "flash-attn",
    "xformers",
    "megatron-core",
    "transformer-engine",
    "bitsandbytes",
    "numpy",
    "oneflow",
    "onediff",
    "mpdoctor",
)


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
    findings = _missing_all(absent, world_size)
    findings += _differences(groups, reports)
    findings += slow_gpus(reports)
    findings += _without_own_gpu(reports)
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


def flatten(print_: Fingerprint) -> dict[str, str]:
    """A fingerprint as labelled text values: what a difference is shown as ("package numpy", "env NCCL_ALGO")."""
    flat = {label: str(getattr(print_, name)) for name, label in STACK_FIELDS.items()}
    # NCCL as torch loads it, or the wheel's version (said so): it stands for the nvidia-nccl packages, not beside them.
    flat["NCCL"] = (
        ""
        if not print_.nccl
        else f"{print_.nccl} (as torch loads it)"
        if print_.nccl_source == "torch"
        else f"{print_.nccl} ({print_.nccl_source} wheel)"
    )
    flat.update(
        {
            "NVIDIA driver": print_.driver,
            "CUDA the driver supports": print_.cuda_driver,
            "GPU": print_.gpu,
            "compute capability": print_.compute_capability,
            "bf16 native": "" if print_.bf16_native is None else str(print_.bf16_native).lower(),
        }
    )
    flat.update(
        {f"package {name}": version for name, version in print_.packages.items() if not name.startswith(NCCL_WHEELS)}
    )
    flat.update({f"env {name}": value for name, value in print_.env.items()})
    return flat


def _differences(groups: list[Group], reports: list[RankReport]) -> list[Finding]:
    if len(groups) < 2:
        return []
    hosts = {r.rank: r.host for r in reports}
    flats = [flatten(g.fingerprint) for g in groups]
    labels = sorted({label for flat in flats for label in flat})
    out, minor = [], []
    for label in labels:
        values: dict[str, list[int]] = defaultdict(list)
        for group, flat in zip(groups, flats):
            values[flat.get(label, "")].extend(group.ranks)
        if len(values) < 2:
            continue
        # The majority value first; the others are the odd ranks out.
        ordered = sorted(values.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
        evidence = [
            f"{label} = {value or '(unset)'}: {who(sorted(r), [hosts[x] for x in sorted(r)])}" for value, r in ordered
        ]
        odd = sorted(rank for _, ranks in ordered[1:] for rank in ranks)
        odd_text = who(odd, [hosts[r] for r in odd])
        common, others = ordered[0][0] or "(unset)", ", ".join(v or "(unset)" for v, _ in ordered[1:])
        title = f"{label} differs: {others} on {odd_text}, {common} on the other {len(ordered[0][1])}"
        severity, rule = _judge_difference(label)
        if severity is None:
            minor.append(evidence)
            continue
        out.append(rule.stamp(severity(title, evidence, _fix(label, common))))
    if minor:
        out.append(
            rules.STACK_DIFFERS.stamp(
                info(
                    f"{len(minor)} other installed package(s) differ across ranks",
                    [line for evidence in minor for line in evidence][:40],
                    [
                        FixStep(
                            "Install from one lock file or image on every node, then compare the package lists",
                            "mpdoctor fleet compare A.json B.json",
                        )
                    ],
                )
            )
        )
    return out


def _judge_difference(label: str):
    """(severity function or None for a minor package, the rule) of a difference labelled ``label``."""
    if label in STACK_LABELS:
        return error, rules.STACK_DIFFERS
    if label.startswith("package "):
        name = label[len("package ") :]
        if name.startswith(STACK_PACKAGE_PREFIXES):
            return error, rules.STACK_DIFFERS
        return (warning, rules.STACK_DIFFERS) if name in PRECISION_PACKAGES else (None, rules.STACK_DIFFERS)
    if label in ("NVIDIA driver", "CUDA the driver supports"):
        return warning, rules.DRIVER_DIFFERS
    if label in ("GPU", "compute capability", "bf16 native"):
        return warning, rules.GPU_DIFFERS
    return warning, rules.ENV_DIFFERS


def _fix(label: str, common: str) -> list[FixStep]:
    if label.startswith("package "):
        name = label[len("package ") :]
        return [
            FixStep(
                f"Install {name} {common} on the odd ranks' nodes (or the same image everywhere)",
                # A local build (torch==2.13.0+cu126) is on its PyTorch index only, never on PyPI.
                command("python", "-m", "pip", "install", f"{name}=={common}", *index_for([f"{name}=={common}"])),
            )
        ]
    if label.startswith("env "):
        name = label[len("env ") :]
        return [
            FixStep(
                f"Set {name} the same way for every rank, in the job script"
                + ("" if common == "(unset)" else f" ({name}={common} on most ranks)"),
                f"unset {name}" if common == "(unset)" else None,
            )
        ]
    if label == "NCCL":
        return [
            FixStep(
                f"Give every rank the same NCCL ({common}): one image or lock file, and no other libnccl "
                "earlier on LD_LIBRARY_PATH; then check which one torch loads on each node",
                "python -c 'import torch; print(torch.cuda.nccl.version())'",
            )
        ]
    if label in ("NVIDIA driver", "CUDA the driver supports"):
        return [FixStep(f"Install driver {common} on the odd nodes, or drain them", "nvidia-smi")]
    if label in ("GPU", "compute capability", "bf16 native"):
        return [FixStep("Schedule the job on one GPU model (e.g. sbatch --constraint), or use a dtype all support")]
    return [FixStep(f"Use the same {label} ({common}) on every node: one image or lock file")]


# ---------------------------------------------------------------- missing ranks


UNREADABLE = "its report could not be read"  # a RankState's detail begins so for a rank whose report was garbage


GROUP_ABSENT = 8  # more ranks than this that never reached the store are one finding, not one each


def never_reached(state: RankState) -> bool:
    """A rank that left nothing in the store: no heartbeat (so no host, no step), no report."""
    return not state.host and not state.last_step and not state.detail.startswith(UNREADABLE)


def _missing_all(absent: list[RankState], world_size: int) -> list[Finding]:
    """A finding per rank that did not report; those that never reached the store, when many, as one."""
    never = [state for state in absent if never_reached(state)]
    if len(never) <= GROUP_ABSENT:
        return [_missing(state, world_size) for state in absent]
    ranks = [state.rank for state in never]
    grouped = rules.RANK_MISSING.stamp(
        error(
            f"{len(ranks)} ranks never reached the store: {clipped(rank_list(ranks))}",
            [f"ranks {clipped(rank_list(ranks))} of {world_size}: missing", never[0].detail],
            [
                FixStep(
                    "Check that those ranks started, and that MASTER_ADDR:MASTER_PORT is reachable from their nodes; "
                    "then run the single-process check on one of them",
                    "mpdoctor check",
                )
            ],
        )
    )
    return [grouped] + [_missing(state, world_size) for state in absent if not never_reached(state)]


def clipped(text: str, limit: int = 400) -> str:
    """A list of rank spans as a title quotes it: thousands of scattered ranks are not repeated whole."""
    if len(text) <= limit:
        return text
    cut = text.rfind(",", 0, limit)
    return text[: cut if cut > 0 else limit] + ", ..."


def _missing(state: RankState, world_size: int) -> Finding:
    where = (
        f" on {state.host}" + (f" (local rank {state.local_rank})" if state.local_rank is not None else "")
        if state.host
        else ""
    )
    since = f" for {state.step_seconds:.0f} s" if state.step_seconds is not None else ""
    if state.detail.startswith(UNREADABLE):  # it reached the store, and what it wrote there is not a report
        step = ", only a value mpdoctor could not read"
    elif not state.last_step:
        step = "; it never reached the store"
    elif state.status == "crashed":
        step = f"; last step: {state.last_step}{since}"
    else:  # the step its heartbeat last announced, in words: "stuck importing torch for 60 s"
        step = f": stuck {state.last_step}{since}"
    verb = "crashed" if state.status == "crashed" else "sent no report"
    return rules.RANK_MISSING.stamp(
        error(
            f"rank {state.rank}{where} {verb}{step}",
            [f"rank {state.rank} of {world_size}: {state.status}", state.detail]
            if state.detail
            else [f"rank {state.rank} of {world_size}: {state.status}"],
            [
                FixStep(
                    f"Run the single-process check on {state.host or 'that node'}, in that rank's environment",
                    "mpdoctor check",
                )
            ],
        )
    )


# ---------------------------------------------------------------- each rank's own GPU


def _without_own_gpu(reports: list[RankReport]) -> list[Finding]:
    """Ranks whose LOCAL_RANK selects no visible GPU, and GPUs that two ranks of one node select."""
    out = []
    short = [r for r in reports if r.fingerprint.device_problem]
    if short:
        out.append(
            rules.NO_GPU_OF_ITS_OWN.stamp(
                warning(
                    f"{who([r.rank for r in short], [r.host for r in short])}: LOCAL_RANK selects no GPU of its own",
                    [
                        f"rank {r.rank} on {r.host or r.label} (local rank {r.local_rank}): {r.fingerprint.device_problem}"
                        for r in short[:20]
                    ]
                    + ([f"and {len(short) - 20} more"] if len(short) > 20 else []),
                    [
                        FixStep(
                            "Start as many ranks per node as it has visible GPUs, e.g.",
                            "torchrun --nproc-per-node gpu ...",
                        ),
                        FixStep("Or give each rank one GPU and select cuda:0 in the script (srun --gpus-per-task=1)"),
                    ],
                )
            )
        )
    by_gpu: dict[tuple[str, str], list[RankReport]] = defaultdict(list)
    for report in reports:
        if report.fingerprint.device_uuid and not report.fingerprint.device_problem:
            by_gpu[(report.host, report.fingerprint.device_uuid)].append(report)
    for (host, uuid), sharing in sorted(by_gpu.items()):
        if len(sharing) < 2:
            continue
        ranks = [r.rank for r in sharing]
        out.append(
            rules.NO_GPU_OF_ITS_OWN.stamp(
                warning(
                    f"ranks {rank_list(ranks)} on {host} select the same GPU ({uuid})",
                    [f"rank {r.rank} (local rank {r.local_rank}): {r.fingerprint.device} = {uuid}" for r in sharing],
                    [
                        FixStep(
                            "Give each rank of the node its own GPU: leave CUDA_VISIBLE_DEVICES the same for all and "
                            "use cuda:LOCAL_RANK, or set it per rank to a different GPU"
                        )
                    ],
                )
            )
        )
    return out


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
