"""Measured microkernel results, judged: lookups, speed ratios, the speed rules, and each test's verdict.

The one place a kernel's speed class against fp32 is decided (:func:`verdict`: slow,
fine, inconclusive, and why), read by the precision checks. :func:`judged` gives every
test of every device its verdict at once (``KernelVerdict``, with its matrix cell), which
``kernel_matrix`` then lays out for display without judging anything again: the data
goes one way, measured (the snapshot), judged (here), drawn (the matrix). It describes
what was measured; the checks decide what is a problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from mpdoctor.analysis.capability import parse_capability, support
from mpdoctor.analysis.kernel_table import KernelVerdict
from mpdoctor.portable.kernel_names import CONCLUSIVE_ROUNDS, OPS, SHORT, TIMED_OPS, kernel_key
from mpdoctor.snapshot import DeviceKernels, KernelResult, NvmlGpu, Snapshot

SLOWER = 0.67  # a dtype at under 2/3 of fp32's speed is "far slower"
NO_GAIN = 1.5  # on hardware that only emulates a dtype, under 1.5x fp32 is no real gain
# Undisturbed rounds a timing needs before its spread means anything: kernel_names.CONCLUSIVE_ROUNDS, the
# constant the kernel runner also stops by.


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
    """fp32 time / this time for the same op on the same device (>1: faster than fp32), best against best."""
    base = result(device, r.op, "float32")
    if r.status != "ok" or not r.seconds or not base or base.status != "ok" or not base.seconds:
        return None
    return base.seconds / r.seconds


@dataclass(frozen=True)
class Speed:
    """A speed ratio against fp32 with its spread, and why it cannot be trusted, if it cannot.

    ``low`` and ``high`` pair one kernel's best round with the other's median
    (best fp32 / median this, median fp32 / best this): on a quiet machine they
    sit close to ``ratio``; rounds that ran at different speeds pull them apart.
    """

    ratio: float
    low: float
    high: float
    rounds: Optional[int]  # the fewer undisturbed rounds of the two kernels; None: timed once (older snapshot)
    disturbed: str  # why the timings cannot be trusted at all ("" when they can)


def speed_of(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> Optional[Speed]:
    """``r``'s speed against fp32 on the same device, with its spread; None when there is no ratio."""
    ratio = speedup(device, r)
    base = result(device, r.op, "float32")
    if ratio is None or base is None:
        return None
    if r.rounds is None or base.rounds is None or not r.seconds_median or not base.seconds_median:
        if any(other.rounds is not None for other in device.results):
            # This mpdoctor times in rounds: these two were not timed together (a worker restarted in between).
            return Speed(
                ratio,
                ratio,
                ratio,
                None,
                "not timed beside fp32 in the same rounds (a kernel worker restarted in between)",
            )
        return Speed(ratio, ratio, ratio, None, disturbance(snap, device))  # an older snapshot: one timing each
    low = base.seconds / r.seconds_median
    high = base.seconds_median / r.seconds
    rounds = min(r.rounds, base.rounds)
    why = disturbance(snap, device)
    if not why and rounds < CONCLUSIVE_ROUNDS and not is_gpu(device):
        why = busy_cpu(device, base)
    return Speed(ratio, min(low, ratio), max(high, ratio), rounds, why)


def busy_cpu(device: DeviceKernels, base: KernelResult, machine: bool = True) -> str:
    """Why the CPU's timings of ``base``'s op were disturbed; ``machine``: with the device's load (load_text)."""
    busy = base.rounds_disturbed or 0
    parts = [
        f"other processes crowded the cores in {busy} of {busy + (base.rounds or 0)} timing rounds"
        if busy
        else "too few timing rounds"
    ]
    if base.seconds and base.seconds_max and base.seconds_max > 1.5 * base.seconds:
        times = base.seconds_max / base.seconds
        parts.append(
            f"fp32 {base.op.replace('_', ' ')} varied {times:.0f}x between repeats"
            if times >= 10
            else f"fp32 {base.op.replace('_', ' ')} varied {times:.1f}x between repeats"
        )
    if machine and load_text(device):
        parts.append(load_text(device))
    return "; ".join(parts)


def load_text(device: DeviceKernels) -> str:
    """What else the machine did while the device's kernels were timed, in words; "" when nothing is known."""
    load = device.load
    parts = []
    if load.runnable_others:
        parts.append(f"{load.runnable_others} other runnable process{'es' if load.runnable_others > 1 else ''}")
    if load.others_cores is not None and load.others_cores >= 0.1:
        parts.append(f"others used {load.others_cores:.1f} of {load.cpus or '?'} cores")
    if load.steal is not None and load.steal >= 0.01:
        parts.append(f"{load.steal:.0%} CPU steal")
    if load.load1 is not None and parts:
        parts.append(f"load average {load.load1:.2f}")
    return "; ".join(parts)


