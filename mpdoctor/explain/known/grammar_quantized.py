"""The ecosystem's general shapes for a model loaded quantized (see grammar_ecosystem.py): a cast a quantized model
refuses, and a quantization that found nothing to quantize.

* ``.half() is not supported for quantized model`` (transformers, diffusers): its weights are already stored in their
  quantized dtype, the rest was loaded in the dtype asked for;
* ``You are loading your model using fp8 but no linear modules were found`` (transformers' fp8, fp4 and
  compressed-tensors integrations): nothing was quantized, the model runs in its load dtype;
* ``gptq_marlin_gemm only supports bfloat16 and float16``: a half-only refusal whose subject is a quantized kernel or
  method (Marlin, GPTQ, AWQ, ExLlama, a ``*_quant_*`` kernel). The kernel family decides the fixes (the dtype the
  quantized model runs in, the method's own options), so it outranks the dtype reading of the same words
  (grammar_requirements.dtype-kernel-takes-only-half);
* ``ModelOptFp8Config only supports static FP8 quantization``: a loader that implements only another scheme of the
  checkpoint's quantization (static or dynamic scales, fp8 or fp4), read before the op-support reading of a refused
  low precision;
* ``"rshift_cuda" not implemented for 'BFloat16'``: a bit shift or mask (``>>``, ``&``) has no floating kernel at all,
  on any device; only unpacking packed low-bit weights shifts bits in a model, so the packed weights were cast to a
  float dtype. It outranks the missing-kernel readings (op-support, cpu-half) of the same line.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Alternative, Signature, fix

# What names a quantized kernel or method in a line (lower-cased): its scheme (Marlin, GPTQ, AWQ, ExLlama, Machete,
# GGUF, HQQ, AQLM, W4A16/W8A8), the quantize/dequantize kernels (`per_token_group_quant_8bit`, `dequantize_4bit`),
# bitsandbytes. Each spelling starts with four literal characters; "quant" alone would be `quantile` too.
_QUANTIZED = (
    r"(?:marlin|gptq|awq_|awq |awq-|exllama|machete|gguf|hqq_|hqq |aqlm|w4a16|w8a8|w4a8|quantiz|dequant|_quant|quant_|"
    r"scaled_mm|bitsandbytes)"
)
_HALF = r"(?:fp16|bf16|float16|bfloat16|half)"

SIGNATURES: list[Signature] = [
    Signature(
        id="quantization-quantized-model-cast",
        family="quantization",
        title="A quantized model was cast with {call}, which it refuses (the general explanation)",
        needles=("is not supported for quantized model",),
        # `.float()` is refused the same way but is no low precision: that one is not this
        patterns=(r"`\.(?:half|bfloat16)\(\)` is not supported for quantized model",),
        details=(r"(?P<call>\.half\(\)|\.bfloat16\(\))", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="A model loaded quantized (bitsandbytes 4/8-bit, GPTQ, AWQ, fp8...) keeps its weights in their "
        "quantized storage, and the modules that are not quantized were loaded in the dtype asked for at load time. "
        "`{call}` would cast the quantized weights too, so the library refuses it.",
        fixes=(
            fix(
                "Do not cast the model after loading; ask for the dtype of its unquantized parts when loading it: "
                "`from_pretrained(..., dtype=torch.float16)` (`torch_dtype=` in older transformers and diffusers)"
            ),
            fix("Cast the inputs instead, where an op needs them in the model's dtype: `x.to(model.dtype)`"),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_utils.py",
            "https://github.com/huggingface/diffusers/blob/main/src/diffusers/models/modeling_utils.py",
        ),
        examples=(
            "ValueError: `.half()` is not supported for quantized model. Please use the model as it is, since the "
            "model has already been casted to the correct `dtype`.",
        ),
        near_misses=(
            "ValueError: `.float()` is not supported for quantized model. Please use the model as it is, since the "
            "model has already been casted to the correct `dtype`.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-nothing-quantized",
        family="quantization",
        title="{library} found no Linear layers to quantize to {dtype} (the general explanation)",
        needles=("but no linear modules were found",),
        patterns=(r"but no linear modules were found",),
        # the line must say which low precision: a warning of another quantization method is no precision failure
        details=(r"(?P<dtype>nvfp4|mxfp4|fp8|fp4)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The {dtype} quantization replaces `nn.Linear` modules by its own; it found none to replace: the "
        "model's layers are another class (a fused or custom Linear, remote code), or `modules_to_not_convert` (a "
        "config's `ignore` list) excludes all of them. Loading goes on, and the model runs in the dtype it was "
        "loaded in, without the memory or speed {dtype} was meant to bring.",
        fixes=(
            fix(
                "See what the model's linear layers are (`print(model)`), and what the quantization config leaves "
                "out (`quantization_config.modules_to_not_convert`); a model whose layers are not `nn.Linear` needs a "
                "quantization method that supports it"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/finegrained_fp8.py",
        ),
        examples=(
            "You are loading your model using fp8 but no linear modules were found in your model. Please double "
            "check your model architecture.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-kernel-takes-only-half",
        family="quantization",
        title="{library}'s quantized kernel takes only {dtype}, and the model runs in another dtype (the general "
        "explanation)",
        needles=("only support", *(f"only {low}" for low in ("fp16", "bf16", "float16", "bfloat16", "half"))),
        patterns=(
            _QUANTIZED + r"[^\n]{0,60}?only supports? (?:torch\.)?" + _HALF,
            _QUANTIZED + r"[^\n]{0,60}?only " + _HALF + r"[^\n]{0,30}? (?:is|are) supported",
        ),
        details=(
            r"(?P<dtype>(?:fp16|bf16|float16|bfloat16|half)(?:(?:,|/| and| or) ?(?:torch\.)?(?:fp16|bf16|float16|"
            r"bfloat16))*)",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"),),
        cause="A quantized model's kernels (vLLM's Marlin GEMMs for GPTQ/AWQ, ExLlama, a quantize or dequantize "
        "kernel) multiply the packed weights with activations, scales and outputs in {dtype} only, and the model "
        "runs in another dtype: float32 (a config whose `torch_dtype` is float32, `--dtype float32`, a model loaded "
        "without a dtype), or the one of the two the kernel lacks.",
        fixes=(
            fix(
                "Run the quantized model in a dtype the kernel lists: vLLM `--dtype half` or `--dtype bfloat16` "
                '(`LLM(..., dtype="bfloat16")`), transformers `dtype=torch.float16` when loading (`torch_dtype=` '
                "before 5.0)"
            ),
            fix(
                "Or pick another kernel of the same method that takes the dtype (vLLM: `--quantization gptq` or "
                "`awq` instead of their `_marlin` kernels), or upgrade the library: Marlin kernels gained bf16"
            ),
        ),
        checks=("PREC001",),
        sources=("https://github.com/vllm-project/vllm/issues/28843",),
        examples=(
            "(Worker_TP0_EP0 pid=110162) ERROR 11-17 07:54:19 [multiproc_executor.py:815] RuntimeError: "
            "gpt_marlin_gemm only supports bfloat16 and float16",
            "AssertionError: per_token_group_quant_8bit_packed only supports bf16/fp16 input.",
        ),
        near_misses=(
            "RuntimeError: fused RMSNorm supports bfloat16 and float16 tensors, but weight has dtype torch.float32.",
            "quantile() input tensor must be either float or double dtype",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-scheme-not-supported",
        family="quantization",
        title="{library} does not implement this model's quantization scheme (it names the {dtype} one it supports) "
        "(the general explanation)",
        needles=("only support",),
        # "ModelOptFp8Config only supports static FP8 quantization": the refused thing is a quantization scheme
        patterns=(
            r"only supports? [^\n]{0,30}?(?:fp8|fp4|nvfp4|mxfp4|int8|int4|w8a8|w4a16|w4a8)[^\n]{0,20}? quantization",
        ),
        details=(
            # the scheme it supports, not a class's name before it (`ModelOptFp8Config`)
            r"only supports? [^\n]{0,30}?(?P<dtype>nvfp4|mxfp4|fp8|fp4|int8|int4|w8a8|w4a16|w4a8)",
            r"\b(?P<library>sglang|tensorrt.?llm|modelopt|llm.?compressor)\b",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"),),
        cause="The checkpoint's quantization config (`quantization_config` in config.json, `hf_quant_config.json` "
        "of NVIDIA ModelOpt) asks for a scheme of {dtype} that this loader does not implement: dynamic activation "
        "scales where it takes only static (calibrated) ones, or the reverse, or fp4 weights under an fp8 config. "
        "The checkpoint was exported for another engine or with other export options; the GPU is not what is "
        "missing.",
        fixes=(
            fix(
                "Use the config or quantization method the message names for this checkpoint (SGLang: "
                "`ModelOptFp4Config` for FP4 checkpoints; `--quantization` with the scheme the checkpoint has), or a "
                "checkpoint exported with the scheme the loader lists (ModelOpt: static FP8 with calibrated scales)"
            ),
            fix(
                "Check what the checkpoint asks for: `quantization_config` in its config.json "
                "(`activation_scheme`, `quant_algo`)"
            ),
            fix("Or upgrade the serving library: schemes are added release by release"),
        ),
        checks=(),
        sources=("https://github.com/sgl-project/sglang/issues/14285",),
        examples=(
            "ValueError: ModelOptFp8Config only supports static FP8 quantization in SGLang. For FP4 quantization, use "
            "ModelOptFp4Config. Check the quantization config for your model's configuration.",
        ),
        near_misses=("ValueError: This model only supports quantization with bitsandbytes",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-bit-unpacking-got-float",
        family="quantization",
        title="A bit operation ({op}) got a {dtype} tensor: packed quantized weights were cast to a float dtype",
        needles=("not implemented for '",),
        # torch has no floating kernel for shifts and bit masks on any device: `x >> 4` on a bf16 tensor says
        # "rshift_cpu" (or "rshift_cuda") not implemented for 'BFloat16'
        patterns=(
            r"\"(?:rshift|lshift|bitwise_and|bitwise_or|bitwise_xor|bitwise_left_shift|bitwise_right_shift)"
            r"[a-z0-9_]{0,30}\" not implemented for '(?:half|bfloat16|float8)",
        ),
        details=(r"\"(?P<op>[a-z0-9_]{1,60})\" not implemented for '(?P<dtype>half|bfloat16|float8[a-z0-9_]{0,12})'",),
        cause="Shifts and bit masks (`>>`, `<<`, `&`, `|`, `^`) exist only for integer and bool tensors. In a model "
        "they unpack low-bit weights stored packed in integers (GPTQ/AWQ `qweight` and `qzeros`, HQQ, a 4-bit "
        "checkpoint's packed bytes): the packed tensor reached `{op}` as {dtype}, because the whole state was cast "
        "(`model.to(torch.bfloat16)` on a model that keeps them as floats, a loader applying `torch_dtype` to every "
        "tensor, a merge or export that saved them as floats), or because the quantized checkpoint is loaded by a "
        "path that does not know its format.",
        fixes=(
            fix(
                "Load the quantized model through its quantization method so that packed weights stay integers "
                "(transformers with the checkpoint's `quantization_config`, `auto-gptq`/`gptqmodel`, `autoawq`), and "
                "cast only the unquantized modules: pass the dtype when loading instead of calling `.to(dtype)` after"
            ),
            fix(
                "Check the packed tensors' dtype: `qweight`/`qzeros` must be int32 (or uint8): "
                "`print({n: p.dtype for n, p in model.state_dict().items() if 'qweight' in n or 'qzeros' in n})`"
            ),
            fix(
                "Or upgrade the training or merging tool, or the quantization package, so that they agree on the "
                "checkpoint's format",
                "pip install -U transformers optimum peft",
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/hiyouga/LlamaFactory/issues/8281",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/BinaryOps.cpp",
        ),
        examples=(
            "RuntimeError: \"rshift_cuda\" not implemented for 'BFloat16'",
            "NotImplementedError: \"rshift_cpu\" not implemented for 'BFloat16'",
            "NotImplementedError: \"bitwise_and_cpu\" not implemented for 'Half'",
        ),
        near_misses=("RuntimeError: \"rshift_cpu\" not implemented for 'Bool'",),
        alternatives=(
            Alternative(
                cause="A mask or index tensor cast with the model to fp16/bf16 (`.to(dtype)` on an integer or bool "
                "tensor in custom code) and then combined with `&`, `|` or a shift",
                tell="The traceback's last frames: a dequantize/unpack function (`qweight`, `>> 4`, `& 0xF`) is the "
                "packed weights; code building masks or indices is this one, fixed by keeping that tensor integer "
                "or bool",
            ),
        ),
        rank=1,
    ),
]
