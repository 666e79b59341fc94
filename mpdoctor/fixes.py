"""Building blocks for fix commands, so every check phrases them the same way.

Commands name the interpreter under diagnosis explicitly (``/venv/bin/python -m
pip``), so a fix pasted from a ``--python`` run changes the right environment.
"""

from __future__ import annotations

import shlex
from typing import Optional

from mpdoctor.findings import Step
from mpdoctor.snapshot import Snapshot

PYTORCH_INDEX = "https://download.pytorch.org/whl"
INSTALL_SELECTOR = "https://pytorch.org/get-started/locally/"

# CUDA variants that official torch wheels have been published for, newest last.
# Used only when the torch under diagnosis cannot tell us its own table.
KNOWN_CUDA_VARIANTS = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0", "13.2")


def pip(snap: Snapshot, *args: str) -> str:
    """``<target python> -m pip <args>``, each argument shell-quoted."""
    return " ".join(shlex.quote(a) for a in (snap.python_command(), "-m", "pip", *args))


def python(snap: Snapshot, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in (snap.python_command(), *args))


def version_tuple(text: str) -> tuple[int, ...]:
    """``"12.8"`` -> ``(12, 8)``; junk parts count as 0 so comparisons never raise."""
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def cuda_tag(cuda_version: str) -> str:
    """``"12.8"`` -> ``"cu128"`` (the PyTorch wheel index name)."""
    major, minor = (version_tuple(cuda_version) + (0, 0))[:2]
    return f"cu{major}{minor}"


def torch_variants(snap: Snapshot) -> dict[str, set[int]]:
    """CUDA version -> compute capabilities its official torch build contains (x86_64/aarch64)."""
    host = "aarch64" if (snap.environment.markers.get("platform_machine", "").lower() == "aarch64") else "x86_64"
    table = snap.torch.release_archs
    if table:
        return {cuda: set(by_host.get(host, [])) for cuda, by_host in table.items()}
    return {cuda: set() for cuda in KNOWN_CUDA_VARIANTS}  # capabilities unknown


def best_cuda_variant(snap: Snapshot, driver_cuda: str, capabilities: list[int]) -> Optional[str]:
    """Newest official CUDA variant the driver can run that has code for every GPU."""
    limit = version_tuple(driver_cuda) if driver_cuda else (99, 99)
    candidates = []
    for cuda, archs in torch_variants(snap).items():
        if version_tuple(cuda) > limit:
            continue
        if archs and not all(any(compatible(cc, code) for code in archs) for cc in capabilities):
            continue
        candidates.append(cuda)
    return max(candidates, key=version_tuple) if candidates else None


def compatible(device_cc: int, code_cc: int) -> bool:
    """Does a cubin for sm_<code_cc> run on a device of capability device_cc?

    Same major version and a minor version at least the code's (sm_80 code runs on
    8.6, not on 9.0). Capabilities are written as ints: 86 for 8.6.
    """
    return device_cc // 10 == code_cc // 10 and device_cc >= code_cc


def torch_companions(snap: Snapshot) -> list[str]:
    """Installed torchvision/torchaudio, pinned, to be reinstalled from torch's index."""
    specs = []
    for name in ("torchvision", "torchaudio"):
        dist = snap.distribution(name)
        if dist and dist.version:
            specs.append(f"{name}=={dist.version.split('+')[0]}")
    return specs


def reinstall_torch_step(snap: Snapshot, cuda: Optional[str], why: str) -> Step:
    """Reinstall the same torch version (and its companions) from the CUDA ``cuda`` index."""
    version = snap.torch.version.split("+")[0] if snap.torch.version else ""
    spec = f"torch=={version}" if version else "torch"
    index = f"{PYTORCH_INDEX}/{cuda_tag(cuda)}" if cuda else f"{PYTORCH_INDEX}/cpu"
    command = pip(snap, "install", "--force-reinstall", spec, *torch_companions(snap), "--index-url", index)
    return Step(f"{why} (other builds: {INSTALL_SELECTOR})", command)
