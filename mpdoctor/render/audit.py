"""`mpdoctor audit` output: the dtype mix, the findings (the odd modules out, grouped), and with --all every module.

A big model stays small on screen: the findings name the odd modules out grouped by
pattern (32 layers' norms are one line), and `--all` adds the full listing: every
odd module on its own line, every subtree that mixes dtypes with its dominant one,
and every odd tensor of the modules that mix dtypes inside themselves.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mpdoctor.checkpoint_audit.report import AuditReport, audit_data, overview, sections
from mpdoctor.checkpoint_audit.tree import describe
from mpdoctor.render import sanitise

if TYPE_CHECKING:
    from rich.console import Console


def listing(report: AuditReport) -> list[tuple[str, list[str]]]:
    """The full listing `--all` shows: (heading, lines) per section that has lines."""
    sections = [
        ("Odd modules out, each", describe(report.odd_modules, grouped=False)),
        (
            "Subtrees that hold more than one floating dtype",
            [
                f"{s.module or '(model)'}: mostly {s.dominant}; " + ", ".join(f"{n} {d}" for d, n in s.dtypes.items())
                for s in report.subtrees
            ],
        ),
        (
            "Modules whose own tensors mix floating dtypes",
            [
                f"{m.module}: mostly {m.majority}; " + ", ".join(f"{o.name} {o.dtype} {o.shape}" for o in m.odd)
                for m in report.mixed
            ],
        ),
    ]
    return [(heading, lines) for heading, lines in sections if lines]


def _verdict(report: AuditReport, show_all: bool) -> str:
    if not report.mixed and not report.odd_modules:
        return "No module in another dtype, none mixing dtypes inside itself."
    return "See where the dtypes meet above." + ("" if show_all else " `--all` lists every module.")


def render_text(report: AuditReport, console: Console, show_all: bool = False) -> None:
    # rich and the text renderer are imported here, not above: `audit --format json` needs neither
    from mpdoctor.render.text import render_finding, summary_line
    from mpdoctor.render.wrap import print_prose

    # The path and every module and tensor name come from the file: each line is made safe to show.
    print_prose(console, sanitise.line(f"mpdoctor audit: {report.path}"), style="bold")
    for line in overview(report, show_all):
        print_prose(console, sanitise.line(line), "  ", style="dim")
    console.print()
    for heading, lines in sections(report, show_all):
        print_prose(console, sanitise.line(heading), style="bold")
        for line in lines:
            print_prose(console, sanitise.line(line), "  ", style="dim")
        console.print()
    for heading, lines in listing(report) if show_all else ():
        print_prose(console, heading, style="bold")
        for line in lines:
            print_prose(console, sanitise.line(line), "  ")
        console.print()
    for finding in report.findings:
        render_finding(console, finding)
    print_prose(console, f"{summary_line(report.findings)}. {_verdict(report, show_all)}", style="bold")


def render_markdown(report: AuditReport, show_all: bool = False) -> str:
    from mpdoctor.render.markdown import finding_lines
    from mpdoctor.render.text import summary_line

    overviews = [f"- {sanitise.markdown(line)}" for line in overview(report, show_all)]
    out = [f"# mpdoctor audit: {sanitise.code(report.path)}", "", *overviews, ""]
    for heading, lines in sections(report, show_all):
        out += [f"## {sanitise.markdown(heading)}", "", *[f"- {sanitise.markdown(line)}" for line in lines], ""]
    for heading, lines in listing(report) if show_all else ():
        out += [f"## {heading}", "", *[f"- {sanitise.code(line)}" for line in lines], ""]
    for finding in report.findings:
        out += finding_lines(finding)
    out.append(f"**{summary_line(report.findings)}**")
    return "\n".join(out) + "\n"


def render_json(report: AuditReport) -> str:
    """Always complete: the JSON lists every odd module and subtree, with or without --all."""
    return json.dumps(audit_data(report), indent=2) + "\n"
