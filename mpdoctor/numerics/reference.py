"""What ``numerics_compare`` and ``watch.verify`` share: copies of a module's state and of the values it was given,
the random state a step draws from, autocast off, and the relative error of one run against another.

Everything here copies: a module called in the reference may write its input or its output in place afterwards
(``nn.ReLU(inplace=True)``, ``out += identity``), and what was recorded must stay what the module saw and made.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any


def cast(value: Any, to: Any, torch: Any) -> Any:
    """Floating tensors in ``value`` (nested in lists, tuples, dicts) as ``to``, detached copies (never the caller's
    memory: a module run on them may write them in place); the rest as they are."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(to, copy=True)
    if isinstance(value, (list, tuple)):
        return type(value)(cast(v, to, torch) for v in value)
    if isinstance(value, dict):
        return {k: cast(v, to, torch) for k, v in value.items()}
    return value


def state(module: Any, to: Any, torch: Any) -> dict:
    """Copies of the module's floating parameters and buffers in ``to``, always copies: a BatchNorm in training
    mode writes its running statistics into the buffers it is given."""
    found = {n: p.detach().to(to, copy=True) if p.is_floating_point() else p for n, p in module.named_parameters()}
    found.update({n: b.to(to, copy=True) if b.is_floating_point() else b.clone() for n, b in module.named_buffers()})
    return found


def tensors(value: Any, torch: Any) -> list:
    """Every floating tensor in ``value`` (nested in lists, tuples, dicts), in order: a module's outputs, all judged."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v, torch)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v, torch)]
    return []


def random_state(torch: Any) -> Any:
    """The CPU generator's state, and each CUDA device's once CUDA is in use: what a dropout draws from."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def set_random_state(torch: Any, saved: Any) -> None:
    if saved is None:
        return
    cpu, cuda = saved
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


class keep_random_state:  # noqa: N801 (a context manager, named for the with statement)
    """The caller's random state, put back afterwards: comparing a step must not change the user's next draws."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __enter__(self) -> None:
        self.saved = random_state(self.torch)

    def __exit__(self, *exc: Any) -> bool:
        set_random_state(self.torch, self.saved)
        return False


def autocast_off(torch: Any) -> Any:
    """Autocast off on every device type in use: the reference is fp32, the low run exactly ``dtype``."""
    stack = contextlib.ExitStack()
    stack.enter_context(torch.autocast("cpu", enabled=False))
    if torch.cuda.is_available():
        stack.enter_context(torch.autocast("cuda", enabled=False))
    return stack


def relative(low: Any, ref: Any, torch: Any) -> float:
    """``||low - ref|| / ||ref||`` in fp64 (inf where ``low`` left the range); 0 when there is nothing to compare."""
    if low is None or ref is None or low.shape != ref.shape:
        return 0.0
    low, ref = low.detach().double(), ref.detach().double()
    scale = torch.linalg.vector_norm(ref).item()
    diff = torch.linalg.vector_norm(low - ref).item()
    if not math.isfinite(diff):
        return math.inf
    floor = torch.finfo(torch.float32).tiny * math.sqrt(max(ref.numel(), 1))
    return diff / max(scale, floor)


def worst(lows: list, refs: list, torch: Any) -> float:
    """The largest relative error of paired tensors (each output, each gradient judged on its own: one accurate
    and large does not hide another that is wrong)."""
    return max((relative(low, ref, torch) for low, ref in zip(lows, refs)), default=0.0)


def out_of_range(lows: list, refs: list, torch: Any) -> Any:
    """("overflow", the largest |value| of the reference there) where a tensor holds inf that its fp32 reference
    does not: the value left the dtype's range; None when none did. NaN alone is not range: a variance that
    cancelled to below zero makes it (precision, drift), and an overflow that turned into NaN shows its inf first."""
    for low, ref in zip(lows, refs):
        if low is None or ref is None or low.shape != ref.shape or not bool(torch.isfinite(ref).all()):
            continue
        if bool(torch.isinf(low).any()):
            return "overflow", float(ref.detach().abs().max())
    return None
