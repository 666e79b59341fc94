"""The support-ticket attachment: Markdown ready to paste into a GitHub issue, bounded in size.

The verdict, the findings with their fixes, the key environment facts, the device
table and the measured capability matrix, in at most ``LIMIT`` characters for any
environment: GitHub refuses an issue body over 65,536, and the user still has to
say what they were doing. Each part has its own share; what does not fit is cut at
a whole line, finding or table row, and the cut says how much was left out and
where the rest is ("... 212 more findings, see the snapshot"). Nothing is dropped
silently.

The full snapshot is not embedded (it made tickets of 43-64 KB): the CLI writes it,
redacted, to a second file (``--save-snapshot FILE``, or ``report.snapshot.json``
beside ``--output report.md``), and the report names that file and the command that
re-judges it. Always rendered from a redacted report.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from typing import Callable

from mpdoctor.analysis.kernel_view import short
from mpdoctor.checks.fixes import mpdoctor_check
from mpdoctor.doctor.report import Report
from mpdoctor.findings import Finding
from mpdoctor.portable.redact import redact_text
from mpdoctor.render import sanitise
from mpdoctor.render.devices import HEADERS, device_rows, footnotes
from mpdoctor.render.text import environment_line, summary_line

LIMIT = 20_000  # characters in the whole report
# Shares of the parts other than the findings, which get what is left (at least ~11,000).
ENVIRONMENT, DEVICES, KERNELS, NOTE = 2_400, 3_000, 3_000, 1_000
CELL = 200  # characters of one table cell
LINE = 400  # characters of one evidence line or fix step
EVIDENCE_LINES = 12  # evidence lines of one finding
COMMAND = 1_000  # a longer fix command is left out whole: a command cut short must never be pasted
NOTES = 8  # footnote lines under a table
FULL_SHARE = 0.7  # of the findings' room, at most this much for findings in full; the rest names the others


def _clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def _cell(text: str) -> str:
    return sanitise.markdown(_clip(text, CELL), cell=True) or " "


def _fence(text: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside, so content cannot escape it."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _code(text: str) -> str:
    """Inline code that a backtick inside cannot end early."""
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _within(blocks: list[list[str]], budget: int, tail: Callable[[int], str]) -> list[str]:
    """Whole blocks while they fit in ``budget`` characters, then ``tail(number left out)`` when any was."""
    out: list[str] = []
    for i, block in enumerate(blocks):
        room = budget - (0 if i == len(blocks) - 1 else len(tail(len(blocks) - i)) + 4)
        if _size(out) + _size(block) > room:
            return out + ["", tail(len(blocks) - i), ""]
        out += block
    return out


def finding_lines(finding: Finding, bounded: bool = False) -> list[str]:
    """One finding: evidence and fix steps. ``bounded`` (the ticket): each line clipped, long evidence cut with
    a count, an overlong command left out whole. The audit report shows its findings unbounded."""

    def clip(text: str) -> str:
        return _clip(text, LINE) if bounded else text

    # What the finding quotes from the machine is made inert (sanitise.markdown) in prose; inside a fence only its
    # controls need showing, and the fence is longer than any backtick run in it.
    code = sanitise.code(finding.code)
    lines = [f"### {sanitise.line(finding.severity.upper())} {code} {sanitise.markdown(clip(finding.title))}", ""]
    shown = finding.evidence[:EVIDENCE_LINES] if bounded else finding.evidence
    evidence = [sanitise.block(clip(line)) for line in shown]
    if len(finding.evidence) > len(shown):
        evidence.append(f"... {len(finding.evidence) - len(shown)} more lines of evidence, see the snapshot")
    if evidence:
        lines += ["Evidence:", "", _fence("\n".join(evidence)), ""]
    if finding.fix:
        lines += ["Fix:", ""]
        for number, step in enumerate(finding.fix, 1):
            lines.append(f"{number}. {sanitise.markdown(clip(step.text))}")
            if step.command and (len(step.command) <= COMMAND or not bounded):
                lines += ["", _indent(_fence(sanitise.line(step.command), "sh"), 3)]
            elif step.command:
                lines += [
                    "",
                    f"   (its command, {len(step.command)} characters, is too long for a ticket: "
                    "`mpdoctor check` on the snapshot prints it)",
                ]
        lines.append("")
    return lines


def _one_line(finding: Finding) -> list[str]:
    title = sanitise.markdown(_clip(finding.title, LINE))
    return [f"- **{sanitise.line(finding.severity.upper())}** {sanitise.code(finding.code)} {title}"]


def _counted(findings: list[Finding]) -> str:
    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s])


def _findings(findings: list[Finding], budget: int, where: str) -> list[str]:
    """As many findings in full as fit in a share of ``budget``, then the others by title, then a count."""
    if not findings:
        return ["No problems found.", ""]
    budget -= _size(["## Findings", ""])

    def tail(left: int) -> str:
        return f"**... {left} more findings ({_counted(findings[-left:])}), {where}**"

    blocks = [finding_lines(finding, bounded=True) for finding in findings]
    if sum(_size(block) for block in blocks) <= budget:  # the usual case: every finding in full
        return ["## Findings", ""] + [line for block in blocks for line in block]
    full: list[str] = []
    shown = 0
    for block in blocks:  # errors first (triaged), so what is cut is the least severe
        if _size(full) + _size(block) > budget * FULL_SHARE:
            break
        full += block
        shown += 1
    rest = findings[shown:]
    if not rest:
        return ["## Findings", ""] + full
    heading = ["The other findings, by title:", ""] if shown else []
    listed = _within([_one_line(f) for f in rest], budget - _size(full) - _size(heading) - 1, tail)
    return ["## Findings", ""] + full + heading + listed + [""]


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
        (
            "NVIDIA driver",
            f"{nvml.driver_version} (CUDA {nvml.cuda_driver_version})"
            if nvml.status == "ok"
            else f"{nvml.status}: {nvml.reason}",
        ),
    ]
    return rows


def _environment(report: Report) -> list[str]:
    rows = [[f"| {_cell(key)} | {_cell(value)} |"] for key, value in _environment_rows(report)]
    head = ["## Environment", "", "| | |", "|---|---|"]
    return head + _within(rows, ENVIRONMENT - _size(head), lambda left: f"... {left} more rows, see the snapshot")


def _notes(lines: list[str]) -> list[str]:
    shown = [f"- {sanitise.markdown(_clip(line, LINE))}" for line in lines[:NOTES]]
    return shown + ([f"- ... {len(lines) - NOTES} more notes, see the snapshot"] if len(lines) > NOTES else [])


def _devices(report: Report) -> list[str]:
    view = report.gpus
    if not view.devices:
        return ["## GPUs", ""] + _notes(view.notes) + [""] if view.notes else []
    head = ["## GPUs", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    notes = [""] + _notes(footnotes(view)) + [""]
    rows = [["| " + " | ".join(_cell(cell) for cell in row) + " |"] for row in device_rows(view)]
    table = _within(
        rows, DEVICES - _size(head) - _size(notes), lambda left: f"... {left} more devices, see the snapshot"
    )
    return head + table + notes


def _kernels(report: Report) -> list[str]:
    head = ["## Precision, measured", ""]
    shown = report.kernels.shown  # judged once, in the report: drawn here, never re-judged
    notes = _notes(report.kernels.notes + ([report.kernels.legend] if shown else [])) + [""]
    tables = []
    for device, alike in shown:
        also = f" ({sanitise.markdown(_clip(', '.join(alike), CELL))} alike)" if alike else ""
        headers = ["op"] + [short(dtype) for dtype in device.dtypes]
        tables.append(
            [
                f"**{sanitise.markdown(_clip(device.label, CELL))}**{also}",
                "",
                "| " + " | ".join(_cell(h) for h in headers) + " |",
                "|" + "---|" * len(headers),
            ]
            + ["| " + " | ".join(_cell(c) for c in [row.name, *row.cells]) + " |" for row in device.rows]
            + [""]
        )
    return (
        head
        + _within(
            tables,
            KERNELS - _size(head) - _size(notes),
            lambda left: f"... {left} more devices measured, see the snapshot",
        )
        + notes
    )


def _file_name(path: str) -> str:
    """The snapshot file as the ticket names it: beside the report, so by its name; a token in it masked."""
    return sanitise.line(redact_text(os.path.basename(path) or path))


def _snapshot_note(report: Report, snapshot_file: str) -> list[str]:
    """Where the full snapshot is, and the command that re-judges it; or how to get one."""
    if snapshot_file:
        name = _file_name(snapshot_file)
        lines = [
            f"The full snapshot (redacted) was saved as {_code(_clip(name, CELL))}: attach it too. "
            "Re-judge it anywhere with:",
            "",
            _fence(f"mpdoctor check --snapshot {shlex.quote(name)}", "sh"),
        ]
    else:
        command = mpdoctor_check(report.snapshot, extra=("--format", "markdown", "--output", "mpdoctor-report.md"))
        lines = [
            "The full snapshot is not in this report. To attach it, run the check with `--save-snapshot "
            "FILE`, or write the report to a file, which saves `mpdoctor-report.snapshot.json` beside it:",
            "",
        ]
        command = sanitise.line(command)
        lines += [_fence(command, "sh")] if len(command) <= COMMAND else ["(the command is too long to show)"]
    return ["## Snapshot", ""] + lines + [""]


def _where(snapshot_file: str) -> str:
    """Where the findings a ticket leaves out can be read."""
    if snapshot_file:
        name = _file_name(snapshot_file)
        return f"see the snapshot: {_code('mpdoctor check --snapshot ' + shlex.quote(name))} lists them all"
    return "see the snapshot (below): `mpdoctor check` lists them all"


def render_markdown(report: Report, snapshot_file: str = "") -> str:
    """The ticket, at most ``LIMIT`` characters; ``snapshot_file``: where the full snapshot was written."""
    head = [
        "## mpdoctor report",
        "",
        f"**{summary_line(report.findings)}** - {sanitise.markdown(_clip(environment_line(report.snapshot), 4 * CELL))}",
        "",
        f"Created {sanitise.markdown(_clip(report.created, 40))} by mpdoctor "
        f"{sanitise.markdown(_clip(report.mpdoctor_version, 40))}. Secrets are redacted.",
        "",
    ]
    environment = _environment(report) + [""]
    devices, kernels = _devices(report), _kernels(report)
    note = _snapshot_note(report, snapshot_file)
    if _size(note) > NOTE:  # only a snapshot file or interpreter path of thousands of characters gets here
        note = ["## Snapshot", "", "The full snapshot is not in this report (`--save-snapshot FILE` saves it).", ""]
    others = head + environment + devices + kernels + note
    findings = _findings(report.findings, LIMIT - _size(others), _where(snapshot_file))
    return "\n".join(head + findings + environment + devices + kernels + note)
