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

TOLERANCE_UNITS = 8.0


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


def _cast(value, to, torch):
    """Floating tensors in ``value`` (nested in lists, tuples, dicts) as ``to``, detached; the rest as they are."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(to)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, to, torch) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, to, torch) for k, v in value.items()}
    return value


def _state(module, to, torch) -> dict:
    """Copies of the module's floating parameters and buffers in ``to``, always copies: a BatchNorm in training
    mode writes its running statistics into the buffers it is given."""
    found = {n: p.detach().to(to, copy=True) if p.is_floating_point() else p for n, p in module.named_parameters()}
    found.update({n: b.to(to, copy=True) if b.is_floating_point() else b.clone() for n, b in module.named_buffers()})
    return found


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

    # The reference: the step in fp32, each module call's inputs, output and random state recorded (in finishing
    # order), so that a module run again alone draws the same dropout mask as it did in the step.
    calls: list[tuple[str, tuple, dict, Any, Any]] = []
    drawn: list[Any] = []
    handles = []

    def enter(module, args):
        drawn.append(_random_state(torch))

    def record(module, args, kwargs, output):
        rng = drawn.pop() if drawn else None
        calls.append(
            (names[id(module)], _cast(args, torch.float32, torch), _cast(kwargs, torch.float32, torch), output, rng)
        )

    for module in model.modules():
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(record, with_kwargs=True, always_call=True))
    reference_params = _state(model, torch.float32, torch)
    if loss is not None:
        for name, _ in model.named_parameters():
            if reference_params[name].is_floating_point():
                reference_params[name].requires_grad_(True)
    outputs_grads: dict[int, Any] = {}
    start = _random_state(torch)
    with _autocast_off(torch), _keep_random_state(torch):
        try:
            ref_out = functional_call(model, reference_params, _cast(inputs, torch.float32, torch))
            if loss is not None:
                tensors = [call[3] for call in calls if isinstance(call[3], torch.Tensor) and call[3].requires_grad]
                for out in tensors:
                    out.register_hook(lambda grad, key=id(out): outputs_grads.__setitem__(key, grad.detach()))
                loss(ref_out).backward()
        finally:
            for handle in handles:
                handle.remove()
        _set_random_state(torch, start)
        low_out = functional_call(model, _state(model, dtype, torch), _cast(inputs, dtype, torch))
        report = CompareReport(dtype=str(dtype).replace("torch.", ""), unit_roundoff=u)
        report.output_error = _relative(_first_tensor(low_out, torch), _first_tensor(ref_out, torch), torch)
        for name, args, kwargs, ref, rng in calls:
            _judge_call(report, modules[name], name, args, kwargs, ref, rng, dtype, loss, outputs_grads, u, torch)
    report.events = _drifts(report, classes, str(dtype).replace("torch.", ""))
    first = report.first
    if first is not None and first.kind == "drift" and first.phase == "forward" and first.module:
        with _autocast_off(torch), _keep_random_state(torch):
            _set_random_state(torch, start)
            fixed = _output_with_fp32(model, modules[first.module], first.module, inputs, dtype, torch)
        report.fixed_output_error = _relative(fixed, _first_tensor(ref_out, torch), torch)
        u = report.unit_roundoff
        first.detail += (
            f"; verified: with {first.module} kept in fp32 the whole model's output error is "
            f"{report.fixed_output_error / u:.1f} u, was {report.output_error / u:.1f} u"
        )
    return report


def _output_with_fp32(model, module, name: str, inputs, dtype, torch):
    """The model's output in ``dtype`` with ``module`` kept in fp32 (its weights, its inputs cast up, its output
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
        return _first_tensor(functional_call(model, params, _cast(inputs, dtype, torch)), torch)
    finally:
        up.remove()
        down.remove()


