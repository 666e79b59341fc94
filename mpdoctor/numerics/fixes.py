"""The fix for an event, in the user's terms, ranked: the most specific remedy first.

Chosen from what ran (the op, the module's class and name, the dtype, the phase): an attention
block's scores are scaled or upcast, a norm's variance computed in fp32, a softmax taken in fp32,
underflowing gradients get a GradScaler; then keeping the module in fp32 (autocast off for it and
its input cast, or ``_keep_in_fp32_modules`` in transformers), then bf16 where range is the problem.
"""

from __future__ import annotations

from typing import Any, Optional

from mpdoctor.numerics.ops import ATTENTION_OPS, NORM_OPS, SOFTMAX_OPS


def _leaf(module: Optional[str]) -> str:
    return (module or "").rsplit(".", 1)[-1]


def _is_attention(module: Optional[str], cls: str) -> bool:
    text = f"{module or ''} {cls}".lower()
    return any(word in text for word in ("attn", "attention", "mha", "selfatt"))


def _is_norm(module: Optional[str], cls: str) -> bool:
    text = f"{_leaf(module)} {cls}".lower()
    return "norm" in text or text.startswith("ln") or " ln" in text


def keep_in_fp32(module: Optional[str], cls: str) -> str:
    name = module or "(root)"
    leaf = _leaf(module) or cls
    return (
        f"keep {name} ({cls}) in fp32: run its forward under `torch.autocast(device_type, enabled=False)` with "
        f"its input cast `.float()` (and its weights fp32); in a transformers model add "
        f'"{leaf}" to `_keep_in_fp32_modules`'
    )


BF16 = (
    "train in bf16 instead of fp16 where the hardware has it (bf16 has fp32's range: "
    "`torch.autocast(device_type, dtype=torch.bfloat16)`); range, not precision, is the problem"
)
SCALER = (
    "use a loss scaler: `scaler = torch.amp.GradScaler(device)`, `scaler.scale(loss).backward()`, "
    "`scaler.step(optimizer)`, `scaler.update()` (it multiplies the loss so small gradients stay representable; "
    "or train in bf16, whose range needs none)"
)


LOW = ("float16", "bfloat16")
OUTSIDE = (
    "this ran outside the model (the loss, or a cast of its output): compute the loss in fp32 from fp32 logits, "
    "`loss_fn(logits.float(), target)`, and keep large constants out of fp16"
)


def _range(dtype: str) -> str:
    return (
        f"the values leave {dtype}'s own range, so no change of precision helps: bound them where they grow "
        "(normalise the input, scale the scores, clip the gradients, lower the learning rate)"
    )


def _optimizer(dtype: str) -> list[str]:
    """An update that wrote inf/NaN into the parameters: the step itself runs in the parameters' dtype."""
    fixes = []
    if dtype in LOW:
        fixes.append(
            f"use fp32 master weights: keep the parameters (and so the optimizer's update and its state) in fp32 "
            f"and run the forward under `torch.autocast(device_type, dtype=torch.{dtype})`"
            + (" with a GradScaler" if dtype == "float16" else "")
            + f", instead of a model cast to {dtype}"
        )
    if dtype == "float16":
        fixes.append(
            "in a pure fp16 model, an Adam-type optimizer's eps=1e-8 is 0 in fp16 (its smallest value is 6e-08): "
            "a parameter whose gradient is 0 gets 0 / (sqrt(0) + 0) = NaN; use `eps=1e-4` or larger"
        )
        fixes.append(BF16)
    fixes.append("lower the learning rate or clip the gradients (`torch.nn.utils.clip_grad_norm_`) before the step")
    return fixes


def fixes_for(kind: str, phase: str, module: Optional[str], cls: str, op: str, dtype: str) -> list[str]:
    """Ranked remedies for one event: what ran, where, and its dtype (an fp32 model is not told to keep a module
    in fp32, nor an overflow in bf16 to move to bf16)."""
    if phase == "optimizer":
        return _optimizer(dtype)
    fixes = _fixes(kind, phase, module, cls, op, dtype)
    if dtype not in LOW and kind != "drift":  # already wide: precision fixes cannot help, bounding the values can
        fixes = [f for f in fixes if not f.startswith(("keep ", "compute ")) and f != BF16]
        fixes.append(_range(dtype))
    if module is None:  # no module to keep in fp32: the loss or the code around the model
        fixes = [f for f in fixes if not f.startswith("keep ")]
        if (kind != "underflow" or phase != "backward") and dtype in LOW:
            fixes.insert(0, OUTSIDE)
    return fixes


def _fixes(kind: str, phase: str, module: Optional[str], cls: str, op: str, dtype: str) -> list[str]:
    fixes: list[str] = []
    if kind == "underflow":
        if phase == "backward":
            fixes.append(SCALER)
        else:
            fixes.append(
                f"values in {module or 'the model'} fall below {dtype}'s smallest normal number: "
                "rescale them (a smaller epsilon, a larger init or scale) or compute this step in fp32"
            )
        fixes.append(keep_in_fp32(module, cls))
        return fixes
    if kind == "drift":
        fixes.append(keep_in_fp32(module, cls))
        if _is_norm(module, cls):
            fixes.insert(0, _norm_fix(module, cls))
        return fixes
    attention = _is_attention(module, cls)
    if op in SOFTMAX_OPS:
        fixes.append(
            "take the softmax in fp32: `torch.softmax(scores.float(), dim=-1).to(value.dtype)` "
            "(subtracting the row max first if it is hand-written)"
        )
    if attention and op in ATTENTION_OPS:
        fixes.append(
            "scale the query by 1/sqrt(head_dim) before the q @ k^T product (not the scores after it), "
            "or compute the scores and their softmax in fp32: `scores = q.float() @ k.float().transpose(-1, -2)`"
        )
    if _is_norm(module, cls) and op in NORM_OPS:
        fixes.append(_norm_fix(module, cls))
    if phase == "backward" and kind in ("overflow", "nan"):
        fixes.append(
            "gradients overflow here: with a GradScaler, a few such steps are expected (it skips them and lowers "
            "the scale); without one, or at scale 1, clip or lower the learning rate and keep this module in fp32"
        )
    fixes.append(keep_in_fp32(module, cls))
    if dtype == "float16":
        fixes.append(BF16)
    return fixes


def _norm_fix(module: Optional[str], cls: str) -> str:
    return (
        f"compute {module or 'the norm'}'s variance in fp32: "
        "`variance = x.float().pow(2).mean(-1, keepdim=True)`, normalise in fp32, then cast the output back "
        "(`.to(input_dtype)`), as transformers' T5LayerNorm/LlamaRMSNorm do"
    )


NO_MECHANICAL_FIX = "not verified (no fix for it can be applied without changing code)"


def mechanical_fix(event: Any) -> Optional[tuple[int, str]]:
    """(rank, "fp32" or "scale") of the event's first fix that can be applied without changing code; None."""
    if event.module is None or event.kind == "drift" or event.phase == "optimizer":
        return None
    for rank, fix in enumerate(event.fixes, 1):
        if fix == SCALER and event.phase == "backward":
            return rank, "scale"
        if fix.startswith("keep "):
            return rank, "fp32"
    return None
