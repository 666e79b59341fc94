"""Which module's own rounding error is more than its dtype explains: fp16/bf16 drift against fp32.

    report = numerics_compare(model, *inputs, dtype=torch.bfloat16, loss=None)
    report.first      # the first module whose own error exceeds the tolerance: Event(kind="drift")
    report.errors     # {module: {"forward": relative error, "backward": ... (with loss=), "calls": n}}

The reference is the same step in fp32: the model run with its parameters and floating inputs in
fp32 (``torch.func.functional_call``: the model itself is never modified), every module's inputs and
output recorded (so: give it a small batch), and the random state at each call, so a module run again
draws the same dropout mask; parameters and buffers are copies (a BatchNorm's running statistics are
not touched) and the caller's random state is put back. Then each module runs alone in ``dtype`` on its
*reference* inputs (cast down),
with its own parameters and buffers cast down: the difference between that output and the
reference output is the error the module makes itself, not the error it inherited from the modules
before it. With ``loss`` (a function of the model's output returning a scalar) the backward is
compared the same way: the gradient each module sends back and gives its parameters, computed in
``dtype`` from the reference's gradient of its output, against the reference's.

Error is relative, in the L2 norm: ``||low - ref|| / ||ref||``. The tolerance is grounded in the
dtype's unit roundoff ``u = eps / 2`` (2^-8 for bf16, 2^-11 for fp16): rounding a module's inputs,
weights and output once each gives about ``u`` (a well-conditioned Linear, a norm in fp32, an
activation all measure 0.3-1.5 u); ``TOLERANCE_UNITS`` (8) units of roundoff, plus the growth of
an fp16/bf16 accumulation over the module's widest reduction (``sqrt(k) * u / 4``) is the most
rounding explains. Above it the module amplifies rounding (a variance as E[x^2] - E[x]^2, a softmax
over logits in the hundreds, a difference of nearly equal values): that is drift, and ``first`` is
the first such module in the order the forward finished them whose submodules stay within theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from mpdoctor.numerics.events import Event
from mpdoctor.numerics.fixes import fixes_for
from mpdoctor.numerics.reference import autocast_off as _autocast_off
from mpdoctor.numerics.reference import cast as _cast
from mpdoctor.numerics.reference import keep_random_state as _keep_random_state
from mpdoctor.numerics.reference import out_of_range, relative, tensors, worst
from mpdoctor.numerics.reference import random_state as _random_state
from mpdoctor.numerics.reference import set_random_state as _set_random_state
from mpdoctor.numerics.reference import state as _state

TOLERANCE_UNITS = 8.0
_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38}


@dataclass
class CompareReport:
    """Per-module own error against fp32; ``first`` the first module past its tolerance."""

    dtype: str
    unit_roundoff: float
    errors: dict = field(default_factory=dict)
    tolerances: dict = field(default_factory=dict)
    output_error: float = 0.0  # the whole model in dtype against fp32 (inherited errors included)
    fixed_output_error: Optional[float] = None  # the same with the first drifting module kept in fp32
    events: list = field(default_factory=list)

    @property
    def first(self) -> Optional[Event]:
        return self.events[0] if self.events else None

    def __str__(self) -> str:
        u = self.unit_roundoff
        lines = [
            f"numerics_compare: {self.dtype} against fp32, unit roundoff u = {u:.3g}; "
            f"whole model output error {self.output_error:.3g} ({self.output_error / u:.1f} u)"
        ]
        first = self.first
        if first is None:
            lines.append("  no module's own error exceeds what the dtype explains")
        else:
            lines.append(f"  first {first.kind} in the {first.phase}: {first.where}: {first.detail}")
            for rank, fix in enumerate(first.fixes, 1):
                lines.append(f"  fix {rank}: {fix}")
        ranked = sorted(self.errors.items(), key=lambda kv: -max(kv[1]["forward"], kv[1].get("backward") or 0.0) / u)
        lines.append("  largest own errors (in units of roundoff; tolerance in brackets):")
        for name, value in ranked[:8]:
            back = value.get("backward")
            back_text = "" if back is None else f", backward {back / u:.1f} u"
            lines.append(
                f"    {name or '(root)'}: forward {value['forward'] / u:.1f} u{back_text} "
                f"[{self.tolerances[name] / u:.1f} u]"
            )
        return "\n".join(lines)

    def to_data(self) -> dict:
        return {
            "dtype": self.dtype,
            "unit_roundoff": self.unit_roundoff,
            "output_error": self.output_error,
            "fixed_output_error": self.fixed_output_error,
            "first": None if self.first is None else self.first.to_data(),
            "events": [e.to_data() for e in self.events],
            "errors": self.errors,
            "tolerances": self.tolerances,
        }


def numerics_compare(
    model: Any, *inputs: Any, dtype: Any = None, loss: Optional[Callable[[Any], Any]] = None
) -> CompareReport:
    """Run one step in fp32 and each module alone in ``dtype`` on the reference's inputs; report drift."""
    import torch
    from torch.func import functional_call

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"numerics_compare needs a torch.nn.Module, got {type(model).__name__}")
    dtype = torch.bfloat16 if dtype is None else dtype
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype such as torch.bfloat16, got {dtype!r}")
    u = torch.finfo(dtype).eps / 2
    names = {id(m): n for n, m in model.named_modules()}
    classes = {n: type(m).__name__ for n, m in model.named_modules()}
    modules = dict(model.named_modules())

    # The reference: the step in fp32, each module call's inputs (copied as it is entered), output (copied as it
    # returns: the next module may write either in place) and random state recorded, in finishing order, so that a
    # module run again alone draws the same dropout mask as it did in the step.
    calls: list[tuple[str, tuple, dict, list, Any, int]] = []
    entered: list[Any] = []
    handles = []
    grads: dict[tuple, Any] = {}  # (call, output position) -> the reference's gradient of that output

    def enter(module, args, kwargs):
        entered.append((_random_state(torch), _cast(args, torch.float32, torch), _cast(kwargs, torch.float32, torch)))

    def record(module, args, kwargs, output):
        rng, args_in, kwargs_in = entered.pop() if entered else (None, args, kwargs)
        outs = tensors(output, torch)
        call = len(calls)
        if loss is not None:  # registered now, before a later in-place write: the gradient of this value
            for position, out in enumerate(outs):
                if out.requires_grad:
                    out.register_hook(lambda g, key=(call, position): grads.__setitem__(key, g.detach()))
        calls.append((names[id(module)], args_in, kwargs_in, [o.detach().clone() for o in outs], rng, call))

    for module in model.modules():
        handles.append(module.register_forward_pre_hook(enter, with_kwargs=True))
        handles.append(module.register_forward_hook(record, with_kwargs=True, always_call=True))
    reference_params = _state(model, torch.float32, torch)
    if loss is not None:
        for name, _ in model.named_parameters():
            if reference_params[name].is_floating_point():
                reference_params[name].requires_grad_(True)
    start = _random_state(torch)
    with _autocast_off(torch), _keep_random_state(torch):
        try:
            ref_out = functional_call(model, reference_params, _cast(inputs, torch.float32, torch))
            ref_outs = [t.detach().clone() for t in tensors(ref_out, torch)]
            if loss is not None:
                loss(ref_out).backward()
        finally:
            for handle in handles:
                handle.remove()
        _set_random_state(torch, start)
        low_out = functional_call(model, _state(model, dtype, torch), _cast(inputs, dtype, torch))
        report = CompareReport(dtype=str(dtype).replace("torch.", ""), unit_roundoff=u)
        report.output_error = worst(tensors(low_out, torch), ref_outs, torch)
        for name, args, kwargs, refs, rng, call in calls:
            given = [grads.get((call, position)) for position in range(len(refs))]
            _judge_call(report, modules[name], name, args, kwargs, refs, rng, dtype, loss, given, u, torch)
    report.events = _drifts(report, classes, str(dtype).replace("torch.", ""))
    first = report.first
    if first is not None and first.phase == "forward" and first.module and first.kind in ("drift", "overflow", "nan"):
        with _autocast_off(torch), _keep_random_state(torch):
            _set_random_state(torch, start)
            fixed = _output_with_fp32(model, modules[first.module], first.module, inputs, dtype, torch)
        report.fixed_output_error = worst(fixed, ref_outs, torch)
        u = report.unit_roundoff
        first.detail += (
            f"; verified: with {first.module} kept in fp32 the whole model's output error is "
            f"{report.fixed_output_error / u:.1f} u, was {report.output_error / u:.1f} u"
        )
    return report


