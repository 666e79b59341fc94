"""Helpers for the precision family: reading measured microkernel results off the snapshot."""

from __future__ import annotations

from typing import Optional

from mpdoctor.capability import parse_capability, support
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot

FAMILY = "precision"
SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}
NUMERIC_OPS = ("matmul", "conv2d", "layer_norm", "softmax", "sdpa")
LOW = ("float16", "bfloat16")
FUSED_SDPA = ("flash", "efficient", "cudnn")
FAILED = ("unsupported", "error")
NO_KERNEL_IMAGE = "no kernel image is available"
SLOWER = 0.67  # a dtype at under 2/3 of fp32's speed is "far slower"
NO_GAIN = 1.5  # on hardware that only emulates a dtype, under 1.5x fp32 is no real gain


def measured(snap: Snapshot) -> list[DeviceKernels]:
    """Devices whose kernels ran (wholly or in part)."""
    return [d for d in snap.kernels.devices if d.results or d.status != "not-run"]


def is_gpu(device: DeviceKernels) -> bool:
    return device.device.startswith("cuda")


def label(device: DeviceKernels) -> str:
    """``cuda:1 (NVIDIA GeForce GTX 1080 Ti, cc 6.1)`` or ``the CPU (AVX2, 2 threads)``."""
    if not is_gpu(device):
        parts = [device.name] if device.name else []
        parts += [f"{device.threads} threads"] if device.threads else []
        return f"the CPU ({', '.join(parts)})" if parts else "the CPU"
    cc = f", cc {device.compute_capability}" if device.compute_capability else ""
    return f"{device.device} ({device.name or 'unknown GPU'}{cc})" if device.name or cc else device.device


def result(device: DeviceKernels, op: str, dtype: str, backend: str = "") -> Optional[KernelResult]:
    for r in device.results:
        if r.op == op and r.dtype == dtype and r.backend == backend:
            return r
    return None


def speedup(device: DeviceKernels, r: KernelResult) -> Optional[float]:
    """fp32 time / this time for the same op on the same device (>1: faster than fp32)."""
    base = result(device, r.op, "float32")
    if r.status != "ok" or not r.seconds or not base or base.status != "ok" or not base.seconds:
        return None
    return base.seconds / r.seconds


def ratio_text(ratio: float) -> str:
    """2.9 -> "2.9x faster than fp32"; 0.04 -> "25x slower than fp32"."""
    if ratio >= 1:
        return f"{ratio:.1f}x faster than fp32" if ratio >= 1.05 else "as fast as fp32"
    slower = 1 / ratio
    return f"{slower:.1f}x slower than fp32" if slower < 10 else f"{slower:.0f}x slower than fp32"


def no_kernel_image(r: KernelResult) -> bool:
    return NO_KERNEL_IMAGE in r.detail


def capability(snap: Snapshot, device: DeviceKernels) -> Optional[int]:
    """The device's compute capability: measured, else what the torch probe saw for that ordinal."""
    cc = parse_capability(device.compute_capability)
    if cc is not None or not is_gpu(device):
        return cc
    ordinal = device.device.partition(":")[2]
    for known in snap.torch.devices:
        if str(known.ordinal) == ordinal:
            return parse_capability(known.compute_capability)
    return None


def hardware_level(snap: Snapshot, device: DeviceKernels, dtype: str) -> str:
    """What the GPU's architecture promises for ``dtype`` (see mpdoctor.capability); "" for the CPU."""
    cc = capability(snap, device)
    return support(cc).get(SHORT.get(dtype, ""), "") if is_gpu(device) and cc is not None else ""


def sdpa_runs(device: DeviceKernels, dtype: str, backends=FUSED_SDPA + ("math",)) -> list[str]:
    return [b for b in backends if (r := result(device, "sdpa", dtype, b)) is not None and r.status == "ok"]


def sdpa_tried(device: DeviceKernels, dtype: str) -> list[KernelResult]:
    return [r for r in device.results if r.op == "sdpa" and r.dtype == dtype and r.backend and r.status != "skipped"]


def best_dtype(device: DeviceKernels, op: str) -> tuple[str, Optional[float]]:
    """The fastest dtype that ran correctly for ``op`` (fp32, fp16 or bf16) and its speed-up."""
    best, best_ratio = "float32", 1.0
    for dtype in LOW:
        r = result(device, op, dtype)
        ratio = speedup(device, r) if r else None
        if ratio is not None and ratio > best_ratio:
            best, best_ratio = dtype, ratio
    base = result(device, op, "float32")
    if best == "float32" and (base is None or base.status != "ok"):
        return "", None
    return best, best_ratio


def use_instead(device: DeviceKernels, op: str, avoid: str) -> str:
    """Advice naming the measured best dtype other than ``avoid`` for ``op``."""
    best, ratio = best_dtype(device, op)
    if not best or best == avoid:
        return ""
    if best == "float32":
        return f"stay in fp32 for {op} on {label(device)}"
    return f"use {SHORT[best]} on {label(device)}: its {op} ran {ratio_text(ratio)}"


def bf16_misreported(snap: Snapshot, device: DeviceKernels) -> bool:
    """torch.cuda.is_bf16_supported() says yes on a GPU that only emulates bf16, and it shows."""
    if not is_gpu(device) or not device.bf16_supported:
        return False
    emulated = device.bf16_native is False or hardware_level(snap, device, "bfloat16") == "emulated"
    r = result(device, "matmul", "bfloat16")
    if not emulated or r is None:
        return False
    ratio = speedup(device, r)
    return r.status in FAILED or (ratio is not None and ratio < NO_GAIN)


def missing_images(snap: Snapshot) -> list[tuple[DeviceKernels, list[str]]]:
    """Devices where a kernel failed with "no kernel image", with what failed."""
    out = []
    for device in measured(snap):
        where = [f"{r.op} {SHORT.get(r.dtype, r.dtype)}{'/' + r.backend if r.backend else ''}"
                 for r in device.results if no_kernel_image(r)]
        if device.status != "ok" and NO_KERNEL_IMAGE in device.detail:
            where.insert(0, "starting the device")
        if where:
            out.append((device, where))
    return out
