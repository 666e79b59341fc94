"""Which physical GPU is each CUDA ordinal: NVML's view, CUDA's view, and the mapping.

NVML (and nvidia-smi) number GPUs in PCI bus order; CUDA numbers them in
``CUDA_DEVICE_ORDER`` (``FASTEST_FIRST`` unless set), after
``CUDA_VISIBLE_DEVICES`` has selected and reordered them. This module ties each
``cuda:N`` that torch reported to an NVML GPU, by the strongest evidence there is:

1. ``uuid``: torch 2.5+ reports each device's UUID (without NVML's ``GPU-``);
2. ``pci-bus-id``: torch 2.8+ reports the PCI location;
3. ``properties``: the only NVML GPU with the same name and compute capability;
4. ``order-rules``: what ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` imply.

When torch did not enumerate devices (missing, CPU-only, CUDA unavailable) the
table is *predicted* from NVML and CUDA's rules, and says so. Pure: facts in,
view out. The view is part of the JSON report (``gpus``).
"""

from __future__ import annotations

from typing import Optional, Union

from mpdoctor.analysis import capability
from mpdoctor.analysis.versions import version_tuple
from mpdoctor.analysis.gpu_table import ORDERS, DeviceRow, GpuView, VisibleEntry
from mpdoctor.snapshot import CudaDevice, MigDevice, NvmlGpu, Snapshot
from mpdoctor.analysis.visible_devices import Device, read_each_entry, read_visible_devices


def effective_order(raw: Optional[str]) -> str:
    if raw is None or raw.strip() == "":
        return "FASTEST_FIRST"
    return raw.strip() if raw.strip() in ORDERS else "unknown"


def strip_prefix(uuid: str) -> str:
    """NVML says GPU-xxxx / MIG-xxxx, torch says xxxx: compare the hex part."""
    for prefix in ("GPU-", "MIG-"):
        if uuid.startswith(prefix):
            return uuid[len(prefix) :].lower()
    return uuid.lower()


def _identity(gpu: NvmlGpu) -> tuple:
    return gpu.name, gpu.compute_capability, gpu.memory_total


Target = Union[NvmlGpu, tuple[NvmlGpu, MigDevice]]


