"""Where a training step ends under a numerics watch, what the optimizer wrote, and what GradScaler judged in it.

The optimizer's step hooks keep the watch quiet while the update writes the parameters, and end the step. A
closure given to ``optimizer.step(closure)`` (LBFGS, Lightning's automatic optimization: the step's forward and
backward run inside it) is watched as it runs; only the update around it is not. After the update the parameters
it changed are checked for inf/NaN (their extrema, queued with the statistics, read with the next
step's: never a host read here): Adam's eps=1e-8 is 0 in fp16, and 0 / 0 writes NaN into a pure-fp16 model's
unused rows, which the next forward would only pass on. A step that raises never runs its post-hook: the next
module call outside a closure (or ``watch.step()``) finds the watch still quiet and listens again.
GradScaler's ``scale`` marks the step as scaled, ``unscale_`` runs unobserved, and ``update`` queues the scale
before and after and whether inf was found, read with the step's statistics, so that backward overflow the scaler
handled is its job, not an event.
"""

from __future__ import annotations

import functools
from typing import Any

OPTIMIZER = 2  # the phase of an optimizer's update in the records (judge.OPTIMIZER)


def hook_steps(watch: Any) -> None:
    """Hook the optimizer steps and patch GradScaler's ``scale``, ``unscale_`` and ``update`` for ``watch``:
    the handles go to ``watch._handles``, the originals to ``watch._patched``, for its ``_unhook``."""
    torch = watch._torch
    import torch.optim.optimizer as optimizer

    def listening(closure):
        @functools.wraps(closure)
        def closure_seen(*args, **kwargs):
            quiet, watch._quiet = watch._quiet, 0  # the step's forward and backward: watched
            watch._closures += 1
            try:
                return closure(*args, **kwargs)
            finally:
                watch._closures -= 1
                watch._quiet = quiet

        return closure_seen

    def before(opt, args, kwargs):  # args[0] is the optimizer itself
        watch._stepping += 1
        watch._quiet += 1
        if callable(kwargs.get("closure")):
            return args, {**kwargs, "closure": listening(kwargs["closure"])}
        if len(args) > 1 and callable(args[1]):
            return (args[0], listening(args[1]), *args[2:]), kwargs
        return None

    def after(opt, args, kwargs):
        try:
            if watch._active:
                check_update(watch, opt)
        except Exception as exc:  # never an error in the user's step: say so
            watch.problems.append(f"checking {type(opt).__name__}'s update: {type(exc).__name__}: {exc}"[:500])
        finally:
            watch._stepping = max(0, watch._stepping - 1)
            watch._quiet = max(0, watch._quiet - 1)
        watch._recorder.forget()  # the update wrote the parameters unseen: measure them afresh
        if watch._active and watch.step_index not in watch._scaled_steps:  # with a scaler, its update() ends the step
            watch._advance()

    watch._handles.append(optimizer.register_optimizer_step_pre_hook(before))
    watch._handles.append(optimizer.register_optimizer_step_post_hook(after))
    scaler_class = torch.amp.GradScaler

    original_scale = scaler_class.scale
    original_unscale = scaler_class.unscale_
    original_update = scaler_class.update

    def scale(scaler, outputs):
        if watch._active:
            watch._scaled_steps.add(watch.step_index)
        return original_scale(scaler, outputs)

    def unscale_(scaler, optimizer):
        watch._quiet += 1
        try:
            return original_unscale(scaler, optimizer)
        finally:
            watch._quiet = max(0, watch._quiet - 1)

    def update(scaler, new_scale=None):
        if not watch._active or getattr(scaler, "_scale", None) is None:
            return original_update(scaler, new_scale)
        watch._quiet += 1
        try:
            try:  # what the scaler judged with: read with the statistics, never here
                before = scaler._scale.detach().clone().reshape(())
                found = [
                    v
                    for state in scaler._per_optimizer_states.values()
                    for v in state.get("found_inf_per_device", {}).values()
                ]
                found_sum = sum(f.to(before.device) for f in found) if found else None
            except Exception:  # a GradScaler of another shape: it still updates, unobserved
                before = None
            result = original_update(scaler, new_scale)
            if before is not None:
                after = scaler._scale.detach().clone().reshape(())
                raw = watch._recorder.window.raw
                slots = (
                    raw(before),
                    -1 if found_sum is None else raw(found_sum.float().reshape(())),
                    raw(after),
                )
                watch._recorder.window.scaler.append((watch.step_index, slots))
        finally:
            watch._quiet = max(0, watch._quiet - 1)
        watch._advance()
        return result

    for name, function in (("scale", scale), ("unscale_", unscale_), ("update", update)):
        watch._patched.append((scaler_class, name, scaler_class.__dict__[name]))
        setattr(scaler_class, name, function)


def check_update(watch: Any, opt: Any) -> None:
    """Queue, for each parameter ``opt`` just updated (it had a gradient), its extrema and its gradient's (the
    watch's own ``aminmax``, on the device: 0.35 ms for a 3M-parameter bf16 model's 48 tensors on one CPU thread,
    where ``_foreach_norm(inf)`` took 18), as a record of phase "optimizer" in the module that holds it: judged at
    the next read like any op, NaN or inf from a finite gradient is an event."""
    torch = watch._torch
    types = watch._recorder.types
    params, grads = [], []
    for group in getattr(opt, "param_groups", ()):
        for p in group.get("params", ()):
            g = getattr(p, "grad", None)
            if (
                type(p) in types.plain  # a DTensor, a quantized wrapper: not the watch's to read
                and type(g) in types.plain
                and p.dtype in types.floating
                and p.layout is types.strided
                and g is not None
                and g.dtype in types.floating
                and g.layout is types.strided
                and p.numel()
            ):
                params.append(p)
                grads.append(g)
    if not params:
        return
    window = watch._recorder.window
    op = f"{type(opt).__name__}.step"
    owner = watch._modules.parameter_owner
    with torch.no_grad():
        for p, g in zip(params, grads):
            out, given = window.measure(p.detach()), window.measure(g.detach())
            window.records.append((op, owner(p), OPTIMIZER, watch.step_index, [out], [given], False))
            window.checks += 1
