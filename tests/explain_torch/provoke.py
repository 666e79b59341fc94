"""Provoke real precision failures on the torch installed here (CPU is enough) and print what torch said.

Run as a script (``python tests/explain_torch/provoke.py``): it prints one JSON object, {case: {"expect":
families, "op": op or null, "texts": [the exception text, then each warning's text]}}. Nothing here writes a
message: every text is torch's own, captured from the exception or warning it raised. tests/test_explain_torch.py
runs it in a fresh interpreter and requires `mpdoctor explain` to recognise each one (family and op), and the
real non-precision failures under NOT_PRECISION to stay unrecognised.

Each case is (families the explanation may belong to, the op the explanation must name or None when torch's
text names none, the code that fails).
"""

from __future__ import annotations

import json
import sys
import warnings

import torch
import torch.nn.functional as F

h, b, f = torch.float16, torch.bfloat16, torch.float32
e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
MISMATCH = ("dtype",)
NO_KERNEL = ("op-support", "cpu-half")
OUT = ("dtype",)
AMP = ("scaler", "cpu-half")


def r(*shape, dtype=f):
    return torch.randn(*shape, dtype=dtype)


def idx(*values):
    return torch.tensor(values)


def scaler_steps(dtype, unscale_twice=False, skip_backward=False):
    p = torch.nn.Parameter(r(2, dtype=dtype))
    optimizer = torch.optim.SGD([p], 0.1)
    scaler = torch.amp.GradScaler("cpu")
    loss = scaler.scale(p.float().sum())
    if skip_backward:
        scaler.step(optimizer)
        return
    loss.backward()
    scaler.unscale_(optimizer)
    if unscale_twice:
        scaler.unscale_(optimizer)


