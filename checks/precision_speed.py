"""precision, part two: a dtype that runs, but slowly, emulated, or without fused attention.

Speeds are measured on the device itself, interleaved with fp32 on the same
device in the same rounds. A finding rests only on ratios that are beyond doubt:
undisturbed rounds whose whole spread is on one side of the line. A ratio that
is not (the machine was busy, or the rounds disagree) is inconclusive, and
PREC011 says so instead.
"""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks._kernels import FAMILY, FUSED_SDPA, LOW, bf16_misreported, sdpa_runs, sdpa_tried, use_instead
from mpdoctor.findings import Finding, FixStep, info, warning
from mpdoctor.analysis.kernel_view import (
    NO_GAIN,
    busy_cpu,
    conclusive_speed,
    disturbance,
    gpu_of,
    hardware_level,
    inconclusive,
    is_gpu,
    is_slow,
    kernel_name,
    label,
    load_text,
    measured,
    ratio_text,
    result,
    short,
    spread_text,
    verdict,
)
from mpdoctor.checks.registry import check, defer
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms"


@check(
    "PREC004",
    "precision-slower-than-fp32",
    family=FAMILY,
    defers_to=("PREC005",),
    needs=("kernels",),
    fires_on=(
        "cpu-kernels",
        "kernels-h100",
        "kernels-a100",
        "kernels-t4",
        "kernels-titan-1080ti",
        "kernels-missing-arch",
        "kernels-cpu-old-torch",
        "kernels-faulty-gpu",
        "kernels-gpu-shared",
    ),
    quiet_on=("kernels-skipped", "cpu-laptop", "kernels-cpu-busy"),
)
def precision_slower_than_fp32(snap: Snapshot) -> Iterator[Finding]:
    """A low-precision dtype runs, but its matmul is far slower than fp32, or emulated.

    ## Why it matters
    Mixed precision is meant to be faster. On CPUs without fp16/bf16
    instructions (AVX2 and older) torch computes them in scalar loops, often
    tens of times slower than fp32; GPUs before Volta have no fp16 tensor cores
    (the GTX 10xx series runs fp16 arithmetic at 1/64 rate) and GPUs before
    Ampere only emulate bf16. Training "in fp16" there costs time and buys
    nothing.

    ## Fix
    Use the dtype that was measured fastest on that device (the finding names
    it), stay in fp32 there, or move the work to a GPU with tensor cores.

    Slow bf16 on a GPU whose torch says bf16 is supported is PREC005's, which
    also says why code picks bf16 there; with PREC005 ignored, it is a finding
    of its own here.
    """
    for device in measured(snap):
        slow = []
        for dtype in LOW + ("float8_e4m3fn",):
            r = result(device, "matmul", dtype)
            if r is not None and is_slow(snap, device, r):
                slow.append((dtype, r, conclusive_speed(snap, device, r), hardware_level(snap, device, dtype)))
        misreported = [entry for entry in slow if entry[0] == "bfloat16" and bf16_misreported(snap, device)]
        rest = [entry for entry in slow if entry not in misreported]
        if rest:
            yield _slow_finding(snap, device, rest)
        if misreported:
            yield defer(_slow_finding(snap, device, misreported), "PREC005")


def _slow_finding(snap: Snapshot, device: DeviceKernels, slow: list) -> Finding:
    """One device's dtypes that run far slower than fp32: (dtype, result, speed-up, hardware level) each."""
    names = " and ".join(short(dtype) for dtype, *_ in slow)
    base = result(device, "matmul", "float32")
    evidence = [f"matmul fp32: {_ms(base.seconds)} per call" if base and base.seconds else "matmul fp32: ?"]
    for dtype, r, speed, level in slow:
        emulated = f"; the hardware has {level} {short(dtype)}" if level in ("emulated", "slow") else ""
        evidence.append(f"matmul {short(dtype)}: {_ms(r.seconds)} per call, {spread_text(speed)}{emulated}")
        conv = result(device, "conv2d", dtype)
        word, why = verdict(snap, device, conv) if conv else ("", "")
        conv_speed = conclusive_speed(snap, device, conv) if conv else None
        if word == "inconclusive":
            evidence.append(f"conv2d {short(dtype)}: inconclusive ({why})")
        elif conv_speed is not None:
            evidence.append(f"conv2d {short(dtype)}: {spread_text(conv_speed)}")
    advice = use_instead(snap, device, "matmul", slow[0][0]) or f"stay in fp32 on {label(device)}"
    title = f"{names} {'run' if len(slow) > 1 else 'runs'} {_summary(slow)} on {label(device)}"
    make = warning if is_gpu(device) else info  # few train on the CPU; it is advice there
    return make(title, evidence, [FixStep(advice[0].upper() + advice[1:])])


