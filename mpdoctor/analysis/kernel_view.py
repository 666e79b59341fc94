"""Measured microkernel results, read for people: lookups, speed ratios, the capability matrix.

Shared by the precision checks and the renderers. It describes what was measured;
the checks decide what is a problem.
"""

from __future__ import annotations

from typing import Optional

from mpdoctor.analysis.capability import parse_capability, support
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot

SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}
SLOWER = 0.67  # a dtype at under 2/3 of fp32's speed is "far slower"
NO_GAIN = 1.5  # on hardware that only emulates a dtype, under 1.5x fp32 is no real gain


def measured(snap: Snapshot) -> list[DeviceKernels]:
    """Devices whose kernels ran (wholly or in part)."""
    return [d for d in snap.kernels.devices if d.results or d.status != "not-run"]


def short(dtype: str) -> str:
    """float16 -> fp16; a dtype this mpdoctor does not know (a hand-edited snapshot) as it is."""
    return SHORT.get(dtype, dtype)


def kernel_name(r: KernelResult) -> str:
    """``matmul fp16``, ``sdpa bf16/flash``."""
    return f"{r.op} {short(r.dtype)}{'/' + r.backend if r.backend else ''}"


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
    """What the GPU's architecture promises for ``dtype`` (see mpdoctor.analysis.capability); "" for the CPU."""
    cc = capability(snap, device)
    return support(cc).get(SHORT.get(dtype, ""), "") if is_gpu(device) and cc is not None else ""


def is_slow(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> bool:
    """Far slower than fp32, or no real gain on hardware that only emulates the dtype."""
    ratio = speedup(device, r)
    if ratio is None or r.dtype == "float32":
        return False
    return ratio < SLOWER or (hardware_level(snap, device, r.dtype) in ("emulated", "slow") and ratio < NO_GAIN)


# ---------------------------------------------------------------- the capability matrix

COLUMNS = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn")
ROWS = (("matmul", ""), ("conv2d", ""), ("layer_norm", ""), ("softmax", ""), ("sdpa", ""), ("sdpa", "flash"),
        ("sdpa", "efficient"), ("sdpa", "cudnn"), ("sdpa", "math"), ("autocast", ""), ("grad_scaler", ""))
WORDS = {"unsupported": "fails", "error": "fails", "wrong": "WRONG", "crashed": "crash", "timeout": "hang",
         "skipped": "-"}
MATRIX_LEGEND = ("fp32: time per call; others: speed vs fp32 on the same device (2x: twice as fast, 1/8: eight "
                 "times slower); slow: far slower than fp32, or emulated; fails: raised; WRONG: outside tolerance")


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def cell(snap: Snapshot, device: DeviceKernels, r: Optional[KernelResult]) -> str:
    """One matrix cell: what happened to this op in this dtype on this device."""
    if r is None:
        return ""
    if r.status != "ok":
        return WORDS.get(r.status, r.status)
    if r.op in ("autocast", "grad_scaler") or not r.seconds:
        return "ok"
    if r.dtype == "float32" and not r.backend:
        return _time(r.seconds)
    ratio = speedup(device, r)
    if ratio is None:
        return "ok"
    return ("slow " if is_slow(snap, device, r) else "") + speed(ratio)


def speed(ratio: float) -> str:
    """3.1 -> "3.1x"; 0.0089 -> "1/112" (112 times slower)."""
    if ratio >= 1:
        return f"{ratio:.2g}x" if ratio < 10 else f"{ratio:.0f}x"
    slower = 1 / ratio
    return f"1/{slower:.3g}" if slower < 2 else (f"1/{slower:.2g}" if slower < 10 else f"1/{slower:.0f}")


def matrix(snap: Snapshot, device: DeviceKernels) -> tuple[list[str], list[list[str]]]:
    """Headers and rows (op x dtype) of one device; rows and columns with nothing to say are left out."""
    rows = []
    for op, backend in ROWS:
        cells = [cell(snap, device, result(device, op, dtype, backend)) for dtype in COLUMNS]
        if any(c not in ("", "-") for c in cells):
            rows.append([f"{op} {backend}".strip().replace("_", " ")] + cells)
    keep = [i for i in range(len(COLUMNS)) if any(row[i + 1] not in ("", "-") for row in rows)]
    headers = ["op"] + [short(COLUMNS[i]) for i in keep]
    return headers, [[row[0]] + [row[i + 1] for i in keep] for row in rows]


def _words(rows: list[list[str]]) -> list[list[str]]:
    """A matrix without its numbers: what ran, what was slow, what failed."""
    return [[c.split(" ")[0] if c.startswith("slow") else ("ok" if c and c[0].isdigit() else c) for c in row]
            for row in rows]


def matrix_groups(snap: Snapshot) -> list[tuple[DeviceKernels, list[str], list[str], list[list[str]]]]:
    """(device shown, other devices just like it, headers, rows) for each distinct device.

    Eight identical GPUs make one table: the first one's numbers, the others
    named, when every cell says the same thing (ok, slow, fails, ...).
    """
    groups: list[tuple[DeviceKernels, list[str], list[str], list[list[str]]]] = []
    for device in measured(snap):
        headers, rows = matrix(snap, device)
        if not rows:
            continue  # nothing ran: kernel_notes says why
        for shown, alike, known_headers, known_rows in groups:
            if (shown.name, shown.compute_capability) == (device.name, device.compute_capability) \
                    and known_headers == headers and _words(known_rows) == _words(rows):
                alike.append(device.device)
                break
        else:
            groups.append((device, [], headers, rows))
    return groups


def kernel_notes(snap: Snapshot) -> list[str]:
    """Why the matrix is missing or incomplete, in a line each."""
    kernels = snap.kernels
    if kernels.status == "skipped":
        return [f"Precision microkernels: skipped ({kernels.detail or '--no-kernels'})"]
    if kernels.status == "not-run":
        return [f"Precision microkernels: not run: {kernels.detail or 'none in this snapshot'}"]
    notes = [f"Precision microkernels ({kernels.mode}): {kernels.detail}"] if kernels.status == "error" else []
    for device in kernels.devices:
        if device.status != "ok":
            notes.append(f"{device.device}: {device.status}{': ' + device.detail if device.detail else ''}")
    return notes
