"""Verify an event's fix by re-running the step with it applied: ``NumericsWatch.verify(step)``.

    with numerics_watch(model) as watch:
        step()                 # a function of no arguments: one forward and backward, as in training
    watch.verify(step)         # the same step again: unchanged, then with the fix
    print(watch)               # "verified: the overflow is gone when block.2.DenseReluDense.wo runs in fp32 ..."

The fix applied is the first of the event's fixes that needs no change to the code (``mechanical_fix``):

* keep the module in fp32: its forward runs under autocast disabled, with its floating inputs cast to fp32, its
  parameters and buffers in fp32, and its floating outputs cast back to its input's dtype (so the model around
  it runs as it did). A fix ranked above it that lives inside the module (a norm's variance, an attention
  block's scores or softmax, in fp32) is carried out by it too: this is its mechanical form.
* a loss scale, for gradients that underflow in the backward: the gradient reaching the model's outputs is
  multiplied by a power of two, which is what scaling the loss does to every gradient after it: 2^16 (GradScaler's
  first scale), or where it overflows the backward, the largest that does not (where a GradScaler would settle
  after backing off; found by bisection, a few re-runs).

An event outside the model (the loss, code around it) has none. The step runs twice under fresh watches: first
unchanged, since the event must recur for the fix to be judged (a step on other data, or after the weights have
moved, may not show it), then with the fix. Both start from the caller's random state (the same dropout masks)
and work on copies of the parameters and buffers swapped in, with the ``.grad``s set aside; afterwards the
originals go back, and the forwards and the random state, whatever the step did or raised. Optimizer steps in
the step are skipped (a closure still runs) and a GradScaler's state is put back: verifying never trains.
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from mpdoctor.numerics.events import MOVED, NOT_VERIFIED, STAYED, VERIFIED, Verification
from mpdoctor.numerics.fixes import NO_MECHANICAL_FIX, mechanical_fix

SCALE_BITS = 16
SCALE = 2.0**SCALE_BITS  # GradScaler's default initial scale


def verify(watch: Any, step: Any, event: Any) -> Verification:
    """Re-run ``step`` unchanged and with ``event``'s mechanical fix; record the outcome on ``event``."""
    torch = watch._torch
    chosen = mechanical_fix(event)
    module = watch._modules.module(event.module)
    root = watch.model if watch.model is not None else watch._modules.root_of(event.module)
    if chosen is None:
        return _record(event, Verification(NOT_VERIFIED, NO_MECHANICAL_FIX))
    rank, how = chosen
    if module is None or root is None:
        return _record(event, Verification(NOT_VERIFIED, f"not verified ({event.where} no longer exists)"))
    found = Verification(NOT_VERIFIED, "", fix=event.fixes[rank - 1], rank=rank)
    found.applied = f"{event.module or '(root)'} kept in fp32" if how == "fp32" else "the gradient scaled"
    target = _key(event)
    saved = _random_state(torch)
    try:
        try:
            baseline = _run(watch, root, step, saved, None, None)
        except BaseException as exc:
            found.text = f"not verified: the step raised {type(exc).__name__}: {exc}"[:500]
            _record(event, found)
            raise
        first = {_key(e): e for e in reversed(baseline.events)}
        if target not in first:
            other = f"its first event: {baseline.first.line()}" if baseline.first else "it ran clean"
            found.text = (
                f"not verified: the step re-run unchanged did not show the {event.kind} in {event.where} ({other}): "
                "nothing to judge the fix against"
            )
            return _record(event, found)
        try:
            if how == "fp32":
                fixed = _run(watch, root, step, saved, how, module)
            else:
                fixed, bits = _scaled(watch, root, step, saved, first)
                found.applied = f"the gradient scaled by 2^{bits} = {2.0**bits:g}"
        except Exception as exc:
            raised = f"{type(exc).__name__}: {exc}"[:400]
            found.text = f"not verified: with {found.applied} (fix {rank}) the step raised {raised}"
            return _record(event, found)
    finally:
        _set_random_state(torch, saved)
    return _record(event, _outcome(found, event, target, first, fixed, how))


