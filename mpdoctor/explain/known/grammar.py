"""torch's own grammar for precision failures, recognised by structure rather than by seen wording.

ATen raises these from a finite set of checks (``TORCH_CHECK``s and the dispatch macros' ``"<kernel>" not
implemented for '<dtype>'``); tests/explain_torch/torch_grammar.md lists the messages mined from torch 2.13 and
which signature here covers each. Three shapes cover most of them:

* two different floating dtypes, one of them low precision, named in one message after a "must be the same"
  phrase: a mismatch, whatever the op (``index_add_(): self (Half) and source (Float) must have the same
  scalar type``, ``prelu: Type promoting not supported. Got Half and Float``);
* an op with no kernel for a low-precision dtype on a device (``"cdist" not implemented for 'BFloat16'``,
  ``linalg.inv: Low precision dtypes not supported. Got Half``, the FFT libraries' half limits): run that op
  in fp32, and the rest of the model keeps its precision;
* ``out=`` tensors whose dtype is not the result's.

Every signature here ranks below the story-telling ones (apex, cpu_half, dtype...): a line they also claim is
theirs. ``details`` reads the op, the device and the dtypes from the line into the title and fixes.
"""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.known.spelling import FLOATING, LOW
from mpdoctor.explain.signature import Signature, fix

# The op a message starts with: `index_add_(): ...`, `dot : ...`, `linalg.inv: ...`, after any exception name.
OP = r"^(?:[^\n]{0,200}?error: )?(?P<op>(?![a-z]{0,40}(?:error|warning|exception): )[a-z_][a-z0-9_.]{0,60})(?:\([^()]{0,80}\))? ?: "
# Two floating dtypes in one message: the matcher requires them different, one of them low precision.
PAIR = r"(?P<a>" + FLOATING + r").{0,300}?(?P<b>" + FLOATING + r")"
# `"<kernel>" not implemented for '<dtype>'`: the dispatch macros' wording (AT_DISPATCH_*, Dispatch.h).
KERNEL = r"\"(?P<op>[a-z0-9_:.]{1,100})\" not implemented for '(?P<dtype>" + LOW + r")'"
_LOW_WORD = r"(?:half|bfloat16|float8_e[0-9a-z]{1,10}|float4_e2m1fn_x2)"

_SOURCE_DISPATCH = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/Dispatch.h"
_SOURCE_LINALG = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/LinearAlgebraUtils.h"
_SOURCE_SPECTRAL_CPU = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/mkl/SpectralOps.cpp"
_SOURCE_SPECTRAL_CUDA = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/SpectralOps.cpp"
_SOURCE_HISTC = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/SummaryOps.cu"
_SOURCE_OUT = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/Resize.h"

_MISMATCH_FIXES = (
    fix(
        "Cast the odd tensor to the other's dtype right before {op}: `src = src.to(dst.dtype)`; in-place writes "
        "(index_add_, index_copy_, put_, scatter_) and buffers are not cast by autocast, so the cast goes there"
    ),
    fix(
        "If the model was converted by hand (`.half()`, `.to(torch.bfloat16)`), convert its inputs and any tensor "
        "created inside forward the same way (`torch.zeros(..., dtype=x.dtype)`), or keep the weights in fp32 and "
        "run the forward under autocast for {device} instead"
    ),
    DTYPE_TRACE,
)

