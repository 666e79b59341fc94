"""The ecosystem's general shapes for a model loaded quantized (see grammar_ecosystem.py): a cast a quantized model
refuses, and a quantization that found nothing to quantize.

* ``.half() is not supported for quantized model`` (transformers, diffusers): its weights are already stored in their
  quantized dtype, the rest was loaded in the dtype asked for;
* ``You are loading your model using fp8 but no linear modules were found`` (transformers' fp8, fp4 and
  compressed-tensors integrations): nothing was quantized, the model runs in its load dtype.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

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
]
