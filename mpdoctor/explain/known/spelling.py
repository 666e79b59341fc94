"""torch's spellings of its floating dtypes, as regex pieces for lower-cased lines, and what each one names.

torch names one dtype many ways, depending on which layer raised: ScalarType names in ATen's checks
(``Half``, ``BFloat16``, ``Float8_e4m3fn``), caffe2 type-meta names (``c10::Half``, ``struct c10::Half`` on
MSVC, ``float``), Python dtypes (``torch.float16``, ``float16``), legacy tensor types (``torch.cuda.HalfTensor``,
``HalfTensor``) and dispatch-key types (``CUDAHalfType``, ``CPUBFloat16Type``). The grammar families
(``grammar.py``) find two of them in one message; ``canonical`` says whether the two are the same dtype.

Patterns here are lower-case: signatures' patterns run on lower-cased lines (``Signature.compiled``).
"""

from __future__ import annotations

import re

# Low precision: fp16, bf16, the fp8 and fp4 formats (ScalarType names lower-cased: "float8_e4m3fn").
_LOW_CORE = r"(?:half|bfloat16|float16|float8_e[0-9a-z]{1,10}|float4_e2m1fn_x2)"
_FULL_CORE = r"(?:float|double|float32|float64)"
_TENSOR_PREFIX = r"(?:torch\.(?:cuda\.)?|cuda|cpu)?"  # torch.cuda.HalfTensor, CUDAHalfTensor (old conv messages)
_DISPATCH_PREFIX = r"(?:cuda|cpu|xpu|mps)?"  # CUDAHalfType, CPUBFloat16Type

# One low-precision dtype, spelled any way torch spells it, as a whole word.
# Not inside another word, nor a method call (`model.half()`): "torch.float16" is matched from its "torch.".
# torch's own "but gotHalf" (masked_scatter's message misses a space) is a dtype after "got"; a framework's dtype
# namespace ("thunder.dtypes.bfloat16") names one too.
_START = r"(?:(?<=got)|(?<=dtypes\.)|(?<![a-z0-9_.]))"
LOW = _START + (
    r"(?:(?:struct )?c10::" + _LOW_CORE + r"|" + _TENSOR_PREFIX + r"(?:half|bfloat16)tensor"
    r"|" + _DISPATCH_PREFIX + r"(?:half|bfloat16)type|torch\." + _LOW_CORE + r"|" + _LOW_CORE + r")(?![a-z0-9_])"
)
# One full-precision floating dtype. Plain "float" / "double" count: ATen prints caffe2's "float" for fp32.
FULL = _START + (
    r"(?:" + _TENSOR_PREFIX + r"(?:float|double)tensor|" + _DISPATCH_PREFIX + r"(?:float|double)type"
    r"|torch\." + _FULL_CORE + r"|" + _FULL_CORE + r")(?![a-z0-9_])"
)
# Any floating dtype, low or full.
FLOATING = r"(?:" + LOW + r"|" + FULL + r")"

DTYPE_WORD = re.compile(FLOATING)

_CANONICAL = (
    ("float16", re.compile(r"half|float16(?!_)")),
    ("bfloat16", re.compile(r"bfloat16")),
    ("float4_e2m1fn_x2", re.compile(r"float4_e2m1fn_x2")),
    ("float64", re.compile(r"double|float64")),
    ("float32", re.compile(r"float32|float(?![0-9_])")),
)
_FP8 = re.compile(r"float8_e[0-9a-z]{1,10}")


def canonical(spelling: str) -> str:
    """The torch.dtype name (``float16``, ``bfloat16``, ``float8_e4m3fn``, ``float32``...) of one spelling."""
    word = spelling.lower().replace("tensor", "").replace("type", "")
    found = _FP8.search(word)
    if found:
        return found.group(0)
    for name, pattern in _CANONICAL:  # bfloat16 before float16 would need order: "bfloat16" holds "float16"
        if name == "float16" and "bfloat16" in word:
            continue
        if pattern.search(word):
            return name
    return word


def is_dtype(spelling: str) -> bool:
    """Whether the whole of ``spelling`` is one of torch's spellings of a floating dtype."""
    return DTYPE_WORD.fullmatch(spelling.lower()) is not None


def is_low(spelling: str) -> bool:
    """Whether the spelling names a low-precision dtype (fp16, bf16, fp8, fp4)."""
    return canonical(spelling) not in ("float32", "float64")


__all__ = ["DTYPE_WORD", "FLOATING", "FULL", "LOW", "canonical", "is_dtype", "is_low"]
