"""torch.amp's own warnings and the rules of fp8 and attention masks, recognised by torch's wording.

The Python layer words these (torch/amp/autocast_mode.py, torch/amp/grad_scaler.py, torch/cuda/amp/*.py,
torch/cpu/amp/*.py, torch/backends/cuda/__init__.py, torch/_inductor/compile_fx.py); the fp8 and bias rules
come from ATen's scaled_mm and attention checks (CUDA-only texts cited in tests/explain_torch/torch_grammar.md).
A deprecation names its replacement call, and the explanation repeats it (``{old}`` -> ``{new}``).
"""

from __future__ import annotations

from mpdoctor.explain.known.spelling import LOW
from mpdoctor.explain.signature import Signature, fix

_SOURCE_AMP = "https://github.com/pytorch/pytorch/blob/main/torch/amp/autocast_mode.py"
_SOURCE_SCALER = "https://github.com/pytorch/pytorch/blob/main/torch/amp/grad_scaler.py"
_SOURCE_CUDA_AMP = "https://github.com/pytorch/pytorch/blob/main/torch/cuda/amp/autocast_mode.py"
_SOURCE_SDP = "https://github.com/pytorch/pytorch/blob/main/torch/backends/cuda/__init__.py"
_SOURCE_ATTENTION = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/cuda/attention.cu"
_SOURCE_SDP_UTILS = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/sdp_utils_cpp.h"
_SOURCE_BLAS = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/Blas.cpp"
_SOURCE_SCALED_MM = "https://github.com/pytorch/pytorch/blob/main/torch/_meta_registrations.py"
_SOURCE_INDUCTOR = "https://github.com/pytorch/pytorch/blob/main/torch/_inductor/compile_fx.py"

