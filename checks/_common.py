"""Helpers shared by check families: reading common facts off the snapshot."""

from __future__ import annotations

from typing import Optional

from mpdoctor.snapshot import NvmlGpu, Snapshot


def gpus(snap: Snapshot) -> list[NvmlGpu]:
    nvml = snap.machine.nvml
    return nvml.gpus if nvml.status == "ok" else []


def capability(gpu: NvmlGpu) -> Optional[int]:
    """NVML's "8.6" as 86; None when NVML did not say."""
    major, _, minor = gpu.compute_capability.partition(".")
    return int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() else None


def driver_evidence(snap: Snapshot) -> list[str]:
    nvml = snap.machine.nvml
    lines = [f"NVIDIA driver {nvml.driver_version} supports CUDA up to {nvml.cuda_driver_version or '?'}"]
    lines += [f"NVML GPU {g.index}: {g.name} (compute capability {g.compute_capability or '?'})" for g in gpus(snap)]
    return lines


def tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def is_cuda_build(snap: Snapshot) -> bool:
    return snap.torch.status == "imported" and bool(snap.torch.cuda)
