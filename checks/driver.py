"""driver: the NVIDIA driver as NVML reports it."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks._common import is_cuda_build
from mpdoctor.findings import Finding, Step, error, info
from mpdoctor.registry import check
from mpdoctor.snapshot import Snapshot

FAMILY = "driver"


@check("DRV001", "nvml-unusable", family=FAMILY)
def nvml_unusable(snap: Snapshot) -> Iterator[Finding]:
    """NVML, the driver's management library, is present but failing.

    ## Why it matters
    "RM has detected an NVML/RM version mismatch" means the driver was upgraded
    but the old kernel module is still loaded: CUDA fails too until it is
    reloaded. Other NVML failures hide the GPUs from mpdoctor, nvidia-smi and
    torch's NVML-based device counting.

    ## Fix
    Reboot (or reload the nvidia kernel modules) after a driver upgrade; grant
    access to /dev/nvidia* for permission errors.
    """
    nvml = snap.machine.nvml
    if nvml.status in ("ok", "not-run"):
        return
    if nvml.status == "unavailable":
        if is_cuda_build(snap):
            yield info(f"No NVIDIA driver found ({nvml.reason}); GPU checks are skipped",
                       [nvml.detail or nvml.reason], [Step("Check whether the driver answers", "nvidia-smi")])
        return
    steps = [Step("Check what the driver says", "nvidia-smi")]
    if nvml.reason == "LibRmVersionMismatch":
        steps.insert(0, Step("The driver was upgraded but the old kernel module is loaded: reboot", "sudo reboot"))
    if nvml.reason == "NoPermission":
        steps.insert(0, Step("Your user cannot open the GPU devices", "ls -l /dev/nvidia*"))
    yield error(f"NVML fails: {nvml.reason or nvml.status}: {nvml.detail}", [nvml.detail], steps)
