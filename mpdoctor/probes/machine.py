"""Probe the NVIDIA driver and GPUs through NVML, in a child of mpdoctor's own interpreter.

NVML calls go into the driver: they can block (a GPU falling off the bus, a
wedged driver) and libnvidia-ml can crash. So, like every other probe, NVML runs
in a child process through :func:`mpdoctor.probes.child.run_child`, with its own
limit (``Budget.nvml``): a hang becomes a ``timeout`` fact, a crash an ``error``
fact (reason ``Crashed``), and neither costs mpdoctor. The child is mpdoctor's
own interpreter (``sys.executable``, where nvidia-ml-py is installed with
mpdoctor), not the one under diagnosis: NVML is a fact about the machine.

The child runs :func:`nvml_child`: :func:`nvml_record`, a pure function of the
NVML module, as JSON on stdout; :func:`nvml_facts` is the same as an
``NvmlInfo`` in this process (tests give it a stand-in NVML module). Each NVML failure becomes a fact with NVML's own error name,
never a crash. This module imports only the standard library at the top, so the
child costs an interpreter start and pynvml (about 40 ms of CPU), not
mpdoctor's snapshot classes.

Besides what each GPU is, it records what the GPU is doing (:func:`_load`):
utilisation, the processes on it (each marked when it is mpdoctor itself or one
of its children, the kernel workers), SM clocks and throttle reasons. NVML runs
beside the kernel runner, so these are what the GPU did while it was measured,
give or take a second; the precision checks call a shared GPU's speed ratios
inconclusive from them. Each call is on its own: a driver that does not report
one leaves that fact unknown.
"""

from __future__ import annotations

import json
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from mpdoctor.snapshot import NvmlInfo

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
        return name[len("NVMLError_") :]
    return name


def _optional(call: Callable[[], object]) -> Optional[object]:
    try:
        return call()
    except Exception:  # a field this GPU or driver does not report
        return None


def _mig_devices(nvml: ModuleType, handle: object) -> tuple[Optional[bool], list[dict[str, Any]]]:
    """MIG mode and MIG devices (``MigDevice`` fields); pre-Ampere GPUs raise NotSupported (mode None)."""
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
            devices.append(
                {
                    "index": slot,
                    "name": _text(_optional(lambda: nvml.nvmlDeviceGetName(mig)) or ""),
                    "uuid": _text(_optional(lambda: nvml.nvmlDeviceGetUUID(mig)) or ""),
                    "memory_total": int(memory.total) if memory is not None else None,
                }
            )
    return enabled, devices


