"""FLEET002 to FLEET004, FLEET006: how the groups of identical fingerprints differ, and the fix for each difference.

A fingerprint is flattened into labelled text values ("torch", "package numpy", "env NCCL_ALGO"); a label whose
values differ across groups is one finding, the majority value the reference and the other ranks the odd ones
out. The torch stack differing is an error; the driver, the GPU and the precision packages a warning; any other
package one info finding for all of them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

from packaging.version import InvalidVersion, Version

from mpdoctor.checks import fleet as rules
from mpdoctor.checks.fixes import command, index_for, local_label
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.fleet.fingerprint import LAUNCH_ENV, NCCL_WHEELS
from mpdoctor.fleet.model import Fingerprint, Group, RankReport
from mpdoctor.fleet.naming import who

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


def differences(groups: list[Group], reports: list[RankReport]) -> list[Finding]:
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
        # "on most ranks" only for a real majority: two ranks that disagree one to one have none.
        majority = len(ordered[0][1]) > len(ordered[1][1])
        reference = who(sorted(ordered[0][1]), [hosts[x] for x in sorted(ordered[0][1])])
        fix = _fix(label, common, "most ranks" if majority else f"{reference}; no value has a majority")
        if label == STACK_FIELDS["torch_cuda"]:
            fix = _same_torch_build(groups, flats, label, ordered[0][0]) or fix
        out.append(rule.stamp(severity(title, evidence, fix)))
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
    if label == "env WORLD_SIZE":  # a rank launched into a job of another size: its first collective hangs
        return error, rules.ENV_DIFFERS
    return warning, rules.ENV_DIFFERS


def _fix(label: str, common: str, where: str = "most ranks") -> list[FixStep]:
    """The fix of a difference in ``label`` whose reference value ``common`` is on ``where`` (most ranks, or the
    ranks named when no value has a majority)."""
    if label.startswith("package ") and common == "(unset)":
        name = label[len("package ") :]
        return [FixStep(f"Install the same packages on every node: only the odd ranks have {name}")]
    if label.startswith("package "):
        return [_install_step(label[len("package ") :], common)]
    if label == STACK_FIELDS["torch"] and common != "(unset)":
        # torch as it imports (torch.__version__): the same install makes the odd ranks' torch the reference's
        return [_install_step("torch", common)]
    if label.startswith("env ") and label[len("env ") :] in LAUNCH_ENV:
        name = label[len("env ") :]
        return [
            FixStep(
                f"Leave {name} to the launcher (it sets it for every rank): a job script that sets it for some "
                f"ranks launches them into another job than the others ({name}={common} on {where})"
            )
        ]
    if label.startswith("env "):
        name = label[len("env ") :]
        return [
            FixStep(
                f"Set {name} the same way for every rank, in the job script"
                + ("" if common == "(unset)" else f" ({name}={common} on {where})"),
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


def _same_torch_build(groups: list[Group], flats: list[dict[str, str]], label: str, common: str) -> list[FixStep]:
    """torch's CUDA differing is a different torch build: the fix is the reference ranks' torch, installed on the
    odd ones (its version names the CUDA, ``2.13.0+cu130``). Nothing when the ranks with the common CUDA do not
    agree on one torch, or have none: then which build to install is not for mpdoctor to guess."""
    builds = {flat.get("torch", "") for flat in flats if flat.get(label, "") == common}
    if len(builds) != 1 or not common:
        return []
    (build,) = builds
    return [_install_step("torch", build)] if build and build != "None" else []


def _install_step(name: str, version: str) -> FixStep:
    """Install ``name`` at the reference ranks' ``version`` on the odd ranks' nodes: the pip command, from the
    PyTorch index a local build (``2.13.0+cu130``) is on (PyPI has no local versions); words only for a version
    no package index serves (a source build's ``2.6.0a0+git1234``, a container's ``+nv25.01``, no version at
    all), which pip could not install."""
    command_ = install_command(name, version)
    if command_ is None:
        return FixStep(
            f"Install {name} {version} on the odd ranks' nodes from the image or wheel the other ranks have it from: "
            "no package index serves that build"
        )
    return FixStep(f"Install {name} {version} on the odd ranks' nodes (or the same image everywhere)", command_)


def install_command(name: str, version: str) -> Optional[str]:
    """``python -m pip install NAME==VERSION`` with the index options it needs (fixes.index_for), or None when pip
    could not find that version anywhere: not a version (PEP 440), or a local build whose label is no PyTorch
    index's."""
    try:
        local = Version(version).local
    except InvalidVersion:
        return None
    if local and not local_label(version):
        return None
    spec = f"{name}=={version}"
    return command("python", "-m", "pip", "install", spec, *index_for([spec]))
