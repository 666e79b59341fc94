"""pynvml package: which NVML bindings `import pynvml` really gets."""

from __future__ import annotations

from typing import Iterator

from packaging.version import InvalidVersion, Version

from mpdoctor.checks import _sites, fixes
from mpdoctor.findings import Finding, FixStep, info, warning
from mpdoctor.checks.registry import check
from mpdoctor.checks._common import requirers
from mpdoctor.snapshot import Snapshot

FAMILY = "gpu"


@check(
    "GPU009",
    "deprecated-pynvml-package",
    family=FAMILY,
    fires_on=("pynvml-legacy-shadows", "pynvml-deprecated-shim"),
    quiet_on=("h100-node-healthy", "cpu-laptop"),
)
def deprecated_pynvml(snap: Snapshot) -> Iterator[Finding]:
    """The `pynvml` package from PyPI is installed instead of (or beside) `nvidia-ml-py`.

    ## Why it matters
    NVIDIA's NVML bindings are the `nvidia-ml-py` distribution, which provides
    the `pynvml` module that torch (`torch.cuda.memory_usage`, `utilization`)
    and mpdoctor use. The PyPI project `pynvml` is deprecated: up to 11.5 it
    ships its own, older `pynvml/` package, which shadows nvidia-ml-py's
    `pynvml.py` when both are installed; from 12.0 it is an empty shim that
    depends on nvidia-ml-py, and 13.x warns "The pynvml package is deprecated"
    on import.

    ## Fix
    `pip uninstall pynvml` and keep `nvidia-ml-py`; if a package requires
    `pynvml`, upgrade it to a release that requires `nvidia-ml-py`.
    """
    dist = snap.distribution("pynvml")
    if dist is None:
        return
    try:
        legacy = Version(dist.version) < Version("12")
    except InvalidVersion:
        legacy = False
    origin = snap.environment.module_origins.get("pynvml", "")
    evidence = [f"pynvml {dist.version} installed in {dist.location}"]
    if origin:
        evidence.append(f"`import pynvml` loads {origin}")
    ml = snap.distribution("nvidia-ml-py")
    evidence.append(f"nvidia-ml-py {ml.version} installed" if ml else "nvidia-ml-py is not installed")
    pullers = [f"{dist.name} {dist.version} requires {req}" for dist, req in requirers(snap, "pynvml")]
    evidence += pullers
    owner = _sites.manager(snap, dist)
    steps = [
        FixStep("Remove the deprecated package", fixes.pip(snap, "uninstall", "-y", "pynvml"))
        if owner == "pip"
        else FixStep(f"Remove the deprecated package with {owner}'s package manager, which installed it (pip must not)")
    ]
    if ml is None:
        steps.append(
            FixStep(
                "Install NVIDIA's bindings, which provide `import pynvml`", fixes.pip(snap, "install", "nvidia-ml-py")
            )
        )
    if pullers:
        steps.append(
            FixStep(
                "These packages will pull pynvml back in; upgrade them to releases that use "
                "nvidia-ml-py: " + ", ".join(dist.name for dist, _ in requirers(snap, "pynvml"))
            )
        )
    if legacy:
        shadowed = origin.endswith(("pynvml/__init__.py", "pynvml\\__init__.py"))
        what = (
            "shadows nvidia-ml-py: `import pynvml` gets these old bindings"
            if shadowed and ml
            else "ships its own, outdated NVML bindings"
        )
        yield warning(f"pynvml {dist.version} {what}", evidence, steps)
    else:
        yield info(f"pynvml {dist.version} is a deprecated shim for nvidia-ml-py", evidence, steps)
