"""oneflow install: is the oneflow here a working build, the one OneDiff needs, for the right CUDA?"""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks import _oneflow
from mpdoctor.checks._oneflow import FAMILY
from mpdoctor.findings import Finding, FixStep, error, warning
from mpdoctor.analysis.versions import version_tuple
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot


@check(
    "ONEFLOW001",
    "oneflow-placeholder",
    family=FAMILY,
    needs=("project",),
    fires_on=("oneflow-pypi-placeholder",),
    quiet_on=("oneflow-import-fails", "oneflow-pypi-cpu", "onediff-without-oneflow", "oneflow-cuda-mismatch"),
)
def placeholder(snap: Snapshot) -> Iterator[Finding]:
    """The `oneflow` installed is PyPI's placeholder, or another oneflow without its native core.

    ## Why it matters
    `pip install oneflow` gives 0.7.0 from PyPI: a pure-Python wheel whose
    `__init__.py` raises `RuntimeError: This package is a placeholder` (0.6.0
    fails on the missing `oneflow._oneflow_internal` instead). `find_spec`
    says oneflow is installed, and a RuntimeError is not an ImportError, so
    `except ImportError` fallbacks do not catch it: with onediff 1.2.0,
    `oneflow_compile(model)` fails with it.

    ## Fix
    Uninstall it, then install a real build from SiliconFlow's community index
    for torch's CUDA (community_cu118, cu121 or cu122), as OneDiff's README does.
    """
    oneflow = _oneflow.facts(snap)
    runtime = oneflow.runtime
    confirmed = runtime.status == "import-error" and "placeholder" in runtime.error_message
    if not (_oneflow.without_core(snap) or confirmed):
        return
    dists = _oneflow.oneflow_distributions(snap)
    build = oneflow.build
    if dists:
        by = f" (by {dists[0].installer})" if dists[0].installer else ""
        evidence = [f"installed: {_oneflow.describe_distributions(dists)}{by}"]
    else:
        evidence = ["no oneflow distribution metadata: a copied or leftover oneflow directory"]
    if build is not None:
        if build.wheel_tags:
            evidence.append(
                f"its wheel is {', '.join(build.wheel_tags)}"
                + (", pure Python: no compiled code" if build.purelib else "")
            )
        evidence.append(f"no _oneflow_internal extension in {build.directory}")
        if build.placeholder_message:
            evidence.append(f'oneflow/__init__.py: raise RuntimeError("{build.placeholder_message}")')
    if runtime.status.startswith("import-"):
        evidence.append(
            f"`import oneflow`, tried in a child process: {runtime.error_type or runtime.status}: "
            f"{runtime.error_message}".rstrip(": ")
        )
    onediff = _oneflow.onediff_distributions(snap)
    if onediff:
        evidence.append(
            f"{_oneflow.describe_distributions(onediff)} installed: OneDiff's oneflow backend "
            "(oneflow_compile) fails on this"
        )
    uses = _oneflow.project_uses(snap)
    evidence += [f"your code uses OneFlow: {_oneflow.where(use)}" for use in uses[:3]]
    if _oneflow.is_pypi_placeholder(snap):
        title = "`oneflow` here is PyPI's placeholder, not OneFlow: `import oneflow` cannot work"
    else:
        title = "The oneflow package has no native core (_oneflow_internal): `import oneflow` cannot work"
    make = error if onediff or uses else warning
    yield make(title, evidence, [_oneflow.uninstall_step(snap, dists, "Uninstall it"), *_oneflow.install_steps(snap)])


