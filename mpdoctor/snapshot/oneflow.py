"""Snapshot facts about OneFlow and OneDiff, found without importing them.

Part of the snapshot (``mpdoctor.snapshot``, which also holds what importing
oneflow for real showed). Same rules: plain data, one docstring per field, new
fields may appear within a schema version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mpdoctor.schema.serde import fact
from mpdoctor.snapshot.apex import PthLine
from mpdoctor.snapshot.vocab import CoexistCaseName, CoexistDevice, CoexistStatus, MockTorchKind


@dataclass
class PackageOrigin:
    """Where one top-level package would be imported from, found without importing it."""

    origin: str = fact("Its __init__.py (or module file); empty when it is not importable", "")
    error: str = fact("Why looking for it raised, when it did", "")


@dataclass
class OneflowBuild:
    """The oneflow package on disk: a real build has its native core, PyPI's placeholder does not."""

    directory: str = fact("The oneflow package directory", "")
    native_core: str = fact("Its _oneflow_internal extension; empty when there is none", "")
    placeholder_message: str = fact("The `raise RuntimeError(...)` text of PyPI's placeholder __init__.py", "")
    version: str = fact("__version__ in oneflow/version.py, e.g. 0.9.1.dev20240802+cu118", "")
    git_commit: str = fact("__git_commit__ in oneflow/version.py", "")
    has_mock_torch: bool = fact("The build ships oneflow.mock_torch", False)
    metadata_dir: str = fact("The oneflow .dist-info directory beside it", "")
    wheel_tags: list[str] = fact("Tags of the wheel it came from; py3-none-any means no compiled code", factory=list)
    purelib: bool = fact("Its WHEEL says Root-Is-Purelib: a pure-Python wheel", False)
    error: str = fact("Why the directory could not be read, when it could not", "")


@dataclass
class TorchResolution:
    """What `import torch` would load, found without running it."""

    kind: MockTorchKind = fact(
        "torch; missing; oneflow-mock-torch (oneflow/mock_torch/torch on the path); oneflow-hook "
        "(an import hook from oneflow answers for torch); oneflow-shim (a small torch/__init__.py "
        "that imports oneflow); or error",
        "torch",
    )
    origin: str = fact("The file it would run", "")
    loader: str = fact("Module of the loader that would run it", "")
    error: str = fact("Why finding torch raised, when it did", "")


@dataclass
class MockTorch:
    """Every way oneflow's mock-torch (`import torch` gives OneFlow) can be wired in."""

    torch: TorchResolution = fact("What `import torch` would load", factory=TorchResolution)
    path_entries: list[str] = fact(
        "sys.path entries that are oneflow's mock_torch directory (from PYTHONPATH or a .pth file)", factory=list
    )
    hooks: list[str] = fact("Import hooks from oneflow on sys.meta_path at start-up", factory=list)
    preloaded: list[str] = fact("oneflow modules already imported when the interpreter started", factory=list)
    pth_lines: list[PthLine] = fact("Lines of .pth files that mention oneflow or mock_torch", factory=list)
    customize: list[str] = fact("sitecustomize/usercustomize files that mention mock_torch", factory=list)


@dataclass
class CoexistCase:
    """One run of a tiny fp16 OneFlow module fed an fp32 tensor from torch."""

    name: CoexistCaseName = fact("fp16 input (no context, fp16 fed), torch.autocast or oneflow.autocast", "")
    device: CoexistDevice = fact("cuda or cpu", "")
    status: CoexistStatus = fact("ok, or error: OneFlow raised", "")
    output_dtype: str = fact("dtype of the OneFlow module's output", "")
    torch_output_dtype: str = fact("torch.autocast: what torch's own linear gave for the same input", "")
    oneflow_autocast: Optional[bool] = fact("Whether OneFlow considered autocast on inside the context", None)
    detail: str = fact("The error OneFlow raised", "")
    warnings: list[str] = fact("Warnings raised (oneflow.autocast on the CPU disables itself)", factory=list)
