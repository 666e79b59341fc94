"""Building blocks for fix commands, so every check phrases them the same way.

Commands name the interpreter under diagnosis explicitly (``/venv/bin/python -m
pip``), so a fix pasted from a ``--python`` run changes the right environment.
"""

from __future__ import annotations

import shlex
from typing import Optional

from mpdoctor.analysis.versions import version_tuple
from mpdoctor.findings import Step
from mpdoctor.snapshot import Snapshot

PYTORCH_INDEX = "https://download.pytorch.org/whl"
INSTALL_SELECTOR = "https://pytorch.org/get-started/locally/"

# Compute capabilities in each official CUDA build of torch, as torch 2.13's own
# torch.cuda.PYTORCH_RELEASES_CODE_CC lists them. Used only when the torch under
# diagnosis cannot tell us its table (missing, broken, or older than that table).
LATEST_RELEASE_ARCHS = {
    "12.6": {"x86_64": [50, 60, 70, 75, 80, 86, 90], "aarch64": [80, 90]},
    "12.9": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 120]},
    "13.0": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 110, 120]},
    "13.2": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 110, 120]},
}


def pip(snap: Snapshot, *args: str) -> str:
    """``<target python> -m pip <args>``, each argument shell-quoted."""
    return " ".join(shlex.quote(a) for a in (snap.python_command(), "-m", "pip", *args))


def export(name: str, value: str) -> str:
    """``export NAME=value`` for a POSIX shell, the value quoted when it needs to be."""
    return f"export {name}={shlex.quote(value)}"


def python(snap: Snapshot, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in (snap.python_command(), *args))


def cuda_tag(cuda_version: str) -> str:
    """``"12.8"`` -> ``"cu128"`` (the PyTorch wheel index name)."""
    major, minor = (version_tuple(cuda_version) + (0, 0))[:2]
    return f"cu{major}{minor}"


def torch_variants(snap: Snapshot) -> dict[str, set[int]]:
    """CUDA version -> compute capabilities its official torch build contains (x86_64/aarch64)."""
    host = "aarch64" if (snap.environment.markers.get("platform_machine", "").lower() == "aarch64") else "x86_64"
    table = snap.torch.release_archs or LATEST_RELEASE_ARCHS
    return {cuda: set(by_host.get(host, [])) for cuda, by_host in table.items()}


def best_cuda_variant(snap: Snapshot, driver_cuda: str, capabilities: list[int]) -> Optional[str]:
    """The official CUDA variant to install: one the driver runs that has code for every GPU.

    The newest variant up to the driver's CUDA version is preferred. A newer minor
    version of the driver's major version still runs (CUDA minor-version
    compatibility), so the closest such one is the fallback. None when none fits.
    """
    limit = version_tuple(driver_cuda) if driver_cuda else (99, 99)
    ranked = []
    for cuda, archs in torch_variants(snap).items():
        version = version_tuple(cuda)
        if version[0] > limit[0]:
            continue
        if not all(any(compatible(cc, code) for code in archs) for cc in capabilities):
            continue
        ranked.append((version[:2] <= limit[:2], version, cuda))
    fitting = [r for r in ranked if r[0]]
    if fitting:
        return max(fitting)[2]
    return min(ranked)[2] if ranked else None


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
