"""What a numerics watch reports: an :class:`Event` per place a value left the dtype's range, and the verdict text.

Plain data, no torch: the CLI renders these from a child's JSON as the API renders them in-process.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

KINDS = ("overflow", "nan", "underflow", "drift")
PHASES = ("forward", "backward", "optimizer")  # "optimizer": what optimizer.step() wrote into the parameters
OUTSIDE = "(outside the model)"


@dataclass
class Event:
    """One place where values left the range of their dtype.

    ``module`` is the qualified name of the innermost module running ("" for the root; None when the op ran
    outside every watched module: the loss, a cast of the output); ``op`` the aten op inside it; ``phase``
    "forward", "backward" (the module whose backward made the gradient) or "optimizer" (``optimizer.step()``
    wrote inf/NaN into the parameters the module holds; ``op`` is then the step, ``Adam.step``); ``kind``
    "overflow" (inf from
    finite inputs), "nan" (nan from finite inputs), "underflow" (values flushed to zero or subnormal where
    the inputs were not zero) or "drift" (numerics_compare); ``fix`` the first of ``fixes``, ranked.
    """

    kind: str
    phase: str
    module: Optional[str]
    cls: str
    op: str
    dtype: str
    step: int
    detail: str
    fixes: list = field(default_factory=list)
    count: int = 1  # times the same (module, op, phase, kind) was seen; only the first is listed
    verification: Optional["Verification"] = None  # set by NumericsWatch.verify: the step re-run with the fix

    @property
    def fix(self) -> str:
        return self.fixes[0] if self.fixes else ""

    @property
    def where(self) -> str:
        if self.module is None:
            return OUTSIDE
        return f"{self.module or '(root)'} ({self.cls})"

    def line(self) -> str:
        return f"{self.kind} in {self.phase}, step {self.step}: {self.where}, op {self.op}, {self.dtype}: {self.detail}"

    def to_data(self, unverified: str = "not verified") -> dict:
        """JSON-ready; an event no re-run verified says so, with ``unverified`` (why not, or how to)."""
        data = asdict(self)
        data["fix"] = self.fix
        if self.verification is None:
            data["verification"] = {"status": "not verified", "text": unverified}
        return data


VERIFIED, MOVED, STAYED, NOT_VERIFIED = "verified", "moved", "stayed", "not verified"


@dataclass
class Verification:
    """What re-running the step with a fix applied showed (``NumericsWatch.verify``).

    ``status``: "verified" (the event is gone), "moved" (gone here, and a new event appears elsewhere:
    ``moved_to``), "stayed" (it recurs with the fix), or "not verified" (``text`` says why: the event did not
    recur when the step ran unchanged, the step failed with the fix...). ``fix`` is the fix applied (one of the
    event's ``fixes``, ``rank`` its place, 1 the first) and ``applied`` what was done; ``after`` the events of the
    re-run with the fix.
    """

    status: str
    text: str
    fix: str = ""
    rank: int = 0
    applied: str = ""
    moved_to: Optional[dict] = None
    after: list = field(default_factory=list)

    def to_data(self) -> dict:
        return asdict(self)


@dataclass
class ScalerStep:
    """One GradScaler.update(): the scale it judged with, whether gradients held inf/nan, the scale after."""

    step: int
    scale: float
    found_inf: bool
    new_scale: float

    def to_data(self) -> dict:
        return asdict(self)


def headroom_bits(largest: float, dtype_max: float) -> float:
    """Bits between ``largest`` and the dtype's max: 0 where it overflowed (inf/nan), negative never below it."""
    if math.isnan(largest) or math.isinf(largest) or largest >= dtype_max:
        return 0.0
    if largest <= 0:
        return math.inf
    return round(math.log2(dtype_max / largest), 2)


def scaler_summary(steps: list) -> Optional[str]:
    """``GradScaler: 3 of 20 steps skipped for inf/nan gradients (scale 65536 -> 8192), recovered``."""
    if not steps:
        return None
    skipped = [s for s in steps if s.found_inf]
    text = f"GradScaler: {len(skipped)} of {len(steps)} steps skipped for inf/nan gradients"
    text += f" (scale {_num(steps[0].scale)} -> {_num(steps[-1].new_scale)})"
    if not skipped:
        return text + ": the scaler never had to back off"
    if any(s.found_inf and s.scale <= 1 for s in steps):
        low = min(s.scale for s in skipped)
        return text + f": gradients overflowed even at scale {_num(low)}, unscaled: the model's, not the scaler's"
    if not steps[-1].found_inf:
        return text + ": it backed off and recovered (the scaler doing its job, not a model failure)"
    return text + ": the last step still overflowed"


def _num(value: float) -> str:
    return f"{value:g}"
