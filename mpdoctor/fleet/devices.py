"""Which GPU a rank's LOCAL_RANK selects, and its microkernels timed on that GPU only.

The job's convention: ``torch.cuda.set_device(LOCAL_RANK)``, over the devices
``CUDA_VISIBLE_DEVICES`` leaves (torchrun, and Slurm with one task per GPU). The
rank's own snapshot already holds what its torch saw under its own environment;
the device table (``mpdoctor.analysis.gpu_map``) ties each ``cuda:N`` to its
physical GPU (by UUID where torch or NVML says it). A local rank beyond the visible
devices, or two ranks of a node on one GPU, is a FLEET008 finding, not a crash.

Each GPU rank then times its own GPU, in its own interpreter, so a node's GPUs are
measured in parallel: the kernel probe's child gets an environment (``run_child``'s
``env``; this process's own is never changed) with ``CUDA_VISIBLE_DEVICES`` narrowed
to that GPU's UUID, the one name that cannot pick another GPU whatever the order or
the variable the rank was started with.

Inside that child CUDA calls the GPU ``cuda:0``; the report must call it what the
job calls it, ``cuda:N`` of the rank's own (unnarrowed) view, where its snapshot's
device table, its fingerprint and rank 0's comparison look for it. So the rank says
so up front, as data: the kernel runner is handed the name (``names``,
``steps.NAMES``) and writes its step files, its progress ("kernels cuda:N") and its
facts under it, rather than each being renamed after the run. The name, not the UUID,
because the name is what the rank's facts are keyed by; the UUID is what the rank
narrowed to (``Selection.uuid``, in its fingerprint as ``device_uuid``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Optional

from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.snapshot import KernelInfo, Snapshot

if TYPE_CHECKING:
    from mpdoctor.probes.budget import Budget


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
        problem = (
            f"LOCAL_RANK={local_rank} selects cuda:{local_rank}, but only {len(rows)} device"
            f"{'s are' if len(rows) != 1 else ' is'} visible to this rank{visible}"
        )
    return Selection(f"cuda:{row.cuda_ordinal}", row.name, row.compute_capability, row.uuid, problem)


def own_gpu_kernels(
    python: str, budget: Budget, mode: str, selection: Selection, progress: ProgressBoard = SILENT
) -> Optional[KernelInfo]:
    """The microkernels on ``selection``'s GPU only, named as the job numbers it; None when it cannot be narrowed.

    The CPU is not timed (``cpu=False``): the ranks of a node would time it against
    each other, and their CPU runs would disturb the GPU timings of the node.
    """
    from mpdoctor.probes.kernels import probe_kernels_and_torch

    if not selection.narrowed:
        return None
    info = probe_kernels_and_torch(
        python, budget, mode, None, progress, cpu=False, env=narrowed_env(selection.narrowed), names=(selection.device,)
    )[0]
    if info.status == "ok" and not info.devices:
        return replace(
            info,
            status="error",
            detail=f"the kernel probe, given only {selection.device}'s GPU "
            f"(CUDA_VISIBLE_DEVICES={selection.narrowed}), saw no CUDA device",
        )
    return info


def narrowed_env(visible: str) -> dict[str, str]:
    """This process's environment, but CUDA_VISIBLE_DEVICES=``visible``: for a child, never set here."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": visible}
