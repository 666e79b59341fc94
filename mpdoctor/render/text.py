"""The terminal view: the triaged fix list, errors first, then a one-line summary."""

from __future__ import annotations

from collections import Counter

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mpdoctor.findings import Finding
from mpdoctor.analysis.gpu_table import GpuView
from mpdoctor.analysis.kernel_table import KernelView
from mpdoctor.analysis.kernel_view import short
from mpdoctor.render import sanitise
from mpdoctor.render.devices import HEADERS, device_rows, footnotes, grouped_how, longest_word
from mpdoctor.render.wrap import join_parts, print_command, print_head, print_prose, wraps
from mpdoctor.doctor.report import Report
from mpdoctor.snapshot import Snapshot

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
HEAD = 19  # columns before a finding's title: the severity (8) and the code (10 and a space)


def environment_line(snap: Snapshot) -> str:
    """One line naming what was examined: interpreter, torch, driver."""
    return " | ".join(environment_parts(snap))


def environment_parts(snap: Snapshot) -> list[str]:
    """What was examined, part by part (interpreter, torch, driver): a narrow terminal breaks between them.

    Each part quotes the snapshot (an interpreter path, a version, NVML's reason), so each is made safe to show
    (``render/sanitise.py``); the Markdown ticket escapes them further.
    """
    return [sanitise.line(part) for part in _environment_parts(snap)]


def _environment_parts(snap: Snapshot) -> list[str]:
    py = snap.environment.python
    parts = [f"python {py.version} ({py.executable})" if py else "python: unknown"]
    torch = snap.torch
    if torch.status == "mocked":
        parts.append(f"torch: `import torch` gives {torch.imported_as} (mock-torch is on, see ONEFLOW004)")
    elif torch.status == "imported" and not torch.version:
        parts.append("torch: imports, but is not a working torch")
    elif torch.status == "imported":
        build = f"CUDA {torch.cuda}" if torch.cuda else (f"ROCm {torch.hip}" if torch.hip else "CPU-only")
        parts.append(f"torch {torch.version} ({build})")
    else:
        parts.append(f"torch: {torch.status}")
    nvml = snap.machine.nvml
    if nvml.status == "ok":
        parts.append(f"driver {nvml.driver_version} (CUDA {nvml.cuda_driver_version}), {len(nvml.gpus)} GPU(s)")
    else:
        parts.append(f"NVML: {nvml.reason or nvml.status}")
    return parts


def summary_line(findings: list[Finding]) -> str:
    counts = Counter(f.severity for f in findings)

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return f"{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')}, {counts['info']} info"


def render_finding(console: Console, finding: Finding) -> None:
    """One finding. Every field may quote what the machine said (a path, an env value, a traceback, a tensor name):
    each goes through ``render/sanitise.py``; evidence and fix steps keep their lines (a traceback, a code block
    in a fix), the title and the command are one line."""
    head = Text()
    head.append(f"{sanitise.line(finding.severity):<8}", style=STYLE.get(finding.severity, ""))
    head.append(f"{sanitise.line(finding.code):<10} ", style="bold")
    head.append(sanitise.line(finding.title))
    print_head(console, head, HEAD)
    for line in finding.evidence:
        for i, part in enumerate(sanitise.lines(line)):
            print_prose(console, part, f"  {'-' if i == 0 else ' '} ", style="dim")
    for number, step in enumerate(finding.fix, 1):
        print_prose(console, sanitise.block(step.text), f"  {number}. ")  # its own lines: a code block in a fix
        if step.command:
            print_command(console, sanitise.line(step.command))
    console.print()


def _table() -> Table:
    # Two spaces between columns, not three: the device table's ten columns then fit 80 without cutting a cell.
    return Table(box=box.SIMPLE, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 1, 0, 0))


def render_devices(view: GpuView, console: Console) -> None:
    """The device table, when there is any GPU to show (or a note on why there is none)."""
    if not view.devices:
        for line in view.notes:
            print_prose(console, sanitise.line(line), "  ", style="dim")
        if view.notes:
            console.print()
        return
    table = _table()
    rows = device_rows(view, compact=True)
    for header in HEADERS[:-1]:  # the "how" column becomes sentences below
        # Only the name may wrap, and only at its spaces: never narrower than its longest word
        # ("A100-SXM4-40GB" is not cut as A100-SXM4-40G / B); every other cell is one short word.
        name = header == "name"
        table.add_column(
            "smi" if header == "nvidia-smi" else header,
            overflow="ellipsis",
            no_wrap=not name,
            min_width=longest_word(rows, HEADERS.index(header)) if name else None,
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    for line in grouped_how(view) + footnotes(view):
        print_prose(console, sanitise.line(line), "  ", style="dim")
    console.print()


def render_kernels(view: KernelView, console: Console) -> None:
    """The measured capability matrix as judged (``Report.kernels``), one table per distinct device."""
    shown = view.shown
    for device, alike in shown:
        also = f"; {', '.join(alike)} alike" if alike else ""
        print_prose(console, sanitise.line(f"Measured on {device.label}{also}"), style="bold")
        table = _table()
        table.add_column("op", no_wrap=True, justify="left")
        for dtype in device.dtypes:
            table.add_column(sanitise.line(short(dtype)), no_wrap=True, justify="right")  # a hand-edited dtype
        for row in device.rows:
            table.add_row(*(Text(sanitise.line(c)) for c in [row.name, *row.cells]))
        console.print(table)
    for line in view.notes + ([view.legend] if shown else []):
        print_prose(console, sanitise.line(line), "  ", style="dim")
    console.print()


def render_text(report: Report, console: Console) -> None:
    parts = environment_parts(report.snapshot)
    # On a terminal the header breaks between its parts (never inside a version or a path); elsewhere one line.
    first = f"mpdoctor {report.mpdoctor_version}: {parts[0]}"
    lines = join_parts([first, *parts[1:]], console.width) if wraps(console) else [" | ".join([first, *parts[1:]])]
    for line in lines:
        console.print(Text(line, style="bold"), soft_wrap=True)
    project = report.snapshot.environment.project.summary()  # the root "your code" means, and why
    if project:
        print_prose(console, sanitise.line(project), style="dim")
    console.print()
    render_devices(report.gpus, console)
    render_kernels(report.kernels, console)
    for finding in report.findings:
        render_finding(console, finding)
    if any(f.severity == "error" for f in report.findings):
        verdict = "Fix the errors first; each lists its commands."
    else:
        verdict = "No errors." if report.findings else "No problems found."
    print_prose(console, f"{summary_line(report.findings)}. {verdict}", style="bold")
