"""gpu visibility: what CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER really select."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks._gpu import describe, env_evidence
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.analysis.gpu_map import gpu_view, visible_devices_as_meant
from mpdoctor.analysis.gpu_table import ORDERS, GpuView
from mpdoctor.analysis.visible_devices import shown_value
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot

FAMILY = "gpu"

# Values people set on purpose to hide every GPU; anything else that hides them all is a mistake.
DELIBERATE_HIDING = {"", "-1"}


def _entry_lines(view: GpuView) -> list[str]:
    lines = []
    for entry in view.visible_entries:
        selects = f" -> {entry.selects}" if entry.selects else ""
        problem = f" ({entry.problem})" if entry.problem else ""
        lines.append(f"entry {entry.text!r}: {entry.kind}{selects}{problem}")
    if view.ignored_entries:
        lines.append(f"ignored after the invalid entry: {', '.join(view.ignored_entries)}")
    return lines


def _uuid_list(snap: Snapshot) -> list[str]:
    return [f"nvidia-smi {g.index}: {g.name} {g.uuid}" for g in snap.machine.nvml.gpus if g.uuid]


@check(
    "GPU004",
    "cuda-visible-devices-drops-gpus",
    family=FAMILY,
    fires_on=("visible-devices-out-of-range", "visible-devices-duplicate"),
    quiet_on=("visible-devices-unknown-uuid", "titan-1080ti-visible-devices-1", "h100-mig-two-selected"),
)
def visible_devices_drop(snap: Snapshot) -> Iterator[Finding]:
    """`CUDA_VISIBLE_DEVICES` silently drops some of the GPUs it lists.

    ## Why it matters
    CUDA stops reading at the first invalid entry (a typo, an index beyond the
    GPU count, an ambiguous or unknown UUID prefix) and shows only the GPUs
    before it, without a warning. PyTorch's own parser, used for
    `torch.cuda.device_count()` before CUDA starts, gives up on a repeated entry
    (count 0) and stops where indices and UUIDs are mixed. A job then trains on
    fewer GPUs than you think, or on none.

    ## Fix
    List each GPU once, all as UUIDs (`nvidia-smi -L`) or all as indices. (A
    value that hides every GPU is GPU005's.)
    """
    view = gpu_view(snap)
    if view.cuda_visible_devices is None or view.hides_all:
        return  # nothing dropped silently: it selects nothing at all (GPU005's problem, not a relation)
    troubled = [e for e in view.visible_entries if e.problem]
    if not (troubled or view.ignored_entries or view.visible_problems):
        return
    problems = view.visible_problems + [e.problem for e in troubled if e.problem not in view.visible_problems]
    evidence = env_evidence(view) + _entry_lines(view) + [describe(row) for row in view.visible]
    meant = visible_devices_as_meant(snap)
    steps = []
    if meant:
        steps.append(
            FixStep(
                "List each GPU once, by UUID (integers read as nvidia-smi indices)",
                fixes.export("CUDA_VISIBLE_DEVICES", meant),
            )
        )
    steps.append(fixes.inspect("Check the UUIDs", "nvidia-smi -L"))
    yield warning(
        f"CUDA_VISIBLE_DEVICES={shown_value(view.cuda_visible_devices)!r} does not select what it lists: "
        f"{problems[0] if problems else 'entries are dropped'}",
        evidence,
        steps,
    )


@check(
    "GPU005",
    "cuda-visible-devices-hides-all",
    family=FAMILY,
    fires_on=("cuda-hidden-by-env", "visible-devices-unknown-uuid", "slurm-nodevfiles"),
    quiet_on=("visible-devices-out-of-range", "titan-1080ti-visible-devices-1", "cuda-unknown-error"),
)
def visible_devices_hide_all(snap: Snapshot) -> Iterator[Finding]:
    """`CUDA_VISIBLE_DEVICES` hides every GPU from CUDA.

    ## Why it matters
    `torch.cuda.is_available()` is False and training runs on the CPU. `""` and
    `-1` do this on purpose; Slurm sets `NoDevFiles` when a job asked for no GPU;
    a UUID no GPU has (a typo, a GPU from another machine) or an invalid first
    entry does it by accident.

    ## Fix
    Unset it, or list the GPUs you want by UUID (`nvidia-smi -L`). Under Slurm
    (`NoDevFiles`), request GPUs with `--gres=gpu:N`; never unset it inside the
    job, which would reach GPUs given to other jobs.
    """
    view = gpu_view(snap)
    if not view.hides_all or not (view.devices or snap.torch.cuda):
        return
    raw = view.cuda_visible_devices or ""
    reason = view.visible_entries[0].problem if view.visible_entries else "it is empty"
    evidence = env_evidence(view) + _entry_lines(view) + _uuid_list(snap)
    evidence += [describe(row) for row in view.hidden]
    if raw.strip() == "NoDevFiles":
        # Slurm's own value in a job that was given no GPU. Unsetting it inside the job would reach GPUs
        # allocated to other jobs where Slurm does not fence devices off (no ConstrainDevices): the only
        # fix is to ask Slurm for GPUs.
        yield error(
            f"CUDA_VISIBLE_DEVICES={shown_value(raw)!r} hides every GPU from CUDA: {reason}",
            evidence,
            [
                FixStep("Ask Slurm for GPUs (in the job script: #SBATCH --gres=gpu:1)", "srun --gres=gpu:1 --pty bash"),
                fixes.inspect("See which GPUs the job was given", 'scontrol show job "$SLURM_JOB_ID"'),
            ],
        )
        return
    steps = [FixStep("Let CUDA see every GPU" + fixes.mixed_gpus_note(snap), "unset CUDA_VISIBLE_DEVICES")]
    if snap.machine.nvml.gpus:
        steps.append(fixes.alternative("Or select GPUs by UUID, from this list"))
        steps.append(fixes.inspect("List the GPUs and their UUIDs", "nvidia-smi -L"))
    make = warning if raw.strip() in DELIBERATE_HIDING else error
    yield make(f"CUDA_VISIBLE_DEVICES={shown_value(raw)!r} hides every GPU from CUDA: {reason}", evidence, steps)


@check(
    "GPU006",
    "cuda-device-order-unknown",
    family=FAMILY,
    fires_on=("device-order-typo",),
    quiet_on=("titan-1080ti-pci-order", "titan-1080ti-fastest-first"),
)
def device_order_unknown(snap: Snapshot) -> Iterator[Finding]:
    """`CUDA_DEVICE_ORDER` has a value CUDA does not document.

    ## Why it matters
    CUDA documents only `FASTEST_FIRST` (the default) and `PCI_BUS_ID`, spelled
    exactly so. Anything else (`PCI_BUS`, `pci_bus_id`) does not give you PCI
    order, so `cuda:N` may still not be nvidia-smi's GPU N.

    ## Fix
    `export CUDA_DEVICE_ORDER=PCI_BUS_ID`.
    """
    view = gpu_view(snap)
    if view.order != "unknown":
        return
    yield warning(
        f"CUDA_DEVICE_ORDER={view.cuda_device_order!r} is not a value CUDA knows ({' or '.join(ORDERS)})",
        env_evidence(view),
        [FixStep("Number GPUs in PCI order, as nvidia-smi does", fixes.export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"))],
    )


@check(
    "GPU007",
    "gpus-invisible-to-cuda",
    family=FAMILY,
    fires_on=("gpus-missing-from-cuda",),
    quiet_on=("titan-1080ti-visible-devices-1", "cuda-hidden-by-env", "h100-mig-one-selected"),
)
def gpus_invisible_to_cuda(snap: Snapshot) -> Iterator[Finding]:
    """NVML sees GPUs that CUDA, in this environment, does not.

    ## Why it matters
    The job runs on fewer GPUs than the machine has, with no error. Inside a
    container the usual cause is device files that were not passed through
    (`--gpus`, the Kubernetes device plugin); NVML can still list every GPU.
    GPUs in MIG mode are reached only through one MIG device; GPUs NVML cannot
    open belong to another container. (CPU-only torch, a driver too old and
    `CUDA_VISIBLE_DEVICES` are reported by TORCH005, TORCH006 and GPU004/GPU005.)

    ## Fix
    Pass the GPUs into the container (`docker run --gpus all`), and check
    `ls -l /dev/nvidia*`.
    """
    view = gpu_view(snap)
    if not any(row.source == "cuda" for row in view.visible):
        return  # torch could not enumerate; the torch checks say why
    deliberate = ("not selected by CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES hides every GPU", "in MIG mode")
    missing = [row for row in view.hidden if not row.not_visible_reason.startswith(deliberate)]
    if not missing:
        return
    foreign = all(row.not_visible_reason.startswith("NVML cannot open it") for row in missing)
    title = (
        f"CUDA sees {len(view.visible)} device(s) but NVML sees {len(snap.machine.nvml.gpus)} GPU(s): "
        f"nvidia-smi {', '.join(str(row.nvml_index) for row in missing)} unused"
    )
    evidence = env_evidence(view) + [describe(row) for row in view.visible + missing]
    steps = [
        fixes.inspect("See which GPU device files this process can open", "ls -l /dev/nvidia*"),
        FixStep("In Docker, pass every GPU through", "docker run --gpus all ..."),
    ]
    yield (info if foreign else warning)(title, evidence, steps)


@check(
    "GPU008",
    "several-mig-devices-selected",
    family=FAMILY,
    fires_on=("h100-mig-two-selected",),
    quiet_on=("h100-mig-one-selected", "visible-devices-duplicate"),
)
def several_mig_devices(snap: Snapshot) -> Iterator[Finding]:
    """`CUDA_VISIBLE_DEVICES` selects more than one MIG device.

    ## Why it matters
    A CUDA process enumerates a single MIG device: the first one listed. The
    others are silently unused, and `cuda:1` fails with "invalid device ordinal".

    ## Fix
    Run one process per MIG device, each with its own `CUDA_VISIBLE_DEVICES=MIG-...`,
    or use whole GPUs for multi-GPU work.
    """
    view = gpu_view(snap)
    migs = [e for e in view.selected if e.kind == "mig-uuid"]
    if len(migs) < 2:
        return
    evidence = env_evidence(view) + _entry_lines(view) + [describe(row) for row in view.visible]
    yield warning(
        f"CUDA_VISIBLE_DEVICES selects {len(migs)} MIG devices, but a CUDA process uses only the first ({migs[0].text})",
        evidence,
        [
            FixStep(
                "Give each process its own MIG device",
                fixes.with_env("CUDA_VISIBLE_DEVICES", migs[0].text, "python train.py"),
            ),
            fixes.inspect("List the MIG devices", "nvidia-smi -L"),
        ],
    )
