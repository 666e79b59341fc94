"""The host side of a numerics watch: one window's statistics, judged op by op for overflow, NaN and underflow.

``unpack`` turns the values of the window's one host read into a record per measured tensor; ``judge`` walks
the ops in the order they ran and names each that made inf or NaN from finite inputs, or flushed an fp16
output to zero where its inputs had no zeros to give (the rules are in :mod:`mpdoctor.numerics.watch`).
Plain Python on floats: no torch.
"""

from __future__ import annotations

import math
from typing import Callable

from mpdoctor.numerics.ops import MASKING, judges_underflow

UNDERFLOW_MARGIN = 0.10  # share of an output flushed beyond what its inputs held as zeros: 10 %
UNDERFLOW_MIN_ELEMENTS = 16  # a 4-element output with one zero is no evidence
# The whole tensor sits at the bottom of the range: its largest |value| within this many bits (x256) of the
# smallest normal number. A gradient with entries from 1e-1 down to 0 (a GELU's tail, a key bias through a
# softmax) loses only what is negligible beside its largest; one whose largest is 1e-3 loses its substance.
UNDERFLOW_BITS = 8
_LOW = ("float16", "bfloat16")


class _Measured:
    """Host-side record of one measured tensor, once its statistics were read."""

    __slots__ = ("lo", "hi", "tiny", "numel", "dtype", "mask", "tainted")


def unpack(values: dict, buckets: dict, where: list, meta: list) -> list:
    """The window's measurements, from the values one host read returned per device: one record per slot."""
    measured = []
    counts = {device: len(bucket[0]) for device, bucket in buckets.items()}
    tiny_at = {}
    for device, bucket in buckets.items():
        for position, slot in enumerate(bucket[3]):
            tiny_at[slot] = values[device][2 * counts[device] + position]
    for slot, (device, position) in enumerate(where):
        m = _Measured()
        row = values[device]
        m.lo, m.hi = row[position], row[counts[device] + position]
        m.numel, m.dtype, _ = meta[slot]
        m.tiny = tiny_at.get(slot)
        m.mask = False
        m.tainted = nonfinite(m.lo, m.hi)  # inputs (leaves) carry what they hold; outputs are judged below
        measured.append(m)
    return measured


def judge(
    records: list,
    measured: list,
    finfo_max: dict,
    tiny_value: dict,
    note_largest: Callable[[int, float, str], None],
    event: Callable[..., None],
) -> None:
    """Judge each recorded op, in the order they ran: ``event`` for each overflow, NaN or underflow it made,
    ``note_largest`` for the largest |value| of each module's forward (``measured`` gets each output's taint)."""
    for name, module, phase, step, outputs, inputs, constant in records:
        ins = [measured[i] for i in inputs if i >= 0]
        unknown = len(ins) < len(inputs)
        tainted_in = any(m.tainted for m in ins)
        for slot in outputs:
            out = measured[slot]
            note = phase == 0 and module >= 0 and out.dtype in _LOW
            if not nonfinite(out.lo, out.hi):
                out.tainted = False
                if note:
                    note_largest(module, max(abs(out.lo), abs(out.hi)), out.dtype)
                continue
            nan = math.isnan(out.lo) or math.isnan(out.hi)
            minus_only = not nan and out.hi != math.inf and out.lo == -math.inf
            if minus_only and not tainted_in and (constant or name in MASKING):
                out.tainted, out.mask = False, True  # a mask being written: -inf that softmax turns into 0
                continue
            out.tainted = True
            if note:
                note_largest(module, math.inf, out.dtype)
            if tainted_in or constant:
                continue  # passed on, not made here
            kind = "nan" if nan else "overflow"
            big = max((max(abs(m.lo), abs(m.hi)) for m in ins), default=0.0)
            detail = (
                f"{'NaN' if nan else 'inf'} from finite inputs (largest |input| {big:.4g}, {out.dtype} max "
                f"{finfo_max.get(out.dtype, math.inf):.4g})"
            )
            event(kind, phase, module, name, out.dtype, step, detail)
        if not outputs or tainted_in:
            continue
        out = measured[outputs[0]]
        if out.dtype != "float16" or out.tiny is None or unknown or out.numel < UNDERFLOW_MIN_ELEMENTS:
            continue
        if not judges_underflow(name):
            continue
        if out.tainted:
            continue
        share = out.tiny / out.numel
        allowed = max((m.tiny / m.numel for m in ins if m.tiny is not None and m.numel), default=0.0)
        if not ins or share - allowed < UNDERFLOW_MARGIN:
            continue
        largest = max(abs(out.lo), abs(out.hi))
        if largest == 0 and all(max(abs(m.lo), abs(m.hi)) == 0 for m in ins):
            continue
        tiny = tiny_value[out.dtype]
        if largest >= tiny * 2.0**UNDERFLOW_BITS:
            continue  # a wide tensor whose small entries flushed: they are negligible beside its largest
        detail = (
            f"{share:.0%} of {out.numel} values are zero or subnormal (below {tiny:.3g}), where its inputs "
            f"had at most {allowed:.0%}; its largest is {largest:.3g}, within {UNDERFLOW_BITS} bits of the bottom"
            " of the range"
        )
        event("underflow", phase, module, name, out.dtype, step, detail)


def worse(value: float, dtype: str, other: float, other_dtype: str, finfo_max: dict) -> bool:
    """Is ``value`` (in ``dtype``) closer to its dtype's max than ``other`` to its own?"""
    if math.isnan(value) or math.isinf(value):
        return True
    if math.isnan(other) or math.isinf(other):
        return False
    return value / finfo_max[dtype] > other / finfo_max[other_dtype]


def nonfinite(lo: float, hi: float) -> bool:
    return not (math.isfinite(lo) and math.isfinite(hi))