def scaler_out_of_order(then_call: str):
    """One iteration stepped through GradScaler, then ``unscale_`` or a second ``step`` before ``update()``."""
    p = torch.nn.Parameter(r(2))
    optimizer = torch.optim.SGD([p], 0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(p.sum()).backward()
    scaler.step(optimizer)
    getattr(scaler, then_call)(optimizer)


def scaler_with_closure(positional: bool):
    """LBFGS needs a closure; GradScaler refuses one by keyword and forwards one by position unscaled."""
    p = torch.nn.Parameter(r(2))
    optimizer = torch.optim.LBFGS([p])
    scaler = torch.amp.GradScaler("cpu")

    def closure():
        optimizer.zero_grad()
        loss = p.square().sum()
        loss.backward()
        return loss

    if positional:
        scaler.step(optimizer, closure)
    else:
        scaler.scale(p.sum())
        scaler.step(optimizer, closure=closure)


def scaler_never_scaled():
    """``loss.backward()`` without ``scaler.scale``, then the scaler asked to unscale."""
    p = torch.nn.Parameter(r(2))
    optimizer = torch.optim.SGD([p], 0.1)
    p.sum().backward()
    torch.amp.GradScaler("cpu").unscale_(optimizer)


def entered(manager):
    with manager:
        pass


def sdpa(q, k, v, mask=None, backend=None):
    from torch.nn.attention import sdpa_kernel

    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def scaled_mm(a, bt, scale_a, scale_b):
    return torch._scaled_mm(a, bt, scale_a, scale_b)


def multi_head(dtype, mask=None, padding=None):
    return torch.nn.MultiheadAttention(4, 1)(
        r(2, 1, 4, dtype=dtype), r(2, 1, 4), r(2, 1, 4), attn_mask=mask, key_padding_mask=padding
    )


def cases():
    from torch.nn.attention import SDPBackend

    return {
        # --- two floating dtypes in one op (torch's mismatch checks) ---
        "mm": (MISMATCH, None, lambda: torch.mm(r(2, 3, dtype=h), r(3, 2))),
        "matmul-bf16": (MISMATCH, None, lambda: torch.matmul(r(2, 3, dtype=b), r(3, 2))),
        "bmm": (MISMATCH, None, lambda: torch.bmm(r(1, 2, 3, dtype=h), r(1, 3, 2))),
        "addmm": (MISMATCH, None, lambda: torch.addmm(r(2, 2), r(2, 3, dtype=h), r(3, 2, dtype=h))),
        "baddbmm": (MISMATCH, None, lambda: torch.baddbmm(r(1, 2, 2), r(1, 2, 3, dtype=h), r(1, 3, 2, dtype=h))),
        "addmv": (MISMATCH, None, lambda: torch.addmv(r(2), r(2, 3, dtype=h), r(3, dtype=h))),
        "mv": (MISMATCH, None, lambda: torch.mv(r(2, 3, dtype=h), r(3))),
        "dot": (MISMATCH, "dot", lambda: torch.dot(r(3, dtype=h), r(3))),
        "vdot-bf16": (MISMATCH, "dot", lambda: torch.vdot(r(3, dtype=b), r(3))),
        "conv2d": (MISMATCH, None, lambda: F.conv2d(r(1, 1, 4, 4, dtype=h), r(1, 1, 3, 3))),
        "conv2d-bias": (MISMATCH, None, lambda: F.conv2d(r(1, 1, 4, 4), r(1, 1, 3, 3), r(1, dtype=h))),
        "conv1d-bf16": (MISMATCH, None, lambda: F.conv1d(r(1, 1, 4, dtype=b), r(1, 1, 3))),
        "conv3d-bf16": (MISMATCH, None, lambda: F.conv3d(r(1, 1, 3, 3, 3, dtype=b), r(1, 1, 2, 2, 2))),
        "index-add": (MISMATCH, "index_add_", lambda: r(3, dtype=h).index_add_(0, idx(0), r(1))),
        "index-add-bf16-half": (MISMATCH, "index_add_", lambda: r(3, dtype=b).index_add(0, idx(0), r(1, dtype=h))),
        "index-reduce": (MISMATCH, "index_reduce_", lambda: r(3, dtype=h).index_reduce_(0, idx(0), r(1), "prod")),
        "index-copy": (MISMATCH, "index_copy_", lambda: r(3, dtype=h).index_copy_(0, idx(0), r(1))),
        "index-copy-bf16": (MISMATCH, "index_copy_", lambda: r(3, dtype=b).index_copy(0, idx(0), r(1, dtype=h))),
        "scatter": (MISMATCH, "scatter", lambda: r(3, dtype=h).scatter_(0, idx(0), r(1))),
        "masked-scatter": (
            MISMATCH,
            "masked_scatter",
            lambda: r(3, dtype=h).masked_scatter_(idx(True, False, True), r(3)),
        ),
        "masked-scatter-bf16": (
            MISMATCH,
            "masked_scatter",
            lambda: r(3, dtype=b).masked_scatter(idx(True, False, True), r(3, dtype=h)),
        ),
        "index-put": (MISMATCH, "index_put", lambda: r(3, dtype=h).index_put_((idx(0),), r(1))),
        "put": (MISMATCH, "put_", lambda: r(3, dtype=h).put_(idx(0), r(1))),
        "put-bf16": (MISMATCH, "put_", lambda: r(3, dtype=b).put(idx(0), r(1, dtype=h))),
        "lerp-end": (MISMATCH, "lerp", lambda: torch.lerp(r(3, dtype=h), r(3), 0.5)),
        "lerp-weight": (MISMATCH, None, lambda: torch.lerp(r(3, dtype=h), r(3, dtype=h), r(3))),
        "batch-norm": (
            MISMATCH,
            None,
            lambda: F.batch_norm(r(2, 3, dtype=h), r(3, dtype=b), r(3, dtype=b), r(3), r(3)),
        ),
        "layer-norm-bf16-params": (
            MISMATCH,
            None,
            lambda: F.layer_norm(r(2, 3, dtype=h), (3,), r(3, dtype=b), r(3, dtype=b)),
        ),
        "rms-norm-warning": (MISMATCH, "norm", lambda: F.rms_norm(r(2, 3, dtype=h), (3,), r(3))),
        "embedding-bag": (
            MISMATCH,
            None,
            lambda: F.embedding_bag(idx([0, 1]), r(3, 2, dtype=h), per_sample_weights=r(1, 2), mode="sum"),
        ),
        "embedding-bag-bf16": (
            MISMATCH,
            None,
            lambda: F.embedding_bag(idx([0, 1]), r(3, 2, dtype=b), per_sample_weights=r(1, 2, dtype=h), mode="sum"),
        ),
        "lstm": (MISMATCH, "RNN", lambda: torch.nn.LSTM(3, 3)(r(2, 1, 3, dtype=h))),
        "rnn-half-weights": (MISMATCH, "RNN", lambda: torch.nn.RNN(3, 3).half()(r(2, 1, 3))),
        "lstm-cell": (MISMATCH, None, lambda: torch.nn.LSTMCell(3, 3)(r(1, 3, dtype=h))),
        "gru-cell-bf16": (MISMATCH, None, lambda: torch.nn.GRUCell(3, 3)(r(1, 3, dtype=b))),
        "mha-half-input": (MISMATCH, None, lambda: multi_head(h)),
        "mha-half-mask": (
            MISMATCH,
            None,
            lambda: torch.nn.MultiheadAttention(4, 1)(r(2, 1, 4), r(2, 1, 4), r(2, 1, 4), attn_mask=r(2, 2, dtype=h)),
        ),
        "nll-weight": (MISMATCH, None, lambda: F.nll_loss(r(2, 3, dtype=h), idx(0, 1), weight=r(3))),
        "nll-bf16-half": (MISMATCH, None, lambda: F.nll_loss(r(2, 3, dtype=b), idx(0, 1), weight=r(3, dtype=h))),
        "bce": (MISMATCH, None, lambda: F.binary_cross_entropy(torch.rand(3, dtype=h), torch.rand(3))),
        "prelu": (MISMATCH, "prelu", lambda: F.prelu(r(2, 3, dtype=h), r(1))),
        "prelu-bf16": (MISMATCH, "prelu", lambda: F.prelu(r(2, 3, dtype=b), r(1, dtype=h))),
        "grid-sample": (
            MISMATCH,
            None,
            lambda: F.grid_sample(r(1, 1, 4, 4, dtype=h), r(1, 2, 2, 2), align_corners=False),
        ),
        "einsum-bf16": (MISMATCH, None, lambda: torch.einsum("ij,jk->ik", r(2, 3, dtype=b), r(3, 2))),
        "bilinear": (MISMATCH, None, lambda: F.bilinear(r(2, 3, dtype=h), r(2, 3), r(1, 3, 3))),
        "multi-dot": (MISMATCH, "multi_dot", lambda: torch.linalg.multi_dot([r(2, 3, dtype=h), r(3, 2)])),
        "vecdot": (MISMATCH, "linalg.vecdot", lambda: torch.linalg.vecdot(r(3, dtype=h), r(3))),
        "sdpa-qkv": (
            MISMATCH + ("attention",),
            None,
            lambda: sdpa(r(1, 1, 2, 4, dtype=h), r(1, 1, 2, 4), r(1, 1, 2, 4)),
        ),
        "sdpa-math-backend": (
            MISMATCH + ("attention",),
            None,
            lambda: sdpa(r(1, 1, 2, 4, dtype=b), r(1, 1, 2, 4), r(1, 1, 2, 4, dtype=b), backend=SDPBackend.MATH),
        ),
        "sdpa-mask": (
            MISMATCH + ("attention",),
            None,
            lambda: sdpa(r(1, 1, 2, 4, dtype=b), r(1, 1, 2, 4, dtype=b), r(1, 1, 2, 4, dtype=b), mask=r(2, 2, dtype=h)),
        ),
        # fp8 data meeting another dtype: a dtype mix, or fp8 values used without dequantizing them first (as
        # round 6's thread read it); either family names the cast to make
        "fp8-promotion": (MISMATCH + ("quantization",), None, lambda: torch.cat([r(2).to(e4), r(2)])),
        "fp8-mm-mixed": (MISMATCH, None, lambda: torch.mm(r(2, 2).to(e4), r(2, 2))),
        # --- out= tensors in another dtype ---
        "mm-out": (OUT, None, lambda: torch.mm(r(2, 3), r(3, 2), out=r(2, 2, dtype=h))),
        "matmul-out-bf16": (OUT, None, lambda: torch.matmul(r(2, 3), r(3, 2), out=r(2, 2, dtype=b))),
        "gather-out": (OUT, None, lambda: torch.gather(r(3, dtype=h), 0, idx(0), out=r(1))),
        "take-along-out": (OUT, None, lambda: torch.take_along_dim(r(3), idx(0), out=r(1, dtype=h))),
        "baddbmm-out": (OUT, None, lambda: torch.baddbmm(r(1, 2, 2), r(1, 2, 3), r(1, 3, 2), out=r(1, 2, 2, dtype=h))),
        "addmv-out-bf16": (OUT, None, lambda: torch.addmv(r(2), r(2, 3), r(3), out=r(2, dtype=b))),
        "where-out": (OUT, None, lambda: torch.where(idx(True), r(1, dtype=h), r(1), out=r(1, dtype=h))),
        "clamp-out": (OUT, None, lambda: torch.clamp(r(2), 0, 1, out=r(2, dtype=h))),
        # --- ops with no kernel for a low-precision dtype ---
        "cdist": (NO_KERNEL, "cdist", lambda: torch.cdist(r(2, 3, dtype=h), r(2, 3, dtype=h))),
        "cdist-bf16": (NO_KERNEL, "cdist", lambda: torch.cdist(r(2, 3, dtype=b), r(2, 3, dtype=b))),
        "histogram": (NO_KERNEL, "histogramdd", lambda: torch.histogram(r(3, dtype=h))),
        "svd-bf16": (NO_KERNEL, "linalg_svd_cpu", lambda: torch.linalg.svd(r(3, 3, dtype=b))),
        "cond": (NO_KERNEL, "linalg_svd_cpu", lambda: torch.linalg.cond(r(3, 3, dtype=h))),
        "qr-bf16": (NO_KERNEL, "geqrf_cpu", lambda: torch.linalg.qr(r(3, 3, dtype=b))),
        "cholesky": (NO_KERNEL, None, lambda: torch.linalg.cholesky(r(3, 3, dtype=h))),
        "lu-factor": (NO_KERNEL, None, lambda: torch.linalg.lu_factor(r(3, 3, dtype=h))),
        "eigh": (NO_KERNEL, None, lambda: torch.linalg.eigh(r(3, 3, dtype=h))),
        "triangular-solve": (
            NO_KERNEL,
            None,
            lambda: torch.linalg.solve_triangular(r(3, 3, dtype=h), r(3, 1, dtype=h), upper=True),
        ),
        "cholesky-inverse": (NO_KERNEL, None, lambda: torch.cholesky_inverse(r(3, 3, dtype=h))),
        "ctc-loss": (NO_KERNEL, None, lambda: F.ctc_loss(r(5, 1, 3, dtype=h).log_softmax(2), idx([1]), idx(5), idx(1))),
        "ctc-loss-bf16": (
            NO_KERNEL,
            "ctc_loss_cpu",
            lambda: F.ctc_loss(r(5, 1, 3, dtype=b).log_softmax(2), idx([1]), idx(5), idx(1)),
        ),
        "multi-margin": (
            NO_KERNEL,
            "multi_margin_loss_cpu_kernel",
            lambda: F.multi_margin_loss(r(2, 3, dtype=h), idx(0, 1), weight=r(3)),
        ),
        "inv": (NO_KERNEL, "linalg.inv", lambda: torch.linalg.inv(r(3, 3, dtype=h))),
        "inv-bf16": (NO_KERNEL, "linalg.inv", lambda: torch.linalg.inv(r(3, 3, dtype=b))),
        "logdet": (NO_KERNEL, "logdet", lambda: torch.logdet(r(3, 3, dtype=h))),
        "slogdet-bf16": (NO_KERNEL, "linalg.slogdet", lambda: torch.linalg.slogdet(r(3, 3, dtype=b))),
        "matrix-norm-nuc": (NO_KERNEL, "linalg.matrix_norm", lambda: torch.linalg.matrix_norm(r(3, 3, dtype=h), "nuc")),
        "pinv": (NO_KERNEL, "linalg.pinv", lambda: torch.linalg.pinv(r(3, 3, dtype=h))),
        "fft": (NO_KERNEL, "fft", lambda: torch.fft.fft(r(3, dtype=h))),
        "rfft2-bf16": (NO_KERNEL, "fft", lambda: torch.fft.fft2(r(4, 4, dtype=b))),
        "irfft-bf16": (NO_KERNEL, "fft", lambda: torch.fft.irfft(r(4, dtype=b))),
        "stft": (
            NO_KERNEL,
            "fft",
            lambda: torch.stft(r(64, dtype=h), 16, window=torch.ones(16, dtype=h), return_complex=True),
        ),
        "fp8-add": (NO_KERNEL, "add_stub", lambda: r(3).to(e4) + r(3).to(e4)),
        "fp8-sum": (NO_KERNEL, "sum_cpu", lambda: r(3).to(e5).sum()),
        "fp8-mul": (NO_KERNEL, "mul_cpu_reduced_float", lambda: r(3).to(e5) * 2),
        "fp8-div": (NO_KERNEL, "div_cpu_reduced_float", lambda: r(3).to(e4) / 2),
        "fp8-exp": (NO_KERNEL, "exp_vml_cpu", lambda: r(3).to(e4).exp()),
        "fp8-softmax": (NO_KERNEL, "softmax_lastdim_kernel_impl", lambda: r(3).to(e4).softmax(0)),
        "fp8-relu": (NO_KERNEL, "clamp_min_scalar_cpu", lambda: F.relu(r(3).to(e4))),
        "fp8-conv": (NO_KERNEL, "slow_conv2d_cpu", lambda: F.conv2d(r(1, 1, 4, 4).to(e4), r(1, 1, 3, 3).to(e4))),
        "fp8-bmm": (NO_KERNEL, "bmm", lambda: torch.bmm(r(1, 2, 2).to(e5), r(1, 2, 2).to(e5))),
        "fp8-sort": (NO_KERNEL, "sorting_kernel_method_name", lambda: r(4).to(e4).sort()),
        # --- fp8 matmul rules ---
        "scaled-mm-half-scale": (
            ("quantization",),
            "_scaled_mm",
            lambda: scaled_mm(r(16, 16).to(e4), r(16, 16).to(e4).t(), torch.tensor(1.0, dtype=h), torch.tensor(1.0)),
        ),
        "scaled-mm-bf16-operand": (
            ("quantization",),
            "_scaled_mm",
            lambda: scaled_mm(r(16, 16).to(e4), r(16, 16, dtype=b).t(), torch.tensor(1.0), torch.tensor(1.0)),
        ),
        # --- autocast, GradScaler and their deprecations ---
        "autocast-cuda-without-cuda": (AMP, None, lambda: entered(torch.autocast("cuda"))),
        "autocast-cpu-float32": (AMP, None, lambda: entered(torch.autocast("cpu", dtype=torch.float32))),
        "autocast-cpu-fp8": (AMP, None, lambda: entered(torch.autocast("cpu", dtype=e4))),
        "cuda-amp-autocast": (AMP, "torch.cuda.amp.autocast", lambda: torch.cuda.amp.autocast()),
        "cpu-amp-autocast": (AMP, "torch.cpu.amp.autocast", lambda: torch.cpu.amp.autocast()),
        "cuda-amp-gradscaler": (AMP, "torch.cuda.amp.GradScaler", lambda: torch.cuda.amp.GradScaler()),
        "cpu-amp-gradscaler": (AMP, "torch.cpu.amp.GradScaler", lambda: torch.cpu.amp.GradScaler()),
        "cuda-amp-custom-fwd": (AMP, "torch.cuda.amp.custom_fwd", lambda: torch.cuda.amp.custom_fwd(lambda x: x)),
        "cuda-amp-custom-bwd": (AMP, "torch.cuda.amp.custom_bwd", lambda: torch.cuda.amp.custom_bwd(lambda x: x)),
        "gradscaler-cuda-without-cuda": (AMP, None, lambda: torch.amp.GradScaler("cuda")),
        "gradscaler-fp16-gradients": (AMP, None, lambda: scaler_steps(h)),
        "gradscaler-unscale-twice": (AMP, None, lambda: scaler_steps(f, unscale_twice=True)),
        "gradscaler-no-inf-checks": (AMP, None, lambda: scaler_steps(f, skip_backward=True)),
        "gradscaler-unscale-after-step": (AMP, None, lambda: scaler_out_of_order("unscale_")),
        "gradscaler-step-twice": (AMP, None, lambda: scaler_out_of_order("step")),
        "gradscaler-closure-keyword": (AMP, None, lambda: scaler_with_closure(positional=False)),
        "gradscaler-closure-positional": (AMP, None, lambda: scaler_with_closure(positional=True)),
        "gradscaler-never-scaled": (AMP, None, scaler_never_scaled),
        "sdp-kernel-deprecated": (("attention",), "sdp_kernel", lambda: entered(torch.backends.cuda.sdp_kernel())),
    }


# Real failures that are not precision failures: they must stay unrecognised, also with fp16 tensors in them.
NOT_PRECISION = {
    "shape-half": lambda: torch.mm(r(2, 3, dtype=h), r(2, 3, dtype=h)),
    "out-of-memory": lambda: torch.empty(1 << 46, dtype=h),
    "long-index-add": lambda: torch.zeros(3, dtype=torch.long).index_add_(0, idx(0), r(1)),
    "long-cdist": lambda: torch.cdist(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)),
    "float-target": lambda: F.nll_loss(r(2, 3), torch.tensor([0.0, 1.0])),
    "view-half": lambda: torch.ones(2, dtype=h).view(3),
    "cat-sizes-half": lambda: torch.cat([torch.ones(2, 2, dtype=h), torch.ones(3, 3, dtype=h)]),
    "long-mm": lambda: torch.mm(torch.ones(2, 2, dtype=torch.long), r(2, 2)),
    "double-float-mm": lambda: torch.mm(torch.ones(2, 2, dtype=torch.double), r(2, 2)),
    "int-put": lambda: torch.zeros(3, dtype=torch.int).put_(idx(0), r(1)),
    "double-lerp": lambda: torch.lerp(torch.ones(2, dtype=torch.double), r(2), 0.5),
    "float-to-long-out": lambda: torch.add(r(2), r(2), out=torch.zeros(2, dtype=torch.long)),
    "long-inv": lambda: torch.linalg.inv(torch.ones(2, 2, dtype=torch.long)),
    "float-indices-half-weight": lambda: F.embedding(torch.tensor([0.5]), torch.ones(2, 2, dtype=h)),
    "sdpa-shape-half": lambda: F.scaled_dot_product_attention(
        r(1, 2, 4, dtype=h), r(1, 3, 5, dtype=h), r(1, 3, 5, dtype=h)
    ),
    "conv-channels-half": lambda: F.conv2d(r(1, 2, 4, 4, dtype=h), r(1, 1, 3, 3, dtype=h)),
    "index-out-of-bounds-half": lambda: torch.ones(2, dtype=h)[idx(5)],
    "long-mask-sdpa": lambda: sdpa(
        r(1, 1, 2, 4, dtype=h), r(1, 1, 2, 4, dtype=h), r(1, 1, 2, 4, dtype=h), mask=torch.ones(2, 2, dtype=torch.long)
    ),
}


def capture(code) -> list[str]:
    """torch's own words: the exception (type and message, as a traceback's last line shows it), then warnings."""
    torch.set_default_dtype(torch.float32)
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code()
        except Exception as exc:  # the failure being provoked
            texts.append(f"{type(exc).__name__}: {exc}")
    ignored = ("Failed to initialize NumPy",)  # the CI venv has no numpy: torch says so once, unrelated to the case
    texts += [f"{w.category.__name__}: {w.message}" for w in caught if not str(w.message).startswith(ignored)]
    return texts


def main() -> None:
    report = {"torch": torch.__version__, "cases": {}, "not_precision": {}}
    for name, (families, op, code) in cases().items():
        report["cases"][name] = {"expect": list(families), "op": op, "texts": capture(code)}
    for name, code in NOT_PRECISION.items():
        report["not_precision"][name] = capture(code)
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
