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


def nbytes(shape: Sequence[int], item_size: int, limit: int) -> Optional[int]:
    """``item_size`` times the product of ``shape``, or None once it passes ``limit`` (a bounded shape only)."""
    if 0 in shape:
        return 0
    total = item_size
    for dim in shape:
        total *= dim
        if total > limit:
            return None
    return total


def shape_text(shape: Sequence[int]) -> str:
    """A shape as a message quotes it: the first dimensions and the count of the rest, for a long one."""
    if len(shape) <= SHOWN_DIMS:
        return str(list(shape))
    return f"[{', '.join(map(str, shape[:SHOWN_DIMS]))}, ... ({len(shape)} dimensions)]"
