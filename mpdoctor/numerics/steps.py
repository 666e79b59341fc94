"""Where a training step ends under a numerics watch, and what GradScaler judged in it.

The optimizer's step hooks keep the watch quiet while the update writes the parameters and end the step;
GradScaler's ``scale`` marks the step as scaled, ``unscale_`` runs unobserved, and ``update`` queues the
scale before and after and whether inf was found, read with the step's statistics (never a host read here),
so that backward overflow the scaler handled is its job, not an event.
"""

from __future__ import annotations

from typing import Any


def hook_steps(watch: Any) -> None:
    """Hook the optimizer steps and patch GradScaler's ``scale``, ``unscale_`` and ``update`` for ``watch``:
    the handles go to ``watch._handles``, the originals to ``watch._patched``, for its ``_unhook``."""
    torch = watch._torch
    import torch.optim.optimizer as optimizer

    def before(opt, args, kwargs):
        watch._quiet += 1

    def after(opt, args, kwargs):
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