@check(
    "ONEFLOW002",
    "onediff-without-oneflow",
    family=FAMILY,
    superseded_by=("ONEFLOW001",),
    needs=("project",),
    fires_on=("onediff-without-oneflow", "oneflow-pypi-cpu"),
    quiet_on=("oneflow-pypi-placeholder", "oneflow-incident2"),
)
def onediff_without_oneflow(snap: Snapshot) -> Iterator[Finding]:
    """OneDiff is installed without OneFlow, or with a OneFlow older than it needs.

    ## Why it matters
    OneDiff's `oneflow_compile` (and `compile(..., backend="oneflow")`) needs a
    real OneFlow build: without one it fails with `No module named 'oneflow'`
    (onediff 1.2.0). OneDiff's quantization and ComfyUI nodes also refuse a
    OneFlow older than 0.9.1. (A OneFlow that is there but does not import is
    ONEFLOW006; PyPI's placeholder is ONEFLOW001.)

    ## Fix
    Install OneFlow from SiliconFlow's community index for torch's CUDA, or
    compile with OneDiff's nexfort backend, which does not need OneFlow.
    """
    onediff = _oneflow.onediff_distributions(snap)
    if not onediff:
        return
    works = _oneflow.works(snap)
    evidence = [f"installed: {_oneflow.describe_distributions(onediff)}"]
    uses = _oneflow.project_uses(snap)
    evidence += [f"your code uses OneFlow: {_oneflow.where(use)}" for use in uses[:3]]
    nexfort = snap.distribution("nexfort")
    alternative = (
        [
            FixStep(
                'Or compile with the nexfort backend instead: `compile(model, backend="nexfort")` from '
                "onediff.infer_compiler"
            )
        ]
        if nexfort
        else []
    )
    if not _oneflow.importable(snap, "oneflow"):
        if nexfort:
            evidence.append(f"nexfort {nexfort.version} is installed: OneDiff's nexfort backend still works")
        make = warning if nexfort and not uses else error
        yield make(
            "OneDiff is installed without OneFlow: `oneflow_compile` fails with `No module named 'oneflow'`",
            evidence,
            _oneflow.install_steps(snap) + alternative,
        )
        return
    version = _oneflow.version(snap)
    if works and version and version_tuple(version) < version_tuple(_oneflow.MIN_ONEFLOW_FOR_ONEDIFF):
        evidence.append(f"oneflow {version} imports")
        yield warning(
            f"oneflow {version} is older than {_oneflow.MIN_ONEFLOW_FOR_ONEDIFF}, which OneDiff's "
            "quantization and ComfyUI nodes require",
            evidence,
            _oneflow.install_steps(snap),
        )


@check(
    "ONEFLOW006",
    "oneflow-import-fails",
    family=FAMILY,
    superseded_by=("ONEFLOW001",),
    needs=("project",),
    fires_on=("oneflow-import-fails",),
    quiet_on=("torch-import-error", "oneflow-pypi-cpu", "oneflow-incident2"),
)
def import_fails(snap: Snapshot) -> Iterator[Finding]:
    """A OneFlow build with its native core does not import: it raises, crashes or hangs.

    ## Why it matters
    A real OneFlow wheel is built for one Python, one glibc and one CUDA; a
    missing system library, a wheel for another platform or a broken install
    makes `import oneflow` raise, or kill or hang the interpreter. mpdoctor
    imports it in a child process with a time limit to find out. OneDiff's
    oneflow backend and any `import oneflow` fail the same way.

    PyPI's oneflow 0.9.0 (a CUDA 11 wheel) loads cuDNN 8 and cuBLAS from NVIDIA's
    wheels and raises `ImportError: libcudnn_cnn_infer.so.8: cannot open shared
    object file` without them; with numpy 2 it raises `Unable to import Numpy
    array, try to upgrade Numpy version!` (it is built against numpy 1).

    ## Fix
    Install the library the error names (`nvidia-cudnn-cu11==8.9.*`,
    `nvidia-cublas-cu11`), or `numpy<2` for the numpy message; otherwise
    reinstall OneFlow from SiliconFlow's community index for torch's CUDA. (A
    oneflow without its native core, such as PyPI's placeholder, is ONEFLOW001.)
    """
    runtime = _oneflow.facts(snap).runtime
    if runtime.status not in ("import-error", "import-crashed", "import-timeout"):
        return
    how = {"import-crashed": "kills the interpreter", "import-timeout": "hangs"}.get(runtime.status, "raises")
    origin = _oneflow.facts(snap).packages.get("oneflow")
    evidence = [
        f"oneflow {_oneflow.version(snap) or '?'}" + (f" at {origin.origin}" if origin and origin.origin else ""),
        f"`import oneflow`, tried in a child process: {runtime.error_type + ': ' if runtime.error_type else ''}"
        f"{runtime.error_message or runtime.probe.detail}",
    ]
    onediff = _oneflow.onediff_distributions(snap)
    if onediff:
        evidence.append(f"{_oneflow.describe_distributions(onediff)} installed: its oneflow backend fails the same way")
    uses = _oneflow.project_uses(snap)
    evidence += [f"your code uses OneFlow: {_oneflow.where(use)}" for use in uses[:3]]
    make = error if onediff or uses else warning
    missing = _oneflow.missing_library(runtime.error_message)
    numpy = snap.distribution("numpy")
    if missing:
        what, package = missing
        title = f"`import oneflow` {how}: {what} is missing, which this OneFlow build loads from NVIDIA's wheels"
        steps = [_oneflow.install_library_step(snap, what, package)]
    elif _oneflow.NUMPY_TOO_NEW in runtime.error_message and numpy is not None:
        evidence.append(
            f"numpy {numpy.version} is installed: OneFlow {_oneflow.version(snap) or ''} is built for numpy 1"
        )
        title = f"`import oneflow` {how}: this OneFlow cannot use numpy {numpy.version}"
        steps = [_oneflow.numpy_step(snap)]
    else:
        title = f"`import oneflow` {how} ({runtime.error_type or runtime.status})"
        steps = []
    yield make(
        title,
        evidence,
        steps
        + [
            _oneflow.uninstall_step(
                snap,
                _oneflow.oneflow_distributions(snap),
                "Uninstall this build" if not steps else "If that is not enough, uninstall this build",
            ),
            *_oneflow.install_steps(snap),
        ],
    )


