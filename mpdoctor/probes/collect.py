"""Take a snapshot: run every probe, in parallel, each within its limit from the Budget."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Union

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import kill_children_on_error
from mpdoctor.probes.environment import merge_extension_loads, probe_environment, probe_inventory
from mpdoctor.probes.kernels import probe_kernels_and_torch
from mpdoctor.probes.machine import probe_nvml
from mpdoctor.snapshot import KernelInfo, Machine, Snapshot, utc_timestamp


KERNELS_OFF = "--no-kernels, or no selected check needs them"


def take_snapshot(python: str, timeout: Union[Budget, float], kernels: str = "quick",
                  project: bool = True) -> Snapshot:
    """Facts about the interpreter ``python`` and this machine, within ``timeout`` (--timeout, or its Budget).

    ``kernels`` is the microkernel mode (quick or full), or "off" to skip them
    (``--no-kernels``, or no selected check needs them). ``project``: scan the
    working directory's code; when False, ``environment.project.skipped`` says it
    was not scanned. Every probe is a child process; the whole ends within
    ``Budget.whole``.
    """
    budget = Budget.of(timeout)
    created = utc_timestamp()
    quiet = threading.Event()  # the CPU kernels wait for the other probes to finish
    with ThreadPoolExecutor(max_workers=2) as pool, kill_children_on_error():
        nvml_job = pool.submit(probe_nvml, budget.nvml)
        if kernels == "off":
            environment, torch = probe_environment(python, budget, project)
            kernel_info = KernelInfo(status="skipped", detail=KERNELS_OFF)
        else:
            # One `import torch` serves the torch facts and the kernels: the kernel runner is the torch part.
            kernel_job = pool.submit(probe_kernels_and_torch, python, budget, kernels, quiet)
            environment = probe_inventory(python, budget, project)
        nvml = nvml_job.result()
        quiet.set()
        if kernels != "off":
            kernel_info, torch, torch_steps = kernel_job.result()
            merge_extension_loads(environment.apex, torch_steps)
    return Snapshot(created=created, environment=environment, torch=torch, machine=Machine(nvml=nvml),
                    kernels=kernel_info)
