"""The snapshot: every fact the checks judge, as plain versioned data.

Probes fill it, checks read it, and it round-trips through JSON, so a snapshot
saved on a user's machine (``--save-snapshot``) can be re-judged anywhere
(``--snapshot``). Recorded snapshots are also the test fixtures for hardware this
machine does not have.

Compatibility: ``SCHEMA_VERSION`` changes when a field is removed, renamed or
changes type. New fields may appear within a version; loaders ignore unknown keys
and give missing ones their defaults.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Optional

from mpdoctor import __version__
from mpdoctor.schema.contract import version_fact
from mpdoctor.schema.serde import DataError, fact, from_data
from mpdoctor.snapshot.apex import ApexInfo
from mpdoctor.snapshot.kernels import DeviceKernels, KernelResult, TimingLoad  # noqa: F401  (part of the API)
from mpdoctor.snapshot.oneflow import CoexistCase, MockTorch, OneflowBuild, PackageOrigin
from mpdoctor.snapshot.project import ProjectScan

# What a snapshot must pass before it is trusted (the bounded read, the version, the device numbers): its own
# module, which imports nothing of this package. SnapshotError, MAX_SNAPSHOT_BYTES, read_json_document: the API.
from mpdoctor.snapshot.reading import (  # noqa: F401
    MAX_SNAPSHOT_BYTES,
    SnapshotError,
    check_device_numbers,
    checked_version,
    read_json_document,
)
from mpdoctor.snapshot.vocab import (
    CoexistDevice,
    KernelMode,
    KernelStatus,
    NvmlStatus,
    OneflowRuntimeStatus,
    OneflowTorchStatus,
    ProbeStatus,
    TorchStatus,
)

SCHEMA_VERSION = 1


@dataclass
class ProbeRun:
    """How one probe (a child process or a guarded call) went."""

    status: ProbeStatus = fact("ok, error, crashed, timeout or not-run", "not-run")
    step: str = fact("The step that was running when the probe failed", "")
    detail: str = fact("What went wrong, in words", "")
    exit_code: Optional[int] = fact("Exit status of the child; negative is the signal that killed it", None)
    seconds: float = fact("Wall time the probe took", 0.0)
    stderr_tail: str = fact("The end of the child's stderr, redacted", "")


@dataclass
class PythonInfo:
    """The interpreter under diagnosis."""

    executable: str = fact("sys.executable of the target interpreter", "")
    version: str = fact("Python version, e.g. 3.11.7", "")
    implementation: str = fact("CPython, PyPy, ...", "")
    platform: str = fact("platform.platform()", "")
    machine: str = fact("platform.machine(), e.g. x86_64", "")
    prefix: str = fact("sys.prefix", "")
    base_prefix: str = fact("sys.base_prefix; differs from prefix in a venv", "")
    is_conda: bool = fact("True when prefix is a conda environment", False)
    path: list[str] = fact("sys.path as the target sees it", factory=list)
    externally_managed: bool = fact(
        "PEP 668: the stdlib directory holds EXTERNALLY-MANAGED and this is no venv, so pip refuses to change it",
        False,
    )


@dataclass
class Distribution:
    """One installed distribution, as importlib.metadata reports it."""

    name: str = fact("Project name as written in its metadata", "")
    version: str = fact("Installed version", "")
    location: str = fact("Directory the distribution is installed into", "")
    metadata_path: str = fact("Its .dist-info or .egg-info directory", "")
    summary: str = fact("One-line summary from the metadata", "")
    requires: list[str] = fact("Requires-Dist lines, as written", factory=list)
    installer: str = fact("Tool that installed it (pip, conda, uv, ...)", "")
    direct_url: str = fact("Contents of direct_url.json (git or local installs), redacted", "")
    site: str = fact(
        "Kind of sys.path directory it is in: environment (the target's own site-packages), base (the base "
        "interpreter's, seen from a --system-site-packages venv), user (the user site), distro (the OS package "
        "manager's, under /usr), pythonpath (a PYTHONPATH entry) or other; empty in older snapshots",
        "",
    )
    problems: list[str] = fact("What is broken in its metadata, if anything", factory=list)


@dataclass
class OneflowRuntime:
    """What importing oneflow for real showed, in a process of its own beside torch."""

    probe: ProbeRun = fact("How the oneflow probe went", factory=ProbeRun)
    status: OneflowRuntimeStatus = fact(
        "imported, import-error, import-crashed, import-timeout, or not-run (no oneflow found)", "not-run"
    )
    error_type: str = fact("Exception class `import oneflow` raised (RuntimeError for PyPI's placeholder)", "")
    error_message: str = fact("Its message, redacted", "")
    import_warnings: list[str] = fact("Warnings raised while importing oneflow", factory=list)
    torch_status: OneflowTorchStatus = fact(
        "How `import torch` went first in the same process: imported, import-error, "
        "import-crashed, import-timeout or not-tried",
        "not-tried",
    )
    torch_imported_as: str = fact("What that torch really was: torch, or oneflow under mock-torch", "")
    version: str = fact("oneflow.__version__", "")
    git_commit: str = fact("oneflow.__git_commit__", "")
    file: str = fact("oneflow.__file__", "")
    with_cuda: Optional[bool] = fact("oneflow.sysconfig.with_cuda(): a CUDA build", None)
    cuda_version: str = fact("oneflow.sysconfig.get_cuda_version(), as it returned it", "")
    with_enterprise: Optional[bool] = fact("oneflow.sysconfig.with_enterprise() (SiliconFlow builds)", None)
    cuda_available: Optional[bool] = fact("oneflow.cuda.is_available()", None)
    device_count: Optional[int] = fact("oneflow.cuda.device_count()", None)
    fact_errors: dict[str, str] = fact("Facts whose collection raised, with the error", factory=dict)
    coexist_device: CoexistDevice = fact("Where the coexistence probe ran: cuda or cpu", "")
    coexist: list[CoexistCase] = fact(
        "The coexistence probe: one fp16 OneFlow module under each precision manager", factory=list
    )
    coexist_error: str = fact("Why the coexistence probe did not finish, when it did not", "")


@dataclass
class OneflowInfo:
    """OneFlow, OneDiff and mock-torch in the environment: found on disk, then imported for real."""

    error: str = fact("Why the static look failed, when it did", "")
    packages: dict[str, PackageOrigin] = fact(
        "Where oneflow, onediff, onediffx, nexfort and onediff_quant would import from", factory=dict
    )
    build: Optional[OneflowBuild] = fact("The oneflow package on disk, when there is one", None)
    mock: MockTorch = fact("Whether oneflow's mock-torch answers `import torch`", factory=MockTorch)
    runtime: OneflowRuntime = fact("What importing oneflow showed", factory=OneflowRuntime)


@dataclass
class PythonEnvironment:
    """Facts from the stdlib-only probe run by the target interpreter."""

    probe: ProbeRun = fact("How the environment probe went", factory=ProbeRun)
    python: Optional[PythonInfo] = fact("The interpreter, when the probe reached it", None)
    markers: dict[str, str] = fact("PEP 508 marker values of the interpreter", factory=dict)
    env: dict[str, str] = fact("Relevant environment variables, secrets redacted", factory=dict)
    module_origins: dict[str, str] = fact(
        "Where selected top-level modules (pynvml, ...) would be imported from, found without "
        "importing them; empty text when not importable",
        factory=dict,
    )
    distributions: list[Distribution] = fact("Every installed distribution", factory=list)
    distributions_error: str = fact("Why the inventory failed, when it did", "")
    apex: ApexInfo = fact(
        "NVIDIA apex (or a namesake): where, which, whether it loads, who imports it", factory=ApexInfo
    )
    project: ProjectScan = fact(
        "The code in the working directory, read for apex, torch AMP and OneFlow use", factory=ProjectScan
    )
    oneflow: OneflowInfo = fact(
        "OneFlow/OneDiff: installed where, a working build or not, mock-torch, and how it "
        "behaves beside torch's autocast",
        factory=OneflowInfo,
    )


@dataclass
class CudaDevice:
    """One device as CUDA sees it, through torch.cuda.get_device_properties()."""

    ordinal: int = fact("CUDA ordinal: this is cuda:N", 0)
    name: str = fact("Device name", "")
    compute_capability: str = fact("e.g. 8.6", "")
    memory_total: Optional[int] = fact("Total memory in bytes", None)
    multiprocessor_count: Optional[int] = fact("Number of streaming multiprocessors", None)
    uuid: str = fact("UUID as torch reports it (no GPU- prefix; torch 2.5+), empty when unknown", "")
    pci_bus_id: str = fact("Normalised PCI bus id (torch 2.8+), e.g. 0000:3b:00.0; empty when unknown", "")
    is_integrated: Optional[bool] = fact("An integrated GPU sharing host memory (Jetson)", None)


@dataclass
class TorchInfo:
    """What happened when the target interpreter imported torch, and what torch said."""

    probe: ProbeRun = fact("How the torch probe went", factory=ProbeRun)
    status: TorchStatus = fact(
        "imported, missing, import-error, import-crashed, import-timeout, mocked (`import torch` "
        "gave another framework: oneflow's mock-torch) or unknown",
        "unknown",
    )
    imported_as: str = fact("What `import torch` really gave: torch, or e.g. oneflow under mock-torch", "")
    origin: str = fact("File torch would be imported from", "")
    error_type: str = fact("Exception class raised by `import torch`", "")
    error_message: str = fact("Its message, redacted", "")
    error_traceback: str = fact("Its traceback, redacted", "")
    import_warnings: list[str] = fact("Warnings raised while importing torch", factory=list)
    version: str = fact("torch.__version__", "")
    cuda: Optional[str] = fact("torch.version.cuda: CUDA runtime torch was built with (null: no CUDA)", None)
    hip: Optional[str] = fact("torch.version.hip (ROCm builds)", None)
    cudnn: Optional[int] = fact("torch.backends.cudnn.version()", None)
    nccl: str = fact("torch.cuda.nccl.version(): the NCCL torch loads, e.g. 2.21.5; empty without one (CPU build)", "")
    git_version: Optional[str] = fact("torch.version.git_version", None)
    arch_list: list[str] = fact("torch.cuda.get_arch_list(): GPU code the build contains", factory=list)
    release_archs: dict[str, dict[str, list[int]]] = fact(
        "torch.cuda.PYTORCH_RELEASES_CODE_CC: compute capabilities of each official CUDA build",
        factory=dict,
    )
    cuda_available: Optional[bool] = fact("torch.cuda.is_available()", None)
    device_count: Optional[int] = fact("torch.cuda.device_count()", None)
    runtime_device_count: Optional[int] = fact(
        "The CUDA runtime's own device count; torch.cuda.device_count() reads CUDA_VISIBLE_DEVICES "
        "itself before CUDA starts and can disagree",
        None,
    )
    devices: list[CudaDevice] = fact("Every device, in CUDA ordinal order", factory=list)
    cuda_warnings: list[str] = fact("Warnings raised during CUDA initialisation", factory=list)
    fact_errors: dict[str, str] = fact("Facts whose collection raised, with the error", factory=dict)


@dataclass
class MigDevice:
    """One MIG device (a slice of a GPU in MIG mode) as NVML sees it."""

    index: int = fact("Slot of the MIG device within its GPU", 0)
    name: str = fact("Name, e.g. NVIDIA H100 80GB HBM3 MIG 1g.10gb", "")
    uuid: str = fact("MIG-... UUID, what CUDA_VISIBLE_DEVICES takes", "")
    memory_total: Optional[int] = fact("Memory in bytes", None)


@dataclass
class GpuProcess:
    """A process NVML lists on a GPU."""

    pid: int = fact("Process id (in NVML's PID namespace: 0 or foreign inside some containers)", 0)
    name: str = fact("The process's command name, when this machine can see it", "")
    kind: str = fact("compute or graphics", "")
    memory_used: Optional[int] = fact("GPU memory it holds, in bytes; null when NVML does not say", None)
    ours: bool = fact("It is mpdoctor itself or one of its children (the kernel workers)", False)


@dataclass
class NvmlGpu:
    """One GPU as NVML (and nvidia-smi) sees it."""

    index: int = fact("NVML index (nvidia-smi order)", 0)
    name: str = fact("Marketing name", "")
    uuid: str = fact("GPU-... UUID", "")
    pci_bus_id: str = fact("Normalised PCI bus id, e.g. 0000:3b:00.0", "")
    memory_total: Optional[int] = fact("Total memory in bytes", None)
    compute_capability: str = fact("e.g. 8.6; empty when NVML could not tell", "")
    mig_enabled: Optional[bool] = fact("MIG mode is on; null when the GPU does not support MIG", None)
    mig_devices: list[MigDevice] = fact("Its MIG devices, when MIG mode is on", factory=list)
    error: str = fact("Why this GPU could not be read, e.g. NoPermission; empty when it could", "")
    utilization: Optional[int] = fact("GPU utilisation in percent over NVML's last sample period", None)
    processes: list[GpuProcess] = fact(
        "Compute and graphics processes on it; empty when none or not told", factory=list
    )
    sm_clock: Optional[int] = fact("Current SM clock, MHz", None)
    sm_clock_max: Optional[int] = fact("Maximum SM clock, MHz", None)
    throttle_reasons: list[str] = fact(
        "Active clock throttle reasons other than idle, e.g. sw_thermal_slowdown", factory=list
    )


@dataclass
class NvmlInfo:
    """The NVIDIA driver as NVML reports it, or why NVML could not be used."""

    status: NvmlStatus = fact("ok, unavailable, error, timeout or not-run", "not-run")
    reason: str = fact("NVML error name when not ok, e.g. LibraryNotFound, DriverNotLoaded", "")
    detail: str = fact("The error text", "")
    driver_version: str = fact("Driver version, e.g. 535.113.01", "")
    cuda_driver_version: str = fact("Newest CUDA version the driver supports, e.g. 12.2", "")
    nvml_version: str = fact("NVML library version", "")
    gpus: list[NvmlGpu] = fact("Every GPU, in NVML order", factory=list)
    seconds: float = fact("Wall time of the NVML probe", 0.0)

    @property
    def usable_gpus(self) -> list[NvmlGpu]:
        """The GPUs, when NVML answered; none otherwise."""
        return list(self.gpus) if self.status == "ok" else []


@dataclass
class KernelInfo:
    """Live precision microkernels on every device, or why they did not run."""

    status: KernelStatus = fact("ok, skipped (--no-kernels), not-run (no usable torch) or error", "not-run")
    mode: KernelMode = fact("quick or full: the problem sizes; empty when the kernels did not run", "")
    detail: str = fact("Why they did not run, or what went wrong", "")
    probe: ProbeRun = fact("How the kernel runner process went", factory=ProbeRun)
    cuda_available: Optional[bool] = fact("torch.cuda.is_available() as the runner saw it", None)
    devices: list[DeviceKernels] = fact("One entry per device: the CPU first, then cuda:0, cuda:1, ...", factory=list)


@dataclass
class Machine:
    """Facts mpdoctor gathers itself about the machine."""

    nvml: NvmlInfo = fact("NVML view of the driver and GPUs", factory=NvmlInfo)


@dataclass
class Invocation:
    """The options `mpdoctor check` was given when it took the snapshot, as given (defaults left out).

    Fix commands that run mpdoctor again rebuild the user's own command from it, so they
    check the same interpreter with the same selection.
    """

    python: str = fact("--python as given; empty when not given (mpdoctor's own interpreter)", "")
    project: str = fact("--project as given; empty when not given (the project the working directory is in)", "")
    timeout: Optional[float] = fact("--timeout as given; null when not given", None)
    kernels: str = fact("--kernels as given (quick or full); empty when not given", "")
    no_kernels: bool = fact("--no-kernels was given", False)
    select: list[str] = fact("--select codes, as given", factory=list)
    ignore: list[str] = fact("--ignore codes, as given", factory=list)


@dataclass
class Snapshot:
    """Everything mpdoctor knows about one environment at one moment."""

    schema_version: int = version_fact("Version of this data layout", SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that took the snapshot", __version__)
    created: str = fact("When the snapshot was taken (ISO 8601, UTC)", "")
    environment: PythonEnvironment = fact("The Python environment under diagnosis", factory=PythonEnvironment)
    torch: TorchInfo = fact("torch in that environment", factory=TorchInfo)
    machine: Machine = fact("The machine: driver and GPUs", factory=Machine)
    kernels: KernelInfo = fact("Live precision microkernels per device", factory=KernelInfo)
    invocation: Invocation = fact(
        "The `mpdoctor check` options that took it, for fix commands that run it again", factory=Invocation
    )

    def distribution(self, name: str) -> Optional[Distribution]:
        """The installed distribution called ``name`` (normalised), if any."""
        wanted = canonical_name(name)
        for dist in self.environment.distributions:
            if canonical_name(dist.name) == wanted:
                return dist
        return None

    def python_command(self) -> str:
        """How fix commands should invoke the target interpreter."""
        info = self.environment.python
        return info.executable if info and info.executable else "python"


def utc_timestamp() -> str:
    """Now, as the ISO 8601 UTC text used in snapshots and reports."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def canonical_name(name: str) -> str:
    """PEP 503 normalisation: Foo_Bar.baz and foo-bar-baz are the same project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def snapshot_from_data(data: object) -> Snapshot:
    """Validate and load snapshot data; raises SnapshotError with a user-facing message.

    A whole JSON report works too: its own schema_version is checked as the snapshot's is.
    """
    if not isinstance(data, dict):
        raise SnapshotError("not a snapshot: expected a JSON object")
    if "snapshot" in data and "findings" in data:  # a whole JSON report works too
        report, data = data, data["snapshot"]
        if not isinstance(data, dict):
            raise SnapshotError("not a snapshot: 'snapshot' is not an object")
        checked_version(report, "report", SCHEMA_VERSION)
    checked_version(data, "snapshot", SCHEMA_VERSION)
    try:
        snap = from_data(Snapshot, data)
    except DataError as exc:
        raise SnapshotError(f"corrupt snapshot: {exc}") from None
    check_device_numbers(snap)
    return snap


def load_snapshot(path: str) -> Snapshot:
    """Read a snapshot (or a JSON report) from ``path``: a regular file, read to a bound and parsed to a depth.

    st_size is not trusted (a device or FIFO has none worth the name): see ``mpdoctor.portable.files``.
    """
    data = read_json_document(path, f"cannot read snapshot {path}", f"corrupt snapshot {path}")
    return snapshot_from_data(data)