_FP32_AROUND = fix(
    "Run {op} in float32 and cast the result back; the rest of the model keeps its precision: "
    "`y = op(x.float()).to(x.dtype)`"
)
_NO_KERNEL_CPU = (
    _FP32_AROUND,
    fix(
        "Inside a CPU autocast region an op on autocast's fp32 list gets fp32 inputs by itself, but a tensor "
        "that is already fp16/bf16 (a `.half()` model) is not cast: turn autocast off around the op and cast: "
        '`with torch.autocast("cpu", enabled=False): y = op(x.float())`'
    ),
    fix(
        "Or run the whole model in float32 on the CPU (`model.float()`): CPU kernels exist for every op in fp32, "
        "and low-precision CPU compute is only faster on CPUs with AVX512-BF16/AMX"
    ),
)
_NO_KERNEL_CUDA = (
    _FP32_AROUND,
    fix(
        "Inside autocast, turn it off around the op and cast, so nothing hands it fp16/bf16 again: "
        '`with torch.autocast("cuda", enabled=False): y = op(x.float())`'
    ),
    fix(
        "Check whether a newer torch has the kernel (its release notes list new half/bf16 CUDA kernels)",
        'python -c "import torch; print(torch.__version__, torch.version.cuda)"',
    ),
)
_NO_KERNEL_ANY = (
    _FP32_AROUND,
    fix(
        "Inside autocast, turn it off around the op for the device the tensors are on, and cast: "
        "`with torch.autocast(x.device.type, enabled=False): y = op(x.float())`"
    ),
)

