"""The device table: every GPU as NVML and CUDA see it. Plain data, part of the JSON report.

Built by :mod:`mpdoctor.analysis.gpu_map` from a snapshot; rendered by the text and
Markdown views; read by the gpu checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mpdoctor.analysis import capability
from mpdoctor.schema.serde import fact
from mpdoctor.analysis.visible_devices import before_invalid
from mpdoctor.snapshot.vocab import CudaOrder, DeviceSource, MatchedBy, PrecisionLevel, VisibleEntryKind

ORDERS = ("FASTEST_FIRST", "PCI_BUS_ID")
PRECISION_DOC = (
    "Expected hardware support from the compute capability: tensor-cores, native, slow, emulated or no; "
    "empty when the compute capability is unknown"
)


@dataclass
class DeviceRow:
    """One line of the device table: a CUDA device, or a GPU that CUDA does not see."""

    cuda_ordinal: Optional[int] = fact("N in cuda:N; null when CUDA does not see this GPU", None)
    nvml_index: Optional[int] = fact("nvidia-smi index of the GPU (of the parent GPU for a MIG device)", None)
    name: str = fact("Device name", "")
    uuid: str = fact("NVML UUID, GPU-... or MIG-...; torch's when no NVML GPU matched", "")
    pci_bus_id: str = fact("Normalised PCI bus id", "")
    compute_capability: str = fact("e.g. 8.6", "")
    memory_total: Optional[int] = fact("Total memory in bytes", None)
    mig: bool = fact("A MIG device rather than a whole GPU", False)
    source: DeviceSource = fact(
        "cuda (torch reported it), predicted (from NVML and CUDA's rules) or nvml (NVML only)", ""
    )
    matched_by: MatchedBy = fact(
        "How cuda:N was tied to the NVML GPU: uuid, pci-bus-id, properties or order-rules; "
        "empty when no NVML GPU matched",
        "",
    )
    expected_nvml_index: Optional[int] = fact(
        "The nvidia-smi index a user would take cuda:N to be, reading CUDA_VISIBLE_DEVICES as nvidia-smi indices "
        "(N itself when it is unset)",
        None,
    )
    not_visible_reason: str = fact("Why CUDA does not see this GPU, when it does not", "")
    fp16: PrecisionLevel = fact(PRECISION_DOC, "")
    bf16: PrecisionLevel = fact(PRECISION_DOC, "")
    tf32: PrecisionLevel = fact(PRECISION_DOC, "")
    fp8: PrecisionLevel = fact(PRECISION_DOC, "")

    @property
    def cc(self) -> Optional[int]:
        return capability.parse_capability(self.compute_capability)

    @property
    def label(self) -> str:
        """How findings name the device: ``cuda:0 (NVIDIA TITAN RTX, nvidia-smi 1)``."""
        where = f"nvidia-smi {self.nvml_index}" if self.nvml_index is not None else "no NVML match"
        head = f"cuda:{self.cuda_ordinal}" if self.cuda_ordinal is not None else "not visible to CUDA"
        return f"{head} ({self.name or 'unknown'}, {where})"


@dataclass
class VisibleEntry:
    """One entry of CUDA_VISIBLE_DEVICES and what CUDA makes of it."""

    text: str = fact("The entry as written", "")
    kind: VisibleEntryKind = fact("index, gpu-uuid, mig-uuid or invalid", "")
    selects: str = fact("UUID of the device it selects, when known", "")
    problem: str = fact("Why it is invalid or suspicious", "")


@dataclass
class GpuView:
    """Every GPU as NVML and CUDA see it, and what the environment variables select."""

    cuda_visible_devices: Optional[str] = fact("CUDA_VISIBLE_DEVICES as set; null when unset", None)
    cuda_device_order: Optional[str] = fact("CUDA_DEVICE_ORDER as set; null when unset", None)
    order: CudaOrder = fact("The order CUDA numbers GPUs in: FASTEST_FIRST, PCI_BUS_ID or unknown", "FASTEST_FIRST")
    visible_entries: list[VisibleEntry] = fact("CUDA_VISIBLE_DEVICES read with CUDA's rules", factory=list)
    ignored_entries: list[str] = fact("Entries after the first invalid one, which CUDA ignores", factory=list)
    visible_problems: list[str] = fact("What is wrong with CUDA_VISIBLE_DEVICES, in words", factory=list)
    devices: list[DeviceRow] = fact("CUDA devices in ordinal order, then GPUs CUDA does not see", factory=list)
    notes: list[str] = fact("What the mapping could not know, and what it assumed", factory=list)

    @property
    def visible(self) -> list[DeviceRow]:
        return [row for row in self.devices if row.cuda_ordinal is not None]

    @property
    def hidden(self) -> list[DeviceRow]:
        return [row for row in self.devices if row.cuda_ordinal is None]

    @property
    def selected(self) -> list[VisibleEntry]:
        """The CUDA_VISIBLE_DEVICES entries CUDA uses: those before the first invalid one."""
        return before_invalid(self.visible_entries)

    @property
    def hides_all(self) -> bool:
        return self.cuda_visible_devices is not None and not self.selected
