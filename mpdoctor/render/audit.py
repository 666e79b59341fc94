"""`mpdoctor audit` output: the dtype mix, where it mixes inside a module, and the findings."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from mpdoctor.checkpoint_audit.report import AuditReport, audit_data, overview
from mpdoctor.render.text import render_finding, summary_line

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
