"""The host side of a numerics watch: one step's statistics, judged op by op for overflow, NaN and underflow.

``judge`` walks the ops in the order they ran (their statistics as :mod:`mpdoctor.numerics.record` read them)
and names each that made inf or NaN from finite inputs, or flushed fp16/bf16 values to zero or subnormal.
Plain Python on floats: no torch.

Underflow, the rule and its measurement. A value underflowed when its exact result is not zero but the dtype
stores zero or a subnormal (fp16 below 6.1e-05, bf16 below 1.2e-38). The watch cannot see exact results; for
an op that multiplies, divides, casts or computes a gradient (``ops.judges_underflow``) it compares the share
of the output that is zero or subnormal with what the inputs explain: an output value of such an op can be zero
honestly only where an input value feeding it is (a ReLU's zero, a mask's, an unused embedding row's, or a value
an earlier op already flushed), so the inputs' shares, summed, bound it (``ops.bounding``: a term added to a
product, addmm's bias, is left out, an output being zero only where the term and the product both are; a gradient
op's output is linear in the gradient it is given, and zero elsewhere only where its derivative is by construction,
so that gradient alone bounds it). The shares are estimated from a
sample of each tensor (mpdoctor.numerics.record). The op flushed when

1. its share exceeds that bound by ``UNDERFLOW_MARGIN`` (10 points), on at least ``UNDERFLOW_MIN_ELEMENTS``
   values;
2. values really reached the bottom of the range: it holds a larger share of subnormal values than its inputs
   did, or it is all zeros (a gradient scattered into zeros, a ``slice``'s or a loss's, holds exact zeros and
   only the subnormals it was given; values that shrink pass through the subnormals on their way to zero); and
3. its largest |value| is below ``2^p`` times the smallest normal number, ``p`` the dtype's significant bits
   (``PRECISION_BITS``: 11 for fp16, 8 for bf16). Above that, every flushed value is below the rounding error of
   the tensor's largest: beside it, the dtype could not have kept it anyway.

Measured on five small models (a GPT, a T5 stack with RMSNorm, a conv net with BatchNorm and ReLU, a GELU MLP,
a deep tanh MLP; fp16 under autocast and explicit, one backward each, exact counts): with the loss scaled by
2^16 (GradScaler's default) no judged op exceeds its bound by more than 0.7 points, and every output's largest
sits at least 10 bits above the bottom. Without a scaler, the ops where the gradients flush exceed it by 7 to 64
points with their largest 1.4 to 5.2 bits above the bottom, while the tails of wider tensors (largest 8.6 to
12 bits up) exceed it by at most 6.6. In bf16 (fp32's exponent range) nothing exceeds it in any of them: bf16 is
judged by the same rule and reports underflow only where values really reach 1.2e-38. Sums and differences are
not judged (their zeros are cancellation), nor gradients whose zeros are by construction (``ops.HONEST_ZEROS``).
A forward cast is judged on the zeros it makes only: fp16 keeps a subnormal to a few bits, and a near-zero bias
that autocast casts is negligible beside the activations it is added to (the output is bit-identical without it).
"""

from __future__ import annotations

import math
from typing import Callable

from mpdoctor.numerics.ops import ALL_BUT_FIRST, FIRST_ONLY, MASKING, bounding, judges_underflow

UNDERFLOW_MARGIN = 0.10  # share of an output flushed beyond what its inputs explain: 10 points
UNDERFLOW_MIN_ELEMENTS = 16  # a 4-element output with one zero is no evidence
PRECISION_BITS = {"float16": 11, "bfloat16": 8}  # significant bits: 10 and 7 stored, one implicit
TINY = {"float16": 2.0**-14, "bfloat16": 2.0**-126}  # the smallest normal numbers
_LOW = ("float16", "bfloat16")
LOGS = frozenset({"log", "log2", "log10"})
PRODUCTS = frozenset({"mul", "mul_"})
CASTS = frozenset({"_to_copy", "copy_"})
OPTIMIZER = 2  # the phase of an optimizer's update (0 forward, 1 backward)


