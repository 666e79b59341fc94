"""The precision microkernels for one device. Runs inside the interpreter under diagnosis.

``kernel_runner`` forks one worker per device and calls :func:`tests` there; each
test returns a plain dict (a ``KernelResult`` in the snapshot). Stdlib and the
target's torch only, Python 3.8+. It measures and records, through
``kernel_measure``; it judges nothing beyond "is this output within the dtype's
tolerance".
"""

import math
import time
import warnings
import zlib

from . import steps
from ._portable import kernel_names, limits, redact
from .kernel_measure import (
    REFERENCE_ROWS,
    Device,
    compare,
    error_text,
    kernel_key,
    measure,
    record,
    skipped,
    timing_summary,
)

# The vocabulary both sides share (portable/kernel_names.py), under the names this package has always had.
OPS, TIMED_OPS, LOW_PRECISION = kernel_names.OPS, kernel_names.TIMED_OPS, kernel_names.LOW_PRECISION
TIMING = "timing"  # kernel_key(TIMING, op): the step that times an op's dtypes against each other (compare)
# Each SDPA backend (kernel_names.SDPA_BACKENDS, in order): our name, its SDPBackend member, the old sdp_kernel() flag.
SDPA_BACKENDS = tuple(
    zip(
        kernel_names.SDPA_BACKENDS,
        ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"),
        ("enable_flash", "enable_mem_efficient", "enable_cudnn", "enable_math"),
    )
)
CUDA_ONLY_BACKENDS = ("efficient", "cudnn")

# ---------------------------------------------------------------- the tests


def gemm(dev, dtype):
    torch = dev.torch
    n = dev.sizes["gemm"]
    a, b = dev.randn(n, n), dev.randn(n, n)
    if dtype in LOW_PRECISION:
        a, b = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
    rows = min(n, REFERENCE_ROWS)
    expected = torch.matmul(a[:rows].to(torch.float64), b.to(torch.float64))
    cuda_matmul = torch.backends.cuda.matmul
    allow = cuda_matmul.allow_tf32
    cuda_matmul.allow_tf32 = dtype == "tf32"  # False for float32: the reference must be real fp32
    try:
        return measure(
            dev, "matmul", dtype, lambda: torch.matmul(a, b), expected, view=lambda out: out[:rows], flops=2.0 * n**3
        )
    finally:
        cuda_matmul.allow_tf32 = allow


def fp8_gemm(dev):
    """``torch._scaled_mm`` on e4m3 inputs with unit scales, bf16 output."""
    torch = dev.torch
    n = dev.sizes["gemm"]
    dtype = torch.float8_e4m3fn
    a = dev.randn(n, n).to(dtype)
    b = dev.randn(n, n).to(dtype).t()  # _scaled_mm wants the second operand column-major
    rows = min(n, REFERENCE_ROWS)
    expected = torch.matmul(a[:rows].to(torch.float64), b.to(torch.float64))
    one = torch.ones((), device=dev.name)

    def run():
        out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return out[0] if isinstance(out, tuple) else out  # torch < 2.4 also returned amax

    return measure(dev, "matmul", "float8_e4m3fn", run, expected, view=lambda out: out[:rows], flops=2.0 * n**3)


def conv2d(dev, dtype):
    torch = dev.torch
    s = dev.sizes
    x = dev.randn(s["batch"], s["channels"], s["pixels"], s["pixels"])
    w = dev.randn(s["channels"], s["channels"], 3, 3, scale=0.1)
    x, w = x.to(getattr(torch, dtype)), w.to(getattr(torch, dtype))
    conv = torch.nn.functional.conv2d
    expected = conv(x.to(torch.float64), w.to(torch.float64), padding=1)
    return measure(dev, "conv2d", dtype, lambda: conv(x, w, padding=1), expected)


def layer_norm(dev, dtype):
    torch = dev.torch
    rows, width = dev.sizes["rows"], dev.sizes["width"]
    x = dev.randn(rows, width).to(getattr(torch, dtype))
    w, b = dev.randn(width).to(x.dtype), dev.randn(width).to(x.dtype)
    norm = torch.nn.functional.layer_norm
    expected = norm(x.to(torch.float64), (width,), w.to(torch.float64), b.to(torch.float64))
    return measure(dev, "layer_norm", dtype, lambda: norm(x, (width,), w, b), expected)


def softmax(dev, dtype):
    torch = dev.torch
    x = dev.randn(dev.sizes["rows"], dev.sizes["width"], scale=4.0).to(getattr(torch, dtype))
    expected = torch.softmax(x.to(torch.float64), dim=-1)
    return measure(dev, "softmax", dtype, lambda: torch.softmax(x, dim=-1), expected)