class _Mapper:
    """Builds one GpuView; holds the facts the steps share.

    Every lookup of a GPU (by UUID, PCI id, properties or CUDA_VISIBLE_DEVICES entry) goes through an index
    built once: a scan per device made judging quadratic, minutes for a snapshot of 60k GPUs (issue 33).
    """

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        env = snap.environment.env
        nvml = snap.machine.nvml
        self.gpus = nvml.usable_gpus
        self.view = GpuView(
            cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"), cuda_device_order=env.get("CUDA_DEVICE_ORDER")
        )
        self.view.order = effective_order(self.view.cuda_device_order)
        self.order_assumed = False
        self.cuda_order = self._cuda_order()
        self.selection = read_visible_devices(
            self.view.cuda_visible_devices,
            *_named_devices(self.gpus),
            [Device(g.uuid, g.index) for g in self.cuda_order] if self.cuda_order is not None else None,
        )
        # properties that build a list: read once, not once per device
        self.valid = self.selection.valid
        self.hides_all = self.selection.hides_all
        self.claimed: set[int] = set()  # NVML indices already tied to a CUDA ordinal
        self.uuids = _uuid_index(self.gpus)
        self.by_pci: dict[str, list[NvmlGpu]] = {}
        self.by_properties: dict[tuple[str, str], list[NvmlGpu]] = {}
        for gpu in self.gpus:
            if not gpu.mig_enabled:
                self.by_pci.setdefault(gpu.pci_bus_id, []).append(gpu)
            self.by_properties.setdefault((gpu.name, gpu.compute_capability), []).append(gpu)
        if nvml.status not in ("ok", "not-run") and (snap.torch.devices or nvml.status != "unavailable"):
            self.view.notes.append(
                f"NVML is unusable ({nvml.reason or nvml.status}): CUDA devices cannot be tied to physical GPUs"
            )

    # ------------------------------------------------------------ CUDA's order

    def _cuda_order(self) -> Optional[list[NvmlGpu]]:
        """Whole GPUs in the order CUDA numbers them before CUDA_VISIBLE_DEVICES; None if unknowable."""
        whole = [g for g in self.gpus if not g.mig_enabled]
        pci_order = sorted(whole, key=lambda g: (g.pci_bus_id or "~", g.index))
        if self.view.order == "PCI_BUS_ID":
            return pci_order
        if len({_identity(g) for g in whole}) <= 1:
            self.order_assumed = len(whole) > 1
            return pci_order
        return None

    def _note_assumed_order(self) -> None:
        if self.order_assumed:
            self.order_assumed = False  # say it once
            self.view.notes.append(
                "The GPUs are identical, so CUDA's FASTEST_FIRST order is taken to be PCI order, as CUDA does "
                "in practice (NVIDIA leaves the order of equally fast GPUs unspecified)"
            )

    # ------------------------------------------------------------ matching

    def _by_uuid(self, uuid: str) -> Optional[Target]:
        return self.uuids.get(strip_prefix(uuid))

    def _unique(self, candidates: list[NvmlGpu]) -> Optional[NvmlGpu]:
        """The one candidate, if there is exactly one on the machine and it is not taken yet.

        Uniqueness is judged among all GPUs, not the ones left: the last of eight
        identical GPUs is not identified by its name.
        """
        return candidates[0] if len(candidates) == 1 and candidates[0].index not in self.claimed else None

    def _expected_target(self, ordinal: int) -> Optional[Target]:
        """The device CUDA's rules say cuda:ordinal is."""
        if self.selection.is_set:
            valid = self.valid
            entry = valid[ordinal] if 0 <= ordinal < len(valid) else None
            if entry is None or entry.device is None:
                return None
            if entry.kind == "index":
                self._note_assumed_order()
            return self._by_uuid(entry.device.uuid)
        if self.cuda_order is not None and 0 <= ordinal < len(self.cuda_order):
            self._note_assumed_order()
            return self.cuda_order[ordinal]
        return None

    def _match(self, dev: CudaDevice) -> tuple[Optional[Target], str]:
        if dev.uuid:
            target = self._by_uuid(dev.uuid)
            if target is not None:
                return target, "uuid"
        if dev.pci_bus_id:
            hit = self._unique(self.by_pci.get(dev.pci_bus_id, []))
            if hit:
                return hit, "pci-bus-id"
        hit = self._unique(self.by_properties.get((dev.name, dev.compute_capability), []))
        if hit:
            return hit, "properties"
        target = self._expected_target(dev.ordinal)
        if target is not None and _gpu_of(target).index not in self.claimed:
            return target, "order-rules"
        return None, ""

    def _expected_nvml_index(self, ordinal: int) -> Optional[int]:
        if not self.selection.is_set:
            return ordinal if self.gpus else None
        valid = self.valid
        if not 0 <= ordinal < len(valid):
            return None
        entry = valid[ordinal]
        if entry.kind == "index":
            return entry.number
        return entry.device.index if entry.device else None

    # ------------------------------------------------------------ rows

    def _row(
        self,
        ordinal: Optional[int],
        target: Optional[Target],
        source: str,
        how: str = "",
        dev: Optional[CudaDevice] = None,
    ) -> DeviceRow:
        row = DeviceRow(cuda_ordinal=ordinal, source=source, matched_by=how)
        if target is not None:
            gpu = _gpu_of(target)
            mig = target[1] if isinstance(target, tuple) else None
            self.claimed.add(gpu.index)
            row.nvml_index, row.pci_bus_id = gpu.index, gpu.pci_bus_id
            row.name = mig.name if mig and mig.name else gpu.name
            row.uuid = mig.uuid if mig else gpu.uuid
            row.memory_total = mig.memory_total if mig else gpu.memory_total
            row.compute_capability = gpu.compute_capability
            row.mig = mig is not None
        if dev is not None:  # CUDA's own word wins for what CUDA runs on
            row.name = row.name or dev.name
            row.uuid = row.uuid or dev.uuid
            row.pci_bus_id = row.pci_bus_id or dev.pci_bus_id
            row.compute_capability = dev.compute_capability or row.compute_capability
            row.memory_total = row.memory_total if row.memory_total is not None else dev.memory_total
        if ordinal is not None:
            row.expected_nvml_index = self._expected_nvml_index(ordinal)
        for name, level in capability.support(row.cc).items():
            setattr(row, name, level)
        return row

    def observed_rows(self) -> None:
        for dev in self.snap.torch.devices:
            target, how = self._match(dev)
            self.view.devices.append(self._row(dev.ordinal, target, "cuda", how, dev))

    def predicted_rows(self, why: str) -> None:
        """What CUDA would number each GPU, when torch could not tell."""
        self.view.notes.append(
            f"torch did not list CUDA devices ({why}); cuda ordinals marked * are predicted from NVML and CUDA's rules"
        )
        if self.selection.is_set:
            targets: list[Optional[Target]] = []
            for entry in self.valid:
                targets.append(self._by_uuid(entry.device.uuid) if entry.device else None)
                if entry.kind == "mig-uuid":
                    break  # CUDA enumerates a single MIG device per process
            how = "uuid" if all(e.kind != "index" for e in self.valid) else "order-rules"
            if how == "order-rules":
                self._note_assumed_order()
        elif self.cuda_order is not None:
            targets, how = list(self.cuda_order), "order-rules"
            self._note_assumed_order()
        else:
            self.view.notes.append(
                f"CUDA_DEVICE_ORDER is {self.view.order} and the GPUs differ, so which GPU "
                "CUDA numbers first cannot be predicted without torch"
            )
            return
        seen: set[str] = set()
        for ordinal, target in enumerate(targets):
            if target is None:
                self.view.notes.append(
                    f"cuda:{ordinal} onwards cannot be predicted: CUDA numbers integer "
                    f"entries in its {self.view.order} order, which is not known here"
                )
                return
            key = target[1].uuid if isinstance(target, tuple) else target.uuid
            if key in seen:
                self.view.notes.append(
                    "CUDA_VISIBLE_DEVICES repeats a GPU; what CUDA does then is undocumented, "
                    "so the prediction stops there"
                )
                return
            seen.add(key)
            self.view.devices.append(self._row(ordinal, target, "predicted", how))

    def hidden_rows(self, torch_reason: str) -> None:
        selected = {e.device.index for e in self.valid if e.device}
        unclaimed = [gpu for gpu in self.gpus if gpu.index not in self.claimed]
        for gpu in unclaimed:
            row = self._row(None, gpu, "nvml")
            row.not_visible_reason = self._hidden_reason(gpu, selected, torch_reason)
            self.view.devices.append(row)

    def _hidden_reason(self, gpu: NvmlGpu, selected: set[int], torch_reason: str) -> str:
        if self.hides_all:
            return "CUDA_VISIBLE_DEVICES hides every GPU"
        if self.selection.is_set and gpu.index not in selected:
            return "not selected by CUDA_VISIBLE_DEVICES"
        if gpu.error:
            return f"NVML cannot open it ({gpu.error.split(':')[0]}); it may belong to another container"
        if gpu.mig_enabled:
            return "in MIG mode: CUDA uses it only through a MIG device, one per process"
        if torch_reason:
            return torch_reason
        return "CUDA does not enumerate it (device files not mounted into this container, or unsupported)"


