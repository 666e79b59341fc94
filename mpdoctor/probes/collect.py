"""Take a snapshot: run every probe, in parallel, each within its limit from the Budget."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import kill_children_on_error
from mpdoctor.probes.environment import merge_extension_loads, probe_environment, probe_inventory
from mpdoctor.probes.follow import end_words
from mpdoctor.probes.kernels import probe_kernels_and_torch
from mpdoctor.probes.machine import probe_nvml
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.snapshot import KernelInfo, Machine, NvmlInfo, Snapshot, utc_timestamp


KERNELS_OFF = "--no-kernels, or no selected check needs them"  # which of the two: doctor.gather says
NVML_WORDS = {"ok": "done", "unavailable": "no NVIDIA driver", "error": "failed"}


def take_snapshot(
    python: str,
    budget: Budget,
    kernels: str = "quick",
    project: bool = True,
    progress: ProgressBoard = SILENT,
    project_dir: str = "",
) -> Snapshot:
    """Facts about the interpreter ``python`` and this machine, within the run's ``budget``.

    ``kernels`` is the microkernel mode (quick or full), or "off" to skip them
    (``--no-kernels``, or no selected check needs them). ``project``: scan the
    user's code, ``project_dir`` (``--project``) or the project the working
    directory is in; when False, ``environment.project.skipped`` says it was not
    scanned. Every probe is a child process; the whole ends within
    ``Budget.whole``. What each probe is doing is posted to ``progress``, as tasks
    "torch", "kernels <device>", "inventory", "oneflow" and "nvml".

    The child on the critical path, the one that imports torch (the kernel runner,
    or the torch part), starts first; the inventory, NVML and whatever the caller
    does meanwhile (loading the checks) overlap its import. The CPU kernels wait for
    the inventory only briefly (see ``kernels.probe_kernels_and_torch``).
    """
    created = utc_timestamp()
    quiet = threading.Event()  # set once the inventory, which competes for the cores, has ended
    with ThreadPoolExecutor(max_workers=2) as pool, kill_children_on_error():
        if kernels == "off":
            environment_job = pool.submit(  # the torch part first
                probe_environment, python, budget, project, progress, project_dir
            )
            nvml_job = pool.submit(_nvml, budget.nvml, progress)
            environment, torch = environment_job.result()
            kernel_info = KernelInfo(status="skipped", detail=KERNELS_OFF)
        else:
            # One `import torch` serves the torch facts and the kernels: the kernel runner is the torch part.
            kernel_job = pool.submit(probe_kernels_and_torch, python, budget, kernels, quiet, progress)
            nvml_job = pool.submit(_nvml, budget.nvml, progress)
            try:
                environment = probe_inventory(python, budget, project, progress, project_dir)
            finally:
                quiet.set()  # NVML is no reason to wait: it waits on the driver, not on the cores
        nvml = nvml_job.result()
        if kernels != "off":
            kernel_info, torch, torch_steps = kernel_job.result()
            merge_extension_loads(environment.apex, torch_steps)
    return Snapshot(
        created=created, environment=environment, torch=torch, machine=Machine(nvml=nvml), kernels=kernel_info
    )


def _nvml(limit: float, progress: ProgressBoard) -> NvmlInfo:
    progress.start("nvml", "asking the NVIDIA driver")
    info = probe_nvml(limit)
    progress.finish(
        "nvml",
        end_words("timeout", limit=limit) if info.status == "timeout" else NVML_WORDS.get(info.status, info.status),
    )
    return info
