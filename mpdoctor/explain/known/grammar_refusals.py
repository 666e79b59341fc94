"""The ecosystem's general shapes for what a low precision needs and cannot do (see grammar_ecosystem.py): a feature
with no path in that precision, a GPU architecture, a newer torch. Mined from the libraries beside torch
(tests/explain_ecosystem), read by shape:

* ``<low precision> ... is not supported`` / ``<thing> does not support <low precision>``: ``RoPE is not supported
  for Float8Tensors``, ``The backward of moe_permute does not support FP8``, ``MS-AMP is not supported for ZeRO
  Stage 3``, ``atomic_max does not support fp16``, ``FP8 is only supported with FusedAttention backend``;
* ``<low precision> requires <architecture>``: ``NVFP4 requires Blackwell (sm100+)``, ``FP8_FA3 requires Hopper
  (SM 9.x)``, ``requires CUDA compute capability ≥8.9 or MI300+``, ``only supported on sm100+ machines``;
* ``<low precision> requires PyTorch >= X`` (or an ONNX opset).

What the low-precision kernels themselves need (tensor sizes that fit their blocks, the package that provides
them) is in grammar_refusals_kernels.py. Each names the library from the line or the traceback and says it is the
general explanation; a library's own signature, and the other general shapes, rank above.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

# A low precision, or a mixed-precision feature, as the libraries name it (lower-cased lines). Where a pattern
# starts with it, each spelling is at least four literal characters ("fp8 ", "(fp8"): patterns start with a literal.
# A low precision, or a mixed-precision feature, as the libraries write it in their messages (lower-cased lines):
# the short names (fp8, bf16, nvfp4, e4m3...), not torch's dtype names (`torch.float16`, `float16`): those are how a
# message's hole prints a dtype it was handed, whatever the message is about. Where a pattern starts with it, each
# spelling is at least four literal characters ("fp8 ", "(fp8"): patterns start with a literal.
_LOW_START = (
    r"(?:fp16|bf16|fp8 |fp8\)|\(fp8|fp8-|fp8_|fp8\.|fp8`|`fp8|float8(?<!torch\.float8)|e4m3|e5m2|nvfp4|mxfp|fp4 |fp4\.|"
    r"float4|mixed precision|mixed-precision| amp |ms-amp|autocast)"
)
_LOW_ANY = (
    r"(?:fp16|bf16|fp8|float8(?<!torch\.float8)|e4m3|e5m2|nvfp4|mxfp|fp4|float4|mixed precision|mixed-precision|"
    r"(?<![a-z])amp\b|ms-amp|autocast)"
)
# A GPU named by its card or generation, as people and libraries write it.
_GPU_NAMED = (
    r"(?:\b[pkvtma]100\b|\bp40\b|\bk80\b|\bt4\b|gtx ?[0-9]{3,4}|rtx ?[0-9]{4}|titan|pascal|maxwell|kepler|volta|"
    r"turing|ampere|hopper|blackwell|\bsm_?[0-9]{2,3}\b|compute capability|显卡)"
)
# The fp8/fp4 family alone: "only supports float8_e4m3fn", "must be 0.0 for FP8"; fp16/bf16 lists are
# grammar_dtype_lists.py's
_LOW8 = r"(?:fp8|float8(?<!torch\.float8)|nvfp4|mxfp|fp4|e4m3|e5m2|ms-amp)"
# What the title names: the first low precision of the line (details, case-insensitive, on the line as written).
_DTYPE = (
    r"(?P<dtype>nvfp4|mxfp[468]|fp8|float8(?:_e[0-9a-z]{1,10})?|fp4|float4|e4m3|e5m2|bfloat16|bf16|float16|fp16|"
    r"mixed[ -]precision|ms-amp|autocast|(?<![a-z])amp(?![a-z])|half(?![a-z]))"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="op-support-low-precision-feature-refused",
        family="op-support",
        title="{library} has no {dtype} path for this feature (the general explanation)",
        needles=(
            "not supported",
            "not yet supported",
            "does not support",
            "doesn't support",
            "do not support",
            "do not yet support",
            "don't support",
            "not compatible",
            "incompatible with",
            "is necessary when",
            "are necessary when",
            "is required for",
            "are required for",
            "only supported with",
            "only supported for",
            "only supported in",
            "only support",
            "supported only",
            "is unsupported",
            "are unsupported",
            *(f"only {low}" for low in ("fp8", "float8", "nvfp4", "mxfp", "fp4", "e4m3", "e5m2", "ms-amp")),
            "is forbidden",
            "does not work",
            "only works",
            *(
                f"{verb} be {value}"
                for verb in ("must", "should")
                for value in ("0", "1", "zero", "none", "false", "true", "disabled", "off")
            ),
            "can't use",
            "cannot use",
            "must pass",
            "is supported for",
            "are supported for",
            "supports only",
            "can only be used with",
            *(f"cannot be {what}" for what in ("fsdp", "wrapped", "sharded", "compiled", "pickled", "combined")),
            "support a mix of",
        ),
        patterns=(
            # the precision first: "FP8 attention is not supported for Float8BlockScaling"
            _LOW_START + r"[^\n:]{0,120}?\bnot (?:yet )?supported",
            _LOW_START + r"[^\n:]{0,80}?\b(?:is|are) (?:unsupported|forbidden)",
            _LOW_START + r"[^\n:]{0,80}?\b(?:does|do|did) not (?:yet )?support ",
            _LOW_START + r"[^\n:]{0,80}?\b(?:doesn't|don't) support ",
            _LOW_START + r"[^\n:]{0,80}?\b(?:is|are) (?:not compatible|incompatible)",
            _LOW_START + r"[^\n:]{0,60}?\b(?:is|are) only supported (?:with|for|in|by) ",
            # the refusal first: "GroupedLinear doesn't support input tensor in FP8"
            r"(?:does not|doesn't|do not|don't) (?:yet )?support [^\n]{0,60}?" + _LOW_ANY,
            r"not (?:yet )?supported (?:for|with|in|by|under|when using) [^\n]{0,40}?" + _LOW_ANY,
            r"(?:not compatible|incompatible) with [^\n]{0,40}?" + _LOW_ANY,
            r"(?: is | are )necessary when using [^\n]{0,40}?" + _LOW_ANY,
            r"backend [^\n]{0,40}?(?:is|are) required for [^\n]{0,20}?" + _LOW_ANY,
            # what only the fp8/fp4 family is limited to: "only supports float8_e4m3fn dtype", "dropout_p must be 0.0
            # for FP8", "KernelPreference.MSLK does not work for per tensor float8 quant"
            r"only supports? [^\n]{0,40}?" + _LOW8,
            r"only [^\n]{0,30}? (?:is|are) supported (?:for|with|in) [^\n]{0,20}?" + _LOW8,
            r"(?:only supported|supported only) (?:for|with|in|on) [^\n]{0,20}?" + _LOW8,
            r"supports only [^\n]{0,40}?" + _LOW8,
            r"only " + _LOW8 + r"[^\n]{0,30}? (?:is|are) supported",
            _LOW_START + r"[^\n:]{0,60}?\bonly supports? ",
            r"can only be used with [^\n]{0,20}?" + _LOW8,
            _LOW_START + r"[^\n:]{0,40}?\bcannot be (?:fsdp-wrapped|wrapped|sharded|compiled|pickled|combined)",
            r"(?:does not|doesn't) support a mix of (?:fp16|bf16|float16|bfloat16)",
            r"does not work (?:for|with) [^\n]{0,40}?" + _LOW_ANY,
            _LOW_START + r"[^\n:]{0,40}?\bonly works (?:for|with) ",
            r"(?:must|should) be (?:[0-9]|zero|none|false|true|disabled|off)[^\n]{0,20}? for " + _LOW8,
            r"(?:can't|cannot) use [^\n]{0,60}? with " + _LOW_ANY,
            r"must pass [^\n]{0,60}?when using " + _LOW_ANY,
        ),
        details=(_DTYPE, terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="{library} has no {dtype} path for what this run combines with it: a feature, an op on a quantized "
        "tensor, a parallelism or communication mode, torch.compile around it, or a format combination that is not "
        "implemented in that precision (or that needs another setting with it, such as a fused attention backend). "
        "The GPU is not what is missing: that part has to run in another precision, or the feature has to be "
        "switched off.",
        fixes=(
            fix(
                "Keep that part out of {dtype}: run the module or op the message names in bf16/fp32 (leave it out "
                "of the fp8/fp4 recipe or the autocast region), or use the precision or format the message says "
                "is supported"
            ),
            fix(
                "Or switch off the feature it names for this run (the fused kernel, the overlap or communication "
                "option, the parallelism mode, torch.compile around that region)"
            ),
        ),
        library_fixes=terms.FEATURE,
        checks=(),
        sources=(
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/pytorch/module/grouped_linear.py",
            "https://github.com/triton-lang/triton/blob/main/python/triton/language/semantic.py",
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
        ),
        examples=(
            "AssertionError: RoPE is not supported for Float8Tensors!",
            "TypeError: GroupedLinear doesn't support input tensor in FP8.",
            "ValueError: atomic_max does not support fp16",
            "NotImplementedError: MS-AMP is not supported for ZeRO Stage 3. Please use ZeRO Stage 0, 1, or 2 instead.",
            "AssertionError: FP8 is only supported with FusedAttention backend!",
            "TypeError: AMP and the LBFGS optimizer are not compatible.",
        ),
        near_misses=(
            # an unimplemented API, a deprecation, and refusals that name no low precision
            "NotImplementedError: Transpose qresult is not implemented for FP4.",
            "UserWarning: fp8_autocast is deprecated and will be removed in a future release. Use autocast(enabled=..., "
            "calibrating=..., recipe=..., group=..., _graph=...) instead.",
            "AssertionError: Current tensor scaling is not supported for fused norm and quantization. Please do norm "
            "in higher-precision then quantize with current tensor scaling.",
            "ValueError: TensorRT does not support float64 (double) precision. To resolve this, please set "
            "truncate_double=True in your compilation settings and re-run the model.",
        ),
        rank=-3,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="hardware-architecture-required-for-precision",
        family="hardware",
        title="{library} runs {dtype} only on a newer GPU ({needed}) (the general explanation)",
        needles=(
            "requires blackwell",
            "requires a blackwell",
            "requires hopper",
            "requires a hopper",
            "requires ada",
            "requires ampere",
            "requires an ampere",
            # ASCII needles: a needle outside ASCII would send every log holding it down the slower str path
            "requires cuda compute capability",
            "only supported on sm",
            "only supported on cdna",
            "only supported on hopper",
            "only supported on blackwell",
            "requires mi3",
            "requires cdna",
            "requires gaudi",
            "not supported in this architecture",
            "specific and not supported on",
            "requires cuda with native",
            "-only. set",
        ),
        patterns=(
            r"requires (?:a |an )?(?:blackwell|hopper|ada|ampere)",
            r"compute capability ≥ ?[0-9]",
            r"only supported on (?:sm ?_?[0-9]|cdna|hopper|blackwell)",
            r"requires mi3[0-9]0",
            r"requires cdna ?[0-9]",
            r"requires gaudi ?[0-9]",
            r"not supported in this architecture",
            r"gfx9[0-9a-z]{2,3} specific and not supported on",
            r"requires cuda with native (?:bfloat16|bf16|fp16|float16)",
            r"path is (?:hopper|blackwell)-only",
        ),
        # the line must name a low precision: a GPU requirement of anything else is not this
        details=(
            _DTYPE,
            r"(?P<needed>blackwell|hopper|ada lovelace|ada|ampere|sm ?_?[0-9]{2,3}\+?|sm ?[0-9]\.x|mi3[0-9]0\+?|"
            r"gfx9[0-9a-z]{2,3}|cdna ?[0-9]|gaudi ?[0-9]|compute capability ≥ ?[0-9.]{1,4})",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"), ("needed", "newer than this one")),
        cause="{library} runs {dtype} only on GPUs that have it in hardware, and this one is older: fp8 matmuls need "
        "compute capability 8.9 (Ada: RTX 40xx, L4, L40) or 9.0 (Hopper: H100) or an AMD MI300; MXFP8, NVFP4 and "
        "other block-scaled fp4/fp8 formats need 10.0 (Blackwell: B200, RTX 50xx); bf16 needs 8.0 (Ampere). AMD's "
        "fp8 types differ by generation (gfx942's fnuz formats against the OCP ones of later GPUs). Some libraries "
        "then fall back (upcast, another kernel) and warn; others stop.",
        fixes=(
            fix("Check what the GPU is", "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
            fix(
                "On this GPU use a precision it runs: bf16 (or fp16 before Ampere) weights instead of an fp8/fp4 "
                "checkpoint or recipe, or the library's fallback (dequantize on load, an emulated kernel)"
            ),
            fix("Or run on a GPU that has it (fp8: L4/L40/H100/MI300; MXFP8/NVFP4: B200/RTX 50xx)"),
        ),
        library_fixes=terms.ARCHITECTURE,
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/pytorch/quantization.py",
            "https://github.com/pytorch/ao/blob/main/torchao/quantization/quant_api.py",
            "https://developer.nvidia.com/cuda-gpus",
        ),
        examples=(
            "RuntimeError: NVFP4 requires Blackwell (sm100+) block-scaled tensor cores; found sm90.",
            "RuntimeError: FP8_FA3 requires Hopper (SM 9.x), got SM86.",
            "AssertionError: Float8 dynamic quantization requires CUDA compute capability ≥8.9 or MI300+ or XPU.",
            "AssertionError: NVFP4 DYNAMIC mode is only supported on sm100+ machines",
        ),
        near_misses=(
            # GPU requirements that name no precision
            "RuntimeError: Blocked attention requires CUDA compute capability >= 8.0",
            "AssertionError: Unsupported compute capability. Supported: 9.x, 10.x",
        ),
        rank=-2,
        notes=_GENERAL_NOTE + " hardware-capability-required-for-precision reads `compute capability >= X`.",
    ),
    Signature(
        id="hardware-low-precision-refused-on-this-gpu",
        family="hardware",
        title="{library} refuses {dtype} on this GPU's architecture (the general explanation)",
        needles=("not supported", "unsupported", "not available", "does not support", "doesn't support"),
        # a low precision refused, with the GPU the refusal is about named beside it: its architecture, its SM or
        # compute capability, or the card itself. op-support-low-precision-feature-refused reads the same refusals
        # when no GPU is named (a feature with no path in that precision, whatever the GPU)
        patterns=(
            _LOW_START + r"[^\n:]{0,80}?\bnot (?:yet )?supported on (?:this |the |your )?(?:gpu|device|hardware|"
            r"architecture|arch|sm|compute capability|cards?|[0-9]{1,2}\.[0-9x]\+? arch|sm_?[0-9]|pre-|older )",
            r"unsupported (?:sm|arch|architecture|gpu|compute capability)[a-z _]{0,20}? for [^\n]{0,40}?" + _LOW_ANY,
            _LOW_START + r"[^\n:]{0,40}?\bnot supported[^\n]{0,80}?" + _GPU_NAMED,
            # the card as the subject, in a person's words: "My card (RTX 5000 Max-Q 16GB) doesn't support bf16"
            r"(?:my gpu|my card|my graphics card|this gpu|this card|your gpu|your card|our gpu|our card)\b[^\n]{0,60}?"
            r"\b(?:doesn't|does not|don't|do not) support (?:native )?" + _LOW_ANY,
        ),
        details=(_DTYPE, terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="{library} has no {dtype} kernels for this GPU's architecture: the precision needs hardware this card "
        "lacks (bf16 needs compute capability 8.0, Ampere; fp8 8.9 or 9.0, Ada or Hopper; MXFP8/NVFP4 and other "
        "block-scaled formats 10.0, Blackwell; fast fp16 6.0 or 7.0), or the library's build has kernels only for "
        "other architectures (an sm_90-only fp8 GEMM refuses an sm_89 or sm_120 card).",
        fixes=(
            fix("Check what the GPU is", "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
            fix(
                "On this GPU use a precision it runs: fp16 or fp32 before Ampere, bf16 instead of fp8/fp4 before Ada "
                "or Hopper, another fp8 recipe or format where the library lists one for this architecture"
            ),
            fix("Or use a release of the library built with kernels for this architecture, or a GPU that has them"),
        ),
        library_fixes=terms.ARCHITECTURE,
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/NVIDIA/TransformerEngine/issues/2304",
            "https://github.com/NVIDIA/TensorRT-LLM/issues/4599",
            "https://github.com/zai-org/VisualGLM-6B/issues/348",
            "https://github.com/cocktailpeanut/fluxgym/issues/241",
        ),
        examples=(
            "AssertionError: MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet.",
            "My card (RTX 5000 Max-Q 16GB) doesn't support bf16 and the training lasts forever without effects "
            "(samples give only weird artifacts or whatever it is). Can I somehow switch to fp16?",
            "deployment failed, log error saying: untimeError: Unsupported SM version for FP8 block scaling GEMM",
            "在p100 16G显存上执行bash finetune/finetune_visualglm.sh报错fp16 is not supported.这是P100显卡不支持fp16这种"
            "数据格式吗，该怎么改？int8，fp32都试过，直接报这两参数错误",
        ),
        near_misses=(
            # a low precision refused for a feature, no GPU named; a GPU refused with no precision
            "AssertionError: FP8 is only supported with FusedAttention backend!",
            "RuntimeError: Unsupported SM version for this kernel",
        ),
        rank=-2,
        notes=_GENERAL_NOTE + " Above op-support-low-precision-feature-refused (rank -3), whose refusals it shares.",
    ),
    Signature(
        id="framework-precision-needs-newer-version",
        family="framework",
        title="{library} needs a newer torch or ONNX opset for {dtype}: {needed} (the general explanation)",
        needles=(
            "requires a pytorch >=",
            "requires pytorch >=",
            "requires torch>=",
            "requires torch >=",
            "and torch>=",
            "available in pytorch >=",
            "or higher to use",
            "need onnxruntime>=",
            "needs onnxruntime>=",
            "need torch>=",
            "needs torch>=",
        ),
        patterns=(
            r"requires (?:a )?pytorch ?>= ?[0-9]",
            r"requires torch ?>= ?[0-9]",
            r"and torch ?>= ?[0-9]",
            r"available in pytorch ?>= ?[0-9]",
            r"requires opset [0-9]{1,3} or higher to use",
            r"needs? (?:onnxruntime|torch) ?>= ?[0-9]",
        ),
        details=(
            r"(?P<dtype>nvfp4|mxfp8|mxfp4|fp8|float8_e[0-9a-z]{1,10}|fp4|bfloat16|bf16|float16|fp16|grad ?scaler|"
            r"mixed precision|autocast)",
            r"(?P<needed>(?:pytorch|torch|onnxruntime) ?>= ?[0-9][0-9.]{0,8}[0-9]|opset [0-9]{1,3} or higher)",
            r"(?P<device>mps)",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"), ("needed", "a newer version")),
        cause="{library} uses {dtype} through a torch feature that older torch releases do not have (fp16/bf16 "
        "autocast and GradScaler on Apple's MPS arrived in torch 2.5-2.8, bf16 kernels some models need in 2.2, the "
        "fp8 scale dtype `float8_e8m0fnu` in 2.7), or an ONNX operator set that has the type (bfloat16 from opset "
        "13). This environment's torch (or the model's opset) is older than {needed}, so it refuses, or falls back "
        "to float32.",
        fixes=(
            fix(
                "See which torch this environment runs, then upgrade it (for a CUDA build, the wheel index for your "
                "CUDA)",
                'python -c "import torch; print(torch.__version__, torch.version.cuda)"',
            ),
            fix(
                "Or run in float32 where that is enough (drop the fp16/bf16 option); for ONNX export, pass "
                "`opset_version=17` (13 or higher) to `torch.onnx.export`"
            ),
        ),
        checks=("STACK001",),
        sources=(
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
            "https://github.com/huggingface/diffusers/blob/main/src/diffusers/pipelines/stable_cascade/pipeline_stable_cascade.py",
            "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/python/tools/transformers/float16.py",
        ),
        examples=(
            "ValueError: bf16 mixed precision with MPS device requires a Pytorch >= 2.6.0",
            "ValueError: `StableCascadeDecoderPipeline` requires torch>=2.2.0 when using `torch.bfloat16` dtype.",
            "UserWarning: onnx model requires opset 13 or higher to use bfloat16. Fall back to float32.",
        ),
        rank=-2,
        notes=_GENERAL_NOTE,
    ),
]
