"""Take a snapshot: run every probe, in parallel, each within the timeout."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from mpdoctor.probes.environment import probe_environment
from mpdoctor.probes.machine import probe_nvml
from mpdoctor.snapshot import Machine, Snapshot, utc_timestamp


def take_snapshot(python: str, timeout: float) -> Snapshot:
    """Facts about the interpreter ``python`` and this machine."""
    created = utc_timestamp()
    with ThreadPoolExecutor(max_workers=1) as pool:
        nvml_job = pool.submit(probe_nvml, timeout)
        environment, torch = probe_environment(python, timeout)
        nvml = nvml_job.result()
    return Snapshot(created=created, environment=environment, torch=torch, machine=Machine(nvml=nvml))
