"""Helpers for the apex family: which apex this is, what it can do, and the fixes."""

from __future__ import annotations

import re
import shlex
from typing import Optional

from mpdoctor.checks import fixes
from mpdoctor.findings import FixStep
from mpdoctor.snapshot import Distribution, Snapshot
from mpdoctor.snapshot.apex import ApexExtension, ApexImport, ApexInfo, ApexLocation

FAMILY = "apex"
REPO = "https://github.com/NVIDIA/apex"
# Every full build has these three; a Python-only build has none of them.
CORE_EXTENSIONS = ("apex_C", "amp_C", "fused_layer_norm_cuda")
NVIDIA_SUBPACKAGES = {
    "optimizers",
    "normalization",
    "amp",
    "parallel",
    "fp16_utils",
    "contrib",
    "transformer",
    "multi_tensor_apply",
    "mlp",
    "fused_dense",
    "RNN",
    "reparameterization",
}
NVIDIA_SUMMARY = "PyTorch Extensions written by NVIDIA"
PYRAMID_NAMES = ("pyramid", "velruse", "cryptacular", "wtforms")
NORM_CLASSES = re.compile(r"Fused(RMS|Layer)Norm|MixedFused")
UNDEFINED_SYMBOL = re.compile(r"undefined symbol: (\S+)")
MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")
CUDART = re.compile(r"^libcudart\.so\.(\d+)")


def facts(snap: Snapshot) -> ApexInfo:
    return snap.environment.apex


def importable(snap: Snapshot) -> bool:
    """`import apex` finds something (it may still fail to run)."""
    return facts(snap).resolution in ("package", "module", "namespace")


def is_pypi_namesake(dist: Distribution) -> bool:
    """The "apex" distribution from PyPI: a Pyramid web toolkit, by its summary or requirements."""
    text = " ".join([dist.summary] + dist.requires).lower()
    return dist.name.lower() == "apex" and any(name in text for name in PYRAMID_NAMES)


def _is_pyramid(snap: Snapshot) -> bool:
    if any(is_pypi_namesake(dist) for dist in snap.environment.distributions):
        return True
    return any(name.split(".")[0].startswith(PYRAMID_NAMES) for name in facts(snap).init_imports or [])


def flavour(snap: Snapshot) -> str:
    """Which apex `import apex` gets.

    nvidia (NVIDIA's), pypi (the unrelated Pyramid toolkit that `pip install apex`
    gives), checkout (a bare apex/ source tree that Python imports as a namespace),
    stray (another bare apex/ directory), other, or empty when there is none.
    """
    apex = facts(snap)
    if not importable(snap):
        return ""
    if _is_pyramid(snap):
        return "pypi"
    if apex.resolution == "namespace":
        return bare_directory_kind(apex)
    dist = snap.distribution("apex")
    if (
        NVIDIA_SUBPACKAGES & set(apex.subpackages)
        or snap.distribution("nvidia-apex")
        or (dist is not None and dist.summary.startswith(NVIDIA_SUMMARY))
    ):
        return "nvidia"
    return "other"


def bare_directory_kind(apex: ApexInfo) -> str:
    """A git clone of NVIDIA/apex has setup.py beside the real apex/ package; anything else is a stray."""
    return "checkout" if {"setup.py", "apex/"} <= set(apex.entries) else "stray"


def describe(snap: Snapshot) -> str:
    """One line saying which apex is installed, for evidence."""
    apex = facts(snap)
    dist = snap.distribution("apex") or snap.distribution("nvidia-apex")
    where = apex.origin or (apex.search_locations[0] if apex.search_locations else "")
    version = f" {dist.version}" if dist else ""
    return f"`import apex` loads {where or '?'} ({dist.name if dist else 'no distribution'}{version})"


def extensions(snap: Snapshot) -> list[ApexExtension]:
    return facts(snap).extensions


def missing_core(snap: Snapshot) -> list[str]:
    present = {ext.name for ext in extensions(snap)}
    return [name for name in CORE_EXTENSIONS if name not in present]


def has_normalization(snap: Snapshot) -> bool:
    """`from apex.normalization import FusedRMSNorm` would succeed: NVIDIA apex with that subpackage."""
    return flavour(snap) == "nvidia" and "normalization" in facts(snap).subpackages


def has_amp(snap: Snapshot) -> bool:
    return flavour(snap) == "nvidia" and "amp" in facts(snap).subpackages


def imports_amp(use: ApexImport) -> bool:
    return (
        use.module == "apex.amp" or use.module.startswith("apex.amp.") or (use.module == "apex" and "amp" in use.names)
    )


def swaps_norm(use: ApexImport) -> bool:
    """A guarded `from apex.normalization import FusedRMSNorm`: the library switches when apex imports."""
    return use.module.startswith("apex.normalization") and any(NORM_CLASSES.search(n) for n in use.names)


def cuda_major(ext: ApexExtension) -> Optional[int]:
    """The CUDA runtime major version an extension links (libcudart.so.12 -> 12)."""
    for lib in ext.needed or []:
        match = CUDART.match(lib)
        if match:
            return int(match.group(1))
    return None