def gpu_of(snap: Snapshot, device: DeviceKernels) -> Optional[NvmlGpu]:
    """The NVML GPU that is this CUDA device, by UUID, else by PCI bus id, from the torch probe's devices."""
    if not is_gpu(device):
        return None
    ordinal = device.device.partition(":")[2]
    for known in snap.torch.devices:
        if str(known.ordinal) != ordinal:
            continue
        for gpu in snap.machine.nvml.usable_gpus:
            if (known.uuid and gpu.uuid and gpu.uuid.endswith(known.uuid.replace("GPU-", ""))) or (
                known.pci_bus_id and gpu.pci_bus_id == known.pci_bus_id
            ):
                return gpu
    return None


def gpu_sharers(snap: Snapshot, device: DeviceKernels) -> list[str]:
    """Other processes NVML saw on this device's GPU, as "pid 4242 (python, 30.0 GiB)".

    In a container NVML may give PIDs of the host's namespace, which this machine
    cannot see (no name): when none of the GPU's processes is known to be ours,
    one unseen process is taken to be our own kernel worker, not another job.
    """
    gpu = gpu_of(snap, device)
    processes = list(gpu.processes) if gpu else []
    others = [p for p in processes if not p.ours]
    unseen = [p for p in others if not p.name]
    if unseen and not any(p.ours for p in processes):
        others.remove(unseen[0])
    out = []
    for p in others:
        memory = f", {p.memory_used / 1024**3:.1f} GiB" if p.memory_used else ""
        out.append(f"pid {p.pid} ({p.name or p.kind or 'unknown'}{memory})")
    return out


def disturbance(snap: Snapshot, device: DeviceKernels) -> str:
    """Why a whole device's timings cannot be trusted: another process on its GPU; "" otherwise."""
    sharers = gpu_sharers(snap, device)
    if not sharers:
        return ""
    gpu = gpu_of(snap, device)
    busy = f", {gpu.utilization}% busy" if gpu and gpu.utilization is not None else ""
    return f"the GPU was shared with {', '.join(sharers)}{busy}"