_NO_KERNEL_CAUSE = (
    "torch has no {dtype} kernel for {op} on {device}: the op's kernels are compiled for some dtypes only "
    "(linear algebra, FFT, distances and histograms are fp32/fp64 kernels, fp8 is a storage format with almost "
    "no compute kernels). A tensor in that precision reached it: a model converted with `.half()`/"
    "`.to(torch.bfloat16)`, or an op called on autocast's output."
)

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-two-dtypes-meet",
        family="dtype",
        title="Two floating dtypes meet in {op} ({a} and {b})",
        # specific words only: every line holding a needle is read again, and a log full of "does not match"
        # (checksums, shapes) must not cost a regex per line
        needles=(
            "same scalar type",
            "same dtype",
            "to have the same type as tensor",
            "dtypes must be the same",
            "type promoting not supported",
            "mismatch dtype between",
            "promotion for float8",
            "expected dtype ",
            "dtypes match, got",
            "dtype of input and weight",
            "should be the same for fp8",
            "to have type half",
            "to have type bfloat16",
            "to have type float but",
            "must match when outside",
        ),
        patterns=(
            r"same (?:scalar type|dtype)",
            r"to have the same type as tensor",
            r"dtypes must be the same",
            r"type promoting not supported",
            r"mismatch dtype between",
            r"promotion for float8 types is not supported",
            r"expected dtype [a-z0-9:]{4,20} for `",
            r"dtypes match, got",
            r"unexpected dtype of input and weight",
            r"data type of input and weight should be the same for fp8",
            # SyncBatchNorm's gather (`Expected counts to have type Half but got Float`), other ATen checks alike
            r"expected [a-z_]{1,40} to have type [a-z0-9]{3,12} but got [a-z0-9]{3,12}",
            # TransformerEngine's modules outside autocast: "Data types for parameters must match when outside of
            # autocasted region. Found input dtype: torch.float32 and weight dtype: torch.bfloat16"
            r"must match when outside of autocast",
        ),
        details=(PAIR, OP),
        defaults=(("op", "one op"),),
        cause="An op ({op}) got tensors of two floating dtypes, {a} and {b}, and needs them in one. Part of the model "
        "or its data stayed in one precision while the rest moved to another: a model converted with `.half()`/"
        "`.to(torch.bfloat16)` fed fp32 inputs, a buffer, mask or index source created without a dtype, or an "
        "op written outside autocast. Autocast does not cast the second operand of in-place writes.",
        fixes=_MISMATCH_FIXES,
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/TensorAdvancedIndexing.cpp",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/LinearAlgebra.cpp",
            "https://github.com/hpcaitech/ColossalAI/issues/258",
            "https://github.com/pytorch/pytorch/blob/main/torch/nn/modules/_functions.py",
            "https://github.com/Lightning-AI/lightning-thunder/issues/1044",
        ),
        examples=(
            "RuntimeError: index_add_(): self (Half) and source (Float) must have the same scalar type",
            "RuntimeError: Input dtypes must be the same, got: input float, batch1: c10::Half, batch2: c10::Half",
            "RuntimeError: prelu: Type promoting not supported. Got Half and Float",
            "This will raise exception `RuntimeError: Expected counts to have type Half but got Float`",
            # a framework's dtype namespace (Thunder tracing Megatron-core's TE layers)
            " AssertionError: Data types for parameters must match when outside of autocasted region.  Found input "
            "dtype: thunder.dtypes.float32 and 'weight' dtype: thunder.dtypes.bfloat16",
        ),
        near_misses=(
            "RuntimeError: index_add_(): self (Long) and source (Float) must have the same scalar type",
            "RuntimeError: expected m1 and m2 to have the same dtype, but got: double != float",
            "RuntimeError: index_add_(): self (Half) and source (Half) must have the same scalar type",
            "RuntimeError: Expected counts to have type Float but got Long",
        ),
        rank=-1,
        notes="Claimed only when two different floating dtypes, one of them fp16/bf16/fp8, are named "
        "(matcher.line_details): integer and fp32-against-fp64 mix-ups are not precision failures.",
    ),
    Signature(
        id="dtype-out-tensor-dtype",
        family="dtype",
        title="An op was given an out= tensor in another dtype than its result ({a} and {b})",
        needles=("expected out tensor to have dtype", "expected out type to be", "desired output type"),
        patterns=(
            r"expected out tensor to have dtype",
            r"expected out type to be",
            r"can't be cast to the desired output type",
        ),
        details=(PAIR, OP),
        defaults=(("op", "An op"),),
        cause="An op called with `out=` (or a wrapper that preallocates its output) computes in one dtype and "
        "was handed a result tensor of another: {a} and {b}. ops with an `out=` check (mm, bmm, addmm, "
        "baddbmm, gather, take_along_dim, where) do not cast into it, so a buffer allocated as fp32 before the "
        "inputs became fp16/bf16 (or the reverse) fails here.",
        fixes=(
            fix(
                "Allocate the out= tensor in the inputs' dtype (`torch.empty_like(x)`, or "
                "`torch.empty(shape, dtype=x.dtype, device=x.device)`), or drop `out=` and assign the result"
            ),
            fix("Or cast the inputs to the out= tensor's dtype before the call, if that is the precision you want"),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(_SOURCE_OUT,),
        examples=(
            "RuntimeError: Expected out tensor to have dtype float, but got c10::Half instead",
            "RuntimeError: Expected out type to be Float but got Half",
        ),
        near_misses=("RuntimeError: Expected out tensor to have dtype long int, but got float instead",),
        rank=-1,
    ),
    Signature(
        id="cpu-half-no-kernel",
        family="cpu-half",  # a low precision on the CPU: bf16/fp8 as fp16 (Half is cpu_half.cpu-half-op's)
        title="{op} has no {dtype} kernel on the CPU: run it in float32",
        needles=("not implemented for '",),
        patterns=(r"_cpu[a-z0-9_]{0,60}\" not implemented for '" + _LOW_WORD,),
        details=(KERNEL,),
        cause=_NO_KERNEL_CAUSE,
        fixes=_NO_KERNEL_CPU,
        checks=(),
        sources=(_SOURCE_DISPATCH,),
        examples=(
            "NotImplementedError: \"linalg_svd_cpu\" not implemented for 'BFloat16'",
            "NotImplementedError: \"sum_cpu\" not implemented for 'Float8_e5m2'",
        ),
        near_misses=("RuntimeError: \"sum_cpu\" not implemented for 'ComplexHalf'",),
        rank=-1,
    ),
    Signature(
        id="op-support-no-kernel-cuda",
        family="op-support",
        title="{op} has no {dtype} kernel on the GPU: run it in float32",
        needles=("not implemented for '",),
        patterns=(r"(?:_cuda|cuda_|cudnn|cublas)[a-z0-9_]{0,60}\" not implemented for '" + _LOW_WORD,),
        details=(KERNEL,),
        cause=_NO_KERNEL_CAUSE,
        fixes=_NO_KERNEL_CUDA,
        checks=("PREC001",),
        sources=(_SOURCE_DISPATCH, "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"),
        examples=(
            "RuntimeError: \"svd_cuda_gesvdjBatched\" not implemented for 'BFloat16'",
            "RuntimeError: \"ctc_loss_cuda\" not implemented for 'Half'",
            "RuntimeError: \"addmm_cuda\" not implemented for 'Float8_e4m3fn'",
        ),
        rank=-1,
    ),
    Signature(
        id="op-support-no-kernel",
        family="op-support",
        title="{op} has no {dtype} kernel: run it in float32",
        needles=("not implemented for '",),
        patterns=(r"\" not implemented for '" + _LOW_WORD,),
        details=(KERNEL,),
        cause=_NO_KERNEL_CAUSE,
        fixes=_NO_KERNEL_ANY,
        checks=(),
        sources=(_SOURCE_DISPATCH,),
        examples=(
            "RuntimeError: \"upsample_nearest3d_out_frame\" not implemented for 'BFloat16'",
            "NotImplementedError: \"add_stub\" not implemented for 'Float8_e4m3fn'",
        ),
        near_misses=("RuntimeError: \"cdist\" not implemented for 'Long'",),
        rank=-2,
        notes="Below the CPU and CUDA ones: a kernel name that says its device gets that device's advice.",
    ),
    Signature(
        id="op-support-low-precision-linalg",
        family="op-support",
        title="{op}: linear algebra has no fp16/bf16 kernels (got {dtype})",
        needles=("low precision dtypes not supported", "of float, double, cfloat or cdouble"),
        patterns=(
            r"low precision dtypes not supported\. got " + _LOW_WORD,
            r"(?:half|bfloat16)\{\[[0-9, ]{0,40}\]\}\): expected a tensor with 2 or more dimensions of float, double",
        ),
        details=(
            # the op starts a word: a search tries one start a word, not one a character (60 steps each)
            r"(?<![a-z0-9_.])(?P<op>[a-z_][a-z0-9_.]{0,60})(?:\([a-z0-9_]{0,20}\{[^}]{0,60}\}\))?: "
            r"(?:low precision|expected a)",
            r"got (?P<dtype>" + LOW + r")",
            r"\((?P<dtype>" + LOW + r")\{\[",
        ),
        defaults=(("dtype", "float16/bfloat16"),),
        cause="torch's linear algebra (inv, det, solve, svd, eig, qr, cholesky, norms built on them) runs in "
        "fp32/fp64 only: LAPACK, MAGMA and cuSOLVER have no half-precision routines, and the results would lose "
        "most of their digits anyway. {op} was handed a {dtype} tensor, usually a model in fp16/bf16 or "
        "autocast's output.",
        fixes=(
            _FP32_AROUND,
            fix(
                "Inside autocast, turn it off around the op for its device and cast: "
                "`with torch.autocast(x.device.type, enabled=False): y = op(x.float())`"
            ),
        ),
        checks=(),
        sources=(_SOURCE_LINALG,),
        examples=(
            "RuntimeError: linalg.inv: Low precision dtypes not supported. Got Half",
            "RuntimeError: linalg.pinv(Half{[3, 3]}): expected a tensor with 2 or more dimensions of float, "
            "double, cfloat or cdouble types",
        ),
        near_misses=("RuntimeError: linalg.inv: A must be batches of square matrices, but they are 3 by 2 matrices",),
        rank=-1,
    ),
    Signature(
        id="op-support-fft-half",
        family="op-support",
        title="torch.fft in half precision: {op} cannot transform {dtype} this way",
        needles=("unsupported dtype ", "cufft only supports", "cufft doesn't support"),
        patterns=(
            r"unsupported dtype " + _LOW_WORD,
            r"cufft only supports dimensions whose sizes are powers of two when computing in half precision",
            r"cufft doesn't support signals of half type",
        ),
        details=(r"(?P<dtype>" + LOW + r"|half precision|half type)",),
        defaults=(("op", "torch.fft"),),
        cause="FFTs in half precision are narrow: the CPU FFT (pocketfft/MKL) has no fp16/bf16 transform at all, "
        "and cuFFT computes fp16 only for signal sizes that are powers of two (and only on sm_53 or newer), "
        "never bf16. Under autocast or with a `.half()` model the spectrum was asked for in half precision.",
        fixes=(
            fix(
                "Run the transform in float32 and cast back: `X = torch.fft.rfft(x.float()); y = "
                "torch.fft.irfft(X).to(x.dtype)` (complex32 inputs: `.to(torch.complex64)`)"
            ),
            fix(
                "Inside autocast, turn it off around the FFT for the tensors' device and cast: "
                "`with torch.autocast(x.device.type, enabled=False): X = torch.fft.fft(x.float())`"
            ),
            fix("On the GPU in fp16, padding the signal to a power of two (`n=` argument) also satisfies cuFFT"),
        ),
        checks=(),
        sources=(_SOURCE_SPECTRAL_CPU, _SOURCE_SPECTRAL_CUDA),
        examples=(
            "RuntimeError: Unsupported dtype Half",
            "RuntimeError: cuFFT only supports dimensions whose sizes are powers of two when computing in half "
            "precision, but got a signal size of[80, 80]",
        ),
        near_misses=("RuntimeError: Unsupported dtype Long",),
        rank=-1,
    ),
    Signature(
        id="cpu-half-fft-mkl",
        family="cpu-half",
        title="torch.fft on the CPU (MKL) has no {dtype} transform",
        needles=("mkl fft doesn't support",),
        patterns=(r"mkl fft doesn't support tensors? of type: " + _LOW_WORD,),
        details=(r"(?P<dtype>" + LOW + r")",),
        cause="The CPU's FFT (MKL, or pocketfft) transforms only float32 and float64: a half-precision tensor on the "
        "CPU (a `.half()` model, CPU autocast to bf16, a spectral layer fed fp16 activations) has no transform "
        "there at all. cuFFT on the GPU does fp16 (power-of-two sizes), never bf16.",
        fixes=(
            fix(
                "Run the transform in float32 and cast back: `X = torch.fft.rfft(x.float()); y = "
                "torch.fft.irfft(X).to(x.dtype)`"
            ),
            fix(
                "Or keep the model in float32 on the CPU, and use half precision only on a GPU: "
                "`model.float()` when `device.type == 'cpu'`"
            ),
        ),
        checks=(),
        sources=(_SOURCE_SPECTRAL_CPU,),
        examples=("RuntimeError: MKL FFT doesn't support tensors of type: Half",),
        near_misses=("RuntimeError: MKL FFT doesn't support tensors of type: Long",),
    ),
    Signature(
        id="op-support-histc-half-cuda",
        family="op-support",
        title="torch.histc on the GPU has no fp16 kernel (HalfTensor is not supported)",
        needles=("halftensor is not supported",),
        patterns=(r"halftensor is not supported",),
        cause="torch.histc's CUDA kernel (`_histc_cuda`) refuses Half inputs outright; a histogram of fp16 "
        "activations or weights (a logger, a quantization observer) under autocast or a `.half()` model hits it.",
        fixes=(
            fix("Take the histogram of a float32 copy: `torch.histc(x.float(), bins=...)`"),
            fix("Or compute it with `torch.bucketize`/`torch.bincount` on fp32 values"),
        ),
        checks=(),
        sources=(_SOURCE_HISTC,),
        examples=("RuntimeError: HalfTensor is not supported",),
        rank=-1,
    ),
]
