"""Helpers shared by check families: reading common facts off the snapshot."""

from __future__ import annotations

from typing import Optional

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from mpdoctor.checks import fixes
from mpdoctor.analysis.capability import parse_capability
from mpdoctor.findings import FixStep
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.snapshot import Distribution, NvmlGpu, Snapshot, canonical_name


def gpus(snap: Snapshot) -> list[NvmlGpu]:
    return snap.machine.nvml.usable_gpus


def capability(gpu: NvmlGpu) -> Optional[int]:
    """NVML's "8.6" as 86; None when NVML did not say."""
    return parse_capability(gpu.compute_capability)


def driver_evidence(snap: Snapshot) -> list[str]:
    nvml = snap.machine.nvml
    lines = [f"NVIDIA driver {nvml.driver_version} supports CUDA up to {nvml.cuda_driver_version or '?'}"]
    lines += [f"NVML GPU {g.index}: {g.name} (compute capability {g.compute_capability or '?'})" for g in gpus(snap)]
    return lines


def tail(text: str, lines: int = 6) -> str:
    """The last ``lines`` lines of ``text`` (a traceback, a child's stderr): lines as a terminal shows them, so a
    NEL or U+2028 inside an error message keeps the message whole."""
    return "\n".join(split_lines(text.strip())[-lines:])


def is_cuda_build(snap: Snapshot) -> bool:
    return snap.torch.status == "imported" and bool(snap.torch.cuda)


def requirement_applies(req: Requirement, markers: dict[str, str]) -> bool:
    """Does the requirement apply to this interpreter? Extras are never assumed."""
    if req.marker is None:
        return True
    try:
        return req.marker.evaluate({**markers, "extra": ""}) if markers else True
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True


def requirers(snap: Snapshot, name: str) -> list[tuple[Distribution, Requirement]]:
    """Installed distributions whose (applicable) requirements name ``name``."""
    wanted = canonical_name(name)
    out = []
    for dist in snap.environment.distributions:
        for line in dist.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if canonical_name(req.name) == wanted and requirement_applies(req, snap.environment.markers):
                out.append((dist, req))
                break
    return out


def arch_fix_steps(snap: Snapshot, caps: list[int]) -> list[FixStep]:
    """Reinstall torch from the official CUDA variant that has code for these compute capabilities."""
    cuda = fixes.best_cuda_variant(snap, snap.machine.nvml.cuda_driver_version, caps)
    if cuda:
        return [fixes.reinstall_torch_step(snap, cuda, f"Install the CUDA {cuda} build, which has code for it")]
    return [
        FixStep(
            "No official build known to mpdoctor covers this GPU with this driver; upgrade the driver or "
            "build torch from source with TORCH_CUDA_ARCH_LIST set"
        )
    ]
