"""What CUDA sees after a simulated fix (tests/fix_simulator.py): is it available, which GPU is each cuda:N.

Pure, like the simulator: facts in, facts out. Where the machine would decide (the order
CUDA's FASTEST_FIRST gives GPUs that differ) it takes the heuristic NVIDIA describes
(the fastest first: higher compute capability, then more memory), and says so here.
"""

from __future__ import annotations

from typing import Optional

from mpdoctor.analysis.capability import parse_capability
from mpdoctor.analysis.gpu_map import device_table, gpu_view, strip_prefix
from mpdoctor.analysis.versions import cuda_of_driver, version_tuple
from mpdoctor.snapshot import CudaDevice, NvmlGpu, Snapshot


class CannotSimulate(Exception):
    """The command is not one the simulator knows how to apply; the message says why."""


def ordinals(snap: Snapshot) -> dict[int, str]:
    """cuda:N -> the NVML UUID of the GPU it is, as the device table ties them (UUID, PCI, properties, rules)."""
    return {
        row.cuda_ordinal: row.uuid
        for row in device_table(snap).devices
        if row.cuda_ordinal is not None and row.source == "cuda" and row.uuid
    }


def start_cuda(snap: Snapshot, old: Optional[dict[int, str]] = None) -> None:
    """torch.cuda.is_available() and the devices, for the torch build, driver and environment now in the snapshot.

    ``old``: what each cuda:N was before the change (:func:`ordinals`), so kernels measured on it follow it.
    """
    torch, nvml = snap.torch, snap.machine.nvml
    if torch.status != "imported":
        return
    driver = nvml.cuda_driver_version
    runs = (
        bool(torch.cuda)
        and nvml.status == "ok"
        and bool(driver)
        and version_tuple(torch.cuda)[0] <= version_tuple(driver)[0]
    )
    if not torch.cuda:
        torch.cuda_available, torch.device_count, torch.devices = False, 0, []
        return
    torch.cuda_available = runs and bool(nvml.usable_gpus)
    reenumerate(snap, ordinals(snap) if old is None else old)


def upgrade_driver(snap: Snapshot, version: str) -> None:
    nvml = snap.machine.nvml
    if nvml.status != "ok":
        raise CannotSimulate(f"NVML is {nvml.status}: a driver upgrade's effect on it is for the probe to say")
    cuda = cuda_of_driver(version)
    if cuda is None:
        raise CannotSimulate(f"driver {version} is older than every driver in NVIDIA's table")
    if version_tuple(version) > version_tuple(nvml.driver_version):
        nvml.driver_version = version
        if version_tuple(cuda) > version_tuple(nvml.cuda_driver_version or "0"):
            nvml.cuda_driver_version = cuda
    start_cuda(snap)


def reenumerate(snap: Snapshot, old: dict[int, str]) -> None:
    """torch.devices as CUDA numbers them under the current environment and driver.

    The device table predicts them where CUDA's rules decide (PCI_BUS_ID, UUIDs, identical
    GPUs); GPUs that differ under FASTEST_FIRST take the modelled order (:func:`_fastest_first`).
    """
    torch = snap.torch
    if torch.status != "imported" or not torch.cuda or torch.cuda_available is False:
        return
    by_uuid = {g.uuid: g for g in snap.machine.nvml.usable_gpus}
    torch.devices = []  # the table below predicts them: nothing torch reported still holds
    view = gpu_view(snap)
    uuids = [row.uuid for row in view.devices if row.cuda_ordinal is not None]
    if not uuids and by_uuid and not view.hides_all:
        if view.cuda_visible_devices is not None or view.order not in ("FASTEST_FIRST",):
            raise CannotSimulate(
                f"which GPU CUDA numbers first under CUDA_VISIBLE_DEVICES="
                f"{view.cuda_visible_devices!r} and {view.order} cannot be predicted here"
            )
        uuids = [g.uuid for g in _fastest_first(snap)]
    for ordinal, uuid in enumerate(uuids):
        gpu = by_uuid.get(uuid)
        name, cc, memory = (gpu.name, gpu.compute_capability, gpu.memory_total) if gpu else ("", "", None)
        torch.devices.append(
            CudaDevice(
                ordinal=ordinal,
                name=name,
                compute_capability=cc,
                memory_total=memory,
                uuid=strip_prefix(uuid),
                pci_bus_id=gpu.pci_bus_id if gpu else "",
            )
        )
    torch.device_count = torch.runtime_device_count = len(torch.devices)
    torch.cuda_available = bool(torch.devices)
    _renumber_kernels(snap, old)


def _fastest_first(snap: Snapshot) -> list[NvmlGpu]:
    """The modelled FASTEST_FIRST order: higher compute capability, then more memory, then PCI order."""
    whole = [g for g in snap.machine.nvml.usable_gpus if not g.mig_enabled]
    return sorted(
        whole, key=lambda g: (-(parse_capability(g.compute_capability) or 0), -(g.memory_total or 0), g.pci_bus_id)
    )


def _renumber_kernels(snap: Snapshot, old: dict[int, str]) -> None:
    """Kernels measured on cuda:N follow their GPU to its new ordinal; those on hidden GPUs go."""
    new = {dev.uuid: dev.ordinal for dev in snap.torch.devices}
    old = {ordinal: strip_prefix(uuid) for ordinal, uuid in old.items()}
    kept = []
    for device in snap.kernels.devices:
        if not device.device.startswith("cuda:"):
            kept.append(device)
            continue
        uuid = old.get(int(device.device.split(":", 1)[1]), "")
        if uuid in new:
            device.device = f"cuda:{new[uuid]}"
            kept.append(device)
    snap.kernels.devices = kept