def sdpa(dev, dtype, backend=""):
    """One scaled_dot_product_attention call, restricted to ``backend`` when given."""
    torch = dev.torch
    if backend in CUDA_ONLY_BACKENDS and not dev.is_cuda:
        return skipped("sdpa", dtype, "a CUDA-only backend", backend)
    shape = (dev.sizes["batch"], dev.sizes["heads"], dev.sizes["seq"], 64)
    q, k, v = (dev.randn(*shape).to(getattr(torch, dtype)) for _ in range(3))
    attention = torch.nn.functional.scaled_dot_product_attention
    with _sdpa_backend(torch, "math"):
        expected = attention(q.to(torch.float64), k.to(torch.float64), v.to(torch.float64))
    context = _sdpa_backend(torch, backend)
    if context is None or (backend and not dev.is_cuda and not _has_sdpa_kernel(torch)):
        # Before torch.nn.attention, sdp_kernel() steered CUDA only: a CPU result would name the wrong backend.
        return skipped("sdpa", dtype, "this torch cannot select the %s backend" % backend, backend)

    def run():
        with _sdpa_backend(torch, backend):
            return attention(q, k, v)

    return measure(dev, "sdpa", dtype, run, expected, backend=backend)


def _has_sdpa_kernel(torch):
    attention = getattr(torch.nn, "attention", None)
    return attention is not None and hasattr(attention, "sdpa_kernel")


def _sdpa_backend(torch, backend):
    """A context that allows only ``backend`` ("" for torch's own choice); None when impossible."""
    import contextlib

    if not backend:
        return contextlib.nullcontext()
    ours = {name: (member, flag) for name, member, flag in SDPA_BACKENDS}[backend]
    if _has_sdpa_kernel(torch):  # torch 2.3+
        attention = torch.nn.attention
        member = getattr(attention.SDPBackend, ours[0], None)
        return attention.sdpa_kernel(member) if member is not None else None
    old = getattr(torch.backends.cuda, "sdp_kernel", None)
    if old is None:
        return None
    flags = {flag: flag == ours[1] for _, _, flag in SDPA_BACKENDS if flag != "enable_cudnn"}
    return old(**flags) if ours[1] in flags else None


