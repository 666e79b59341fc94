"""The support-ticket attachment: Markdown ready to paste into a GitHub issue.

Summary, findings with their fixes, an environment table, and the whole snapshot
as JSON in a collapsed ``<details>`` block. Always rendered from a redacted report.
"""

from __future__ import annotations

import json

from mpdoctor.findings import Finding
from mpdoctor.analysis.kernel_view import MATRIX_LEGEND, kernel_notes, label, matrix_groups
from mpdoctor.render.devices import HEADERS, device_rows, footnotes
from mpdoctor.render.text import environment_line, summary_line
from mpdoctor.doctor.report import Report, report_data


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def _fence(text: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside, so content cannot escape it."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def finding_lines(finding: Finding) -> list[str]:
    lines = [f"### {finding.severity.upper()} `{finding.code}` {finding.title}", ""]
    if finding.evidence:
        lines += ["Evidence:", "", _fence("\n".join(finding.evidence)), ""]
    if finding.fix:
        lines.append("Fix:")
        lines.append("")
        for number, step in enumerate(finding.fix, 1):
            lines.append(f"{number}. {step.text}")
            if step.command:
                lines += ["", _indent(_fence(step.command, "sh"), 3)]
        lines.append("")
    return lines


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _environment_rows(report: Report) -> list[tuple[str, str]]:
    snap = report.snapshot
    py, torch, nvml = snap.environment.python, snap.torch, snap.machine.nvml
    rows = [
        ("mpdoctor", report.mpdoctor_version),
        ("Python", f"{py.version} ({py.executable})" if py else "unknown"),
        ("Platform", py.platform if py else "unknown"),
        ("torch", f"{torch.version} ({torch.status})" if torch.version else torch.status),
        ("torch CUDA / cuDNN", f"{torch.cuda or '-'} / {torch.cudnn or '-'}"),
        ("torch arch list", " ".join(torch.arch_list) or "-"),
        ("NVIDIA driver", f"{nvml.driver_version} (CUDA {nvml.cuda_driver_version})" if nvml.status == "ok"
         else f"{nvml.status}: {nvml.reason}"),
    ]
    return rows


def _devices(report: Report) -> list[str]:
    view = report.gpus
    if not view.devices:
        return ["## GPUs", ""] + [f"- {line}" for line in view.notes] + [""] if view.notes else []
    lines = ["## GPUs", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in device_rows(view)]
    lines += [""] + [f"- {line}" for line in footnotes(view)] + [""]
    return lines


def _kernels(report: Report) -> list[str]:
    lines = ["## Precision, measured", ""]
    groups = matrix_groups(report.snapshot)
    for device, alike, headers, rows in groups:
        also = f" ({', '.join(alike)} alike)" if alike else ""
        lines += [f"**{label(device)}**{also}", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows] + [""]
    lines += [f"- {line}" for line in kernel_notes(report.snapshot) + ([MATRIX_LEGEND] if groups else [])]
    return lines + [""]


def render_markdown(report: Report) -> str:
    lines = [
        "## mpdoctor report",
        "",
        f"**{summary_line(report.findings)}** - {environment_line(report.snapshot)}",
        "",
        f"Created {report.created} by mpdoctor {report.mpdoctor_version}. Secrets are redacted.",
        "",
    ]
    if report.findings:
        lines += ["## Findings", ""]
        for finding in report.findings:
            lines += finding_lines(finding)
    else:
        lines += ["No problems found.", ""]
    lines += ["## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {_cell(key)} | {_cell(value)} |" for key, value in _environment_rows(report)]
    lines += [""] + _devices(report) + _kernels(report)
    snapshot_json = json.dumps(report_data(report)["snapshot"], indent=2)
    lines += ["", "<details><summary>Full snapshot (JSON)</summary>", "", _fence(snapshot_json, "json"), "", "</details>", ""]
    return "\n".join(lines)
