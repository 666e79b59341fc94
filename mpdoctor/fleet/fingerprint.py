"""A rank's fingerprint: the few facts of its snapshot that must agree across a job's ranks.

Sent through the store by every rank, so it stays small: package versions, the torch
build, the driver, the rank's own GPU, the environment variables that change
numerics or communication, and (from one rank per node) the measured kernel times.
"""

from __future__ import annotations

from dataclasses import replace

from mpdoctor.fleet.devices import select_device
from mpdoctor.fleet.model import Fingerprint, RankReport
from mpdoctor.findings import Finding
from mpdoctor.portable.redact import redact_env_value
from mpdoctor.snapshot import Snapshot, canonical_name
from mpdoctor.probes.remote.kernel_measure import kernel_key

# Variables that change numerics (TF32, cuBLAS workspaces, deterministic algorithms) or communication (NCCL).
ENV_PREFIXES = (
    "NCCL_",
    "TORCH_",
    "PYTORCH_",
    "CUDA_",
    "CUBLAS",
    "CUDNN_",
    "NVIDIA_",
    "TORCHINDUCTOR_",
    "XLA_",
    "OMP_",
    "MKL_",
    "KMP_",
    "HIP_",
    "ROCR_",
    "HSA_",
)
# Which shared libraries load (a system NCCL before torch's own: NVIDIA/nccl#1381).
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD")
# Set per rank by design: a difference there is the launcher doing its job, not a drift.
PER_RANK_ENV = (
    "TORCHELASTIC_",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
    "TORCH_NCCL_TRACE_BUFFER",
)


def env_that_matters(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that ranks should agree on, each redacted by its name.

    The probe redacts what it takes, but ``fleet compare`` also reads snapshots made elsewhere, and a finding's
    title quotes the value without its name (redaction by name could no longer see it there).
    """
    return {
        name: redact_env_value(name, value)
        for name, value in sorted(env.items())
        if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES) and not name.startswith(PER_RANK_ENV)
    }


def fingerprint(snap: Snapshot, local_rank: int) -> Fingerprint:
    """The comparable facts of ``snap``, the snapshot of a rank whose LOCAL_RANK is ``local_rank``."""
    return measured(unmeasured(snap, local_rank), snap)


def unmeasured(snap: Snapshot, local_rank: int) -> Fingerprint:
    """The fingerprint but what the microkernels measured: ranks of one group share it (``fleet compare``)."""
    env = snap.environment
    torch = snap.torch
    nvml = snap.machine.nvml
    print_ = Fingerprint(
        python=env.python.version if env.python else "",
        executable=env.python.executable if env.python else "",
        packages=importable_versions(env.distributions),
        torch=torch.version if torch.status == "imported" else f"({torch.status})",
        torch_cuda=torch.cuda or "",
        cudnn=str(torch.cudnn) if torch.cudnn is not None else "",
        **_nccl(snap),
        driver=nvml.driver_version if nvml.status == "ok" else "",
        cuda_driver=nvml.cuda_driver_version if nvml.status == "ok" else "",
        env=env_that_matters(env.env),
    )
    # The job's convention: torch.cuda.set_device(LOCAL_RANK) over the devices CUDA_VISIBLE_DEVICES leaves.
    chosen = select_device(snap, local_rank)
    if chosen.device:
        print_.device, print_.gpu, print_.compute_capability = chosen.device, chosen.name, chosen.compute_capability
        print_.device_uuid, print_.device_problem = chosen.uuid, chosen.problem
    return print_


def importable_versions(distributions) -> dict[str, str]:
    """Each distribution's version as it imports: the first on sys.path, as ``importlib.metadata.version()`` and
    ``import`` resolve it. The inventory lists every copy in sys.path order, so a PYTHONPATH copy that shadows the
    venv's comes first: keeping the last would compare the shadowed copy, and a rank that imports another
    transformers would agree with the others."""
    found: dict[str, str] = {}
    for dist in distributions:
        if dist.name:
            found.setdefault(canonical_name(dist.name), dist.version)
    return found


def measured(print_: Fingerprint, snap: Snapshot) -> Fingerprint:
    """``print_`` (unchanged) with what ``snap``'s microkernels measured: times, and bf16 on its own device."""
    kernels, devices, bf16 = {}, {}, {}
    own_bf16 = print_.bf16_native
    for run in snap.kernels.devices:
        if print_.device and run.device == print_.device:
            own_bf16 = run.bf16_native
        if snap.kernels.status != "ok":
            continue
        times = {kernel_key(r.op, r.dtype, r.backend): r.seconds for r in run.results if r.status == "ok" and r.seconds}
        if times:
            kernels[run.device], devices[run.device] = times, run.name
        if run.bf16_native is not None:
            bf16[run.device] = run.bf16_native
    return replace(print_, bf16_native=own_bf16, kernels=kernels, kernel_devices=devices, kernel_bf16=bf16)


NCCL_WHEELS = "nvidia-nccl"  # nvidia-nccl-cu11, -cu12, -cu13: what pip installed beside a CUDA torch


def _nccl(snap: Snapshot) -> dict[str, str]:
    """NCCL as this rank's torch loads it; the nvidia-nccl wheel's version when torch said none (older snapshot)."""
    if getattr(snap.torch, "nccl", ""):
        return {"nccl": snap.torch.nccl, "nccl_source": "torch"}
    for dist in snap.environment.distributions:
        if canonical_name(dist.name).startswith(NCCL_WHEELS) and dist.version:
            return {"nccl": dist.version, "nccl_source": canonical_name(dist.name)}
    return {}


# The launcher's variables a rank publishes beside its environment: what it was launched believing (rank 0 names a
# rank launched into a job of another size; RANK itself is the report's own ``rank``).
LAUNCH_ENV = ("WORLD_SIZE", "LOCAL_WORLD_SIZE")


def launch_env(world_size: int, env: dict[str, str]) -> dict[str, str]:
    """``WORLD_SIZE`` as this rank's launcher told it (``WORLD_SIZE``, ``SLURM_NTASKS``, ``OMPI_COMM_WORLD_SIZE``...:
    ``launcher.detect``), and ``LOCAL_WORLD_SIZE`` when set (torchrun sets it), for ``Fingerprint.env``."""
    found = {"WORLD_SIZE": str(world_size)}
    if env.get("LOCAL_WORLD_SIZE", "").strip():
        found["LOCAL_WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"].strip()[:16]
    return found


def rank_report(
    rank: int,
    host: str,
    local_rank: int,
    snap: Snapshot,
    findings: list[Finding],
    seconds: float = 0.0,
    label: str = "",
    print_: Fingerprint | None = None,
) -> RankReport:
    """What rank ``rank`` sends; ``print_``: its fingerprint, when the caller has it already (shared, never changed)."""
    return RankReport(
        rank=rank,
        host=host,
        local_rank=local_rank,
        fingerprint=print_ or fingerprint(snap, local_rank),
        findings=list(findings),
        seconds=round(seconds, 3),
        label=label,
        node_kernels=snap.kernels.status != "skipped",
    )
