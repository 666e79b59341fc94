"""What the fix simulator (tests/fix_simulator.py) models for installs that build or repair: apex built from
source, a OneFlow community build, torch reinstalled in place, a package upgraded past an import it dropped, and
oneflow's mock-torch turned off.

Pure, like the simulator: facts in, facts out. Each model sets only what the command decides and the snapshot
can say; what only a new probe could tell (whether `import oneflow` then works, which cuDNN a wheel brings) is
left unmeasured or refused with :class:`CannotSimulate` and the reason.
"""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import InvalidVersion, Version

from mpdoctor.analysis.versions import version_tuple
from mpdoctor.checks import _apex, _oneflow
from mpdoctor.checks.apex_usage import AMP_IMPORT_FIXED_IN, NORM_SWAP_FIXED_IN
from mpdoctor.snapshot import Distribution, OneflowRuntime, ProbeRun, Snapshot, TorchInfo, canonical_name
from mpdoctor.snapshot.apex import ApexDistribution, ApexExtension, ApexInfo, ApexLocation
from mpdoctor.snapshot.oneflow import OneflowBuild, PackageOrigin, TorchResolution
from simulated_cuda import CannotSimulate

APEX_SOURCES = re.compile(r"^git\+https://github\.com/NVIDIA/apex(\.git)?(@[\w./-]+)?$")
# NVIDIA apex built from its main branch: setup.py's name and version, and the subpackages it has had since
# apex.amp, apex.parallel and apex.fp16_utils were removed (May 2025; apex 25.07 and later).
APEX_VERSION = "0.1"
APEX_SUBPACKAGES = ("contrib", "fused_dense", "mlp", "multi_tensor_apply", "normalization", "optimizers")
# The libraries torch.utils.cpp_extension links an extension against (CppExtension; CUDAExtension adds the CUDA
# ones and the toolkit's libcudart).
TORCH_LIBRARIES = ["libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so"]
TORCH_CUDA_LIBRARIES = ["libc10_cuda.so", "libtorch_cuda.so"]
# Shared libraries only a CUDA build of torch links: a CPU build asking for one has another build's files in place.
CUDA_LIBRARY = re.compile(
    r"(lib(?:cudnn|cublas|cublasLt|cudart|cufft|curand|cusparse|cusolver|cusparseLt|nccl|"
    r"nvrtc|nvJitLink|nvToolsExt|cupti|cufile|c10_cuda|torch_cuda)[\w.]*\.so[\w.]*): "
    r"cannot open shared object file"
)
LATEST = "latest"  # the newest release on an index, which the snapshot cannot name


def site_packages(snap: Snapshot, *names: str) -> str:
    """Where pip installs for this interpreter: beside ``names`` when one is installed, else beside torch."""
    for name in (*names, "torch"):
        dist = snap.distribution(name)
        if dist and dist.location:
            return dist.location
    return next((d.location for d in snap.environment.distributions if d.location), "site-packages")


def _extension_suffix(snap: Snapshot) -> str:
    python = snap.environment.python
    parts = version_tuple(python.version) if python else ()
    machine = (python.machine if python else "") or snap.environment.markers.get("platform_machine", "")
    if len(parts) >= 2 and machine:
        return f".cpython-{parts[0]}{parts[1]}-{machine}-linux-gnu.so"
    return ".so"


# ---------------------------------------------------------------- apex from source


def build_apex(snap: Snapshot, source: str, build_env: dict[str, str]) -> None:
    """``APEX_CPP_EXT=1 APEX_CUDA_EXT=1 pip install --no-build-isolation git+https://github.com/NVIDIA/apex``.

    The build imports the installed torch (no build isolation) and compiles the extensions against it, so they
    load with it and link the CUDA runtime of torch's CUDA version. The step's own words name the toolkit it needs
    (nvcc of torch's CUDA on PATH); the snapshot records no toolkit, so that prerequisite is taken as met.
    """
    if not APEX_SOURCES.match(source):
        raise CannotSimulate(f"a build of {source}: what it installs is for its probe to say")
    torch = snap.torch
    if torch.status != "imported":
        raise CannotSimulate(f"building apex imports torch, which here is {torch.status}: the build stops")
    cpp, cuda = (build_env.get(name) == "1" for name in ("APEX_CPP_EXT", "APEX_CUDA_EXT"))
    if cuda and not torch.cuda:
        raise CannotSimulate("APEX_CUDA_EXT=1 with a torch that has no CUDA: apex's setup.py stops")
    apex = snap.environment.apex
    if apex.locations or apex.distributions or apex.conda_packages:
        raise CannotSimulate("another apex is still there: which one `import apex` then gets is for the probe to say")
    site, suffix = site_packages(snap), _extension_suffix(snap)
    built = (["apex_C"] if cpp else []) + (["amp_C", "fused_layer_norm_cuda"] if cuda else [])
    major = version_tuple(torch.cuda)[0] if torch.cuda else None
    cudart = ["libcudart.so.11.0" if major == 11 else f"libcudart.so.{major}"] if major else []

    def linked(name: str) -> list[str]:
        return TORCH_LIBRARIES + (TORCH_CUDA_LIBRARIES + cudart if name != "apex_C" else [])

    snap.environment.apex = ApexInfo(
        resolution="package",
        origin=f"{site}/apex/__init__.py",
        search_locations=[f"{site}/apex"],
        locations=[ApexLocation(path=f"{site}/apex", kind="package", entry=site, source="sys.path")],
        distributions=[
            ApexDistribution(
                name="apex", version=APEX_VERSION, location=site, top_level=["apex"] + [name + suffix for name in built]
            )
        ],
        subpackages=list(APEX_SUBPACKAGES),
        entries=["__init__.py"] + [f"{name}/" for name in APEX_SUBPACKAGES],
        extensions=[
            ApexExtension(name=name, origin=f"{site}/{name}{suffix}", needed=linked(name), load_status="ok")
            for name in built
        ],
        users_scanned=apex.users_scanned,
        users=apex.users,
        distributions_scanned=apex.distributions_scanned,
    )
    snap.environment.distributions.append(
        Distribution(
            name="apex",
            version=APEX_VERSION,
            location=site,
            metadata_path=f"{site}/apex-{APEX_VERSION}.dist-info",
            summary=_apex.NVIDIA_SUMMARY,
            installer="pip",
            direct_url=f'{{"url": "{source[4:]}"}}',
        )
    )