def _summary(slow) -> str:
    """ "108x slower than fp32", or "108x and 117x slower than fp32" for several dtypes."""
    texts = [ratio_text(speed.ratio) for _, _, speed, _ in slow]
    number, _, rest = texts[0].partition(" ")
    if all(text.partition(" ")[2] == rest for text in texts) and number.endswith("x"):
        return " and ".join(text.partition(" ")[0] for text in texts) + " " + rest
    return " and ".join(texts)


@check(
    "PREC005",
    "bf16-emulated-but-reported-supported",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-t4", "kernels-titan-1080ti"),
    quiet_on=("kernels-a100", "kernels-h100", "cpu-kernels"),
)
def bf16_emulated(snap: Snapshot) -> Iterator[Finding]:
    """`torch.cuda.is_bf16_supported()` says True on a GPU that only emulates bf16.

    ## Why it matters
    Since torch 2.4 `is_bf16_supported()` counts emulation, so it is True on
    Turing and older GPUs (T4, V100, RTX 20xx) that have no bf16 hardware.
    Trainers that pick bf16 when it says True (`--bf16` defaults, accelerate
    configs, library auto-detection) then run at fp32 speed or slower, and some
    kernels (cuDNN convolutions, Triton, flash attention) refuse bf16 outright.

    ## Fix
    Train in fp16 with `GradScaler` on these GPUs; in code that chooses the
    dtype, ask `torch.cuda.is_bf16_supported(including_emulation=False)`.
    """
    for device in measured(snap):
        if not bf16_misreported(snap, device):
            continue
        bf16 = result(device, "matmul", "bfloat16")
        fp16 = result(device, "matmul", "float16")
        bf16_speed = conclusive_speed(snap, device, bf16) if bf16 else None
        fp16_speed = conclusive_speed(snap, device, fp16) if fp16 else None
        measured_text = (
            f"bf16 matmul ran {spread_text(bf16_speed)}"
            if bf16_speed is not None
            else f"bf16 matmul failed: {bf16.detail if bf16 else '?'}"
        )
        evidence = [
            f"torch.cuda.is_bf16_supported() = {device.bf16_supported}",
            f"torch.cuda.is_bf16_supported(including_emulation=False) = {device.bf16_native}",
            measured_text,
        ]
        if fp16_speed is not None:
            evidence.append(f"fp16 matmul ran {spread_text(fp16_speed)}")
        steps = [
            FixStep(
                "Train in fp16 with torch.amp.GradScaler on this GPU"
                if fp16_speed is not None and fp16_speed.low >= NO_GAIN
                else "Stay in fp32 on this GPU"
            ),
            FixStep("Where code picks the dtype, use torch.cuda.is_bf16_supported(including_emulation=False)"),
        ]
        yield warning(
            f"bf16 is only emulated on {label(device)}, yet torch.cuda.is_bf16_supported() says True", evidence, steps
        )


@check(
    "PREC006",
    "no-fused-attention",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-t4", "kernels-titan-1080ti"),
    quiet_on=("kernels-faulty-gpu", "kernels-a100", "cpu-kernels"),
)
def no_fused_attention(snap: Snapshot) -> Iterator[Finding]:
    """No fused attention kernel (flash, memory-efficient or cuDNN) runs a dtype on a GPU.

    ## Why it matters
    `scaled_dot_product_attention` then falls back to the math kernel, which
    materialises the whole attention matrix: several times slower, and memory
    grows with the square of the sequence length, so long contexts run out of
    memory. Flash attention needs compute capability 8.0 or newer; the
    memory-efficient kernel takes bf16 only from 8.0.

    ## Fix
    Use the dtype a fused kernel ran for (fp16 on pre-Ampere GPUs), or a GPU
    of compute capability 8.0 or newer for bf16 attention.
    """
    for device in measured(snap):
        if not is_gpu(device):
            continue
        lacking = [dtype for dtype in LOW if sdpa_tried(device, dtype) and not sdpa_runs(device, dtype, FUSED_SDPA)]
        if not lacking:
            continue
        evidence = []
        for dtype in lacking:
            for r in sdpa_tried(device, dtype):
                if r.backend in FUSED_SDPA:
                    evidence.append(f"sdpa {short(dtype)}/{r.backend}: {r.status}{': ' + r.detail if r.detail else ''}")
            math = "runs" if "math" in sdpa_runs(device, dtype) else "fails too"
            evidence.append(f"sdpa {short(dtype)}/math: {math}")
        fused_elsewhere = [(d, sdpa_runs(device, d, FUSED_SDPA)) for d in LOW if d not in lacking]
        steps = [
            FixStep(f"Run attention in {short(d)} on this GPU: {', '.join(backends)} ran")
            for d, backends in fused_elsewhere
            if backends
        ]
        steps.append(
            FixStep("Long sequences need a GPU of compute capability 8.0+ (flash attention) or shorter contexts")
        )
        names = " and ".join(short(d) for d in lacking)
        yield warning(
            f"No fused attention for {names} on {label(device)}: SDPA falls back to the math kernel", evidence, steps
        )


