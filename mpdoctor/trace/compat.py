"""What differs between torch versions for a trace: hook options, and how autocast is asked about.

Kept apart from ``hooks`` so the trace itself reads as one piece; nothing here imports torch.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence


def autocast_queries(torch: Any) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    """``is_enabled(device_type)`` and ``dtype(device_type)`` for this torch.

    torch 2.4 took a device type; before, CPU and CUDA had their own functions and the
    no-argument ``is_autocast_enabled()`` meant CUDA only.
    """
    try:
        torch.is_autocast_enabled("cpu")
        is_enabled: Callable[[str], Any] = torch.is_autocast_enabled
    except TypeError:

        def is_enabled(device: str) -> Any:
            if device == "cpu":
                return torch.is_autocast_cpu_enabled()
            if device == "cuda":
                return torch.is_autocast_enabled()
            raise ValueError(device)

    if hasattr(torch, "get_autocast_dtype"):
        get_dtype: Callable[[str], Any] = torch.get_autocast_dtype
    else:

        def get_dtype(device: str) -> Any:
            return torch.get_autocast_cpu_dtype() if device == "cpu" else torch.get_autocast_gpu_dtype()

    return is_enabled, get_dtype


def register_hook(register: Callable[..., Any], hook: Callable[..., Any], choices: Sequence[dict]) -> Any:
    """Register ``hook`` with the first set of options this torch accepts; its handle."""
    for options in choices[:-1]:
        try:
            return register(hook, **options)
        except TypeError:  # an option this torch does not know yet
            continue
    return register(hook, **choices[-1])