def _named_devices(gpus: list[NvmlGpu]) -> tuple[list[Device], list[Device]]:
    """The GPUs and MIG devices that have a UUID, as CUDA_VISIBLE_DEVICES can name them."""
    return (
        [Device(g.uuid, g.index) for g in gpus if g.uuid],
        [Device(m.uuid, g.index) for g in gpus for m in g.mig_devices if m.uuid],
    )


def _uuid_index(gpus: list[NvmlGpu]) -> dict[str, Target]:
    """Every GPU and MIG device by its UUID's hex part; the first of a repeated UUID wins, as a scan would find it."""
    index: dict[str, Target] = {}
    for gpu in gpus:
        if gpu.uuid:
            index.setdefault(strip_prefix(gpu.uuid), gpu)
        for mig in gpu.mig_devices:
            if mig.uuid:
                index.setdefault(strip_prefix(mig.uuid), (gpu, mig))
    return index


def _gpu_of(target: Target) -> NvmlGpu:
    return target[0] if isinstance(target, tuple) else target


def torch_blind_reason(snap: Snapshot) -> str:
    """Why torch could not list CUDA devices, or "" when it did (or should have)."""
    torch = snap.torch
    if torch.status != "imported":
        return f"torch is {torch.status.replace('-', ' ')}"
    if torch.hip:
        return "torch is a ROCm build"
    if not torch.cuda:
        return "torch is a CPU-only build"
    if torch.cuda_available is False:
        driver = snap.machine.nvml.cuda_driver_version
        if driver and version_tuple(torch.cuda)[0] > version_tuple(driver)[0]:
            return f"torch's CUDA {torch.cuda} needs a newer driver (this one supports CUDA {driver})"
        return "torch.cuda.is_available() is False"
    if torch.cuda_available is None:
        return "torch's CUDA check did not finish"
    return ""


