"""How a microkernel is measured: sizes, accuracy against float64, timing. Runs in the target interpreter.

Used by ``kernel_suite`` (the tests themselves); stdlib only until a test hands
it torch, Python 3.8+.

Accuracy: every op runs on inputs already rounded to the dtype under test, and is
compared with the same op in float64 on the same device, so the error measures the
kernel, not the rounding of the inputs. The error is ``max|out - ref| / max|ref|``.

Speed: seconds per call after a warm-up call, timed with CUDA events on GPUs and
``perf_counter`` on the CPU, repeating until a small time target is reached. The
parent turns them into ratios against float32 on the same device.
"""

import math
import time
import warnings

# Output tolerance of each dtype, relative to the largest reference value. About
# 20x what a correct kernel shows at these sizes (fp16 ~5e-4, bf16 ~3e-3, fp8
# with bf16 output ~1e-2), far below what a broken one gives (NaN, zeros, ~1).
TOLERANCE = {
    "float32": 1e-4,
    "tf32": 1e-2,
    "float16": 1e-2,
    "bfloat16": 5e-2,
    "float8_e4m3fn": 1e-1,
}

# Problem sizes: "quick" is the default and keeps a whole device under a second.
SIZES = {
    ("quick", "cpu"): {"gemm": 192, "batch": 1, "channels": 16, "pixels": 32, "rows": 64, "width": 1024,
                       "heads": 4, "seq": 128, "target": 0.002},
    ("quick", "cuda"): {"gemm": 1024, "batch": 8, "channels": 64, "pixels": 64, "rows": 1024, "width": 4096,
                        "heads": 8, "seq": 1024, "target": 0.01},
    ("full", "cpu"): {"gemm": 512, "batch": 8, "channels": 64, "pixels": 56, "rows": 256, "width": 4096,
                      "heads": 8, "seq": 512, "target": 0.05},
    ("full", "cuda"): {"gemm": 4096, "batch": 32, "channels": 128, "pixels": 64, "rows": 8192, "width": 8192,
                       "heads": 16, "seq": 4096, "target": 0.05},
}
REFERENCE_ROWS = 128  # rows of the GEMM checked in float64 (a full fp64 GEMM is slow on consumer GPUs)
MAX_REPS = 200
ROUNDS = 2
ERROR_TEXT = 600


def error_text(exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    text = " ".join(text.split())
    return text if len(text) <= ERROR_TEXT else text[:ERROR_TEXT] + "..."


def record(op, dtype, backend="", status="ok", detail="", **extra):
    out = {"op": op, "dtype": dtype, "backend": backend, "status": status, "detail": detail}
    out.update(extra)
    return out


def skipped(op, dtype, why, backend=""):
    return record(op, dtype, backend, "skipped", why)


class Device:
    """One device under test: where tensors go, how time is measured, how big problems are."""

    def __init__(self, torch, name, mode):
        self.torch = torch
        self.name = name
        self.is_cuda = name.startswith("cuda")
        self.sizes = SIZES[(mode, "cuda" if self.is_cuda else "cpu")]
        self.generator = torch.Generator().manual_seed(20261121)
        self.timed = []  # (step key, run, seconds) of every timed kernel, for retime()

    def randn(self, *shape, scale=1.0):
        """Inputs made on the CPU with a fixed seed: the same numbers on every device."""
        return (self.torch.randn(*shape, generator=self.generator) * scale).to(self.name)

    def sync(self):
        if self.is_cuda:
            self.torch.cuda.synchronize(self.name)

    def seconds_per_call(self, run):
        """Time ``run`` (already warmed up) per call: the best of a few batches.

        The best, not the mean: the probes run side by side, and on a small machine
        a batch that shares its cores with another process says nothing about the
        kernel. A call slower than the time target is timed once more only.
        """
        first = self._batch(run, 1)
        if first >= self.sizes["target"]:
            return first
        reps = min(MAX_REPS, max(1, int(self.sizes["target"] / max(first, 1e-7))))
        return min([first] + [self._batch(run, reps) / reps for _ in range(ROUNDS)])

    def _batch(self, run, reps):
        if self.is_cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                run()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0
        began = time.perf_counter()
        for _ in range(reps):
            run()
        return time.perf_counter() - began


def max_relative_error(torch, out, ref):
    """``max|out - ref| / max|ref|`` in float64; inf for NaN/inf or a wrong shape."""
    out = out.detach().to(torch.float64)
    if out.shape != ref.shape or not bool(torch.isfinite(out).all()):
        return math.inf
    scale = float(ref.abs().max())
    return float((out - ref).abs().max()) / (scale if scale > 0 else 1.0)


def sdpa_reason(messages):
    """SDPA warns "<X> kernel not used because:" and then, as a warning of its own, why."""
    for i, message in enumerate(messages):
        if "not used because" in message:
            reason = " ".join(" ".join(messages[i:i + 2]).split())
            return " (%s)" % (reason if len(reason) <= 400 else reason[:400] + "...")
    return ""


def measure(dev, op, dtype, run, expected, backend="", view=None, **extra):
    """Run once (an exception means unsupported), check accuracy, then time it.

    ``view`` picks the part of the output that ``expected`` covers.
    """
    torch = dev.torch
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = run()
            dev.sync()
        except Exception as exc:
            detail = error_text(exc) + sdpa_reason([str(w.message) for w in caught])
            return record(op, dtype, backend, "unsupported", detail, **extra)
    error = max_relative_error(torch, view(out) if view else out, expected)
    tolerance = TOLERANCE[dtype]
    seconds = dev.seconds_per_call(run)
    dev.timed.append(("/".join(part for part in (op, dtype, backend) if part), run, seconds))
    status = "ok" if error <= tolerance else "wrong"
    detail = "" if status == "ok" else (
        "output is not finite or has the wrong shape" if math.isinf(error)
        else "error %.3g exceeds the %s tolerance %.0e" % (error, dtype, tolerance))
    return record(op, dtype, backend, status, detail, max_rel_error=None if math.isinf(error) else error,
                  tolerance=tolerance, seconds=seconds, **extra)


def retime(dev):
    """Time the fast kernels again, at the end of the run; the parent keeps the faster time.

    The CPU worker starts while the other probes still import torch beside it,
    and on a 2-core machine a sub-millisecond fp32 matmul then measures 30x
    slower than it is (its threads wait on each other while sharing cores),
    which would make every ratio against fp32 a lie. By the end the machine is
    quiet. Slow low-precision kernels are barely affected and are not repeated:
    they would cost the time budget.
    """
    again = {}
    for key, run, seconds in dev.timed:
        # fp32 always: it is the denominator of every ratio.
        if "/float32" in key or seconds < dev.sizes["target"]:
            again[key] = dev.seconds_per_call(run)
    return {"seconds": again}