def _judge_call(report, module, name, args, kwargs, ref, rng, dtype, loss, outputs_grads, u, torch) -> None:
    """One module call, run alone in ``dtype`` on its reference inputs: its own forward (and backward) error."""
    from torch.func import functional_call

    ref_tensor = _first_tensor(ref, torch)
    if ref_tensor is None or not ref_tensor.is_floating_point():
        return
    low_params = _state(module, dtype, torch)
    _set_random_state(torch, rng)
    low = functional_call(module, low_params, _cast(args, dtype, torch), _cast(kwargs, dtype, torch))
    forward = _relative(_first_tensor(low, torch), ref_tensor, torch)
    backward = None
    grad = outputs_grads.get(id(ref))
    if loss is not None and grad is not None:
        _set_random_state(torch, rng)
        backward = _backward_error(module, args, kwargs, grad, dtype, functional_call, torch, rng)
    entry = report.errors.setdefault(name, {"forward": 0.0, "backward": None, "gradient_cast": None, "calls": 0})
    entry["forward"] = max(entry["forward"], forward)
    if backward is not None:
        entry["backward"] = max(entry["backward"] or 0.0, backward[0])
        entry["gradient_cast"] = max(entry["gradient_cast"] or 0.0, backward[1])
    entry["calls"] += 1
    report.tolerances[name] = _tolerance(module, args, u, torch)


def _random_state(torch):
    """The CPU generator's state, and each CUDA device's once CUDA is in use: what a dropout draws from."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_random_state(torch, saved) -> None:
    if saved is None:
        return
    cpu, cuda = saved
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


class _keep_random_state:  # noqa: N801 (a context manager, named for the with statement)
    """The caller's random state, put back afterwards: comparing a step must not change the user's next draws."""

    def __init__(self, torch) -> None:
        self.torch = torch

    def __enter__(self):
        self.saved = _random_state(self.torch)

    def __exit__(self, *exc):
        _set_random_state(self.torch, self.saved)
        return False


def _autocast_off(torch):
    """Autocast off on every device type in use: the reference is fp32, the low run exactly ``dtype``."""
    import contextlib

    stack = contextlib.ExitStack()
    stack.enter_context(torch.autocast("cpu", enabled=False))
    if torch.cuda.is_available():
        stack.enter_context(torch.autocast("cuda", enabled=False))
    return stack


def _backward_error(module, args, kwargs, grad, dtype, functional_call, torch, rng=None):
    """The gradient the module sends back and gives its parameters, in dtype vs fp32, from the same grad;
    and what casting that incoming gradient to dtype alone loses."""

    def grads(to):
        _set_random_state(torch, rng)
        trainable = {n for n, p in module.named_parameters() if p.is_floating_point()}
        params = {n: v.requires_grad_(True) if n in trainable else v for n, v in _state(module, to, torch).items()}
        xs = [
            a.detach().to(to).requires_grad_(True)
            for a in args
            if isinstance(a, torch.Tensor) and a.is_floating_point()
        ]
        it = iter(xs)
        call_args = tuple(next(it) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
        out = _first_tensor(functional_call(module, params, call_args, kwargs), torch)
        wrt = xs + [p for p in params.values() if p.requires_grad]
        if out is None or not out.requires_grad or not wrt:
            return None
        found = torch.autograd.grad(out, wrt, grad.to(to), allow_unused=True)
        return [g.float().flatten() for g in found if g is not None]

    low, ref = grads(dtype), grads(torch.float32)
    if not low or not ref or len(low) != len(ref):
        return None
    return _relative(torch.cat(low), torch.cat(ref), torch), _relative(grad.to(dtype).float(), grad.float(), torch)


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
            if cast is not None and (math.isnan(cast) or cast > tolerance):
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


def _first_tensor(value, torch):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item, torch)
            if found is not None:
                return found
    if isinstance(value, dict):
        for item in value.values():
            found = _first_tensor(item, torch)
            if found is not None:
                return found
    return None


def _relative(low, ref, torch) -> float:
    if low is None or ref is None or low.shape != ref.shape:
        return 0.0
    low, ref = low.detach().double(), ref.detach().double()
    scale = torch.linalg.vector_norm(ref).item()
    diff = torch.linalg.vector_norm(low - ref).item()
    if not math.isfinite(diff):
        return math.inf
    floor = torch.finfo(torch.float32).tiny * math.sqrt(max(ref.numel(), 1))
    return diff / max(scale, floor)