def _output_with_fp32(model, module, name: str, inputs, dtype, torch) -> list:
    """The model's outputs in ``dtype`` with ``module`` kept in fp32 (its weights, its inputs cast up, its output
    cast back): the first fix, re-run on the same step."""
    from torch.func import functional_call

    params = _state(model, dtype, torch)
    for key, value in _state(module, torch.float32, torch).items():
        params[f"{name}.{key}"] = value
    up = module.register_forward_pre_hook(
        lambda mod, args, kwargs: (_cast(args, torch.float32, torch), _cast(kwargs, torch.float32, torch)),
        with_kwargs=True,
    )
    down = module.register_forward_hook(lambda mod, args, output: _cast(output, dtype, torch))
    try:
        return tensors(functional_call(model, params, _cast(inputs, dtype, torch)), torch)
    finally:
        up.remove()
        down.remove()


def _judge_call(report, module, name, args, kwargs, refs, rng, dtype, loss, given, u, torch) -> None:
    """One module call, run alone in ``dtype`` on its reference inputs: its own forward (and backward) error, every
    floating output judged (a module returning (mean, std) can drift in its second), and where a value left the
    dtype's range (inf or NaN where the fp32 reference is finite), which is an overflow, not drift."""
    from torch.func import functional_call

    if not refs:
        return
    low_params = _state(module, dtype, torch)
    _set_random_state(torch, rng)
    low = tensors(functional_call(module, low_params, _cast(args, dtype, torch), _cast(kwargs, dtype, torch)), torch)
    entry = report.errors.setdefault(
        name, {"forward": 0.0, "backward": None, "gradient_cast": None, "calls": 0, "range": None}
    )
    entry["forward"] = max(entry["forward"], worst(low, refs, torch))
    if entry["range"] is None:
        left = out_of_range(low, refs, torch)
        entry["range"] = None if left is None else (*left, "forward")
    if loss is not None and any(g is not None for g in given):
        backward = _backward_error(module, args, kwargs, given, dtype, functional_call, torch, rng)
        if backward is not None:
            entry["backward"] = max(entry["backward"] or 0.0, backward[0])
            entry["gradient_cast"] = max(entry["gradient_cast"] or 0.0, backward[1])
            if entry["range"] is None and backward[2] is not None:
                entry["range"] = (*backward[2], "backward")
    entry["calls"] += 1
    report.tolerances[name] = _tolerance(module, args, u, torch)


