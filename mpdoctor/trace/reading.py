"""How a dtype trace reads the tensors of a module call: names, dtypes and shapes, never the tensor itself.

A :class:`TensorReader` finds the floating tensors in a call's arguments and outputs (a few levels into
tuples, lists and dicts, at most ``MAX_TENSORS`` per side), in a module's own parameters and buffers, and
asks torch whether autocast is on for a device, caching each dtype's name.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from mpdoctor.trace.records import TensorInfo

MAX_TENSORS = 64  # floating tensors recorded per side of one call: a module fed a list of 10,000 stays cheap


class TensorReader:
    """Reads tensors for one trace: ``torch``, and its autocast queries (``trace.compat.autocast_queries``)."""

    def __init__(self, torch: Any, autocast_on: Callable[[str], Any], autocast_dtype: Callable[[str], Any]) -> None:
        self._torch = torch
        self._autocast_on, self._autocast_dtype = autocast_on, autocast_dtype
        self._dtype_names: dict[Any, str] = {}

    def dtype(self, dtype: Any) -> str:
        name = self._dtype_names.get(dtype)
        if name is None:
            name = self._dtype_names[dtype] = str(dtype).replace("torch.", "")
        return name

    def info(self, name: str, tensor: Any) -> TensorInfo:
        try:
            shape = tuple(tensor.shape)
        except Exception:  # nested (jagged) tensors have no plain shape
            shape = None
        dtype = tensor.dtype
        return TensorInfo(name, self._dtype_names.get(dtype) or self.dtype(dtype), shape)

    def collect(self, value: Any, name: str, out: list, levels: int, objects: Optional[list] = None) -> Any:
        """Floating tensors in ``value``, looking ``levels`` deep into tuples, lists and dicts.

        Returns the first floating tensor found, or None; it is not kept. ``objects``, when
        given, gets the tensors themselves, one per record, for the caller to drop after use.
        """
        if isinstance(value, self._torch.Tensor):
            if value.is_floating_point() and len(out) < MAX_TENSORS:
                out.append(self.info(name, value))
                if objects is not None:
                    objects.append(value)
                return value
            return None
        if levels <= 0:
            return None
        if isinstance(value, dict):
            items: Iterable = ((f"{name}[{k!r}]", v) for k, v in value.items())
        elif isinstance(value, (tuple, list)):
            items = ((f"{name}[{i}]", v) for i, v in enumerate(value))
        else:
            return None
        first = None
        for item_name, item in items:
            found = self.collect(item, item_name, out, levels - 1, objects)
            if first is None:
                first = found
            if len(out) >= MAX_TENSORS:
                break
        return first

    def own(self, tensors: dict) -> tuple[TensorInfo, ...]:
        """The floating tensors of a module's ``_parameters`` or ``_buffers`` (its own, not its children's)."""
        if not tensors:
            return ()
        return tuple(self.info(n, t) for n, t in tensors.items() if t is not None and t.is_floating_point())

    def autocast(self, device: Optional[str]) -> tuple[Optional[bool], Optional[str]]:
        device = device or "cpu"
        try:
            on = bool(self._autocast_on(device))
        except Exception:  # a device type this torch has no autocast state for ("meta")
            return None, None
        if not on:
            return False, None
        try:
            return True, self.dtype(self._autocast_dtype(device))
        except Exception:
            return True, None
