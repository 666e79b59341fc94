"""The device table as rows of text, shared by the terminal and Markdown views."""

from __future__ import annotations

from mpdoctor.analysis.gpu_table import DeviceRow, GpuView
from mpdoctor.render import sanitise

HEADERS = ("cuda", "nvidia-smi", "name", "PCI bus", "cc", "memory", "fp16", "bf16", "tf32", "fp8", "how")
# The compute capability's prediction, in words of its own: "slow" is the measured matrix's word (a dtype timed far
# slower than fp32, kernel_table.MATRIX_LEGEND); the predicted level "slow" (units at a fraction of fp32's rate) is
# drawn "low" here. The JSON keeps the level's name (DeviceRow.fp16 ...: "slow").
SHORT = {"tensor-cores": "TC", "native": "yes", "slow": "low", "emulated": "emul", "no": "-", "": "?"}
LEGEND = (
    "TC: tensor cores, emul: emulated in fp32, low: a fraction of fp32's rate; predicted from "
    "the compute capability, not measured"
)


def _cuda_cell(row: DeviceRow) -> str:
    if row.cuda_ordinal is None:
        return "-"
    return f"cuda:{row.cuda_ordinal}" + ("*" if row.source == "predicted" else "")


def _how(row: DeviceRow) -> str:
    if row.cuda_ordinal is None:
        return f"not visible: {row.not_visible_reason}" if row.not_visible_reason else "not visible"
    return row.matched_by or "no NVML match"


def _short_bus(bus: str) -> str:
    return bus[5:] if bus.startswith("0000:") else bus


def device_rows(view: GpuView, compact: bool = False) -> list[tuple[str, ...]]:
    """One tuple per device, in HEADERS order; ``compact`` (terminals) drops "how" and shortens."""
    rows = []
    for row in view.devices:
        memory = f"{row.memory_total / 1024**3:.0f} GiB" if row.memory_total else "?"
        name = row.name or "?"
        cells = [
            _cuda_cell(row),
            str(row.nvml_index) if row.nvml_index is not None else "-",
            name[len("NVIDIA ") :] if compact and name.startswith("NVIDIA ") else name,
            (_short_bus(row.pci_bus_id) if compact else row.pci_bus_id) or "?",
            row.compute_capability or "?",
            memory,
            *(SHORT.get(level, level) for level in (row.fp16, row.bf16, row.tf32, row.fp8)),
        ]
        if not compact:
            cells.append(_how(row))
        # Cells quote NVML and torch (a name, a bus id): made safe to show here, for every format that draws them.
        rows.append(tuple(sanitise.line(cell) for cell in cells))
    return rows


def grouped_how(view: GpuView) -> list[str]:
    """The "how" column as sentences, for views too narrow for it."""
    lines = []
    methods: dict[str, list[str]] = {}
    for row in view.visible:
        methods.setdefault(row.matched_by or "nothing (no NVML match)", []).append(f"cuda:{row.cuda_ordinal}")
    for method, ordinals in methods.items():
        lines.append(f"{', '.join(ordinals)} tied to nvidia-smi by {method}")
    reasons: dict[str, list[str]] = {}
    for row in view.hidden:
        reasons.setdefault(row.not_visible_reason or "unknown", []).append(str(row.nvml_index))
    for reason, indices in reasons.items():
        lines.append(f"nvidia-smi {', '.join(indices)} not visible to CUDA: {reason}")
    return lines


def footnotes(view: GpuView) -> list[str]:
    lines = [LEGEND]
    if any(row.source == "predicted" for row in view.devices):
        lines.append("*: predicted from NVML and CUDA's rules, not reported by torch")
    cvd, order = view.cuda_visible_devices, view.cuda_device_order
    lines.append(f"CUDA_VISIBLE_DEVICES={cvd!r}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset")
    lines.append(f"CUDA_DEVICE_ORDER={order!r}" if order is not None else "CUDA_DEVICE_ORDER unset (FASTEST_FIRST)")
    return lines + view.notes


def longest_word(rows: list[tuple[str, ...]], column: int) -> int:
    """The widest word in one column: the narrowest that column may be without cutting a word."""
    return max((len(word) for row in rows for word in row[column].split()), default=1)
