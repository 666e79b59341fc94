"""Take a snapshot: run every probe, in parallel, each within the timeout."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from mpdoctor.probes.environment import probe_environment
from mpdoctor.probes.kernels import probe_kernels
from mpdoctor.probes.machine import probe_nvml
from mpdoctor.snapshot import KernelInfo, Machine, Snapshot, utc_timestamp

def take_snapshot(python: str, timeout: float, kernels: str = "quick") -> Snapshot:
    """Facts about the interpreter ``python`` and this machine.

    ``kernels`` is the microkernel mode (quick or full), or "off" to skip them
    (``--no-kernels``, or no precision check selected).
    """
    created = utc_timestamp()
    quiet = threading.Event()  # the CPU kernels wait for the other probes to finish
    with ThreadPoolExecutor(max_workers=2) as pool:
        nvml_job = pool.submit(probe_nvml, timeout)
        kernel_job = pool.submit(probe_kernels, python, timeout, kernels, quiet) if kernels != "off" else None
        environment, torch = probe_environment(python, timeout)
        nvml = nvml_job.result()
        quiet.set()
        kernel_info = kernel_job.result() if kernel_job else KernelInfo(status="skipped", detail="--no-kernels, or no precision check selected")
    return Snapshot(created=created, environment=environment, torch=torch, machine=Machine(nvml=nvml),
                    kernels=kernel_info)