@check(
    "ONEFLOW003",
    "oneflow-cuda-mismatch",
    family=FAMILY,
    superseded_by=("ONEFLOW001", "ONEFLOW006"),
    fires_on=("oneflow-cuda-mismatch", "oneflow-driver-too-old"),
    quiet_on=("oneflow-incident2", "oneflow-import-fails", "apex-cuda11", "oneflow-pypi-cpu"),
)
def cuda_mismatch(snap: Snapshot) -> Iterator[Finding]:
    """oneflow is built for another CUDA than torch, or for one the driver cannot run.

    ## Why it matters
    OneFlow links its CUDA runtime statically: a build for CUDA 12.x needs a
    driver that supports CUDA 12, whatever torch uses. A build for another CUDA
    major than torch's loads a second CUDA stack into the process, and a CPU
    build leaves OneDiff's compiled modules off the GPU. OneDiff's README
    installs the build that matches torch's CUDA.

    ## Fix
    Reinstall OneFlow from the community index that matches torch's CUDA
    (community_cu118, cu121 or cu122). A oneflow that does not import at all is
    reported by ONEFLOW001 or ONEFLOW006 instead.
    """
    if not (_oneflow.importable(snap, "oneflow") or _oneflow.facts(snap).runtime.status == "imported"):
        return  # no oneflow here to judge (one that is there but fails: ONEFLOW001, ONEFLOW006)
    oneflow_cuda = _oneflow.cuda(snap)
    torch_cuda = snap.torch.cuda if snap.torch.status == "imported" else None
    nvml = snap.machine.nvml
    driver = nvml.cuda_driver_version if nvml.status == "ok" else ""
    if oneflow_cuda is None:
        return
    evidence = [
        f"oneflow {_oneflow.version(snap)}: "
        + ("a CPU build" if oneflow_cuda == "cpu" else f"built for CUDA {oneflow_cuda}")
    ]
    if torch_cuda:
        evidence.append(f"torch {snap.torch.version}: built for CUDA {torch_cuda}")
    steps = [
        _oneflow.uninstall_step(snap, _oneflow.oneflow_distributions(snap), "Uninstall this build"),
        *_oneflow.install_steps(snap),
    ]
    if oneflow_cuda == "cpu":
        if torch_cuda and (nvml.usable_gpus or snap.torch.devices):
            yield warning(
                "oneflow is a CPU build while torch uses CUDA: OneDiff's OneFlow-compiled modules "
                "cannot run on the GPU",
                evidence,
                steps,
            )
        return
    if driver and version_tuple(oneflow_cuda)[0] > version_tuple(driver)[0]:
        evidence.append(f"the NVIDIA driver {nvml.driver_version} supports CUDA up to {driver}")
        yield error(
            f"oneflow is built for CUDA {oneflow_cuda}, newer than this driver supports ({driver}): "
            "OneFlow cannot start CUDA",
            evidence,
            [FixStep("Upgrade the NVIDIA driver, or install the OneFlow build for the driver's CUDA")] + steps,
        )
    elif torch_cuda and version_tuple(oneflow_cuda)[0] != version_tuple(torch_cuda)[0]:
        yield warning(
            f"oneflow is built for CUDA {oneflow_cuda} and torch for CUDA {torch_cuda}: two CUDA majors in one process",
            evidence,
            steps,
        )
