"""`mpdoctor.audit(obj)`: the same audit for a model, a state dict or a path, from Python."""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, Optional

from mpdoctor.checkpoint_audit.layout import layout
from mpdoctor.checkpoint_audit.report import AuditReport, audit_files, audit_layout
from mpdoctor.checkpoint_audit.safetensors import TensorEntry
from mpdoctor.checkpoint_audit.sources import WeightFile, read_all
from mpdoctor.checkpoint_audit.kept_fp32 import from_live
from mpdoctor.checkpoint_audit.tree import ModelFacts
from mpdoctor.probes.budget import AUDIT_TIMEOUT, Budget

IN_MEMORY = "<in memory>"


def audit(obj: Any, *, python: Optional[str] = None, timeout: float = AUDIT_TIMEOUT) -> AuditReport:
    """Audit an ``nn.Module`` (its parameters and all its buffers), a state dict, or a path (as `mpdoctor audit PATH`).

    ``print(report)`` shows the dtype mix and the modules that mix dtypes;
    ``report.to_data()`` is the JSON-ready form (the audit schema).
    """
    if isinstance(obj, (str, os.PathLike)):
        path = os.fspath(obj)
        budget = Budget.from_timeout(timeout)  # this call's, built once
        found = layout(path)  # which checkpoints the path holds, each judged on its own
        read_all(found.files(), python or sys.executable, budget)
        return audit_layout(path, found)
    live = callable(getattr(obj, "named_parameters", None)) and callable(getattr(obj, "named_buffers", None))
    # A live module: its non-persistent buffers too (a state dict leaves them out), its classes, its own
    # _keep_in_fp32_modules; the same analysis as its saved file, knowing more.
    state = (
        {**dict(obj.named_parameters()), **dict(obj.named_buffers())}
        if live
        else obj.state_dict()
        if callable(getattr(obj, "state_dict", None))
        else obj
    )
    if not isinstance(state, Mapping):
        raise TypeError(f"mpdoctor.audit takes a module, a state dict or a path, not {type(obj).__name__}")
    entries = [
        TensorEntry(
            str(name),
            str(tensor.dtype).replace("torch.", ""),
            tuple(tensor.shape),
            int(tensor.numel()) * int(tensor.element_size()),
            IN_MEMORY,
        )
        for name, tensor in state.items()
        if hasattr(tensor, "dtype") and hasattr(tensor, "numel")
    ]
    label = type(obj).__name__
    model = from_live(obj) if live else None  # a transformers/diffusers model: its class's keep-in-fp32 rules
    facts = ModelFacts(
        {name: type(module).__name__ for name, module in obj.named_modules()} if live else {},
        {"": model} if model is not None else {},
        frozenset(
            f"{name}.{buffer}" if name else buffer
            for name, module in (obj.named_modules() if live else ())
            for buffer in getattr(module, "_non_persistent_buffers_set", ())
        ),
    )
    return audit_files(label, [WeightFile(IN_MEMORY, format="memory", tensors=entries)], facts)
