"""Helpers for the precision family: reading measured microkernel results off the snapshot."""

from __future__ import annotations

from typing import Optional

from mpdoctor.analysis.kernel_view import (
    NO_GAIN,
    conclusive_speed,
    faster,
    hardware_level,
    is_gpu,
    kernel_name,
    label,
    measured,
    ratio_text,
    result,
    short,
)
from mpdoctor.portable.kernel_names import FUSED_SDPA, LOW_PRECISION, TIMED_OPS
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot

FAMILY = "precision"
# The kernel runner's own vocabulary (portable/kernel_names.py), by the names the precision family reads it by:
# the ops that compute numbers, and the dtypes of mixed precision every device is tested in.
NUMERIC_OPS, LOW = TIMED_OPS, LOW_PRECISION
FAILED = ("unsupported", "error")
NO_KERNEL_IMAGE = "no kernel image is available"


# What mpdoctor's own way of running leaves in a device's or a kernel's detail, when that,
# not the device, is why it could not be measured:
# * real torch's refusal in a worker forked after its parent touched CUDA (its own text,
#   from torch/cuda/__init__.py's _lazy_init): mpdoctor's process model, never the GPU's;
# * the kernel runner's words for a device whose share of --timeout ran out
#   (kernel_runner.WORDING; older runners said "the job's time ran out").
FORK_REFUSED = "Cannot re-initialize CUDA in forked subprocess"
OUT_OF_TIME = ("the device's time ran out", "the job's time ran out")


def no_kernel_image(r: KernelResult) -> bool:
    return NO_KERNEL_IMAGE in r.detail


def own_failure(detail: str) -> str:
    """Why mpdoctor itself, not the device, left this unmeasured: "process" or "time"; "" when it did not."""
    if FORK_REFUSED in detail:
        return "process"
    if any(words in detail for words in OUT_OF_TIME):
        return "time"
    return ""


def sdpa_runs(device: DeviceKernels, dtype: str, backends=FUSED_SDPA + ("math",)) -> list[str]:
    return [b for b in backends if (r := result(device, "sdpa", dtype, b)) is not None and r.status == "ok"]


def sdpa_tried(device: DeviceKernels, dtype: str) -> list[KernelResult]:
    return [r for r in device.results if r.op == "sdpa" and r.dtype == dtype and r.backend and r.status != "skipped"]


def best_dtype(snap: Snapshot, device: DeviceKernels, op: str) -> tuple[str, Optional[float]]:
    """The fastest dtype that ran correctly for ``op`` (fp32, fp16 or bf16) and its speed-up.

    A dtype counts as faster than fp32 only when its whole measured spread is.
    """
    best, best_ratio = "float32", 1.0
    for dtype in LOW:
        r = result(device, op, dtype)
        ratio = faster(snap, device, r) if r else None
        if ratio is not None and ratio > best_ratio:
            best, best_ratio = dtype, ratio
    base = result(device, op, "float32")
    if best == "float32" and (base is None or base.status != "ok"):
        return "", None
    return best, best_ratio


def use_instead(snap: Snapshot, device: DeviceKernels, op: str, avoid: str) -> str:
    """Advice naming the measured best dtype other than ``avoid`` for ``op``."""
    best, ratio = best_dtype(snap, device, op)
    if not best or best == avoid:
        return ""
    if best == "float32":
        return f"stay in fp32 for {op} on {label(device)}"
    return f"use {short(best)} on {label(device)}: its {op} ran {ratio_text(ratio)}"


def bf16_misreported(snap: Snapshot, device: DeviceKernels) -> bool:
    """torch.cuda.is_bf16_supported() says yes on a GPU that only emulates bf16, and it shows."""
    if not is_gpu(device) or not device.bf16_supported:
        return False
    emulated = device.bf16_native is False or hardware_level(snap, device, "bfloat16") == "emulated"
    r = result(device, "matmul", "bfloat16")
    if not emulated or r is None:
        return False
    measured_speed = conclusive_speed(snap, device, r)  # no real gain, beyond doubt
    return r.status in FAILED or (measured_speed is not None and measured_speed.high < NO_GAIN)


def missing_images(snap: Snapshot) -> list[tuple[DeviceKernels, list[str]]]:
    """Devices where a kernel failed with "no kernel image", with what failed."""
    out = []
    for device in measured(snap):
        where = [kernel_name(r) for r in device.results if no_kernel_image(r)]
        if device.status != "ok" and NO_KERNEL_IMAGE in device.detail:
            where.insert(0, "starting the device")
        if where:
            out.append((device, where))
    return out
