"""The fleet report as text, Markdown and JSON (the JSON is a contract: ``mpdoctor/fleet/model.py``)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from mpdoctor.fleet.compare import GROUP_ABSENT, clipped, group_lines, never_reached
from mpdoctor.fleet.naming import rank_list
from mpdoctor.fleet.model import FleetReport, fleet_data
from mpdoctor.render import sanitise
from mpdoctor.render.text import HEAD, STYLE, render_finding, summary_line
from mpdoctor.render.wrap import print_head, print_prose


def render_fleet_json(report: FleetReport) -> str:
    return json.dumps(fleet_data(report), indent=2) + "\n"


def render_fleet_json_redacted(report: FleetReport) -> str:
    """``render_fleet_json(redacted_fleet(report))``, in one pass over the data (1,024 ranks: 0.3 s less)."""
    from mpdoctor.portable.redact import redact_tree

    return json.dumps(redact_tree(fleet_data(report)), indent=2) + "\n"


def _absent_lines(report: FleetReport) -> list[str]:
    lines = []
    never = [s for s in report.ranks if s.status != "reported" and never_reached(s)]
    if len(never) > GROUP_ABSENT:  # thousands of ranks that never came: one line, as their one finding
        lines.append(
            f"ranks {clipped(rank_list(s.rank for s in never))} ({len(never)} ranks): missing: {never[0].detail}"
        )
    for state in report.ranks:
        if state.status == "reported" or (len(never) > GROUP_ABSENT and never_reached(state)):
            continue
        where = f" on {state.host} (local rank {state.local_rank})" if state.host else ""
        step = (
            f", last step {state.last_step}" + (f" for {state.step_seconds:.0f} s" if state.step_seconds else "")
            if state.last_step
            else ""
        )
        lines.append(f"rank {state.rank}{where}: {state.status}{step}" + (f": {state.detail}" if state.detail else ""))
    return lines


def _where(shared, report: FleetReport) -> str:
    reported = sum(1 for s in report.ranks if s.status == "reported")
    return f"on all {reported} ranks" if shared.on_all else f"on rank(s) {rank_list(shared.ranks)} of {reported}"


def render_fleet_text(report: FleetReport, console: Console) -> None:
    """Wrapped at words on a terminal, one whole line per fact when piped (``render/wrap.py``), as ``check``'s."""
    # Hosts, details and findings arrive from the ranks through the store: each is made safe to show.
    title = f"mpdoctor fleet: {report.world_size} rank(s), launched by {report.launcher}"
    print_prose(console, sanitise.line(title), style="bold")
    for line in group_lines(report) + _absent_lines(report):
        print_prose(console, sanitise.line(line), "  ", hanging="    ")
    if report.findings:
        console.print()
        print_prose(console, "How the ranks differ", style="bold")
        for finding in report.findings:
            render_finding(console, finding)
    if report.rank_findings:
        console.print()
        print_prose(console, "What the ranks found (each finding once)", style="bold")
        for shared in report.rank_findings:
            head = Text()
            head.append(f"{sanitise.line(shared.finding.severity):<8}", style=STYLE.get(shared.finding.severity, ""))
            head.append(f"{sanitise.line(shared.finding.code):<10} ", style="bold")
            head.append(sanitise.line(f"{shared.finding.title}  [{_where(shared, report)}]"))
            print_head(console, head, HEAD)
    console.print()
    print_prose(
        console,
        f"fleet: {summary_line(report.findings)}; the ranks' own: "
        f"{summary_line([s.finding for s in report.rank_findings])}",
    )


def render_fleet_markdown(report: FleetReport) -> str:
    md = sanitise.markdown
    out = [f"# mpdoctor fleet: {md(f'{report.world_size} rank(s), launched by {report.launcher}')}", ""]
    out += [f"- {md(line)}" for line in group_lines(report) + _absent_lines(report)]
    if report.findings:
        out += ["", "## How the ranks differ", ""]
        for finding in report.findings:
            out.append(f"- **{md(finding.severity)}** {sanitise.code(finding.code)} {md(finding.title)}")
            out += [f"  - {md(line)}" for line in finding.evidence]
            out += [
                f"  - fix: {md(step.text)}" + (f": {sanitise.code(step.command)}" if step.command else "")
                for step in finding.fix
            ]
    if report.rank_findings:
        out += ["", "## What the ranks found", "", "| severity | code | finding | where |", "|---|---|---|---|"]
        for shared in report.rank_findings:
            f = shared.finding
            cells = [md(f.severity, cell=True), sanitise.code(f.code).replace("|", "\\|")]
            cells += [md(f.title, cell=True), md(_where(shared, report), cell=True)]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"
