"""precision, part two: a dtype that runs, but slowly, emulated, or without fused attention.

Speeds are measured on the device itself and compared with fp32 on the same
device in the same run, so they hold whatever the machine's load or clocks.
"""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks._kernels import FAMILY, FUSED_SDPA, LOW, bf16_misreported, sdpa_runs, sdpa_tried, use_instead
from mpdoctor.findings import Finding, Step, info, warning
from mpdoctor.analysis.kernel_view import (NO_GAIN, hardware_level, is_gpu, is_slow, label, measured, ratio_text, result,
                                  short, speedup)
from mpdoctor.checks.registry import check, defer
from mpdoctor.snapshot import DeviceKernels, Snapshot


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms"


@check("PREC004", "precision-slower-than-fp32", family=FAMILY, defers_to=("PREC005",), needs=("kernels",),
       fires_on=("cpu-kernels", "kernels-h100", "kernels-a100", "kernels-t4", "kernels-titan-1080ti",
                 "kernels-missing-arch", "kernels-cpu-old-torch", "kernels-faulty-gpu"),
       quiet_on=("kernels-skipped", "cpu-laptop"))
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
                slow.append((dtype, r, speedup(device, r), hardware_level(snap, device, dtype)))
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
    for dtype, r, ratio, level in slow:
        emulated = f"; the hardware has {level} {short(dtype)}" if level in ("emulated", "slow") else ""
        evidence.append(f"matmul {short(dtype)}: {_ms(r.seconds)} per call, {ratio_text(ratio)}{emulated}")
        conv = result(device, "conv2d", dtype)
        conv_ratio = speedup(device, conv) if conv else None
        if conv_ratio is not None:
            evidence.append(f"conv2d {short(dtype)}: {ratio_text(conv_ratio)}")
    advice = use_instead(device, "matmul", slow[0][0]) or f"stay in fp32 on {label(device)}"
    title = f"{names} {'run' if len(slow) > 1 else 'runs'} {_summary(slow)} on {label(device)}"
    make = warning if is_gpu(device) else info  # few train on the CPU; it is advice there
    return make(title, evidence, [Step(advice[0].upper() + advice[1:])])


def _summary(slow) -> str:
    """"108x slower than fp32", or "108x and 117x slower than fp32" for several dtypes."""
    texts = [ratio_text(ratio) for _, _, ratio, _ in slow]
    number, _, rest = texts[0].partition(" ")
    if all(text.partition(" ")[2] == rest for text in texts) and number.endswith("x"):
        return " and ".join(text.partition(" ")[0] for text in texts) + " " + rest
    return " and ".join(texts)


@check("PREC005", "bf16-emulated-but-reported-supported", family=FAMILY, needs=("kernels",),
       fires_on=("kernels-t4", "kernels-titan-1080ti"),
       quiet_on=("kernels-a100", "kernels-h100", "cpu-kernels"))
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
        ratio = speedup(device, bf16) if bf16 else None
        fp16_ratio = speedup(device, fp16) if fp16 else None
        measured_text = (f"bf16 matmul ran {ratio_text(ratio)}" if ratio is not None
                         else f"bf16 matmul failed: {bf16.detail if bf16 else '?'}")
        evidence = [f"torch.cuda.is_bf16_supported() = {device.bf16_supported}",
                    f"torch.cuda.is_bf16_supported(including_emulation=False) = {device.bf16_native}",
                    measured_text]
        if fp16_ratio is not None:
            evidence.append(f"fp16 matmul ran {ratio_text(fp16_ratio)}")
        steps = [Step("Train in fp16 with torch.amp.GradScaler on this GPU" if fp16_ratio and fp16_ratio >= NO_GAIN
                      else "Stay in fp32 on this GPU"),
                 Step("Where code picks the dtype, use torch.cuda.is_bf16_supported(including_emulation=False)")]
        yield warning(f"bf16 is only emulated on {label(device)}, yet torch.cuda.is_bf16_supported() says True",
                      evidence, steps)


@check("PREC006", "no-fused-attention", family=FAMILY, needs=("kernels",),
       fires_on=("kernels-t4", "kernels-titan-1080ti"),
       quiet_on=("kernels-faulty-gpu", "kernels-a100", "cpu-kernels"))
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
        steps = [Step(f"Run attention in {short(d)} on this GPU: {', '.join(backends)} ran")
                 for d, backends in fused_elsewhere if backends]
        steps.append(Step("Long sequences need a GPU of compute capability 8.0+ (flash attention) or shorter contexts"))
        names = " and ".join(short(d) for d in lacking)
        yield warning(f"No fused attention for {names} on {label(device)}: SDPA falls back to the math kernel",
                      evidence, steps)
