"""Words the dtype signatures share: torch's spellings of each dtype, and the two usual cures."""

from __future__ import annotations

from mpdoctor.explain.signature import Alternative, fix

# Frames of libraries that swap in their own kernels: with one of them in the traceback the
# same message is their problem (see apex.py), not the caller's casting.
SWAPPED_KERNEL_FRAMES = (r"/apex/normalization/",)

# Dtype spellings, as torch prints them. ScalarType names: "Half", "BFloat16", "Float", "Double".
# caffe2 type-meta names: "c10::Half" (Linux/macOS), "struct c10::Half" (MSVC on Windows), "float".
HALF = r"(?:Half|BFloat16)"
FULL = r"(?:Float|Double)"
HALF_CPP = r"(?:struct )?c10::(?:Half|BFloat16)"
FULL_CPP = r"(?:float|double)"
TENSOR_PREFIX = r"(?:torch\.cuda\.|torch\.|CUDA|CPU)?"  # legacy tensor types: torch.cuda.HalfTensor, torch.HalfTensor, CUDAHalfTensor
HALF_DTYPE = r"(?:float16|bfloat16)"  # torch.dtype names, as Python prints them
FULL_DTYPE = r"(?:float32|float64)"

AUTOCAST = fix(
    "Run the forward pass (and the loss) under autocast instead of converting tensors by hand; autocast "
    'picks the dtype per op so the two sides always agree: `with torch.autocast("cuda", '
    "dtype=torch.float16):` (`torch.bfloat16` on Ampere or newer)"
)
CAST_INPUTS = fix(
    "Or, for a model converted with `.half()`/`.to(torch.bfloat16)` and run without autocast, cast the "
    "inputs to the model's dtype: `x = x.to(next(model.parameters()).dtype)`"
)

# mpdoctor's own way to find the module where two dtypes meet (README, "From Python"): the
# exception it re-raises names the innermost module, its input and parameter dtypes.
DTYPE_TRACE = fix(
    "Find the module where the dtypes meet: run the failing forward under mpdoctor's tracer, and the "
    "error then names the module with its input and weight dtypes:\n"
    "    with mpdoctor.dtype_trace(model):\n"
    "        model(*inputs)"
)

# The incident-1 cause (../shared/incidents.md): the same words from apex's fused norms. Without the
# traceback the message alone cannot tell the two apart, so a dtype explanation names it beside its own.
STRAY_APEX = Alternative(
    cause="A stray NVIDIA apex swapping in fused norms: a library (transformers before 5.8, fairseq, xDiT, "
    "Megatron) found apex importable and replaced LayerNorm/RMSNorm with apex's FusedLayerNorm/FusedRMSNorm, "
    "whose kernel needs input and weight in one dtype; nothing in your code changed",
    tell="An `apex/normalization/fused_layer_norm.py` frame in the full traceback means apex (paste the whole "
    "output: `python train.py 2>&1 | mpdoctor explain -`); with no apex installed (APEX005 finds nothing) it "
    "is the cast above",
    checks=("APEX005", "APEX002", "APEX003"),
    fixes=(fix("Uninstall apex: torch's own AMP does not need it", "pip uninstall -y apex"),),
)