def _backward_error(module, args, kwargs, given, dtype, functional_call, torch, rng=None):
    """The gradients the module sends back and gives its parameters (its submodules' included), in ``dtype`` vs fp32,
    from the reference's gradients of its outputs: (the largest relative error among them, each judged on its own:
    a weight's gradient wrong by tens of percent is not hidden by an accurate, larger input gradient; what casting
    the incoming gradients to ``dtype`` alone loses; where a gradient left the range, or None)."""

    def run(to):
        _set_random_state(torch, rng)
        trainable = {n for n, p in module.named_parameters() if p.is_floating_point()}
        params = {n: v.requires_grad_(True) if n in trainable else v for n, v in _state(module, to, torch).items()}
        leaves = [
            a.detach().to(to, copy=True).requires_grad_(True)
            for a in args
            if isinstance(a, torch.Tensor) and a.is_floating_point()
        ]
        it = iter(leaves)
        # The module gets a copy of each leaf, not the leaf: it may write its input in place (nn.ReLU(inplace=True)).
        call_args = tuple(
            next(it).clone() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
        )
        outs = tensors(functional_call(module, params, call_args, _cast(kwargs, to, torch)), torch)
        pairs = [(o, g.to(to)) for o, g in zip(outs, given) if g is not None and o.requires_grad and o.shape == g.shape]
        wrt = leaves + [p for p in params.values() if p.requires_grad]
        if not pairs or not wrt:
            return None
        found = torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
        return [None if g is None else g.float() for g in found]

    low, ref = run(dtype), run(torch.float32)
    if not low or not ref or len(low) != len(ref):
        return None
    try:  # fp64: which of the reference's gradients fp32 itself computes to better than dtype's roundoff
        exact = run(torch.float64) or [None] * len(ref)
    except Exception:  # a module with no fp64 kernel: every fp32 gradient is taken as the reference
        exact = [None] * len(ref)
    u = torch.finfo(dtype).eps / 2
    pairs = [
        (lo, re)
        for lo, re, ex in zip(low, ref, exact)
        # A gradient zero by construction (a bias before a BatchNorm, a sum that cancels) is rounding noise in fp32
        # as in dtype: no reference for it, left out rather than called drift.
        if lo is not None and re is not None and (ex is None or relative(re, ex, torch) <= u)
    ]
    if not pairs:
        return None
    lows, refs = [p[0] for p in pairs], [p[1] for p in pairs]
    incoming = [g for g in given if g is not None]
    cast = worst([g.to(dtype).float() for g in incoming], [g.float() for g in incoming], torch)
    return worst(lows, refs, torch), cast, out_of_range(lows, refs, torch)


