"""`mpdoctor audit` output: the dtype mix, where it mixes inside a module, and the findings."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from mpdoctor.weights.report import AuditReport, audit_data
from mpdoctor.render.text import render_finding, summary_line

MAX_GROUPS = 16  # top-level module prefixes listed in the overview; a bigger model shows its totals only


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def overview(report: AuditReport) -> list[str]:
    tensors = sum(d.tensors for d in report.dtypes)
    where = "a state dict in memory" if [f.format for f in report.files] == ["memory"] else \
        f"{len(report.files)} weight file(s)"
    lines = [f"{where}, {tensors} tensors in {report.modules} modules"]
    lines += [f"{d.dtype}: {d.tensors} tensor{'' if d.tensors == 1 else 's'}, {_size(d.bytes)}"
              for d in report.dtypes]
    lines += [f"component {c}: " + ", ".join(f"{d} {_size(b)}" for d, b in sorted(dtypes.items()))
              for c, dtypes in sorted(report.components.items())]
    if 1 < len(report.groups) <= MAX_GROUPS:
        lines += [f"{prefix}: " + ", ".join(f"{n} {d}" for d, n in sorted(dtypes.items()))
                  for prefix, dtypes in report.groups.items()]
    return lines


def plain_text(report: AuditReport) -> str:
    """The report as plain lines (what `print(mpdoctor.audit(model))` shows)."""
    lines = [f"mpdoctor audit: {report.path}", *(f"  {line}" for line in overview(report))]
    for mixed in report.mixed:
        lines.append(f"  mixed: {mixed.module}: mostly {mixed.majority}; "
                     + ", ".join(f"{o.name} {o.dtype} {list(o.shape)}" for o in mixed.odd))
    lines += [f"  {f.severity} {f.code}: {f.title}" for f in report.findings]
    return "\n".join(lines)


def render_text(report: AuditReport, console: Console) -> None:
    console.print(Text(f"mpdoctor audit: {report.path}", style="bold"), soft_wrap=True)
    for line in overview(report):
        console.print(f"  {escape(line)}", style="dim", highlight=False, soft_wrap=True)
    console.print()
    for finding in report.findings:
        render_finding(console, finding)
    verdict = "No dtype mix inside any module." if not report.mixed else "See where the dtypes meet above."
    console.print(Text(f"{summary_line(report.findings)}. {verdict}", style="bold"), soft_wrap=True)


def render_markdown(report: AuditReport) -> str:
    from mpdoctor.render.markdown import finding_lines

    out = [f"# mpdoctor audit: `{report.path}`", "", *[f"- {line}" for line in overview(report)], ""]
    for finding in report.findings:
        out += finding_lines(finding)
    out.append(f"**{summary_line(report.findings)}**")
    return "\n".join(out) + "\n"


def render_json(report: AuditReport) -> str:
    return json.dumps(audit_data(report), indent=2) + "\n"