def autocast(dev, dtype):
    """A Linear under torch.autocast must produce ``dtype``: that is autocast's promise."""
    torch = dev.torch
    device_type = "cuda" if dev.is_cuda else "cpu"
    layer = torch.nn.Linear(64, 64).to(dev.name)
    x = dev.randn(16, 64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autocast(device_type, dtype=getattr(torch, dtype)):
                produced = {
                    "linear": str(layer(x).dtype).replace("torch.", ""),
                    "matmul": str(torch.matmul(x, x.t()).dtype).replace("torch.", ""),
                }
        except Exception as exc:
            return record("autocast", dtype, status="unsupported", detail=error_text(exc))
    said = "; ".join(" ".join(str(w.message).split()) for w in caught if "autocast" in str(w.message).lower())
    wrong = {op: got for op, got in produced.items() if got != dtype}
    detail = ", ".join("%s gave %s" % item for item in sorted(wrong.items()))
    if said:
        said = redact.redact_clip(said, limits.WARNING_TEXT)
        detail = (detail + " (torch warned: %s)" % said) if detail else "torch warned: %s" % said
    return record("autocast", dtype, status="wrong" if wrong else "ok", detail=detail, output_dtypes=produced)


class PlainSGD:
    """The optimizer interface GradScaler uses (param_groups, step), and nothing else.

    torch.optim.SGD would do, but its first use imports torch._dynamo: 1.5 s and
    800 modules, three times the whole CPU kernel budget.
    """

    def __init__(self, torch, params, lr=0.01):
        self.torch, self.lr = torch, lr
        self.param_groups = [{"params": list(params)}]

    def step(self):
        with self.torch.no_grad():
            for param in self.param_groups[0]["params"]:
                if param.grad is not None:
                    param.sub_(param.grad, alpha=self.lr)


def grad_scaler(dev):
    """One fp16 training step with GradScaler on a model that cannot overflow."""
    torch = dev.torch
    device_type = "cuda" if dev.is_cuda else "cpu"
    amp = getattr(torch, "amp", None)
    try:
        scaler = amp.GradScaler(device_type) if amp is not None and hasattr(amp, "GradScaler") else None
    except Exception:
        scaler = None
    if scaler is None and dev.is_cuda:
        scaler = torch.cuda.amp.GradScaler()
    if scaler is None:
        return skipped("grad_scaler", "float16", "this torch has no GradScaler for %s" % device_type)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(dev.name)
    optimizer = PlainSGD(torch, model.parameters())
    x, y = dev.randn(16, 32, scale=0.1), dev.randn(16, 1, scale=0.1)
    try:
        before = float(scaler.get_scale())
        with torch.autocast(device_type, dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grads_finite = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
        scaler.step(optimizer)
        scaler.update()
        after = float(scaler.get_scale())
    except Exception as exc:
        return record("grad_scaler", "float16", status="unsupported", detail=error_text(exc))
    loss_finite = math.isfinite(float(loss.detach()))
    problems = []
    if not loss_finite:
        problems.append("the loss is not finite")
    if not grads_finite:
        problems.append("gradients overflowed to inf/NaN")
    if after < before:
        problems.append("the loss scale fell from %g to %g" % (before, after))
    return record(
        "grad_scaler",
        "float16",
        status="wrong" if problems else "ok",
        detail="; ".join(problems),
        loss_finite=loss_finite,
        grads_finite=grads_finite,
        scale_before=before,
        scale_after=after,
    )


# ---------------------------------------------------------------- the plan


def device_info(torch, name):
    """What the device and torch claim, then the first kernel (this starts CUDA).

    The properties come first: they need no kernel, so a device whose first
    kernel fails (no kernel image) is still named in the result.
    """
    info = {"device": name}
    if not name.startswith("cuda"):
        cpu = getattr(torch.backends, "cpu", None)
        info["name"] = str(cpu.get_cpu_capability()) if cpu and hasattr(cpu, "get_cpu_capability") else ""
        info["threads"] = int(torch.get_num_threads())
        return info
    props = torch.cuda.get_device_properties(name)
    info["name"] = str(props.name)
    info["compute_capability"] = "%d.%d" % (props.major, props.minor)
    info["arch"] = str(getattr(props, "gcnArchName", "") or "")
    began = time.perf_counter()
    try:
        torch.cuda.set_device(name)
        torch.zeros(1, device=name)
        torch.cuda.synchronize(name)
    except Exception as exc:
        info.update(status="error", detail=error_text(exc))
        return info
    info["init_seconds"] = time.perf_counter() - began
    info["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
    try:
        info["bf16_native"] = bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # torch < 2.4 has no including_emulation: it answered for native only
        info["bf16_native"] = info["bf16_supported"]
    return info


def claims_fp8(torch, dev):
    """fp8 GEMMs need compute capability 8.9 or 9.0+ (NVIDIA) or an MI300-class gfx94x/95x."""
    if not dev.is_cuda or not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return False
    props = torch.cuda.get_device_properties(dev.name)
    arch = str(getattr(props, "gcnArchName", "") or "")
    if arch:
        return arch.startswith(("gfx94", "gfx95"))
    return (props.major, props.minor) >= (8, 9)


def plan(torch, name, mode):
    """The ordered (key, callable) plan for one device. Keys are stable step names.

    Each test draws its inputs from a generator seeded by its own key, so a test
    sees the same numbers whether the tests before it ran or were skipped after a
    restart.
    """
    return [(key, _seeded(dev, key, func)) for dev, plan in [_plan(torch, name, mode)] for key, func in plan]


def _seeded(dev, key, func):
    def run():
        dev.generator.manual_seed(zlib.crc32(key.encode()))
        return func()

    return run


def _plan(torch, name, mode):
    dev = Device(torch, name, mode)
    plan = [(steps.DEVICE, lambda: device_info(torch, name))]
    plan.append((kernel_key("matmul", "float32"), lambda: gemm(dev, "float32")))
    plan.append(
        (
            kernel_key("matmul", "tf32"),
            lambda: gemm(dev, "tf32") if dev.is_cuda else skipped("matmul", "tf32", "TF32 is a CUDA tensor-core mode"),
        )
    )
    for dtype in LOW_PRECISION:
        plan.append((kernel_key("matmul", dtype), lambda d=dtype: gemm(dev, d)))
    plan.append(
        (
            kernel_key("matmul", "float8_e4m3fn"),
            lambda: (
                fp8_gemm(dev)
                if claims_fp8(torch, dev)
                else skipped("matmul", "float8_e4m3fn", "the device does not claim fp8 GEMMs")
            ),
        )
    )
    plan.append(timing(dev, "matmul"))
    for op, func in (("conv2d", conv2d), ("layer_norm", layer_norm), ("softmax", softmax)):
        for dtype in ("float32",) + LOW_PRECISION:
            plan.append((kernel_key(op, dtype), lambda f=func, d=dtype: f(dev, d)))
        plan.append(timing(dev, op))
    plan.append((kernel_key("sdpa", "float32"), lambda: sdpa(dev, "float32")))
    for dtype in LOW_PRECISION:
        for backend, _, _ in SDPA_BACKENDS:
            plan.append((kernel_key("sdpa", dtype, backend), lambda d=dtype, b=backend: sdpa(dev, d, b)))
    plan.append(timing(dev, "sdpa"))
    for dtype in LOW_PRECISION:
        plan.append((kernel_key("autocast", dtype), lambda d=dtype: autocast(dev, d)))
    plan.append((kernel_key("grad_scaler", "float16"), lambda: grad_scaler(dev)))
    plan.append((steps.RETIME, lambda: timing_summary(dev)))
    return dev, plan


def timing(dev, op):
    """The step that times ``op``'s dtypes against each other, right after they ran.

    Right after, not at the end: a test that crashes restarts the worker, and a
    fresh worker has only the kernels it ran itself to compare.
    """
    return (kernel_key(TIMING, op), lambda: compare(dev, op))
