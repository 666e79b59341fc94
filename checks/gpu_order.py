"""gpu order: which physical card each cuda:N is, and whether it is the one you want."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks._gpu import clearly_stronger, describe, env_evidence, gib, precision_profile, predicted, strength
from mpdoctor.analysis.capability import weaker_precisions
from mpdoctor.findings import Finding, FixStep, info, warning
from mpdoctor.analysis.gpu_map import gpu_view, visible_devices_as_meant
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot

FAMILY = "gpu"


def _uuid_steps(rows, why: str) -> list[FixStep]:
    uuids = ",".join(row.uuid for row in rows if row.uuid.startswith(("GPU-", "MIG-")))
    if not uuids:
        return [FixStep(f"{why}: list the UUIDs with `nvidia-smi -L` and put them in CUDA_VISIBLE_DEVICES")]
    return [FixStep(why, fixes.export("CUDA_VISIBLE_DEVICES", uuids))]


@check(
    "GPU001",
    "cuda-order-differs-from-nvidia-smi",
    family=FAMILY,
    fires_on=(
        "titan-rtx-1080ti-cpu-torch",
        "torch-missing",
        "titan-1080ti-fastest-first",
        "titan-1080ti-visible-devices-1",
        "a100-t4-fastest-first",
    ),
    quiet_on=("titan-1080ti-pci-order", "a100-t4-pci-order", "h100-node-healthy"),
)
def cuda_order_differs(snap: Snapshot) -> Iterator[Finding]:
    """`cuda:N` is not the GPU that nvidia-smi calls N.

    ## Why it matters
    nvidia-smi numbers GPUs in PCI bus order. CUDA numbers them fastest first
    unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`, and reads integer
    `CUDA_VISIBLE_DEVICES` entries in *its* order. On a box with different GPUs,
    `CUDA_VISIBLE_DEVICES=1` or `cuda:0` can land on another card than the one
    nvidia-smi shows, and fp16 training then runs on a GPU that lacks what it
    needs (the llama-recipes incident: a GTX 1080 Ti instead of a TITAN RTX).

    ## Fix
    `export CUDA_DEVICE_ORDER=PCI_BUS_ID` so both tools count alike, and select
    GPUs by UUID (`nvidia-smi -L`), which means the same card everywhere.
    """
    view = gpu_view(snap)
    wrong = [
        row
        for row in view.visible
        if row.source == "cuda"
        and not row.mig  # a MIG device is no card of nvidia-smi's numbering
        and row.matched_by in ("uuid", "pci-bus-id", "properties")  # not order-rules: that would be circular
        and row.expected_nvml_index is not None
        and row.nvml_index != row.expected_nvml_index
    ]
    if wrong:
        yield _observed(snap, view, wrong)
        return
    yield from _unconfirmed(view)


def _observed(snap: Snapshot, view, wrong) -> Finding:
    first = wrong[0]
    by_index = {g.index: g for g in snap.machine.nvml.gpus}
    meant = by_index.get(first.expected_nvml_index)
    meant_text = f" ({meant.name})" if meant and meant.name != first.name else ""
    actual = (
        f"nvidia-smi GPU {first.nvml_index} ({first.name}), not nvidia-smi GPU {first.expected_nvml_index}{meant_text}"
    )
    if view.cuda_visible_devices is None:
        title = f"cuda:{first.cuda_ordinal} is {actual}"
    else:
        title = f"CUDA_VISIBLE_DEVICES={view.cuda_visible_devices} made cuda:{first.cuda_ordinal} {actual}"
    evidence = env_evidence(view) + [describe(row) for row in view.visible]
    meant_row = next((row for row in view.devices if row.nvml_index == first.expected_nvml_index and not row.mig), None)
    gaps = weaker_precisions(first, meant_row) if meant_row else []
    if gaps:
        evidence.append(
            f"cuda:{first.cuda_ordinal} is weaker than the GPU nvidia-smi calls "
            f"{first.expected_nvml_index}: {', '.join(gaps)}"
        )
    steps = [FixStep("Number GPUs in PCI order, as nvidia-smi does", fixes.export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"))]
    meant_uuids = visible_devices_as_meant(snap)
    if view.cuda_visible_devices is not None and meant_uuids:
        steps.append(
            FixStep(
                "Select the GPUs you named, by UUID (nvidia-smi's numbering read as you meant it)",
                fixes.export("CUDA_VISIBLE_DEVICES", meant_uuids),
            )
        )
    else:
        best = max(view.visible, key=strength)
        steps += _uuid_steps([best], f"To use only the {best.name}, select it by UUID")
    return warning(title, evidence, steps)


def _unconfirmed(view) -> Iterator[Finding]:
    """No CUDA facts, but a box where CUDA's order and nvidia-smi's can differ."""
    if (view.visible and not predicted(view)) or view.order == "PCI_BUS_ID" or view.hides_all:
        return
    if any(e.kind != "index" for e in view.selected):
        return  # UUIDs mean the same card to everyone
    whole = [row for row in view.devices if row.nvml_index is not None and not row.mig]
    if len({(row.name, row.compute_capability) for row in whole}) < 2:
        return
    # In PCI order cuda:0 is nvidia-smi's first card: when that one is the weaker, GPU002 says so next, and the fix
    # says that it leads there.
    first, best = min(whole, key=lambda row: row.nvml_index), max(whole, key=strength)
    weaker_first = (
        f" (cuda:0 is then the {first.name}; GPU002 then says how to make the {best.name} cuda:0)"
        if clearly_stronger(best, first)
        else ""
    )
    yield info(
        "On this box cuda:N may not be nvidia-smi GPU N: the GPUs differ and CUDA numbers them fastest first",
        env_evidence(view) + [describe(row) for row in whole] + view.notes,
        [
            FixStep(
                "Number GPUs in PCI order, as nvidia-smi does" + weaker_first,
                fixes.export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
            ),
            fixes.inspect("Select GPUs by UUID, which means the same card to every tool", "nvidia-smi -L"),
        ],
    )


@check(
    "GPU002",
    "default-gpu-not-most-capable",
    family=FAMILY,
    fires_on=("titan-1080ti-pci-order", "a100-t4-pci-order", "kernels-titan-1080ti"),
    quiet_on=("titan-1080ti-fastest-first", "a100-t4-fastest-first", "titan-1080ti-visible-devices-1"),
)
def default_gpu_not_most_capable(snap: Snapshot) -> Iterator[Finding]:
    """`cuda:0`, where work goes by default, is not the most capable visible GPU.

    ## Why it matters
    Code that says `"cuda"` or `cuda:0` runs on the weaker card: lower compute
    capability (no native bf16 or tf32, fp16 without tensor cores or at a fraction
    of fp32's rate), or less memory, while a better GPU sits idle.

    ## Fix
    Make the GPU you want `cuda:0` by selecting it by UUID in
    `CUDA_VISIBLE_DEVICES`, or address it explicitly (`torch.device("cuda:1")`).
    """
    view = gpu_view(snap)
    rows = view.visible
    if len(rows) < 2:
        return
    first, best = rows[0], max(rows, key=strength)
    if not clearly_stronger(best, first):
        return
    verb = "will be" if predicted(view) else "is"
    gaps = weaker_precisions(first, best)
    if gaps:
        reason = ", ".join(gaps)
    elif first.cc == best.cc:
        reason = f"{gib(first.memory_total)} of memory instead of {gib(best.memory_total)}"
    else:
        reason = f"compute capability {first.compute_capability} instead of {best.compute_capability}"
    title = (
        f"cuda:0 {verb} the {first.name}, not the most capable visible GPU: cuda:{best.cuda_ordinal} is a "
        f"{best.name} ({reason})"
    )
    peers = [row for row in rows if precision_profile(row) == precision_profile(best) and row.cc == best.cc]
    steps = _uuid_steps(peers, f"Make the {best.name} cuda:0 by selecting it by UUID")
    steps.append(fixes.alternative(f"Or address it explicitly in code: torch.device('cuda:{best.cuda_ordinal}')"))
    yield warning(title, env_evidence(view) + [describe(row) for row in rows], steps)


@check(
    "GPU003",
    "visible-gpus-differ-in-precision",
    family=FAMILY,
    superseded_by=("GPU002",),
    fires_on=("titan-1080ti-fastest-first", "a100-t4-fastest-first"),
    quiet_on=("titan-1080ti-visible-devices-1", "h100-node-healthy"),
)
def visible_gpus_differ(snap: Snapshot) -> Iterator[Finding]:
    """The visible GPUs differ in what precisions they support.

    ## Why it matters
    Multi-GPU work (DDP, `device_map="auto"`, pipeline stages) puts part of the
    model on the weaker card: bf16 there is emulated and slow, Triton and cuDNN
    refuse it, fp16 may lack tensor cores. A dtype chosen for cuda:0 then fails or
    crawls on another device. (When cuda:0 itself is the weaker card, GPU002
    reports it instead, unless GPU002 is ignored.)

    ## Fix
    Restrict `CUDA_VISIBLE_DEVICES` to GPUs alike, by UUID.
    """
    view = gpu_view(snap)
    rows = view.visible
    if len(rows) < 2 or len({precision_profile(row) for row in rows}) < 2:
        return
    # Measured against cuda:0, unless a visible GPU is clearly stronger (cuda:0 is then one of the weaker ones,
    # which GPU002 reports; with GPU002 ignored, this finding speaks of the strongest instead).
    first = rows[0]
    best = max(rows, key=strength)
    reference = best if clearly_stronger(best, first) else first
    weaker = [row for row in rows if precision_profile(row) != precision_profile(reference)]
    gaps = "; ".join(
        f"cuda:{row.cuda_ordinal} {row.name}: " + ", ".join(weaker_precisions(row, reference)) for row in weaker
    )
    alike = [row for row in rows if precision_profile(row) == precision_profile(reference)]
    yield warning(
        f"The visible GPUs differ in precision support; multi-GPU work will use the weaker ones too ({gaps})",
        env_evidence(view) + [describe(row) for row in rows],
        _uuid_steps(alike, f"Keep only the GPUs like cuda:{reference.cuda_ordinal} ({reference.name})"),
    )