def _scaled(watch: Any, root: Any, step: Any, saved: Any, baseline: dict) -> tuple:
    """The step with its gradient scaled as a GradScaler would settle: the largest power of two up to 2^16 (its first
    scale) at which the backward makes no overflow the unchanged step had not; found by bisection (6 runs at most).
    Returns that run and the power."""
    runs: dict[int, Any] = {}

    def clean(bits: int) -> bool:
        runs[bits] = _run(watch, root, step, saved, "scale", None, 2.0**bits)
        return not any(
            e.phase == "backward" and e.kind in ("overflow", "nan") and _key(e) not in baseline
            for e in runs[bits].events
        )

    if clean(SCALE_BITS):
        return runs[SCALE_BITS], SCALE_BITS
    low, high = 0, SCALE_BITS - 1  # scale 1 is the unchanged step: clean by definition
    while low < high:
        middle = (low + high + 1) // 2
        if clean(middle):
            low = middle
        else:
            high = middle - 1
    if low not in runs:
        runs[low] = _run(watch, root, step, saved, "scale", None, 2.0**low)
    return runs[low], low


def _outcome(found: Verification, event: Any, target: tuple, baseline: dict, fixed: Any, how: str) -> Verification:
    found.after = [e.line() for e in fixed.events[:10]]
    same = next((e for e in fixed.events if _key(e) == target), None)
    new = [e for e in fixed.events if _key(e) not in baseline]
    fix = f"{found.applied} (fix {found.rank})"
    if same is not None:
        found.status = STAYED
        found.text = f"not verified: with {fix} the {event.kind} stays in {event.where} ({same.phase}, op {same.op})"
    elif new:
        moved = new[0]
        found.status, found.moved_to = MOVED, moved.to_data()
        found.text = (
            f"not verified: with {fix} the {event.kind} moves to {moved.where}: {moved.kind} in the {moved.phase}, "
            f"op {moved.op}, which the unchanged step did not have"
        )
    else:
        found.status = VERIFIED
        if how == "fp32":
            change = f"{event.module or '(root)'} runs in fp32"
        elif found.applied.endswith(f"{SCALE:g}"):
            change = f"{found.applied}, a GradScaler's first scale"
        else:
            change = f"{found.applied}, where a GradScaler would settle: twice that overflows"
        change = change.replace("the gradient scaled", "the gradient is scaled")
        remain = len(fixed.events)
        found.text = (
            f"verified: the {event.kind} is gone when {change} (the step re-run with fix {found.rank} applied; "
            f"unchanged, it recurred{f'; {remain} other event(s), there without the fix too, remain' if remain else ''})"
        )
    return found


def _record(event: Any, found: Verification) -> Verification:
    event.verification = found
    return found


def _key(event: Any) -> tuple:
    return event.module, event.kind, event.phase


def _run(
    watch: Any, root: Any, step: Any, random_state: Any, how: Optional[str], module: Any, scale: float = SCALE
) -> Any:
    """One run of ``step`` under a fresh watch, on copies of ``root``'s parameters and buffers, with the fix."""
    torch = watch._torch
    _set_random_state(torch, random_state)
    undo = []
    try:
        natural = next((p.dtype for p in module.parameters() if p.is_floating_point()), None) if module else None
        undo.append(_swap_state(torch, root, module if how == "fp32" else None))
        if how == "fp32":
            undo.append(_keep_in_fp32(torch, module, natural))
        elif how == "scale":
            undo.append(_scale_gradients(torch, root, scale))
        undo.append(_hold_training(torch))
        fresh = type(watch)(watch.model)  # a fresh watch of the same kind (no import of watch: no circle)
        with fresh:
            step()
        return fresh
    finally:
        for put_back in reversed(undo):
            put_back()


def _swap_state(torch: Any, root: Any, fp32: Any) -> Any:
    """Swap copies in for ``root``'s parameters and buffers (fp32 ones for ``fp32``'s), set ``.grad``s aside;
    returns the function that puts the originals back, exactly (the same tensors, untouched)."""
    params, buffers = [], []
    in_fp32 = {id(p) for p in fp32.parameters()} if fp32 is not None else set()
    owners = {id(m) for m in fp32.modules()} if fp32 is not None else set()

    def put_back() -> None:
        for param, data, grad in reversed(params):
            param.grad = None  # first: a grad of the copy's dtype must not meet the original's data
            param.data = data
            param.grad = grad
        for owner, name, buffer in reversed(buffers):
            owner._buffers[name] = buffer

    try:
        for param in root.parameters():
            params.append((param, param.data, param.grad))
            param.grad = None
            up = id(param) in in_fp32 and param.is_floating_point()
            param.data = param.data.to(torch.float32, copy=True) if up else param.data.clone()
        for owner in root.modules():
            for name, buffer in list(owner._buffers.items()):
                if buffer is None:
                    continue
                buffers.append((owner, name, buffer))
                up = id(owner) in owners and buffer.is_floating_point()
                owner._buffers[name] = buffer.to(torch.float32, copy=True) if up else buffer.clone()
    except BaseException:
        put_back()
        raise
    return put_back


