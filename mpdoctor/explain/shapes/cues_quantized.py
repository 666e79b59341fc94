"""The cues of a quantized format's failures: the methods and libraries that quantize, the scales an fp8/fp4
format is stored with, the block sizes its kernels need, and integer widths. Like ``cues.py`` (which re-exports them),
each is a regex over a lower-cased message that proves nothing alone: ``reader.py`` reads them beside a dtype named.
"""

from __future__ import annotations

from mpdoctor.explain.shapes.pattern import cue


QUANTIZATION = cue(
    r"quantiz|quant_|\bgptq|\bawq\b|marlin|bitsandbytes|\bbnb\b|\bnf4\b|\bint4\b|\bint8\b|\buint8\b|w8a8|w4a16",
    r"modelopt|blockwise|dequant|\bscales\b|zero_points?|exllama|kv[_ ]cache[_ ]dtype|qlora|[48][- ]?bit\b",
    r"compressed(?:[- ]tensors| models?)|scaled_mm|compute_type|int8_float|scale_[ab]\b|linear[48]bit|bnb_4bit|\b4bit|\b8bit",
    r"fixed_point|\bufixed",  # Qualcomm QNN's quantized types (`UFIXED_POINT_8`)
)
# A model a toolchain needs quantized is not (`Model not quantized`: the Edge TPU compiler takes int8 models only).
NOT_QUANTIZED = cue(r"\b(?:model|tensor|graph|layer|weights?)s? (?:is |are |was |were )?not (?:fully )?quantized\b")
# The scales an fp8/fp4 format is stored with (`weight_scale`, `k scale`, `amax`, `descale_o`, `scale_inv`), missing
# or wrong: a quantized checkpoint or KV cache without what its format needs (`FP8 KV cache requires k scale`,
# `an fp8 expert weight has no weight_scale_inv`). Read only beside fp8 or fp4 named, and not the invariants a
# library's own quantized tensor class checks of itself (`NVFP4Tensor is missing row-scaled scale-inverses`).
QUANT_SCALE = cue(
    r"\b(?:weight_|input_|k_|v_|kv_|q_|prob_|act(?:ivation)?_)?scales?(?:_inv|_factor)?\b|\bamax\b|\bdescale\w*|"
    r"inverse[- ]scale|scale_inv"
)
SCALE_MISSING = cue(
    r"\bmissing\b|not found|\brequires?\b|\b(?:has|have) no\b|mismatch|\bexpected\b|\bmust\b|\binvalid\b|"
    r"no explicit|not initiali[sz]ed|does(?: not|n't) match|\bcannot\b|\bcan't\b|unable to"
)
QUANT_TENSOR_INTERNALS = cue(
    r"\w+tensor\b|float8block|\bstorage\b|geometry|\b(?:lhs|rhs)\b|row-wise usage|column-wise usage"
)
# A quantization method the message names, beside two dtypes meeting: the mismatch is inside the quantized model
# (QLoRA's `--quantization_bit 4`, an AWQ kernel getting fp16 and bf16), the method's to fix.
QUANTIZATION_METHOD = cue(
    r"\bawq\b|\bgptq\b|qlora|bitsandbytes|\bbnb\b|quantization_bit|load_in_[48]bit|\bnf4\b|\bhqq\b|\bexl2\b"
)
# fp8/fp4 kernels' block sizes: `requires 2D input matrices with height divisible by 8 and width divisible by 16`.
BLOCK_SIZE = cue(r"divisible by \d{1,3}|% (?:8|16|32) != 0")
INTEGER = cue(
    r"\bu?int(?:4|8|16|32)\b|\bchar\b|\b(?:16|32)(?:/(?:16|32))?-bit floats?",
    r"\b[2-8][- ]?bits?\b(?! float)",  # a quantization's width: `4-bit`, `8bit`, `loaded in 8-bit precision`
)

__all__ = [
    "BLOCK_SIZE",
    "INTEGER",
    "NOT_QUANTIZED",
    "QUANT_SCALE",
    "QUANT_TENSOR_INTERNALS",
    "QUANTIZATION",
    "QUANTIZATION_METHOD",
    "SCALE_MISSING",
]