# ---------------------------------------------------------------- OneFlow's community builds


def install_oneflow(snap: Snapshot, index: str, before: Snapshot) -> None:
    """``pip install -U --pre oneflow -f .../community_cuXYZ``: a real OneFlow build for CUDA X.Y.

    Every wheel on a community page carries the page's ``+cuXYZ`` label and OneFlow's native core; which release
    is the newest there the snapshot cannot name (``latest``). What importing it shows is for the oneflow probe:
    the runtime facts are left unmeasured. Where a real build already failed to import here (``before`` the fix
    began), the cause may be the machine's (a missing libnccl), and whether a new build fares better is refused.
    """
    match = re.fullmatch(re.escape(_oneflow.COMMUNITY_INDEX).replace(r"\{tag\}", r"(cu\d+)"), index)
    if not match:
        raise CannotSimulate(f"a build from another index ({index}): what it installs is for its probe to say")
    tag = match[1]
    failed = before.environment.oneflow.runtime
    if (
        failed.status.startswith("import-")
        and before.environment.oneflow.build
        and before.environment.oneflow.build.native_core
    ):
        raise CannotSimulate(
            f"`import oneflow` of a real build failed here ({failed.error_type or failed.status}: "
            f"{failed.error_message[:80]}): whether a new build imports is for the probe to say"
        )
    if _oneflow.oneflow_distributions(snap) or _oneflow.facts(snap).build is not None:
        raise CannotSimulate(
            "-U replaces the oneflow here only if that index has a newer release: the snapshot does not list it"
        )
    site = site_packages(snap, "oneflow", "onediff", "onediffx")
    version = f"{LATEST}+{tag}"
    oneflow = _oneflow.facts(snap)
    oneflow.packages["oneflow"] = PackageOrigin(origin=f"{site}/oneflow/__init__.py")
    oneflow.build = OneflowBuild(
        directory=f"{site}/oneflow",
        version=version,
        native_core=f"{site}/oneflow/_oneflow_internal{_extension_suffix(snap)}",
        metadata_dir=f"oneflow-{version}.dist-info",
    )
    oneflow.runtime = OneflowRuntime()
    snap.environment.distributions.append(
        Distribution(
            name="oneflow",
            version=version,
            location=site,
            metadata_path=f"{site}/oneflow-{version}.dist-info",
            installer="pip",
        )
    )


# ---------------------------------------------------------------- torch reinstalled in place


def repair_torch_import(snap: Snapshot, version: str, cuda: Optional[str], no_deps: bool) -> None:
    """Whether reinstalling torch ``version`` (its own files, and its dependencies unless ``no_deps``) makes a
    failing `import torch` work; CannotSimulate unless the recorded error says the cause is in those files.

    Modelled: a CPU build (``+cpu``) that asks for a CUDA library has another build's files in place, and a
    forced reinstall writes this build's, which link none. Anything else (a library a dependency or
    LD_LIBRARY_PATH provides, an undefined symbol, a crash, a hang) has causes the snapshot does not record.
    """
    torch = snap.torch
    if torch.status in ("imported", "missing"):  # a fresh install, or a build replaced: nothing to cure
        return
    if torch.status != "import-error":
        raise CannotSimulate(
            f"`import torch` {torch.status.removeprefix('import-')}: whether a reinstall cures "
            "that is for the probe to say"
        )
    shadow = [name for name in ("LD_LIBRARY_PATH", "LD_PRELOAD") if snap.environment.env.get(name)]
    if shadow:
        raise CannotSimulate(f"{', '.join(shadow)} is set: the library it finds stays whatever pip installs")
    missing = CUDA_LIBRARY.search(torch.error_message)
    installed = snap.distribution("torch")
    if not (missing and cuda is None and installed and installed.version == version):
        raise CannotSimulate(
            f"`import torch` raises {torch.error_type}: whether reinstalling "
            f"torch {version}{' without its dependencies' if no_deps else ''} removes the cause is "
            "not recorded"
        )