def torch_cuda_major(snap: Snapshot) -> Optional[int]:
    return fixes.version_tuple(snap.torch.cuda)[0] if snap.torch.cuda else None


def cuda_mismatch(snap: Snapshot, ext: ApexExtension) -> bool:
    """The extension links a CUDA runtime whose major version is not torch's (or torch has no CUDA)."""
    major = cuda_major(ext)
    return snap.torch.status == "imported" and major is not None and major != torch_cuda_major(snap)


def where(use: ApexImport) -> str:
    owner = f"{use.distribution} {use.version}: " if use.distribution else ""
    return f"{owner}{use.file}:{use.line} `{use.text}`"


# ---------------------------------------------------------------- fixes


def uninstall_steps(snap: Snapshot, why: str = "Remove it") -> list[FixStep]:
    """Everything that takes apex away: pip (repeated for stacked installs), conda, stray copies."""
    names = [d.name for d in snap.environment.distributions if d.name.lower() in ("apex", "nvidia-apex")]
    steps = []
    if names:
        steps.append(
            FixStep(
                f"{why} (repeat until pip says it is not installed: old setup.py installs stack up)",
                fixes.pip(snap, "uninstall", "-y", *sorted(set(names))),
                role=fixes.role_of(why),
            )
        )
    remove = fixes.conda(snap, "remove", "-y", "nvidia-apex")
    if facts(snap).conda_packages:
        steps.append(
            FixStep("Remove conda's package too", remove)
            if remove
            else FixStep("Remove conda's package too, with conda remove -p <this env's prefix> nvidia-apex")
        )
    steps += stray_steps(snap)
    return steps or [FixStep(why, fixes.pip(snap, "uninstall", "-y", "apex"), role=fixes.role_of(why))]


def stray_steps(snap: Snapshot) -> list[FixStep]:
    """Move away apex copies no installer owns, and name the .pth lines that add apex to the path."""
    steps = [
        FixStep(
            f"Move away the apex that no installer owns: {location.path}",
            f"mv {shlex.quote(location.path)} {shlex.quote(location.path + '.disabled')}",
        )
        for location in strays(snap)
    ]
    steps += [FixStep(f"Delete the line `{line.line}` from {line.file}") for line in facts(snap).pth_lines]
    return steps


def strays(snap: Snapshot) -> list[ApexLocation]:
    """apex directories and modules on the path that no installed distribution owns.

    An entry that a .pth file adds (an editable install) counts as owned.
    """
    apex = facts(snap)
    owned = {
        d.location.rstrip("/") for d in apex.distributions if any(top.split(".")[0] == "apex" for top in d.top_level)
    }
    owned |= {line.line.rstrip("/") for line in apex.pth_lines}
    return [loc for loc in apex.locations if loc.entry.rstrip("/") not in owned]


def script_view(snap: Snapshot) -> Optional[ApexLocation]:
    """What `import apex` gets in a script run from the working directory (its directory comes first)."""
    ordered = sorted(facts(snap).locations, key=lambda loc: loc.source != "cwd")
    real = [loc for loc in ordered if loc.kind != "namespace"]
    return real[0] if real else (ordered[0] if ordered else None)


def build_steps(snap: Snapshot) -> list[FixStep]:
    """Build NVIDIA apex with its compiled extensions, against the installed torch."""
    cuda = snap.torch.cuda
    if snap.torch.status != "imported":
        toolkit = "a working CUDA build of torch first, and the CUDA toolkit it was built with"
    elif cuda:
        toolkit = f"the CUDA {cuda} toolkit (nvcc {cuda}, the CUDA torch was built with)"
    else:
        toolkit = "a CUDA build of torch (this one has none) and the CUDA toolkit it was built with"
    # pip clones the source into a temporary directory and builds there: a clone left in the working directory would
    # be imported instead of the installed apex by scripts run there (APEX009), and one command is what the fix
    # simulator can apply (APEX_* are read by apex's setup.py, in the build that pip starts).
    return [
        FixStep(
            f"Build it from source against this torch; this needs {toolkit} on PATH",
            "APEX_CPP_EXT=1 APEX_CUDA_EXT=1 " + fixes.pip(snap, "install", "-v", "--no-build-isolation", f"git+{REPO}"),
        ),
    ]


def rebuild_steps(snap: Snapshot, why: str) -> list[FixStep]:
    """Uninstall the build that is there, then build apex against the installed torch."""
    return [FixStep(why, fixes.pip(snap, "uninstall", "-y", "apex"), role=fixes.role_of(why))] + build_steps(snap)


def torch_amp_step(lead: str = "Or use") -> FixStep:
    return FixStep(
        f"{lead} torch's own mixed precision, which replaces apex.amp: torch.autocast and "
        "torch.amp.GradScaler (https://pytorch.org/docs/stable/amp.html)",
        role=fixes.role_of(lead),
    )