def device_table(snap: Snapshot) -> GpuView:
    """gpu_view for the report: a snapshot that breaks the mapping costs the table, not the run.

    The gpu checks call gpu_view directly, so the same fault also surfaces as
    their MPD001 findings, naming the error.
    """
    try:
        return gpu_view(snap)
    except Exception as exc:  # a bug or a hand-edited snapshot; say so in the report
        return GpuView(notes=[f"the device table could not be built: {type(exc).__name__}: {exc}"])


def gpu_view(snap: Snapshot) -> GpuView:
    """The device table and everything it rests on, for one snapshot."""
    mapper = _Mapper(snap)
    view, selection = mapper.view, mapper.selection
    view.visible_entries = [
        VisibleEntry(e.text, e.kind, e.device.uuid if e.device else "", e.problem) for e in selection.entries
    ]
    view.ignored_entries = list(selection.ignored)
    view.visible_problems = list(selection.problems)
    blind = torch_blind_reason(snap)
    if snap.torch.devices:
        mapper.observed_rows()
    elif mapper.gpus and not selection.hides_all:
        mapper.predicted_rows(blind or "it reported none")
    mapper.hidden_rows(blind)
    return view


def visible_devices_as_meant(snap: Snapshot) -> str:
    """CUDA_VISIBLE_DEVICES rewritten as full UUIDs, reading integers as nvidia-smi indices.

    Every entry that names a device is kept once, in order, whatever CUDA would do
    with the original; "" when nothing can be resolved (no NVML, nothing valid).
    """
    raw = snap.environment.env.get("CUDA_VISIBLE_DEVICES") or ""
    found = snap.machine.nvml.usable_gpus
    gpus, migs = _named_devices(found)
    by_index = [Device(g.uuid, g.index) for g in found]  # nvidia-smi numbering
    out: dict[str, None] = {}  # ordered, and a repeat found in one step
    for entry in read_each_entry(raw, gpus, migs, by_index):
        if entry.kind != "invalid" and entry.device and entry.device.uuid:
            out.setdefault(entry.device.uuid)
    return ",".join(out)
