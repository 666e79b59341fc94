"""Helpers shared by the gpu family: describing devices and the environment variables."""

from __future__ import annotations

from typing import Optional

from mpdoctor.analysis import capability
from mpdoctor.analysis.gpu_table import DeviceRow, GpuView
from mpdoctor.analysis.visible_devices import shown_value


def gib(size: Optional[int]) -> str:
    return f"{size / 1024**3:.0f} GiB" if size else "? GiB"


def precisions(row: DeviceRow) -> str:
    return ", ".join(f"{name} {getattr(row, name)}" for name in capability.PRECISIONS if getattr(row, name))


def describe(row: DeviceRow) -> str:
    """``cuda:0 = nvidia-smi 1: NVIDIA TITAN RTX (cc 7.5, 24 GiB; fp16 tensor-cores, ...)``, or why CUDA does not see it."""
    where = f"nvidia-smi {row.nvml_index}" if row.nvml_index is not None else "no NVML match"
    if row.cuda_ordinal is None:
        return (
            f"{where}: {row.name or 'unknown'} ({row.pci_bus_id or '?'}) not visible to CUDA: {row.not_visible_reason}"
        )
    how = f", matched by {row.matched_by}" if row.matched_by else ""
    return (
        f"cuda:{row.cuda_ordinal} = {where}: {row.name or 'unknown'} (cc {row.compute_capability or '?'}, "
        f"{gib(row.memory_total)}; {precisions(row) or 'precision support unknown'}{how})"
    )


def env_evidence(view: GpuView) -> list[str]:
    order = view.cuda_device_order
    cvd = view.cuda_visible_devices
    return [
        f"CUDA_DEVICE_ORDER={order}"
        if order is not None
        else "CUDA_DEVICE_ORDER unset (CUDA's default: FASTEST_FIRST)",
        f"CUDA_VISIBLE_DEVICES={shown_value(cvd)!r}"
        if cvd is not None
        else "CUDA_VISIBLE_DEVICES unset (every GPU visible)",
    ]


def strength(row: DeviceRow) -> tuple[int, int]:
    """Orders devices by precision capability, then memory."""
    return row.cc or 0, row.memory_total or 0


def clearly_stronger(a: DeviceRow, b: DeviceRow) -> bool:
    """``a`` has a higher compute capability, or the same one and over 10% more memory."""
    if a.cc is None or b.cc is None:
        return False
    if a.cc != b.cc:
        return a.cc > b.cc
    return bool(a.memory_total and b.memory_total and a.memory_total > 1.1 * b.memory_total)


def precision_profile(row: DeviceRow) -> tuple[str, ...]:
    return tuple(getattr(row, name) for name in capability.PRECISIONS)


def predicted(view: GpuView) -> bool:
    return any(row.source == "predicted" for row in view.visible)
