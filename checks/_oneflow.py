"""Helpers for the oneflow family: which oneflow this is, whether it works, and the fixes."""

from __future__ import annotations

import re
from typing import Optional

from mpdoctor.checks import fixes
from mpdoctor.findings import FixStep
from mpdoctor.analysis.versions import version_tuple
from mpdoctor.snapshot import Distribution, OneflowInfo, Snapshot, canonical_name

FAMILY = "oneflow"
# The two oneflow releases on PyPI; neither has OneFlow's native core (0.7.0
# raises "This package is a placeholder", 0.6.0 lacks oneflow._oneflow_internal).
PYPI_PLACEHOLDERS = ("0.6.0", "0.7.0")
# SiliconFlow's community builds, the ones OneDiff's README installs.
COMMUNITY_CUDA = ("11.8", "12.1", "12.2")
COMMUNITY_INDEX = "https://github.com/siliconflow/oneflow_releases/releases/expanded_assets/community_{tag}"
ONEDIFF_PACKAGES = ("onediff", "onediffx")
CUDA_LABEL = re.compile(r"\+cu(\d+)(\d)\b")  # 0.9.1.dev20240802+cu118 -> 11.8
MIN_ONEFLOW_FOR_ONEDIFF = "0.9.1"  # onediff's quantization and ComfyUI nodes refuse older
# What a OneFlow build says when the dynamic loader cannot find a CUDA library it links:
# "ImportError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory"
MISSING_LIBRARY = re.compile(
    r"\b(lib(cudnn|cublas|cublasLt|nvrtc)[\w]*\.so\.(\d+))[^:]*: cannot open shared object file"
)
NVIDIA_WHEELS = {
    "cudnn": "nvidia-cudnn",
    "cublas": "nvidia-cublas",
    "cublasLt": "nvidia-cublas",
    "nvrtc": "nvidia-cuda-nvrtc",
}
# OneFlow 0.9.0, built against numpy 1, imported beside numpy 2 (its exception, from InitNumpyCAPI)
NUMPY_TOO_NEW = "Unable to import Numpy array"


def facts(snap: Snapshot) -> OneflowInfo:
    return snap.environment.oneflow


def oneflow_distributions(snap: Snapshot) -> list[Distribution]:
    """oneflow itself and the old per-CUDA names (oneflow-cu102, oneflow-cpu, ...)."""
    return [d for d in snap.environment.distributions if canonical_name(d.name).startswith("oneflow")]


def onediff_distributions(snap: Snapshot) -> list[Distribution]:
    return [d for d in (snap.distribution(name) for name in ONEDIFF_PACKAGES) if d is not None]


def describe_distributions(dists: list[Distribution]) -> str:
    return ", ".join(f"{d.name} {d.version}" for d in dists)


def importable(snap: Snapshot, name: str) -> bool:
    origin = facts(snap).packages.get(name)
    return bool(origin and origin.origin)


def without_core(snap: Snapshot) -> bool:
    """A oneflow package is there, but not its native core: `import oneflow` cannot work."""
    build = facts(snap).build
    return build is not None and not build.error and not build.native_core


def is_pypi_placeholder(snap: Snapshot) -> bool:
    build = facts(snap).build
    if build is None:
        return False
    dist = snap.distribution("oneflow")
    return bool(build.placeholder_message) or (
        without_core(snap) and (build.purelib or (dist is not None and dist.version in PYPI_PLACEHOLDERS))
    )


def works(snap: Snapshot) -> Optional[bool]:
    """Does `import oneflow` work? True/False when measured or certain, None when unknown."""
    runtime = facts(snap).runtime
    if runtime.status == "imported":
        return True
    if runtime.status in ("import-error", "import-crashed", "import-timeout"):
        return False
    if not importable(snap, "oneflow") or without_core(snap):
        return False
    return None


def version(snap: Snapshot) -> str:
    """oneflow's version: as imported, else from its files, else its metadata."""
    dist = snap.distribution("oneflow")
    build = facts(snap).build
    return facts(snap).runtime.version or (build.version if build else "") or (dist.version if dist else "")