def _keep_in_fp32(torch: Any, module: Any, natural: Any) -> Any:
    """Run ``module``'s forward under autocast disabled on fp32 inputs, its outputs cast back to its input's dtype
    (or to ``natural``, its parameters' own dtype, when no input is floating); returns the function undoing it."""
    had = "forward" in module.__dict__
    previous = module.__dict__.get("forward")
    original = module.forward
    fp32 = torch.float32

    def forward(*args, **kwargs):
        back = _first_dtype(args) or _first_dtype(tuple(kwargs.values())) or natural
        with _autocast_off(torch):
            out = original(*_to(args, fp32, torch), **_to(kwargs, fp32, torch))
        return out if back is None or back == fp32 else _to(out, back, torch)

    module.forward = forward

    def put_back() -> None:
        if had:
            module.forward = previous
        else:
            module.__dict__.pop("forward", None)

    return put_back


def _scale_gradients(torch: Any, root: Any, scale: float) -> Any:
    """Multiply the gradient reaching ``root``'s floating outputs by ``scale`` (what a loss scale does)."""

    def scaled(grad):
        return grad * scale

    def hook(module, args, output):
        for tensor in _tensors(output, torch):
            if tensor.requires_grad and tensor.is_floating_point():
                tensor.register_hook(scaled)

    return root.register_forward_hook(hook).remove


def _hold_training(torch: Any) -> Any:
    """Skip every optimizer's step (running its closure) and note each GradScaler's state as it is first used;
    returns the function that restores the steps and the scalers."""
    restore = []
    scalers: dict[int, tuple[Any, dict]] = {}

    def skipped_step(self, closure=None, *args, **kwargs):
        if closure is not None:
            with torch.enable_grad():
                return closure()
        return None

    classes, todo = [], [torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo.extend(cls.__subclasses__())
    for cls in classes:
        if "step" in cls.__dict__:
            restore.append((cls, "step", cls.__dict__["step"]))
            cls.step = skipped_step
    scaler_class = torch.amp.GradScaler
    original_scale = scaler_class.__dict__["scale"]

    def scale(scaler, outputs):
        if id(scaler) not in scalers:
            scalers[id(scaler)] = (scaler, _copy_state(scaler, torch))
        return original_scale(scaler, outputs)

    restore.append((scaler_class, "scale", original_scale))
    scaler_class.scale = scale

    def put_back() -> None:
        for owner, name, function in reversed(restore):
            setattr(owner, name, function)
        for scaler, state in scalers.values():
            scaler.__dict__.clear()
            scaler.__dict__.update(state)

    return put_back


def _copy_state(obj: Any, torch: Any) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v) for k, v in obj.__dict__.items()}


def _first_dtype(values: tuple) -> Any:
    for value in values:
        if hasattr(value, "is_floating_point") and value.is_floating_point():
            return value.dtype
        if isinstance(value, (list, tuple)):
            found = _first_dtype(tuple(value))
            if found is not None:
                return found
    return None


def _to(value: Any, dtype: Any, torch: Any) -> Any:
    """Floating tensors in ``value`` (nested in lists, tuples, dicts) as ``dtype``, differentiably."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() and value.dtype != dtype else value
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(_to(v, dtype, torch) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, dtype, torch) for v in value)
    if isinstance(value, dict):
        cast = {k: _to(v, dtype, torch) for k, v in value.items()}
        try:
            return type(value)(cast)
        except Exception:  # a mapping that cannot be built from a dict: left as it is
            return value
    return value


def _tensors(value: Any, torch: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v, torch)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v, torch)]
    return []


def _autocast_off(torch: Any) -> Any:
    from mpdoctor.numerics.reference import autocast_off as off

    return off(torch)


def _random_state(torch: Any) -> Any:
    from mpdoctor.numerics.reference import random_state as state

    return state(torch)


def _set_random_state(torch: Any, saved: Any) -> None:
    from mpdoctor.numerics.reference import set_random_state as put

    put(torch, saved)