def need_cudnn_pin(snap: Snapshot) -> None:
    """A CUDA build installed over a CUDA torch without cuDNN (TORCH008): which cuDNN it brings is torch's pinned
    requirement. (Over a CPU torch or none, the build's dependencies bring a cuDNN: fix_simulator records that it
    loads, not which version.)"""
    torch = snap.torch
    if torch.status == "imported" and torch.cuda and torch.cudnn is None:
        raise CannotSimulate(
            "which cuDNN a reinstall brings is torch's nvidia-cudnn pin, and the torch metadata "
            "here names none: torch.backends.cudnn.version() afterwards is for the probe to say"
        )


# ---------------------------------------------------------------- upgrades past an import


def upgrade_drops_imports(snap: Snapshot, name: str, version: str) -> None:
    """The apex imports a release of ``name`` at ``version`` still makes, by apex_usage's verified release table.

    From AMP_IMPORT_FIXED_IN on, apex.amp is imported only inside the functions that use it (lazily); from
    NORM_SWAP_FIXED_IN on, the fused-norm swap is gone. The scan's other imports are kept (with the new version):
    which of them the new release still makes only a new scan of its code can say, and keeping them can only
    leave a finding standing, never hide one.
    """
    apex = snap.environment.apex
    mine = [use for use in apex.users if canonical_name(use.distribution) == canonical_name(name)]
    if not mine:
        return
    tables = {
        key: table.get(canonical_name(name))
        for key, table in (("amp", AMP_IMPORT_FIXED_IN), ("norm", NORM_SWAP_FIXED_IN))
    }
    if not any(tables.values()):
        raise CannotSimulate(
            f"another release of {name} is other code: which apex imports it makes is for the "
            "scan of installed code to read again"
        )
    try:
        past = {key: fixed is not None and Version(version) >= Version(fixed) for key, fixed in tables.items()}
    except InvalidVersion:
        raise CannotSimulate(
            f"{name} {version}: not a version to compare with the releases that dropped its apex imports"
        ) from None
    for use in mine:
        use.version = version
        if past["amp"] and _apex.imports_amp(use):
            use.lazy = True
    apex.users = [use for use in apex.users if not (use in mine and past["norm"] and _apex.swaps_norm(use))]


# ---------------------------------------------------------------- oneflow's mock-torch


def disable_mock_torch(snap: Snapshot) -> None:
    """``eval $(python -m oneflow.mock_torch disable)``: what oneflow/mock_torch/__main__.py prints, applied.

    With PYTHONPATH set it prints ``export PYTHONPATH=<it without oneflow's mock_torch directory>; unset
    ONEFLOW_MOCK_TORCH_LAZY; unset ONEFLOW_MOCK_TORCH_VERBOSE``; without, nothing. `import torch` then reaches
    the installed PyTorch unless a .pth line, a hook or a sitecustomize still mocks it; how that torch imports is
    for the torch probe (its facts are left unmeasured).
    """
    oneflow = snap.environment.oneflow
    if oneflow.build is None or not oneflow.build.directory or not oneflow.build.has_mock_torch:
        raise CannotSimulate(
            "no oneflow with mock_torch is recorded: what `python -m oneflow.mock_torch` does here "
            "is for the probe to say"
        )
    env = snap.environment.env
    if "PYTHONPATH" not in env:
        return
    mock_dir = f"{oneflow.build.directory}/mock_torch"
    env["PYTHONPATH"] = ":".join(p for p in env["PYTHONPATH"].rstrip(":").split(":") if p != mock_dir)
    env.pop("ONEFLOW_MOCK_TORCH_LAZY", None)
    env.pop("ONEFLOW_MOCK_TORCH_VERBOSE", None)
    mock = oneflow.mock
    if any(line.line.rstrip("/") == mock_dir for line in mock.pth_lines):
        return  # a .pth line keeps the directory on the path: still mocked
    mock.path_entries = [entry for entry in mock.path_entries if entry.rstrip("/") != mock_dir]
    if mock.torch.kind != "oneflow-mock-torch" or mock.path_entries or mock.hooks or mock.customize:
        return  # another way still answers `import torch` with OneFlow: the finding stays, as it would
    real = snap.distribution("torch")
    origin = f"{real.location}/torch/__init__.py" if real and real.location else ""
    mock.torch = TorchResolution(kind="torch" if origin else "missing", origin=origin)
    if snap.torch.status == "mocked":
        snap.torch = TorchInfo(
            status="unknown",
            origin=origin,
            probe=ProbeRun(
                status="not-run", detail="mock-torch turned off: the torch it now reaches is not probed yet"
            ),
        )