def _tolerance(module, args, u: float, torch) -> float:
    """TOLERANCE_UNITS u, plus sqrt(k) u / 4 for a module reducing over k values (its widest input's last dim)."""
    widest = max((a.shape[-1] for a in args if isinstance(a, torch.Tensor) and a.dim()), default=1)
    return u * (TOLERANCE_UNITS + math.sqrt(widest) / 4)


def _drifts(report: CompareReport, classes: dict, dtype: str) -> list:
    """Forward drifts in the order the forward finished the modules, then backward ones in the order the backward
    reached them (the reverse); a module is named only when none of its submodules explains it."""
    u = report.unit_roundoff
    events = []
    for phase, order in (("forward", list(report.errors)), ("backward", list(reversed(report.errors)))):
        over = {}
        for name in order:
            value, tolerance = report.errors[name], report.tolerances[name]
            error = value.get(phase)
            if error is not None and (math.isnan(error) or error > tolerance):
                over[name] = error
        for name in order:
            if name not in over:
                continue
            if any(other != name and (other.startswith(f"{name}.") or name == "") for other in over):
                continue  # a submodule past its own tolerance explains it
            error, tolerance, cls = over[name], report.tolerances[name], classes.get(name, "")
            cast = report.errors[name].get("gradient_cast") if phase == "backward" else None
            left = report.errors[name].get("range")
            if left is not None and left[2] == phase:  # inf or NaN where fp32 is finite: range, not precision
                kind = left[0]
                what = "output" if phase == "forward" else "gradients"
                detail = (
                    f"its {what} hold inf in {dtype} (max {_MAX.get(dtype, math.inf):.4g}) where the fp32 reference's "
                    f"largest |value| is {left[1]:.4g}, given fp32 inputs"
                )
            elif cast is not None and (math.isnan(cast) or cast > tolerance):
                kind = "underflow"  # the gradient reaching it does not fit the dtype: range, not this module
                detail = (
                    f"the gradient of its output loses {cast:.3g} ({cast / u:.1f} u) just being cast to {dtype}: "
                    f"it is below {dtype}'s range; its backward error is {error:.3g}"
                )
            else:
                kind = "drift"
                detail = (
                    f"its own {phase} error is {error:.3g} ({error / u:.1f} u), tolerance {tolerance:.3g} "
                    f"({tolerance / u:.1f} u), given fp32 inputs"
                )
            events.append(
                Event(
                    kind=kind,
                    phase=phase,
                    module=name,
                    cls=cls,
                    op="(module)",
                    dtype=dtype,
                    step=0,
                    detail=detail,
                    fixes=fixes_for(kind, phase, name, cls, "(module)", dtype),
                )
            )
    return events