def threshold(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> float:
    """The speed under which ``r`` counts as slow: SLOWER, or NO_GAIN where the hardware only emulates it."""
    return NO_GAIN if hardware_level(snap, device, r.dtype) in ("emulated", "slow") else SLOWER


def verdict(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> tuple[str, str]:
    """(``slow``, ``fine`` or ``inconclusive``, the reason when inconclusive); ("", "") without a ratio."""
    return speed_verdict(snap, device, r, speed_of(snap, device, r))


def speed_verdict(snap: Snapshot, device: DeviceKernels, r: KernelResult, s: Optional[Speed]) -> tuple[str, str]:
    if s is None or r.dtype == "float32":
        return "", ""
    if s.disturbed:
        return "inconclusive", s.disturbed
    limit = threshold(snap, device, r)
    if s.high < limit:
        return "slow", ""
    if s.low >= limit:
        return "fine", ""
    return "inconclusive", (f"{kernel_name(r)} ran {spread_text(s)}, across the {limit:g}x line between fine and slow")


def conclusive_speed(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> Optional[Speed]:
    """``r``'s speed when it was measured undisturbed; None otherwise."""
    s = speed_of(snap, device, r)
    return s if s is not None and not s.disturbed else None


def faster(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> Optional[float]:
    """The speed-up when ``r`` is faster than fp32 beyond doubt (its whole spread above 1); None otherwise."""
    s = conclusive_speed(snap, device, r)
    return s.ratio if s is not None and s.low > 1.0 else None


def speed(ratio: float) -> str:
    """3.1 -> "3.1x"; 0.0089 -> "1/112" (112 times slower)."""
    if ratio >= 1:
        return f"{ratio:.2g}x" if ratio < 10 else f"{ratio:.0f}x"
    slower = 1 / ratio
    return f"1/{slower:.3g}" if slower < 2 else (f"1/{slower:.2g}" if slower < 10 else f"1/{slower:.0f}")


def spread_text(s: Speed) -> str:
    """ "2.4x faster than fp32 (2.1x-2.6x over 5 rounds)", or the bare ratio for a single timing."""
    text = ratio_text(s.ratio)
    if s.rounds is None:
        return f"{text} (timed once, no spread)"
    return f"{text} ({speed(s.low)}-{speed(s.high)} over {s.rounds} rounds)"


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
    """Far slower than fp32, or no real gain on hardware that only emulates the dtype: beyond doubt."""
    return verdict(snap, device, r)[0] == "slow"


def inconclusive(snap: Snapshot, device: DeviceKernels) -> list[tuple[KernelResult, str]]:
    """The device's speed ratios that are neither slow nor fine beyond doubt, with why."""
    out = []
    for r in device.results:
        word, why = verdict(snap, device, r)
        if word == "inconclusive":
            out.append((r, why))
    return out


# ---------------------------------------------------------------- every test's verdict, for the report

WORDS = dict(unsupported="fails", error="fails", wrong="WRONG", crashed="crash", timeout="hang", skipped="-")
ACCURACY = {"ok": "ok", "wrong": "wrong", "": ""}  # a test's status as its accuracy; any other: "unchecked"
UNTIMED = tuple(op for op in OPS if op not in TIMED_OPS)  # tests of what torch does, not of a kernel's speed


@dataclass
class JudgedDevice:
    """One device of the snapshot's kernels with every test's verdict: what ``kernel_matrix`` draws."""

    device: DeviceKernels  # as measured (status, detail, load: what the notes say)
    label: str  # how the report names it (:func:`label`)
    measured: bool  # whether its kernels ran, wholly or in part (:func:`measured`)
    verdicts: list[KernelVerdict]  # every test, in the order run
    rounds: str  # :func:`rounds_note`: how many undisturbed rounds the ratios rest on, when any was disturbed


def judged(snap: Snapshot) -> list[JudgedDevice]:
    """Every device of the snapshot's kernels, each test judged once."""
    ran = {id(d) for d in measured(snap)}
    return [
        JudgedDevice(
            device=device,
            label=label(device),
            measured=id(device) in ran,
            verdicts=[judge_kernel(snap, device, r) for r in device.results],
            rounds=rounds_note(device),
        )
        for device in snap.kernels.devices
    ]


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def _finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def judge_kernel(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> KernelVerdict:
    """What one test came to: its accuracy, its speed class against fp32 with the spread, and its matrix cell."""
    v = KernelVerdict(
        op=r.op,
        dtype=r.dtype,
        backend=r.backend,
        test=kernel_key(r.op, r.dtype, r.backend),
        status=r.status,
        accuracy=ACCURACY.get(r.status, "unchecked"),
        max_rel_error=r.max_rel_error,
        tolerance=r.tolerance,
        hardware=hardware_level(snap, device, r.dtype),
    )
    if r.status != "ok":
        v.cell = WORDS.get(r.status, r.status)
        return v
    if r.op in UNTIMED or not r.seconds:
        v.cell = "ok"
        return v
    if r.dtype == "float32" and not r.backend:  # the baseline: its cell is a time per call, not a ratio
        busy = r.rounds == 0 and bool(r.rounds_disturbed)
        why = disturbance(snap, device)
        if not why and r.rounds is not None and r.rounds < CONCLUSIVE_ROUNDS and not is_gpu(device):
            why = busy_cpu(device, r)
        # Every round disturbed: the time is the machine's, not the kernel's, and the cell says so.
        v.cell = ("busy " if busy else "") + _time(r.seconds)
        v.speed, v.conclusive, v.why = "baseline", not why, why
        return v
    s = speed_of(snap, device, r)
    if s is None or _finite(s.ratio) is None:  # no fp32 of the same op to compare with
        v.cell = "ok"
        return v
    v.ratio, v.ratio_low, v.ratio_high, v.rounds = s.ratio, _finite(s.low), _finite(s.high), s.rounds
    v.line = threshold(snap, device, r)
    word, why = speed_verdict(snap, device, r, s)
    if word == "inconclusive":
        v.cell, v.speed, v.conclusive, v.why = "inconclusive", "inconclusive", False, why
        return v
    v.cell = ("slow " if word == "slow" else "") + speed(s.ratio)
    if word:
        v.speed = "fast" if word == "fine" and s.low > 1.0 else word
        v.conclusive = True
    return v


def rounds_note(device: DeviceKernels) -> str:
    """How many of its timing rounds each speed ratio rests on, when any round was disturbed; "" otherwise.

    ``undisturbed timing rounds behind each speed ratio: matmul 0 of 9; conv2d, softmax 25 of 30``: an op whose
    dtypes differ is named per kernel. A quiet run (every round undisturbed, or GPU rounds timed by CUDA events)
    has nothing to add to the matrix.
    """
    counts: dict[str, dict[str, tuple[int, int]]] = {}  # op -> kernel name -> (undisturbed, of how many)
    for r in device.results:
        base = result(device, r.op, "float32")
        if r is base or base is None or r.rounds is None or base.rounds is None or speedup(device, r) is None:
            continue
        total = max(r.rounds + (r.rounds_disturbed or 0), base.rounds + (base.rounds_disturbed or 0))
        counts.setdefault(r.op, {})[kernel_name(r)] = (min(r.rounds, base.rounds), total)
    if not any(u < t for per_op in counts.values() for u, t in per_op.values()):
        return ""
    groups: dict[tuple[int, int], list[str]] = {}
    for op, per_kernel in counts.items():
        if len(set(per_kernel.values())) == 1:
            groups.setdefault(next(iter(per_kernel.values())), []).append(op.replace("_", " "))
        else:
            for name, pair in per_kernel.items():
                groups.setdefault(pair, []).append(name)
    said = "; ".join(f"{', '.join(names)} {u} of {t}" for (u, t), names in groups.items())
    return f"undisturbed timing rounds behind each speed ratio: {said}"
