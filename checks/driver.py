"""driver: the NVIDIA driver as NVML reports it."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks._common import is_cuda_build
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot

FAMILY = "driver"


@check(
    "DRV001",
    "nvml-unusable",
    family=FAMILY,
    fires_on=(
        "nvml-rm-mismatch",
        "nvml-library-not-found",
        "nvml-no-permission",
        "nvml-timeout",
        "nvml-driver-not-loaded",
    ),
    quiet_on=("cpu-laptop", "h100-node-healthy", "pynvml-legacy-shadows"),
)
def nvml_unusable(snap: Snapshot) -> Iterator[Finding]:
    """NVML, the driver's management library, is present but failing.

    ## Why it matters
    "RM has detected an NVML/RM version mismatch" means the driver was upgraded
    but the old kernel module is still loaded: CUDA fails too until it is
    reloaded. Other NVML failures hide the GPUs from mpdoctor, nvidia-smi and
    torch's NVML-based device counting.

    When CUDA works but NVML's library is missing, the usual cause is a container
    started without the `utility` driver capability: nvidia-smi is missing too,
    and CUDA devices cannot be tied to physical GPUs.

    ## Fix
    Reboot (or reload the nvidia kernel modules) after a driver upgrade; grant
    access to /dev/nvidia* for permission errors; in a container, set
    `NVIDIA_DRIVER_CAPABILITIES=compute,utility`.
    """
    nvml = snap.machine.nvml
    if nvml.status in ("ok", "not-run"):
        return
    if nvml.status == "unavailable" and snap.torch.devices:
        yield _cuda_without_nvml(snap)
        return
    if nvml.status == "unavailable":
        if is_cuda_build(snap):
            yield info(
                f"No NVIDIA driver found ({nvml.reason}); GPU checks are skipped",
                [nvml.detail or nvml.reason],
                [fixes.inspect("Check whether the driver answers", "nvidia-smi")],
            )
        return
    # A driver that did not answer NVML in time will not answer nvidia-smi either: let the command end.
    smi = fixes.timed(30, "nvidia-smi") if nvml.status == "timeout" else "nvidia-smi"
    steps = [fixes.inspect("Check what the driver says", smi)]
    if nvml.reason == "LibRmVersionMismatch":
        steps.insert(0, FixStep("The driver was upgraded but the old kernel module is loaded: reboot", "sudo reboot"))
    if nvml.reason == "NoPermission":
        steps.insert(0, fixes.inspect("Your user cannot open the GPU devices", "ls -l /dev/nvidia*"))
    yield error(f"NVML fails: {nvml.reason or nvml.status}: {nvml.detail}", [nvml.detail], steps)


def _cuda_without_nvml(snap: Snapshot) -> Finding:
    """CUDA enumerates GPUs, so a driver is there; only NVML is missing."""
    nvml, env = snap.machine.nvml, snap.environment.env
    evidence = [nvml.detail or nvml.reason, f"torch sees {len(snap.torch.devices)} CUDA device(s)"]
    if nvml.reason == "PynvmlMissing":
        steps = [FixStep("Install NVIDIA's NVML bindings next to mpdoctor", "python -m pip install nvidia-ml-py")]
    else:
        if "NVIDIA_DRIVER_CAPABILITIES" in env:
            evidence.append(f"NVIDIA_DRIVER_CAPABILITIES={env['NVIDIA_DRIVER_CAPABILITIES']}")
        steps = [
            FixStep(
                "In a container, add the 'utility' driver capability, which mounts NVML and nvidia-smi",
                "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility ...",
            ),
            fixes.inspect("Check that NVML answers", "nvidia-smi"),
        ]
    return warning(
        f"CUDA works but NVML does not ({nvml.reason}): GPUs cannot be tied to nvidia-smi's numbering", evidence, steps
    )