def judge(
    records: list,
    measured: list,
    finfo_max: dict,
    note_largest: Callable[[int, float, str], None],
    event: Callable[..., None],
) -> None:
    """Judge each recorded op, in the order they ran: ``event`` for each overflow, NaN or underflow it made,
    ``note_largest`` for the largest |value| of each module's forward (``measured`` gets each output's taint)."""
    for name, module, phase, step, outputs, inputs, constant in records:
        ins = [measured[i] for i in inputs if i >= 0]
        known = [m for m in ins if m.lo is not None]  # sampled-only inputs have no extrema
        tainted_in = any(m.tainted for m in known)
        for slot in outputs:
            out = measured[slot]
            if out.lo is None:
                continue
            note = phase == 0 and module >= 0 and out.dtype in _LOW
            if not nonfinite(out.lo, out.hi):
                out.tainted = False
                if note:
                    note_largest(module, max(abs(out.lo), abs(out.hi)), out.dtype)
                continue
            nan = math.isnan(out.lo) or math.isnan(out.hi)
            minus_only = not nan and out.hi != math.inf and out.lo == -math.inf
            if (
                minus_only
                and not tainted_in
                and (
                    constant is True
                    or name in MASKING
                    or any(m.lo == -math.inf for m in known)  # a mask's or a log(0)'s -inf carried on (scaled, added)
                    or _mask(name, known, constant, out, finfo_max)
                )
            ):
                out.tainted = False  # a mask being written, or carried: -inf that softmax turns into 0
                continue
            out.tainted = True
            if note:
                note_largest(module, math.inf, out.dtype)
            if tainted_in or constant is True:
                continue  # passed on, not made here
            kind = "nan" if nan else "overflow"
            big = max((max(abs(m.lo), abs(m.hi)) for m in known), default=0.0)
            top = f"{out.dtype} max {finfo_max.get(out.dtype, math.inf):.4g}"
            if phase == OPTIMIZER:
                detail = f"the update wrote {'NaN' if nan else 'inf'} into its parameters from finite gradients "
                detail += f"(largest |gradient| {big:.4g}, {top})"
            else:
                detail = f"{'NaN' if nan else 'inf'} from finite inputs (largest |input| {big:.4g}, {top})"
                if math.isinf(big):  # an input holds the -inf of a mask or a log(0), excused where it was written
                    detail = f"{'NaN' if nan else 'inf'} from an input holding -inf written upstream (a mask, a log(0)) ({top})"
            event(kind, phase, module, name, out.dtype, step, detail)
        if outputs and not tainted_in and -1 not in inputs:
            bounds = bounding(name)  # whose zeros explain the output's: all inputs, all but an added term, the gradient
            factors = inputs[1:] if bounds == ALL_BUT_FIRST else inputs[:1] if bounds == FIRST_ONLY else inputs
            underflow = _underflow(name, measured[outputs[0]], [measured[i] for i in factors if i >= 0], phase)
            if underflow is not None:
                event("underflow", phase, module, name, measured[outputs[0]].dtype, step, underflow)


def _mask(name: str, known: list, constant, out, finfo_max: dict) -> bool:
    """Is this op's -inf (and only -inf, from finite inputs) written on purpose, not a value out of range?

    * ``log`` of an input whose smallest value is exactly 0: log(0) is -inf exactly, in every dtype, and the log of
      any finite positive number is finite, so no value left the range here. It is the way a 0/1 mask is made
      additive, and the way code computes what it then discards (T5's relative-position buckets take the log of
      every distance, 0 included, and ``torch.where`` drops it). Where the -inf goes on to spoil a result, the op
      that turns it into NaN or inf is the event; where the zero was a value flushed in fp16, the op that flushed
      it is (the underflow rule).
    * a product of values in [0, 1] (a mask, ``1 - mask``) with a number that is itself beyond the output dtype's
      range (the Annotated Transformer's ``-1e9`` in fp16): the -inf is the constant the code put in, rounded to
      the dtype, as a ``masked_fill(-inf)`` writes it. Values of either sign, or a constant the dtype holds, stay
      events (``x * -1e9`` on scores is an overflow).
    """
    if not known:
        return False
    if name in LOGS:
        return all(m.lo == 0.0 for m in known)
    if name in PRODUCTS and type(constant) is float:
        return constant > finfo_max.get(out.dtype, math.inf) and all(0.0 <= m.lo and m.hi <= 1.0 for m in known)
    return False


def _underflow(name: str, out, ins: list, phase: int = 0):
    """The detail of an underflow at this op, or None (the rule is in this module's docstring)."""
    if out.dtype not in _LOW or out.small is None or out.lo is None or out.tainted or not ins:
        return None
    if out.numel < UNDERFLOW_MIN_ELEMENTS or not judges_underflow(name):
        return None
    if any(m.small is None for m in ins):
        return None  # an input whose zeros are not known: this op's cannot be told from them
    bound = min(1.0, sum(m.small for m in ins))
    if out.small - bound < UNDERFLOW_MARGIN:
        return None
    if name in CASTS and phase == 0 and (out.small - out.subnormal) - bound < UNDERFLOW_MARGIN:
        # A forward cast keeps a subnormal value (fp16 holds 1e-6 to a few bits): only the values it turned into
        # zeros are lost. A near-zero fp32 bias that autocast casts to fp16, added to activations of 0.1, loses
        # nothing. A gradient is another matter: all of it sits that low together, and subnormal gradients are
        # what GradScaler exists to lift.
        return None
    largest = max(abs(out.lo), abs(out.hi))
    if largest > 0 and out.subnormal <= min(1.0, sum(m.subnormal for m in ins)):
        return None  # zeros without values reaching the bottom: a gradient scattered into zeros, not lost range
    bits = PRECISION_BITS[out.dtype]
    tiny = TINY[out.dtype]
    if largest >= tiny * 2.0**bits:
        return None  # what flushed is below the rounding error of the tensor's largest: nothing the dtype keeps
    sampled = "" if out.sampled >= out.numel else f" (estimated from {out.sampled} sampled)"
    return (
        f"{out.small:.0%} of its {out.numel} values are zero or subnormal (below {tiny:.3g}){sampled}, where its "
        f"inputs' zeros explain at most {bound:.0%}; its largest is {largest:.3g}, less than 2^{bits} times the "
        f"smallest normal: the flushed values were not negligible beside it"
    )


def worse(value: float, dtype: str, other: float, other_dtype: str, finfo_max: dict) -> bool:
    """Is ``value`` (in ``dtype``) closer to its dtype's max than ``other`` to its own?"""
    if math.isnan(value) or math.isinf(value):
        return True
    if math.isnan(other) or math.isinf(other):
        return False
    return value / finfo_max[dtype] > other / finfo_max[other_dtype]


def nonfinite(lo: float, hi: float) -> bool:
    return not (math.isfinite(lo) and math.isfinite(hi))