# nvmlClocksThrottleReason* bits (nvml.h), named as nvidia-smi -q names them; idle is left out: it is no load.
THROTTLE_REASONS = {
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def _ours(pid: int, asker: int) -> bool:
    """``pid`` is the mpdoctor that asked NVML or one of its descendants (the kernel runner's workers), read off /proc.

    Descendants only: the asker's own ancestors (the shell, tmux, sshd) also started
    the user's training job, which is exactly the process this must not hide.
    """
    seen = set()
    while pid > 1 and pid not in seen:
        if pid == asker:
            return True
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                pid = int(handle.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _processes(nvml: ModuleType, handle: object, asker: int) -> list[dict[str, Any]]:
    """Compute and graphics processes on a GPU (``GpuProcess`` fields); none when NVML does not tell."""
    out = []
    for kind, call in (
        ("compute", "nvmlDeviceGetComputeRunningProcesses"),
        ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
    ):
        listed = _optional(lambda: getattr(nvml, call)(handle)) or []
        for proc in listed:
            pid = int(getattr(proc, "pid", 0) or 0)
            used = getattr(proc, "usedGpuMemory", None)
            out.append(
                {
                    "pid": pid,
                    "name": _process_name(pid) if pid else "",
                    "kind": kind,
                    "memory_used": int(used) if isinstance(used, int) and used >= 0 else None,
                    "ours": bool(pid) and _ours(pid, asker),
                }
            )
    return out


def _load(nvml: ModuleType, handle: object, asker: int) -> dict[str, Any]:
    """What the GPU is doing: utilisation, processes, clocks, throttle reasons; each call on its own."""
    rates = _optional(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
    clock_kind = getattr(nvml, "NVML_CLOCK_SM", 1)
    reasons = _optional(lambda: nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
    sm_clock = _optional(lambda: nvml.nvmlDeviceGetClockInfo(handle, clock_kind))
    sm_clock_max = _optional(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, clock_kind))
    return {
        "utilization": int(rates.gpu) if rates is not None and isinstance(getattr(rates, "gpu", None), int) else None,
        "processes": _processes(nvml, handle, asker),
        "sm_clock": int(sm_clock) if isinstance(sm_clock, int) else None,
        "sm_clock_max": int(sm_clock_max) if isinstance(sm_clock_max, int) else None,
        "throttle_reasons": [
            name for bit, name in THROTTLE_REASONS.items() if isinstance(reasons, int) and reasons & bit
        ],
    }


def _gpu(nvml: ModuleType, index: int, asker: int) -> dict[str, Any]:
    """One GPU's ``NvmlGpu`` fields."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = _optional(lambda: nvml.nvmlDeviceGetPciInfo(handle))
    memory = _optional(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    capability = _optional(lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    mig_enabled, mig_devices = _mig_devices(nvml, handle)
    return {
        **_load(nvml, handle, asker),
        "index": index,
        "name": _text(_optional(lambda: nvml.nvmlDeviceGetName(handle)) or ""),
        "uuid": _text(_optional(lambda: nvml.nvmlDeviceGetUUID(handle)) or ""),
        "pci_bus_id": normalise_pci_bus_id(pci.busId) if pci is not None else "",
        "memory_total": int(memory.total) if memory is not None else None,
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else "",
        "mig_enabled": mig_enabled,
        "mig_devices": mig_devices,
    }


def nvml_record(nvml: ModuleType, asker: int) -> dict[str, Any]:
    """Every NVML fact, or the error that stopped the collection: ``NvmlInfo``'s fields, as plain data.

    ``asker`` is the pid of the mpdoctor that wants the facts: a GPU process is ``ours``
    when it is that process or one of its descendants.
    """
    try:
        nvml.nvmlInit()
    except Exception as exc:
        name = nvml_error_name(exc)
        return {"status": "unavailable" if name in UNAVAILABLE else "error", "reason": name, "detail": _text(exc)}
    info: dict[str, Any] = {}
    try:
        info["driver_version"] = _text(_optional(nvml.nvmlSystemGetDriverVersion) or "")
        info["nvml_version"] = _text(_optional(nvml.nvmlSystemGetNVMLVersion) or "")
        encoded = _optional(nvml.nvmlSystemGetCudaDriverVersion)
        info["cuda_driver_version"] = cuda_version_text(int(encoded)) if encoded else ""
        gpus = info["gpus"] = []
        for index in range(nvml.nvmlDeviceGetCount()):
            try:
                gpus.append(_gpu(nvml, index, asker))
            except Exception as exc:  # e.g. NoPermission on a GPU of another container
                gpus.append({"index": index, "error": f"{nvml_error_name(exc)}: {_text(exc)}"})
        info["status"] = "ok"
    except Exception as exc:
        info.update(status="error", reason=nvml_error_name(exc), detail=_text(exc))
    finally:
        _optional(nvml.nvmlShutdown)
    return info


def _import_pynvml() -> ModuleType:
    import pynvml  # from nvidia-ml-py; imported in the NVML child only

    return pynvml


def nvml_facts(loader: Callable[[], ModuleType] = _import_pynvml) -> NvmlInfo:
    """What NVML says, in this process, as ``NvmlInfo`` (tests call it with a stand-in module)."""
    from mpdoctor.schema.serde import from_data
    from mpdoctor.snapshot import NvmlInfo

    return from_data(NvmlInfo, _record(loader, asker=os.getpid()))


def _record(loader: Callable[[], ModuleType], asker: int) -> dict[str, Any]:
    try:
        nvml = loader()
    except Exception as exc:
        return {
            "status": "unavailable",
            "reason": "PynvmlMissing",
            "detail": f"cannot import pynvml (nvidia-ml-py): {exc}",
        }
    return nvml_record(nvml, asker)


def nvml_child() -> None:
    """The NVML child's main: the facts as one line of JSON on stdout."""
    sys.stdout.write(json.dumps(_record(_import_pynvml, asker=os.getppid())) + "\n")  # the mpdoctor that started it
    sys.stdout.flush()


def nvml_argv() -> list[str]:
    """This interpreter, running :func:`nvml_child` of this very mpdoctor (not one the working directory holds)."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        "import sys\n"
        "if sys.path and sys.path[0] == '': del sys.path[0]  # -c put the working directory first\n"
        f"if {package_parent!r} not in sys.path: sys.path.insert(0, {package_parent!r})\n"
        "from mpdoctor.probes.machine import nvml_child\n"
        "nvml_child()\n"
    )
    return [sys.executable, "-c", code]


def probe_nvml(timeout: float) -> NvmlInfo:
    """NVML facts from a child given ``timeout`` seconds (``Budget.nvml``); a hang or crash is a fact too."""
    from mpdoctor.portable.linebreaks import split_lines
    from mpdoctor.probes.child import run_child, seconds_text
    from mpdoctor.schema.serde import DataError, from_data
    from mpdoctor.snapshot import NvmlInfo

    result = run_child(nvml_argv(), timeout)
    if result.timed_out:
        info = NvmlInfo(
            status="timeout", detail=f"NVML did not answer within {seconds_text(timeout)} s; the driver may be hung"
        )
    else:
        info = None
        if result.exit_code == 0:
            try:
                info = from_data(NvmlInfo, json.loads(split_lines(result.stdout.strip())[-1]))
            except (IndexError, ValueError, DataError):
                pass
        if info is None:
            how = "wrote no facts" if result.exit_code == 0 else result.describe()
            last = result.stderr_last_line
            # A signal is a crash inside libnvidia-ml (or pynvml); anything else, a probe that could not run.
            info = NvmlInfo(
                status="error",
                reason="Crashed" if result.signal_name else "ProbeFailed",
                detail=f"the NVML probe {how}" + (f": {last}" if last else ""),
            )
    info.seconds = round(result.seconds, 3)
    return info
