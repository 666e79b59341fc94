"""What a numerics watch queues on the device during a step, and the one host read that brings it back.

Per measured tensor (a ``Window`` slot):

* extrema: ``torch.aminmax`` (one kernel; NaN propagates), taken over its memory in order when that is a permuted
  dense block (a transposed weight gradient: 5-10x faster than striding across it); large fp32/fp64 tensors take
  ``amin`` and ``amax`` apart (torch's CPU ``aminmax`` is 3x slower than either there).
* the shares of its values that are zero or subnormal, and subnormal, for the underflow judgement: a sample of
  ``SAMPLE`` values (positions ``i * q mod n``, q near 0.618 n and coprime to n, read in ascending order: spread
  over the whole tensor and in step with none of its rows or columns), or the whole tensor when it is smaller,
  copied when the tensor is made and counted, for all tensors at once, at the read. Its standard error is at most
  0.5 / sqrt(SAMPLE) = 1.1 points, against the judgement's 10-point margin.

Some outputs need no kernel: a widening cast, a ``masked_fill`` with a number and an activation (relu, gelu, silu,
tanh, sigmoid: none can overflow or make NaN from finite inputs) have extrema that follow from their input's,
computed on the host at the read (``_derive``). ``read`` is the only host read: one ``tolist()`` per device.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

SAMPLE = 2048  # values sampled per tensor for its zero-or-subnormal share
MAX_SAMPLES = 16_384  # sampled rows held between reads (4 KiB each in fp16/bf16); past it, no more are taken
_SPLIT = 65_536  # fp32/fp64 tensors this large: amin and amax apart
_GOLDEN = (math.sqrt(5) - 1) / 2
# Shared by every watch of the process (a watch per step must not pay for them again).
_POSITIONS: dict = {}  # (numel, device) -> sample positions
_PADS: dict = {}  # (dtype, device) -> ones, to fill the sample of a small tensor


def _gelu(x: float) -> float:
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2))) if math.isfinite(x) else (x if x > 0 else math.nan)


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x > -700 else 0.0


def _silu(x: float) -> float:
    return x * _sigmoid(x) if math.isfinite(x) else (x if x > 0 else math.nan)


# Activations whose output range follows from their input's (they cannot overflow or make NaN from finite
# inputs): f, and the minimum of a non-monotone one (where it falls, its value).
ACTIVATIONS = {
    "relu": (lambda x: x if math.isnan(x) else max(x, 0.0), None),
    "tanh": (math.tanh, None),
    "sigmoid": (_sigmoid, None),
    "gelu": (_gelu, (-0.7517916, -0.1699712)),
    "silu": (_silu, (-1.2784645, -0.2784645)),
}


class Measured:
    """Host-side record of one slot once the statistics were read: extrema (None where only sampled), the
    shares of its sampled values that are zero or subnormal and that are subnormal (None where not sampled; for
    fp32/fp64, zero and none: only their zeros matter), size and dtype."""

    __slots__ = ("lo", "hi", "small", "subnormal", "sampled", "numel", "dtype", "tainted")


class _Bucket:
    """One device's queued statistics: 0-d extrema, and sampled rows grouped by dtype."""

    __slots__ = ("extrema", "groups")

    def __init__(self) -> None:
        self.extrema: dict = {}  # dtype -> (lows, highs): stacked per dtype at the read (one mixed stack is 5x slower)
        self.groups: dict = {}  # dtype -> (rows, slots): sampled rows