@check(
    "PREC011",
    "kernel-timings-disturbed",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-gpu-shared", "kernels-cpu-busy", "h200-fork-refused"),
    quiet_on=("kernels-a100", "kernels-h100", "kernels-skipped"),
)
def kernel_timings_disturbed(snap: Snapshot) -> Iterator[Finding]:
    """Some precision speed ratios are inconclusive: the machine was busy while they were timed.

    ## Why it matters
    A speed ratio against fp32 is only worth something when both kernels ran
    undisturbed. Another process on the same cores (a data loader, a second
    job, a notebook) or on the same GPU slows some kernels more than others, so
    a busy machine can make fp16 look faster than fp32 or bf16 look slower. mpdoctor
    times the dtypes interleaved, sets aside rounds run while something else was
    runnable, and calls a ratio inconclusive rather than guess; the speed checks
    (PREC004, PREC005) then say nothing about it, either way.

    ## Fix
    Measure again when the machine is quiet (stop or wait for the other
    processes the finding names), with more rounds and bigger problems
    (`mpdoctor check --kernels full`); on a shared GPU node, point the run at
    an idle GPU with `CUDA_VISIBLE_DEVICES`.
    """
    for device in measured(snap):
        unsure = [(r, why) for r, why in inconclusive(snap, device) if _disturbed(snap, device, r)]
        if not unsure:
            continue
        # The CPU's load is the GPU's business only through NVML (disturbance names the sharers).
        evidence = [f"while timed: {load_text(device)}"] if load_text(device) and not is_gpu(device) else []
        by_reason: dict[str, list[str]] = {}
        for r, why in unsure:
            base = result(device, r.op, "float32")
            if not is_gpu(device) and base is not None and (r.rounds_disturbed or base.rounds_disturbed):
                why = busy_cpu(device, base, machine=False)  # the machine's part is said once, above
            by_reason.setdefault(why, []).append(kernel_name(r))
        evidence += [f"{', '.join(names)}: inconclusive: {why}" for why, names in by_reason.items()]
        load = device.load
        said = (
            [f"{load.rounds_disturbed} of {load.rounds} timing rounds disturbed"]
            if load.rounds and not is_gpu(device)
            else []
        )  # GPU rounds are timed by CUDA events, never set aside
        if load.budget_exhausted:
            said.append(f"extra rounds stopped at their budget after {load.extra_seconds:.2g} s")
        if said:
            evidence.append("; ".join(said))
        again = fixes.mpdoctor_check(snap, select="PREC", extra=("--kernels", "full"))
        steps = [FixStep("Measure again at a quiet moment, with more rounds and bigger problems", again)]
        if is_gpu(device):
            steps.insert(0, fixes.inspect("See what else runs on the GPU", "nvidia-smi"))
            idle = [
                g
                for g in snap.machine.nvml.usable_gpus
                if g.uuid and not any(not p.ours for p in g.processes) and g is not gpu_of(snap, device)
            ]
            if idle:
                steps.append(
                    fixes.alternative(
                        f"Or measure on an idle GPU (nvidia-smi {idle[0].index})",
                        fixes.with_env("CUDA_VISIBLE_DEVICES", idle[0].uuid, again),
                    )
                )
        else:
            steps.insert(0, fixes.inspect("See what else keeps the CPU busy", "top -b -n 1 | head -20"))
        yield info(
            f"{len(unsure)} precision speed ratio{'s' if len(unsure) > 1 else ''} on {label(device)} "
            "could not be measured reliably: the machine was busy",
            evidence,
            steps,
        )


def _disturbed(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> bool:
    """Inconclusive because of other work (not merely too close to call on a quiet machine)."""
    if disturbance(snap, device):
        return True
    base = result(device, r.op, "float32")
    return bool(r.rounds_disturbed or (base is not None and base.rounds_disturbed))