SIGNATURES: list[Signature] = [
    Signature(
        id="scaler-amp-api-deprecated",
        family="scaler",
        title="{old} is deprecated: call {new} instead",
        needles=("is deprecated. please use `torch.amp.",),
        patterns=(r"`torch\.(?:cuda|cpu)\.amp\.[a-z_]{4,20}\(args\.\.\.\)` is deprecated\. please use `torch\.amp\.",),
        details=(
            r"`(?P<old>torch\.(?:cuda|cpu)\.amp\.[a-z_]{4,20})\(args\.\.\.\)` is deprecated\. please use "
            r"`(?P<new>torch\.amp\.[^`]{1,80})`",
        ),
        cause="torch 2.4 moved autocast, GradScaler, custom_fwd and custom_bwd into `torch.amp`, with the device "
        "as an argument; the old `torch.cuda.amp.*`/`torch.cpu.amp.*` names still work but warn (a FutureWarning: "
        "they will be removed). Nothing is wrong with the run yet.",
        fixes=(
            fix("Replace `{old}(...)` by `{new}`: the same object, the device named explicitly"),
            fix(
                "The new names need torch 2.4 or newer; code that must run on older torch can pick at import: "
                "`GradScaler = getattr(torch.amp, 'GradScaler', None) or torch.cuda.amp.GradScaler`",
                'python -c "import torch; print(torch.__version__)"',
            ),
        ),
        checks=(),
        sources=(_SOURCE_CUDA_AMP, "https://github.com/pytorch/pytorch/blob/main/torch/cuda/amp/grad_scaler.py"),
        notice=True,  # the run goes on: a notice with the call to move to, not a failure
        examples=(
            "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
        ),
        rank=-1,
    ),
    Signature(
        id="scaler-autocast-disabled-no-cuda",
        family="scaler",
        title='autocast for "cuda" was asked for, but CUDA is not available: autocast is off, the run is fp32',
        needles=("disabling autocast", "but cuda is not available. disabling"),
        patterns=(
            r"cuda is not available or torch_xla is imported\. disabling autocast",
            r"user provided device_type of 'cuda', but cuda is not available\. disabling",
        ),
        cause='`torch.autocast("cuda")` (or `torch.cuda.amp.autocast`, Lightning/HF fp16 on "cuda") was entered '
        "where torch sees no GPU: a CPU-only torch build, no driver, or CUDA_VISIBLE_DEVICES hiding the cards. "
        "torch then disables autocast and warns once; everything runs in fp32 on the CPU, slowly, and any "
        "GradScaler is disabled too.",
        fixes=(
            fix(
                "If a GPU was meant to run this, find why torch does not see it (CPU-only wheel, driver, "
                "CUDA_VISIBLE_DEVICES)",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
            fix(
                "If the run is meant for the CPU, ask for CPU autocast instead: "
                '`with torch.autocast("cpu", dtype=torch.bfloat16):`'
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(_SOURCE_AMP,),
        examples=("UserWarning: CUDA is not available or torch_xla is imported. Disabling autocast.",),
        rank=-1,
    ),
    Signature(
        id="scaler-autocast-dtype-unsupported",
        family="scaler",
        title="autocast on {device} refused the dtype it was given: autocast is off",
        needles=("autocast, but the target dtype is not supported",),
        patterns=(r"autocast, but the target dtype is not supported\. disabling autocast",),
        details=(r"in (?P<device>[a-z]{2,12}) autocast, but",),
        cause="`torch.autocast(device, dtype=...)` was given a dtype that device's autocast does not run: CPU "
        "autocast takes bfloat16 and float16, CUDA float16 and bfloat16 (bf16 only on GPUs with it), MPS and "
        "XPU their own lists. A float32/float64 or fp8 dtype, or a config value passed through as the dtype, "
        "makes torch disable autocast and warn: the region runs in full precision.",
        fixes=(
            fix(
                "Pass a dtype the device's autocast supports (the warning lists them): "
                "`torch.autocast(x.device.type, dtype=torch.bfloat16)`"
            ),
            fix("If full precision was meant, say so: `torch.autocast(x.device.type, enabled=False)`"),
        ),
        checks=("PREC007",),
        sources=(_SOURCE_AMP,),
        examples=(
            "UserWarning: In CUDA autocast, but the target dtype is not supported. Disabling autocast.",
            "UserWarning: In XPU autocast, but the target dtype is not supported. Disabling autocast.",
        ),
        rank=-1,
    ),
    Signature(
        id="attention-sdp-kernel-deprecated",
        family="attention",
        title="torch.backends.cuda.sdp_kernel() is deprecated: use torch.nn.attention.sdpa_kernel()",
        needles=("sdp_kernel()` is deprecated",),
        patterns=(r"torch\.backends\.cuda\.sdp_kernel\(\)` is deprecated",),
        cause="The context manager that picks scaled_dot_product_attention's backends moved to "
        "`torch.nn.attention.sdpa_kernel` (torch 2.3), which takes a list of `SDPBackend`s instead of booleans.",
        fixes=(
            fix(
                "Replace `torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, "
                "enable_mem_efficient=False)` by `torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION])` "
                "(`from torch.nn.attention import SDPBackend, sdpa_kernel`)"
            ),
        ),
        checks=(),
        sources=(_SOURCE_SDP,),
        notice=True,  # the run goes on: a notice with the call to move to, not a failure
        examples=(
            "FutureWarning: `torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager "
            "will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
            "updated signature.",
        ),
        rank=-1,
    ),
    Signature(
        id="attention-mask-bias-dtype",
        family="attention",
        title="Attention got a mask/bias in another dtype than the query",
        needles=("invalid dtype for bias",),
        patterns=(r"invalid dtype for bias - should match query's dtype",),
        cause="scaled_dot_product_attention adds a float mask to the scores, so it must be bool or in the "
        "query's dtype; the memory-efficient CUDA kernel requires the bias in exactly the query's dtype. A mask "
        "built in fp32 (`torch.zeros(...)`, `torch.finfo(torch.float32).min`) meets fp16/bf16 queries, or a "
        "half mask meets fp32 queries.",
        fixes=(
            fix("Build or cast the mask in the query's dtype: `attn_mask = attn_mask.to(query.dtype)`"),
            fix(
                "Or pass a boolean mask (True = attend), which every backend takes in any precision: "
                "`attn_mask = keep.bool()`"
            ),
            fix("Use `torch.finfo(query.dtype).min` for masked positions, never float32's minimum in fp16"),
        ),
        checks=("PREC006",),
        sources=(_SOURCE_ATTENTION, _SOURCE_SDP_UTILS),
        examples=("RuntimeError: invalid dtype for bias - should match query's dtype",),
        notes="SDPA's CPU/math wording (`Expected attn_mask dtype to be bool or float or to match query dtype`) is "
        "dtype-sdpa-qkv-mismatch's; this is the memory-efficient CUDA kernel's (attention.cu).",
        rank=-1,
    ),
    Signature(
        id="quantization-fp8-scaled-mm-rules",
        family="quantization",
        title="torch._scaled_mm (fp8 matmul) was called against its layout, shape or scale rules",
        needles=(
            "invalid scaling configuration",
            "row-major and column-major matrices is supported by cublaslt",
            "to be divisible by 16",
            "must be divisible by 16",
            "expected both inputs to be fp8 types",
            "to be float8 matrix",
            "scaling, a and b should be float8",
            "scale_a must be",
            "scale_b must be",
        ),
        patterns=(
            r"invalid scaling configuration",
            r"only multiplication of row-major and column-major matrices is supported by cublaslt",
            r"expected trailing dimension of mat[12] to be divisible by 16",
            r"shape \([0-9x, ]{1,40}\) must be divisible by 16",
            r"expected both inputs to be fp8 types",
            r"expected mat[12] to be float8 matrix",
            r"for (?:tensorwise|rowwise) scaling, a and b should be float8",
            r"scale_[ab] must be (?:float|a float)",
        ),
        cause="fp8 matmuls (torch._scaled_mm, and torchao/Transformer Engine on top of it) have cuBLASLt's rules: "
        "both operands fp8 (e4m3/e5m2), the first row-major and the second column-major (pass `b.t()` of a "
        "contiguous tensor), every dimension a multiple of 16, and the scales float32: one element each "
        "(tensor-wise) or one per row/column (row-wise). A bf16 operand, an odd size or a bf16 scale breaks one.",
        fixes=(
            fix(
                "Pass the operands as fp8 with the right layout: `torch._scaled_mm(a_fp8, b_fp8.t(), scale_a, "
                "scale_b, out_dtype=torch.bfloat16)` with `a_fp8 = a.to(torch.float8_e4m3fn)` row-major and "
                "`b_fp8` contiguous before the `.t()`"
            ),
            fix(
                "Make the scales float32 (`scale.float()`), with shape `()`/`(1,)` for tensor-wise or `(M, 1)` "
                "and `(1, N)` for row-wise scaling"
            ),
            fix("Pad M, K and N to multiples of 16 (`torch.nn.functional.pad`), or leave that layer in bf16"),
        ),
        checks=(),
        sources=(_SOURCE_BLAS, _SOURCE_SCALED_MM),
        examples=(
            "ValueError: Invalid scaling configuration.",
            "RuntimeError: Only multiplication of row-major and column-major matrices is supported by cuBLASLt",
            "RuntimeError: Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: (16x10).",
            "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.",
        ),
        rank=-1,
    ),
    Signature(
        id="hardware-bf16-inductor-skips",
        family="hardware",
        title="torch.compile (Inductor) skips bf16 compilation: the GPU has no native bf16",
        needles=("does not support bfloat16 compilation natively",),
        patterns=(r"does not support bfloat16 compilation natively",),
        cause="Inductor's Triton kernels need native bf16 (compute capability 8.0, Ampere, or newer). On an "
        "older GPU (T4, V100, RTX 20xx) torch.compile falls back to eager for the bf16 graph: the model still "
        "runs, uncompiled and with emulated bf16.",
        fixes=(
            fix(
                "On a GPU before Ampere use fp16 with a GradScaler instead of bf16: "
                '`torch.autocast("cuda", dtype=torch.float16)`'
            ),
            fix("Or run on an Ampere-or-newer GPU, where Inductor compiles bf16"),
        ),
        checks=("GPU003", "PREC005"),
        sources=(_SOURCE_INDUCTOR,),
        examples=("Tesla V100-SXM2-16GB does not support bfloat16 compilation natively, skipping",),
        rank=-1,
    ),
    Signature(
        id="dtype-fused-norm-mismatch-warning",
        family="dtype",
        title="A norm's input and weight dtypes differ ({a} and {b}): the fused kernel is skipped",
        needles=("mismatch dtype between input and weight",),
        patterns=(r"mismatch dtype between input and weight: input dtype = ",),
        details=(r"input dtype = (?P<a>" + LOW + r"|float|double), weight dtype = (?P<b>" + LOW + r"|float|double)",),
        cause="rms_norm (and layer norms built on its fused kernel) got an input and a weight in different "
        "dtypes, so torch falls back to the slower composite implementation and warns. A model converted with "
        "`.half()` except its norms, or a norm kept in fp32 for stability, meets activations of another dtype.",
        fixes=(
            fix("Cast the norm's weight to the activations' dtype (`norm.to(x.dtype)`), or the input to the weight's"),
            fix(
                "Find the module where the dtypes meet: run the failing forward under mpdoctor's tracer, and the "
                "error then names the module with its input and weight dtypes:\n"
                "    with mpdoctor.dtype_trace(model):\n"
                "        model(*inputs)"
            ),
        ),
        checks=("PREC007",),
        sources=("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/layer_norm.cpp",),
        examples=(
            "UserWarning: Mismatch dtype between input and weight: input dtype = c10::Half, weight dtype = float, "
            "Cannot dispatch to fused implementation.",
        ),
        rank=0,
    ),
    Signature(
        id="scaler-state-not-float32",
        family="scaler",
        title="The loss scaler's own state is not float32: {what} was handed in another dtype",
        needles=(
            "current_scale must be a float tensor",
            "found_inf must be a float tensor",
            "growth_tracker must be an int tensor",
        ),
        # torch's own checks in _amp_update_scale_ and _amp_foreach_non_finite_check_and_unscale_ (AmpKernels)
        patterns=(r"(?:current_scale|found_inf) must be a float tensor|growth_tracker must be an int tensor",),
        details=(r"(?P<what>current_scale|found_inf|growth_tracker)",),
        cause="torch's scaler kernels keep the loss scale and the inf flag in float32 (and the growth counter in "
        "int32). A scaler that is not torch's own GradScaler (a framework's wrapper, such as thinc's "
        "PyTorchGradScaler under spacy-transformers' `mixed_precision`) or a scaler state cast with the model "
        "(`.half()`/`.to(dtype)` on an object holding it, a checkpoint saved from another precision) handed "
        "{what} in another dtype.",
        fixes=(
            fix(
                "Keep the scaler's state out of the model's casts: create it as torch does (`torch.full((), "
                'init_scale, dtype=torch.float32)`), or use `torch.amp.GradScaler("cuda")` itself'
            ),
            fix(
                "In a framework's mixed-precision option (spaCy/thinc `mixed_precision`), upgrade the framework or "
                "turn that option off until its scaler keeps float32 state"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/AmpKernels.cu",
            "https://github.com/explosion/spaCy/issues/13512",
        ),
        examples=(
            "RuntimeError: current_scale must be a float tensor.",
            "RuntimeError: found_inf must be a float tensor.",
            "RuntimeError: growth_tracker must be an int tensor.",
        ),
    ),
]
