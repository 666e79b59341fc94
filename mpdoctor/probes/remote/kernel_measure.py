"""How a microkernel is measured: sizes, accuracy against float64, timing. Runs in the target interpreter.

Used by ``kernel_suite`` (the tests themselves); stdlib only until a test hands
it torch, Python 3.8+.

Accuracy: every op runs on inputs already rounded to the dtype under test, and is
compared with the same op in float64 on the same device, so the error measures the
kernel, not the rounding of the inputs. The error is ``max|out - ref| / max|ref|``.

Speed (:func:`compare`): after every dtype of an op has run once, the op's kernels
are timed together in rounds, interleaved (fp32, fp16, bf16, then bf16, fp32, fp16,
...), each a batch of calls of about ``round`` seconds, with CUDA events on GPUs
and ``perf_counter`` on the CPU. A burst of load then hits every dtype, not one.
On the CPU a round is set aside as disturbed when, just before or just after it,
processes other than mpdoctor's own were runnable and, with mpdoctor's, too many
to leave the timing its cores (``Device.disturbed``, ``load_sample``). Each
kernel keeps its best, median and slowest time per call; the parent turns them
into ratios against float32 with their spread. When the rounds are noisy, or
disturbed by load that comes and goes, more rounds are run, up to an extra time
budget per device (``extra``), and the result says so; under load that stays (no
undisturbed round at all) an op stops as soon as no verdict could come of more rounds.
"""

import math
import time
import warnings

from . import load_sample
from ._portable import kernel_names, limits, redact

# The vocabulary both sides share (portable/kernel_names.py), under the names this package has always had.
CONCLUSIVE_ROUNDS = kernel_names.CONCLUSIVE_ROUNDS
kernel_key, parse_key = kernel_names.kernel_key, kernel_names.parse_key

# Output tolerance of each dtype (kernel_names.DTYPES: float32, tf32, float16, bfloat16, float8_e4m3fn),
# relative to the largest reference value. About 20x what a correct kernel shows at these sizes (fp16 ~5e-4,
# bf16 ~3e-3, fp8 with bf16 output ~1e-2), far below what a broken one gives (NaN, zeros, ~1).
TOLERANCE = dict(zip(kernel_names.DTYPES, (1e-4, 1e-2, 1e-2, 5e-2, 1e-1)))  # one per dtype: tests/test_vocabulary.py

# Problem sizes: "quick" is the default and keeps a whole device under a second.
# "round": the length of one kernel's batch in a timing round; "extra": the most
# time a device spends on extra rounds when its timings are noisy or disturbed.
SIZES = {
    ("quick", "cpu"): {
        "gemm": 192,
        "batch": 1,
        "channels": 16,
        "pixels": 32,
        "rows": 64,
        "width": 1024,
        "heads": 4,
        "seq": 128,
        "round": 0.001,
        "extra": 0.6,
    },
    ("quick", "cuda"): {
        "gemm": 1024,
        "batch": 8,
        "channels": 64,
        "pixels": 64,
        "rows": 1024,
        "width": 4096,
        "heads": 8,
        "seq": 1024,
        "round": 0.002,
        "extra": 0.6,
    },
    ("full", "cpu"): {
        "gemm": 512,
        "batch": 8,
        "channels": 64,
        "pixels": 56,
        "rows": 256,
        "width": 4096,
        "heads": 8,
        "seq": 512,
        "round": 0.01,
        "extra": 4.0,
    },
    ("full", "cuda"): {
        "gemm": 4096,
        "batch": 32,
        "channels": 128,
        "pixels": 64,
        "rows": 8192,
        "width": 8192,
        "heads": 16,
        "seq": 4096,
        "round": 0.01,
        "extra": 4.0,
    },
}
REFERENCE_ROWS = 128  # rows of the GEMM checked in float64 (a full fp64 GEMM is slow on consumer GPUs)
MAX_REPS = 200
MIN_ROUNDS = 5  # undisturbed rounds wanted per op: enough for a median and a spread
MAX_ROUNDS = 25  # rounds of one op, disturbed ones included, extra budget or not
SETTLED = 1.25  # a kernel whose median is within 25% of its best needs no more rounds
BATCH_LIMIT = 5  # a CPU batch stops after this many times its "round" length (see Device.per_call)
EARLY_ROUNDS = 2  # an op whose first rounds were all disturbed stops after this many: the load stays


