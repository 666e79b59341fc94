"""A tensor's size in bytes from a header's shape, checked before any arithmetic.

A shape is the header's claim, and the product of its dimensions is an integer
Python will build to any size: ``[10**39] * 120`` made a 4,700-digit number that
``str()`` refused (exit 3), and ``[10**39] * 200_000`` (an 8 MB header) never
finished, each ``math.prod`` step longer than the last (issue 33). So the rank
and each dimension are bounded first, and the product stops as soon as it passes
what the file could hold: no number larger than the file's size times one
dimension is ever made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

MAX_RANK = 1024  # torch makes tensors of 1,000 dimensions; no model stores one
MAX_DIM = (1 << 63) - 1  # torch's sizes are int64
SHOWN_DIMS = 4
MAX_NAMED = 1 << 64  # the largest size a message says exactly; past it, "more than"


def shape_problem(shape: Sequence[int]) -> str:
    """Why ``shape`` (a sequence of non-negative ints) cannot be a tensor's, in words; "" when it can."""
    if len(shape) > MAX_RANK:
        return f"has {len(shape)} dimensions, more than the {MAX_RANK} mpdoctor reads"
    if shape and max(shape) > MAX_DIM:
        return f"has a dimension of {len(str(max(shape)))} digits, past torch's int64 sizes"
    return ""


def nbytes(shape: Sequence[int], bits: int, limit: int) -> Optional[int]:
    """The bytes of ``shape``'s elements at ``bits`` bits each, or None once past ``limit`` bytes (a bounded shape
    only). Rounded down: :func:`ragged` says whether a sub-byte dtype's elements fill whole bytes."""
    if 0 in shape:
        return 0
    total, limit_bits = bits, limit * 8
    for dim in shape:
        total *= dim
        if total > limit_bits:
            return None
    return total // 8


def ragged(shape: Sequence[int], bits: int) -> bool:
    """Whether ``shape``'s elements of ``bits`` bits end inside a byte (F4 [3]: 12 bits), which safetensors refuses.

    Worked modulo 8, so a lying shape never makes a big number."""
    rest = bits % 8
    for dim in shape:
        if not rest:
            break
        rest = rest * dim % 8
    return rest != 0


def shape_text(shape: Sequence[int]) -> str:
    """A shape as a message quotes it: the first dimensions and the count of the rest, for a long one."""
    if len(shape) <= SHOWN_DIMS:
        return str(list(shape))
    return f"[{', '.join(map(str, shape[:SHOWN_DIMS]))}, ... ({len(shape)} dimensions)]"
