"""Which GPU a rank's LOCAL_RANK selects, and its microkernels timed on that GPU only.

The job's convention: ``torch.cuda.set_device(LOCAL_RANK)``, over the devices
``CUDA_VISIBLE_DEVICES`` leaves (torchrun, and Slurm with one task per GPU). The
rank's own snapshot already holds what its torch saw under its own environment;
the device table (``mpdoctor.analysis.gpu_map``) ties each ``cuda:N`` to its
physical GPU (by UUID where torch or NVML says it). A local rank beyond the visible
devices, or two ranks of a node on one GPU, is a FLEET008 finding, not a crash.

Each GPU rank then times its own GPU, in its own interpreter, so a node's GPUs are
measured in parallel: the kernel probe runs with ``CUDA_VISIBLE_DEVICES`` narrowed
to that GPU's UUID (through a two-line wrapper of the interpreter, so this process's
environment is never changed), and its ``cuda:0`` is named back to the job's ordinal.
"""

from __future__ import annotations

import os
import shlex
import stat
import tempfile
from dataclasses import dataclass, replace
from typing import Optional

from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.snapshot import KernelInfo, Snapshot


@dataclass(frozen=True)
class Selection:
    """The GPU a local rank selects; ``problem`` says why it has none of its own."""

    device: str = ""  # cuda:N as the job numbers it; empty on a rank with no GPU
    name: str = ""
    compute_capability: str = ""
    uuid: str = ""  # the physical GPU (NVML's GPU-... / MIG-...), when known
    problem: str = ""  # e.g. "LOCAL_RANK=3 selects cuda:3, but only 2 devices are visible to this rank"

    @property
    def narrowed(self) -> str:
        """CUDA_VISIBLE_DEVICES that leaves only this GPU, or "" when it cannot be named exactly (no UUID)."""
        return self.uuid if self.uuid.startswith(("GPU-", "MIG-")) and not self.problem else ""


def select_device(snap: Snapshot, local_rank: int) -> Selection:
    """The device ``cuda:LOCAL_RANK`` of a rank whose snapshot is ``snap`` (taken in that rank's environment)."""
    view = device_table(snap)
    rows = sorted(view.visible, key=lambda row: row.cuda_ordinal)
    if not rows:
        return Selection()
    visible = "" if view.cuda_visible_devices is None else f" (CUDA_VISIBLE_DEVICES={view.cuda_visible_devices})"
    if local_rank < len(rows):
        row, problem = rows[local_rank], ""
    else:  # what a job that takes LOCAL_RANK % device_count would use; set_device(LOCAL_RANK) itself fails
        row = rows[local_rank % len(rows)]
        problem = (f"LOCAL_RANK={local_rank} selects cuda:{local_rank}, but only {len(rows)} device"
                   f"{'s are' if len(rows) != 1 else ' is'} visible to this rank{visible}")
    return Selection(f"cuda:{row.cuda_ordinal}", row.name, row.compute_capability, row.uuid, problem)


class _Renamed(ProgressBoard):
    """The narrowed probe's board: its "kernels cuda:0" is the job's "kernels cuda:N"; its CPU run is not shown."""

    def __init__(self, board: ProgressBoard, device: str) -> None:
        super().__init__()
        self.board, self.device = board, device

    def _name(self, name: str) -> str:
        return f"kernels {self.device}" if name == "kernels cuda:0" else name

    def start(self, name, text="", total=None, unit=""):
        if name != "kernels cpu":
            self.board.start(self._name(name), text, total, unit)

    def update(self, name, text=None, completed=None, total=None, unit=None):
        if name != "kernels cpu":
            self.board.update(self._name(name), text, completed, total, unit)

    def finish(self, name, text=None):
        if name != "kernels cpu":
            self.board.finish(self._name(name), text)


def own_gpu_kernels(python: str, timeout: float, mode: str, selection: Selection,
                    progress: ProgressBoard = SILENT) -> Optional[KernelInfo]:
    """The microkernels on ``selection``'s GPU only, named as the job numbers it; None when it cannot be narrowed.

    The CPU is not timed (``cpu=False``): the ranks of a node would time it against
    each other, and their CPU runs would disturb the GPU timings of the node.
    """
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.kernels import probe_kernels_and_torch

    if not selection.narrowed:
        return None
    with tempfile.TemporaryDirectory(prefix="mpdoctor-rank-gpu-") as tmp:
        wrapper = narrowed_python(tmp, python, selection.narrowed)
        board = SILENT if progress is SILENT else _Renamed(progress, selection.device)
        info = probe_kernels_and_torch(wrapper, Budget.from_timeout(timeout), mode, None, board, cpu=False)[0]
    return named_back(info, selection.device)


def narrowed_python(directory: str, python: str, visible: str) -> str:
    """An executable in ``directory`` that runs ``python`` with CUDA_VISIBLE_DEVICES=``visible``, and nothing else."""
    wrapper = os.path.join(directory, "python")
    with open(wrapper, "w", encoding="utf-8") as handle:
        handle.write(f"#!/bin/sh\nCUDA_VISIBLE_DEVICES={shlex.quote(visible)} exec {shlex.quote(python)} \"$@\"\n")
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    return wrapper


def named_back(info: KernelInfo, device: str) -> KernelInfo:
    """The narrowed probe's kernels: its cuda:0 is the job's ``device`` (a CPU run, never asked for, is not kept)."""
    runs = [replace(run, device=device) for run in info.devices if run.device == "cuda:0"]
    if runs or info.status != "ok":
        return replace(info, devices=runs)
    return replace(info, status="error", devices=[],
                   detail=f"the kernel probe, given only {device}'s GPU (CUDA_VISIBLE_DEVICES), saw no CUDA device")