def error_text(exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    # in its result's detail: cut as the supervisor cuts a step that raised (the same field)
    return redact.redact_clip(" ".join(text.split()), limits.ERROR_TEXT)


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
        self.timed = []  # (step key, op, run, seconds of one call) of every timed kernel, for compare()
        self.extra_left = self.sizes["extra"]  # seconds of extra rounds this device may still spend
        self.first_sample = None  # load_sample.sample() when the first timing rounds began
        self.totals = {
            "rounds": 0,
            "rounds_disturbed": 0,
            "extra_seconds": 0.0,
            "budget_exhausted": False,
            "runnable_others": None,
        }

    def randn(self, *shape, scale=1.0):
        """Inputs made on the CPU with a fixed seed: the same numbers on every device."""
        return (self.torch.randn(*shape, generator=self.generator) * scale).to(self.name)

    def sync(self):
        if self.is_cuda:
            self.torch.cuda.synchronize(self.name)

    def disturbed(self):
        """Other processes are runnable beside this worker now, and too many for the cores left: a CPU
        timing would share its cores.

        Busy means others (``load_sample.runnable`` and ``contended``): mpdoctor's own
        processes (the runner, the other device workers, the host) are not others,
        though their runnable threads do take cores; and a runnable neighbour on a
        machine with a core free for it beside the timing's threads (the intra-op
        threads torch will use, or more of ours if more are runnable) disturbs
        nothing. ``totals["runnable_others"]`` keeps the most others seen.
        A GPU's timings come from CUDA events and do not care (NVML tells the host
        what else ran on the GPU).
        """
        if self.is_cuda:
            return False
        now = load_sample.runnable()
        others = now["others"]
        if others is not None:
            seen = self.totals["runnable_others"]
            self.totals["runnable_others"] = others if seen is None else max(seen, others)
        if not others:
            return False
        demand = [n for n in (now["own"], self._threads()) if n is not None]
        return load_sample.contended(others, now["family"], max(demand) if demand else None, self._cpus())

    def _threads(self):
        """The intra-op threads torch will use here; None: unknown."""
        try:
            threads = int(self.torch.get_num_threads())
        except Exception:  # noqa: BLE001 - a stub or an odd build: unknown
            return None
        return threads if threads > 0 else None

    def _cpus(self):
        """The CPUs this worker may run on, looked up once."""
        if not hasattr(self, "cpus"):
            self.cpus = load_sample.usable_cpus()
        return self.cpus

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

    def per_call(self, run, reps):
        """Seconds per call of a batch of up to ``reps`` calls.

        On the CPU the batch stops early once it has taken BATCH_LIMIT rounds' worth:
        on a busy machine a 10 us kernel can take 8 ms a call, and a batch sized on
        a quiet call would then take seconds.
        """
        if self.is_cuda or reps == 1:
            return self._batch(run, reps) / reps
        limit = BATCH_LIMIT * self.sizes["round"]
        began = time.perf_counter()
        calls = 0
        while calls < reps:
            run()
            calls += 1
            if time.perf_counter() - began > limit:
                break
        return (time.perf_counter() - began) / calls


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
            reason = " ".join(" ".join(messages[i : i + 2]).split())
            return " (%s)" % redact.redact_clip(reason, limits.WARNING_TEXT)
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
    seconds = dev._batch(run, 1)  # a first estimate; compare() times it properly beside the other dtypes
    dev.timed.append((kernel_key(op, dtype, backend), op, run, seconds))
    status = "ok" if error <= tolerance else "wrong"
    detail = (
        ""
        if status == "ok"
        else (
            "output is not finite or has the wrong shape"
            if math.isinf(error)
            else "error %.3g exceeds the %s tolerance %.0e" % (error, dtype, tolerance)
        )
    )
    return record(
        op,
        dtype,
        backend,
        status,
        detail,
        max_rel_error=None if math.isinf(error) else error,
        tolerance=tolerance,
        seconds=seconds,
        **extra,
    )


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def _settled(rounds, keys):
    """Enough undisturbed rounds, and every kernel's median within SETTLED of its best."""
    clean = [times for times, disturbed in rounds if not disturbed]
    if len(clean) < MIN_ROUNDS:
        return False
    return all(_median([t[key] for t in clean]) <= SETTLED * min(t[key] for t in clean) for key in keys)


def compare(dev, op):
    """Time every kernel of ``op`` that ran, interleaved, in rounds; see the module's docstring.

    Returns ``{"timed": {key: {seconds, seconds_median, seconds_max, rounds,
    rounds_disturbed}}, "load": ...}``: best and median over the undisturbed rounds
    (over every round when none was undisturbed, ``rounds`` then 0), the slowest
    over all of them, and what the machine did meanwhile.
    """
    group = [(key, run, first) for key, kernel_op, run, first in dev.timed if kernel_op == op]
    if not group:
        return {"timed": {}}
    target = dev.sizes["round"]
    reps = {
        key: 1 if first >= target else min(MAX_REPS, max(1, int(target / max(first, 1e-7)))) for key, _, first in group
    }
    before = load_sample.sample()
    if dev.first_sample is None:
        dev.first_sample = before
    rounds = []
    extra_began = None
    while True:
        shift = len(rounds) % len(group)  # rotate the order: no dtype always follows the same one
        order = group[shift:] + group[:shift]
        disturbed = dev.disturbed()
        times = {key: dev.per_call(run, reps[key]) for key, run, _ in order}
        disturbed = dev.disturbed() or disturbed
        rounds.append((times, disturbed))
        undisturbed = sum(1 for _, was in rounds if not was)
        # Extra rounds only while they can help: budget left, and the load comes and goes (some round of
        # this op ran undisturbed). Under load that stays, more rounds only cost time.
        extra_allowed = dev.extra_left > 0 and undisturbed > 0
        if not extra_allowed and undisturbed + max(0, MIN_ROUNDS - len(rounds)) < CONCLUSIVE_ROUNDS:
            dev.totals["budget_exhausted"] = dev.totals["budget_exhausted"] or dev.extra_left <= 0
            break  # no verdict can come of more rounds
        if len(rounds) == EARLY_ROUNDS and not undisturbed:
            break  # disturbed from the start: load that stays, where a call can take 100 times its quiet time
        if len(rounds) < MIN_ROUNDS or _settled(rounds, reps):
            if len(rounds) >= MIN_ROUNDS:
                break
            continue
        now = time.perf_counter()
        extra_began = extra_began or now  # the rounds past MIN_ROUNDS are the extra ones
        if len(rounds) >= MAX_ROUNDS or now - extra_began >= dev.extra_left:
            dev.totals["budget_exhausted"] = True
            break
    if extra_began is not None:
        spent = time.perf_counter() - extra_began
        dev.extra_left = max(0.0, dev.extra_left - spent)
        dev.totals["extra_seconds"] += spent
    clean = [times for times, disturbed in rounds if not disturbed]
    dev.totals["rounds"] += len(rounds)
    dev.totals["rounds_disturbed"] += len(rounds) - len(clean)
    timed = {}
    for key in reps:
        kept = [t[key] for t in (clean or [times for times, _ in rounds])]
        timed[key] = {
            "seconds": min(kept),
            "seconds_median": _median(kept),
            "seconds_max": max(t[key] for t, _ in rounds),
            "rounds": len(clean),
            "rounds_disturbed": len(rounds) - len(clean),
        }
    return {"timed": timed, "load": load_sample.window(before, load_sample.sample())}


def timing_summary(dev):
    """What the machine did over all of the device's timing rounds, and the extra rounds they took.

    The last step of a device (``steps.RETIME``). One window over every op gives
    ``/proc/stat``'s clock ticks enough time to count (an op's rounds alone may
    last a few ticks). A device that restarted reports its last worker's rounds.
    """
    out = dict(dev.totals, extra_seconds=round(dev.totals["extra_seconds"], 4))
    if dev.first_sample is not None:
        window = load_sample.window(dev.first_sample, load_sample.sample())
        window["runnable_others"] = dev.totals["runnable_others"]
        out.update(window)
    return {"load": out}
