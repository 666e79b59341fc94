"""A rank's fingerprint: the few facts of its snapshot that must agree across a job's ranks.

Sent through the store by every rank, so it stays small: package versions, the torch
build, the driver, the rank's own GPU, the environment variables that change
numerics or communication, and (from one rank per node) the measured kernel times.
"""

from __future__ import annotations

from mpdoctor.fleet.model import Fingerprint, RankReport
from mpdoctor.findings import Finding
from mpdoctor.snapshot import Snapshot, canonical_name

# Variables that change numerics (TF32, cuBLAS workspaces, deterministic algorithms) or communication (NCCL).
ENV_PREFIXES = ("NCCL_", "TORCH_", "PYTORCH_", "CUDA_", "CUBLAS", "CUDNN_", "NVIDIA_", "TORCHINDUCTOR_", "XLA_",
                "OMP_", "MKL_", "KMP_", "HIP_", "ROCR_", "HSA_")
# Which shared libraries load (a system NCCL before torch's own: NVIDIA/nccl#1381).
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD")
# Set per rank by design: a difference there is the launcher doing its job, not a drift.
PER_RANK_ENV = ("TORCHELASTIC_", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "HIP_VISIBLE_DEVICES", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_NCCL_TRACE_BUFFER")


def env_that_matters(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` (already redacted by the probe) that ranks should agree on."""
    return {name: value for name, value in sorted(env.items())
            if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES) and not name.startswith(PER_RANK_ENV)}


def fingerprint(snap: Snapshot, local_rank: int) -> Fingerprint:
    """The comparable facts of ``snap``, the snapshot of a rank whose LOCAL_RANK is ``local_rank``."""
    env = snap.environment
    torch = snap.torch
    nvml = snap.machine.nvml
    print_ = Fingerprint(
        python=env.python.version if env.python else "",
        executable=env.python.executable if env.python else "",
        packages={canonical_name(d.name): d.version for d in env.distributions if d.name},
        torch=torch.version if torch.status == "imported" else f"({torch.status})",
        torch_cuda=torch.cuda or "",
        cudnn=str(torch.cudnn) if torch.cudnn is not None else "",
        driver=nvml.driver_version if nvml.status == "ok" else "",
        cuda_driver=nvml.cuda_driver_version if nvml.status == "ok" else "",
        env=env_that_matters(env.env),
    )
    if torch.devices:
        # The job's convention: torch.cuda.set_device(LOCAL_RANK) over the devices CUDA_VISIBLE_DEVICES leaves.
        device = torch.devices[local_rank % len(torch.devices)]
        print_.device, print_.gpu, print_.compute_capability = (f"cuda:{device.ordinal}", device.name,
                                                                device.compute_capability)
        for run in snap.kernels.devices:
            if run.device == f"cuda:{device.ordinal}":
                print_.bf16_native = run.bf16_native
    if snap.kernels.status == "ok":
        for run in snap.kernels.devices:
            times = {_kernel_key(r.op, r.dtype, r.backend): r.seconds for r in run.results
                     if r.status == "ok" and r.seconds}
            if times:
                print_.kernels[run.device] = times
                print_.kernel_devices[run.device] = run.name
            if run.bf16_native is not None:
                print_.kernel_bf16[run.device] = run.bf16_native
    return print_


def _kernel_key(op: str, dtype: str, backend: str) -> str:
    return "/".join(part for part in (op, dtype, backend) if part)


def rank_report(rank: int, host: str, local_rank: int, snap: Snapshot, findings: list[Finding],
                seconds: float = 0.0, label: str = "") -> RankReport:
    return RankReport(rank=rank, host=host, local_rank=local_rank, fingerprint=fingerprint(snap, local_rank),
                      findings=list(findings), seconds=round(seconds, 3), label=label,
                      node_kernels=snap.kernels.status != "skipped")