def cuda(snap: Snapshot) -> Optional[str]:
    """The CUDA version oneflow was built for ("11.8"), "cpu", or None when unknown."""
    runtime = facts(snap).runtime
    if runtime.with_cuda is False:
        return "cpu"
    reported = _cuda_from_number(runtime.cuda_version)
    if reported:
        return reported
    text = version(snap)
    match = CUDA_LABEL.search(text)
    if match:
        return f"{int(match.group(1))}.{match.group(2)}"
    return "cpu" if text.endswith("+cpu") else None


def _cuda_from_number(text: str) -> Optional[str]:
    """get_cuda_version() as 11080, "11080" or "11.8" -> "11.8"."""
    text = text.strip()
    if re.fullmatch(r"\d{4,5}", text):
        number = int(text)
        return f"{number // 1000}.{number % 1000 // 10}"
    if re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
        return ".".join(text.split(".")[:2])
    return None


def community_cuda(torch_cuda: Optional[str]) -> Optional[str]:
    """The community build for torch's CUDA: the same version, else the newest of that major."""
    if not torch_cuda:
        return None
    wanted = version_tuple(torch_cuda)[:2]
    same_major = [c for c in COMMUNITY_CUDA if version_tuple(c)[0] == wanted[0]]
    exact = [c for c in same_major if version_tuple(c)[:2] == wanted]
    return exact[0] if exact else (same_major[-1] if same_major else None)


def install_steps(snap: Snapshot) -> list[FixStep]:
    """Install a real OneFlow build from SiliconFlow's community index, for torch's CUDA."""
    torch_cuda = snap.torch.cuda if snap.torch.status == "imported" else None
    build = community_cuda(torch_cuda)
    if build is None:
        why = f"torch here is built for CUDA {torch_cuda}" if torch_cuda else "torch here has no CUDA build"
        return [
            FixStep(
                f"OneFlow's community builds exist for CUDA {', '.join(COMMUNITY_CUDA)} only, and {why}: "
                "install a torch for one of those first, or use OneDiff's nexfort backend, which needs no "
                "OneFlow (https://github.com/siliconflow/onediff#installation)"
            )
        ]
    note = "" if version_tuple(build)[:2] == version_tuple(torch_cuda)[:2] else f", the closest to torch's {torch_cuda}"
    index = COMMUNITY_INDEX.format(tag=fixes.cuda_tag(build))
    return [
        FixStep(
            f"Install the OneFlow build for CUDA {build}{note} from SiliconFlow's community index, as "
            "OneDiff's README does",
            fixes.pip(snap, "install", "-U", "--pre", "oneflow", "-f", index),
        )
    ]


def missing_library(message: str) -> Optional[tuple[str, str]]:
    """(library, pip requirement) when ``message`` is the loader not finding a CUDA library NVIDIA ships as a wheel.

    The CUDA major of the wheel follows the library: cuDNN 8 and cuBLAS 11 are the
    -cu11 wheels PyPI's OneFlow 0.9.0 (a CUDA 11 build) loads.
    """
    match = MISSING_LIBRARY.search(message or "")
    if not match:
        return None
    library, kind, so_major = match.group(1), match.group(2), match.group(3)
    package = NVIDIA_WHEELS[kind]
    if kind == "cudnn":
        return library, f"{package}-cu11=={so_major}.*" if so_major == "8" else f"{package}-cu12=={so_major}.*"
    return library, f"{package}-cu{so_major if so_major in ('11', '12') else '11'}"


def install_library_step(snap: Snapshot, library: str, requirement: str) -> FixStep:
    return FixStep(
        f"Install NVIDIA's wheel that ships {library} into this environment (OneFlow finds it beside itself)",
        fixes.pip(snap, "install", requirement, *(["nvidia-cublas-cu11"] if "cudnn-cu11" in requirement else [])),
    )


def numpy_step(snap: Snapshot) -> FixStep:
    return FixStep("Install numpy 1, which this OneFlow is built against", fixes.pip(snap, "install", "numpy<2"))


def uninstall_step(snap: Snapshot, dists: list[Distribution], why: str) -> FixStep:
    names = [d.name for d in dists] or ["oneflow"]
    return FixStep(why, fixes.pip(snap, "uninstall", "-y", *names))


def project_uses(snap: Snapshot) -> list:
    """OneFlow uses in your code: the project scan's, under its root (``ProjectScan.under_root``)."""
    scan = snap.environment.project
    return scan.under_root(scan.oneflow_uses)


def where(use) -> str:
    return f"{use.file}:{use.line}: {use.text or use.what}"