class Types:
    """What the hot path asks of a dtype, looked up once per process."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.floating = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
        self.low = frozenset({torch.float16, torch.bfloat16})
        self.wide = frozenset({torch.float32, torch.float64})
        self.names = {d: str(d).replace("torch.", "") for d in self.floating}
        # (the integer type of the same width, its exponent bits: all zero for zero and subnormal values, all bits
        # but the sign: zero only for 0). Wider inputs (of a cast down) count as normal whatever their exponent:
        # only their zeros bound what the cast may honestly hold.
        self.bits = {
            torch.float16: (torch.int16, 0x7C00, 0x7FFF),
            torch.bfloat16: (torch.int16, 0x7F80, 0x7FFF),
            torch.float32: (torch.int32, 0x7FFFFFFF, 0x7FFFFFFF),
            torch.float64: (torch.int64, 0x7FFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF),
        }
        self.plain = (torch.Tensor, torch.nn.Parameter)
        self.strided = torch.strided


class Window:
    """Everything queued since the last read, and how to queue more."""

    __slots__ = (
        "types", "torch", "buckets", "where", "meta", "records", "refs", "sampled", "derived", "blind", "scaler", "rows",
        "checks",
    )  # fmt: skip

    def __init__(self, types: "Types") -> None:
        self.types = types
        self.torch = types.torch
        self.buckets: dict = {}  # device -> _Bucket
        self.where: list = []  # slot -> (lows, position) of its extrema; None for derived and sample-only slots
        self.meta: list = []  # slot -> (numel, dtype name)
        self.records: list = []  # (op, module, phase, step, output slots, input slots, constant: True for
        # a nonfinite one, else the magnitude of one beyond fp16's range, or False)
        # id(tensor) -> (slot, weak reference, version): a tensor written in place since (by an op the watch did
        # not see: an optimizer's update, `.data =`) has another version, and is measured again.
        self.refs: dict = {}
        self.sampled: dict = {}  # slot -> how many values its sample holds
        self.derived: dict = {}  # slot -> (op, source slot, constant)
        self.blind: set = set()  # slots only sampled, without extrema
        self.scaler: list = []  # (step, (scale before, found inf, scale after) slots)
        self.rows = 0
        self.checks = 0  # records of optimizer updates (steps.check_update): alone, they wait for the next read

    def bucket(self, device) -> _Bucket:
        bucket = self.buckets.get(device)
        if bucket is None:
            bucket = self.buckets[device] = _Bucket()
        return bucket

    def measure(self, tensor) -> int:
        """Queue the extrema of ``tensor`` on its device; returns its slot. No host read."""
        if type(tensor) not in self.types.plain or tensor.layout is not self.types.strided:
            raise TypeError("not a plain dense tensor")  # a DTensor, a sparse tensor: left alone
        torch = self.torch
        flat = tensor if tensor.is_contiguous() else _dense(tensor)
        dtype = tensor.dtype
        numel = tensor.numel()
        if numel >= _SPLIT and dtype in self.types.wide:
            lo, hi = torch.amin(flat), torch.amax(flat)
        else:
            lo, hi = torch.aminmax(flat)
        bucket = self.buckets.get(tensor.device) or self.bucket(tensor.device)
        extrema = bucket.extrema.get(dtype)
        if extrema is None:
            extrema = bucket.extrema[dtype] = ([], [])
        slot = len(self.meta)
        self.where.append((extrema, len(extrema[0])))
        extrema[0].append(lo)
        extrema[1].append(hi)
        self.meta.append((numel, self.types.names[dtype]))
        return slot

    def leaf(self, tensor) -> int:
        """Measure a tensor no op of this window made (a parameter, an input); returns its slot."""
        if tensor.numel() == 0:
            return -1
        slot = self.measure(tensor)
        self.refs[id(tensor)] = (slot, weakref.ref(tensor), version_of(tensor))
        return slot

    def blind_slot(self, tensor) -> int:
        """A slot for a tensor that is only sampled (no extrema)."""
        if tensor.numel() == 0:
            return -1
        slot = len(self.meta)
        self.where.append(None)
        self.meta.append((tensor.numel(), self.types.names[tensor.dtype]))
        self.blind.add(slot)
        return slot

    def sample(self, tensor, slot: int) -> None:
        """Copy a sample of ``tensor`` (its zero-or-subnormal share is counted at the read)."""
        types = self.types
        if self.rows >= MAX_SAMPLES or type(tensor) not in types.plain or tensor.layout is not types.strided:
            return  # unsampled: an op that needs its share is not judged for underflow
        torch = self.torch
        n = tensor.numel()
        device, dtype = tensor.device, tensor.dtype
        if n > SAMPLE:
            flat = tensor.view(-1) if tensor.is_contiguous() else _dense(tensor)
            if flat.dim() == 1 and flat.is_contiguous():  # ascending positions: the prefetcher follows them
                row = torch.index_select(flat, 0, _positions(self.torch, n, device))
            else:  # not a permuted dense block
                row = torch.take(tensor, _positions(self.torch, n, device))
        else:
            pad = _PADS.get((dtype, device))
            if pad is None:
                pad = _PADS[(dtype, device)] = torch.ones(SAMPLE, dtype=dtype, device=device)
            row = torch.cat((tensor.reshape(-1), pad[: SAMPLE - n]))  # ones are neither zero nor subnormal
        groups = self.bucket(device).groups
        group = groups.get(dtype)
        if group is None:
            group = groups[dtype] = ([], [])
        group[0].append(row)
        group[1].append(slot)
        self.sampled[slot] = min(n, SAMPLE)
        self.rows += 1

    def raw(self, scalar) -> int:
        """Queue a 0-d value (a scaler's scale) to be read with the statistics."""
        extrema = self.bucket(scalar.device).extrema.setdefault(scalar.dtype, ([], []))
        slot = len(self.meta)
        self.where.append((extrema, len(extrema[0])))
        extrema[0].append(scalar)
        extrema[1].append(scalar)
        self.meta.append((1, self.types.names.get(scalar.dtype, str(scalar.dtype))))
        return slot

    def read(self) -> tuple[list, int]:
        """Read the statistics, one ``tolist()`` per device: (a Measured per slot, reads made)."""
        torch = self.torch
        found: dict[int, tuple] = {}  # id((lows, highs)) -> (values, offset, count): where their numbers landed
        small: dict[int, tuple] = {}  # slot -> (zero or subnormal, subnormal): counts in its sample
        reads = 0
        for bucket in self.buckets.values():
            parts, places = [], []
            for pair in bucket.extrema.values():
                parts.append(torch.stack(pair[0] + pair[1]).float())  # the lows, then the highs
                places.append(pair)
            for dtype, (rows, _) in bucket.groups.items():
                as_int, exponent, magnitude = self.types.bits[dtype]
                bits = torch.stack(rows).view(as_int)
                normal = (bits & exponent).clamp_(max=1).sum(1, dtype=torch.int32)  # exponent bits not all zero
                nonzero = (bits & magnitude).clamp_(max=1).sum(1, dtype=torch.int32)
                parts += [(SAMPLE - normal).float(), (nonzero - normal).float()]  # zero or subnormal; subnormal
            if not parts:
                continue
            values = torch.cat(parts).tolist()  # the one host read, for this device
            reads += 1
            at = 0
            for pair in places:
                found[id(pair)] = (values, at, len(pair[0]))
                at += 2 * len(pair[0])
            for _, slots in bucket.groups.values():
                count = len(slots)
                for i, slot in enumerate(slots):
                    small[slot] = (values[at + i], values[at + count + i])
                at += 2 * count
        return _unpack(self, found, small), reads


def _unpack(window: "Window", found: dict, small: dict) -> list:
    """One Measured per slot, from the values read."""
    derived, sampled = window.derived, window.sampled
    measured = []
    for slot, where in enumerate(window.where):
        m = Measured()
        m.numel, m.dtype = window.meta[slot]
        if where is not None:
            values, at, count = found[id(where[0])]
            m.lo, m.hi = values[at + where[1]], values[at + count + where[1]]
        elif slot in derived:
            m.lo, m.hi = _derive(derived[slot], measured)
        else:
            m.lo = m.hi = None
        counts = small.get(slot)
        m.sampled = sampled.get(slot)
        m.small, m.subnormal = (None, None) if counts is None else (counts[0] / m.sampled, counts[1] / m.sampled)
        m.tainted = m.lo is not None and not (math.isfinite(m.lo) and math.isfinite(m.hi))
        measured.append(m)
    return measured


def _derive(how: tuple, measured: list) -> tuple:
    """Extrema of an output that follow from its input's: a copy or widening cast, an activation, a
    ``masked_fill`` with a number (a bound there: exact as soon as one value is masked, as masks are)."""
    name, source, fill = how
    lo, hi = measured[source].lo, measured[source].hi
    if lo is None or math.isnan(lo) or math.isnan(hi):
        return lo, hi
    activation = ACTIVATIONS.get(name)
    if activation is not None:
        f, dip = activation
        values = [f(lo), f(hi)]
        if dip is not None and lo < dip[0] < hi:
            values.append(dip[1])
        if any(math.isnan(v) for v in values):
            return math.nan, math.nan
        return min(values), max(values)
    if name == "masked_fill" and fill is not None:
        if math.isnan(fill):
            return fill, fill
        return min(lo, fill), max(hi, fill)
    return lo, hi


def _positions(torch: Any, n: int, device) -> Any:
    """``i * q mod n`` for i < SAMPLE, q near 0.618 n and coprime to n: distinct, spread evenly over the
    tensor, and hitting every column of any row length that divides n (gcd(q, row length) = 1)."""
    index = _POSITIONS.get((n, device))
    if index is not None:
        return index
    q = max(1, round(n * _GOLDEN))
    while math.gcd(q, n) != 1:
        q += 1
    if len(_POSITIONS) > 1024:
        _POSITIONS.clear()
    index = (torch.arange(SAMPLE, dtype=torch.int64) * q % n).sort().values.to(device)
    _POSITIONS[(n, device)] = index
    return index


def _dense(tensor) -> Any:
    """``tensor``'s memory in order, as a flat view, when it is a permuted dense block (a transposed gradient);
    else ``tensor``. Reductions over it see the same values, without striding across memory."""
    strides = tensor.stride()
    order = sorted(range(tensor.dim()), key=lambda d: -strides[d])
    permuted = tensor.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else tensor


def version_of(tensor) -> int:
    try:
        return tensor._version
    except RuntimeError:  # an inference-mode tensor keeps no version counter; it is never written in place
        return -1
