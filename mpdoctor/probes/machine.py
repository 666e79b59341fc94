"""Probe the NVIDIA driver and GPUs through NVML, in mpdoctor's own process.

NVML calls go into the driver and can block (a GPU falling off the bus, a wedged
driver), so the whole probe runs in a daemon thread that is abandoned at the
timeout. Each failure becomes a fact with NVML's own error name, never a crash.
"""

from __future__ import annotations

import threading
import time
from types import ModuleType
from typing import Callable, Optional

from mpdoctor.snapshot import MigDevice, NvmlGpu, NvmlInfo

# NVML error names that mean "no usable NVIDIA driver here", as opposed to a fault.
UNAVAILABLE = {"LibraryNotFound", "DriverNotLoaded", "FunctionNotFound"}


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def normalise_pci_bus_id(bus_id: object) -> str:
    """NVML's ``00000000:3B:00.0`` and torch's ints both become ``0000:3b:00.0``."""
    text = _text(bus_id).strip().lower()
    domain, sep, rest = text.partition(":")
    if not sep:
        return text
    if len(domain) > 4:
        domain = domain[-4:]
    return f"{domain.zfill(4)}:{rest}"


def cuda_version_text(encoded: int) -> str:
    """NVML encodes CUDA versions as 1000 * major + 10 * minor (12020 is 12.2)."""
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def nvml_error_name(exc: BaseException) -> str:
    """``NVMLError_DriverNotLoaded`` becomes ``DriverNotLoaded``."""
    name = type(exc).__name__
    if name.startswith("NVMLError_"):
        return name[len("NVMLError_"):]
    return name


def _optional(call: Callable[[], object]) -> Optional[object]:
    try:
        return call()
    except Exception:  # a field this GPU or driver does not report
        return None


def _mig_devices(nvml: ModuleType, handle: object) -> tuple[Optional[bool], list[MigDevice]]:
    """MIG mode and MIG devices; pre-Ampere GPUs raise NotSupported (mode None)."""
    mode = _optional(lambda: nvml.nvmlDeviceGetMigMode(handle))
    if not mode:
        return None, []
    enabled = bool(mode[0])  # [current, pending]: a pending change needs a GPU reset
    devices = []
    if enabled:
        slots = _optional(lambda: nvml.nvmlDeviceGetMaxMigDeviceCount(handle)) or 0
        for slot in range(int(slots)):
            mig = _optional(lambda: nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot))
            if mig is None:  # NotFound: an empty slot
                continue
            memory = _optional(lambda: nvml.nvmlDeviceGetMemoryInfo(mig))
            devices.append(MigDevice(
                index=slot,
                name=_text(_optional(lambda: nvml.nvmlDeviceGetName(mig)) or ""),
                uuid=_text(_optional(lambda: nvml.nvmlDeviceGetUUID(mig)) or ""),
                memory_total=int(memory.total) if memory is not None else None,
            ))
    return enabled, devices


def _gpu(nvml: ModuleType, index: int) -> NvmlGpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    gpu = NvmlGpu(index=index)
    gpu.name = _text(_optional(lambda: nvml.nvmlDeviceGetName(handle)) or "")
    gpu.uuid = _text(_optional(lambda: nvml.nvmlDeviceGetUUID(handle)) or "")
    pci = _optional(lambda: nvml.nvmlDeviceGetPciInfo(handle))
    gpu.pci_bus_id = normalise_pci_bus_id(pci.busId) if pci is not None else ""
    memory = _optional(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    gpu.memory_total = int(memory.total) if memory is not None else None
    capability = _optional(lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    gpu.compute_capability = f"{capability[0]}.{capability[1]}" if capability else ""
    gpu.mig_enabled, gpu.mig_devices = _mig_devices(nvml, handle)
    return gpu


def collect_nvml(nvml: ModuleType) -> NvmlInfo:
    """Every NVML fact, or the error that stopped the collection."""
    info = NvmlInfo()
    try:
        nvml.nvmlInit()
    except Exception as exc:
        name = nvml_error_name(exc)
        info.status = "unavailable" if name in UNAVAILABLE else "error"
        info.reason, info.detail = name, _text(exc)
        return info
    try:
        info.driver_version = _text(_optional(nvml.nvmlSystemGetDriverVersion) or "")
        info.nvml_version = _text(_optional(nvml.nvmlSystemGetNVMLVersion) or "")
        encoded = _optional(nvml.nvmlSystemGetCudaDriverVersion)
        info.cuda_driver_version = cuda_version_text(int(encoded)) if encoded else ""
        count = nvml.nvmlDeviceGetCount()
        for index in range(count):
            try:
                info.gpus.append(_gpu(nvml, index))
            except Exception as exc:  # e.g. NoPermission on a GPU of another container
                info.gpus.append(NvmlGpu(index=index, error=f"{nvml_error_name(exc)}: {_text(exc)}"))
        info.status = "ok"
    except Exception as exc:
        info.status, info.reason, info.detail = "error", nvml_error_name(exc), _text(exc)
    finally:
        _optional(nvml.nvmlShutdown)
    return info


def _import_pynvml() -> ModuleType:
    import pynvml  # from nvidia-ml-py; imported lazily, it is not needed for --help

    return pynvml


def probe_nvml(timeout: float, loader: Callable[[], ModuleType] = _import_pynvml) -> NvmlInfo:
    """NVML facts within ``timeout`` seconds; a hang becomes a 'timeout' fact."""
    start = time.monotonic()
    box: dict[str, NvmlInfo] = {}

    def work() -> None:
        try:
            nvml = loader()
        except Exception as exc:
            box["info"] = NvmlInfo(status="unavailable", reason="PynvmlMissing",
                                   detail=f"cannot import pynvml (nvidia-ml-py): {exc}")
            return
        box["info"] = collect_nvml(nvml)

    thread = threading.Thread(target=work, name="mpdoctor-nvml", daemon=True)
    thread.start()
    thread.join(timeout)
    info = box.get("info") or NvmlInfo(
        status="timeout", detail=f"NVML did not answer within {timeout:g} s; the driver may be hung"
    )
    info.seconds = round(time.monotonic() - start, 3)
    return info
