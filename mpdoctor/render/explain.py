"""`mpdoctor explain` output: what was recognised, why, what to do; or plainly that nothing was."""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from mpdoctor.explain.explainer import selected_codes
from mpdoctor.explain.report import ExplainReport, Explanation, explain_data
from mpdoctor.explain.signature import Signature
from mpdoctor.render import sanitise
from mpdoctor.render.wrap import print_command, print_head, print_prose


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def headline(report: ExplainReport) -> str:
    where = f"{_plural(report.input_lines, 'line')} from {report.source}"
    if report.truncated:
        where += " (only its end was read: line numbers count from where the reading began)"
    if not report.recognised and report.notices:
        return f"No known mixed-precision failure recognised in {where}, only {_plural(len(report.notices), 'notice')}:"
    if not report.recognised:
        return (
            f"No known mixed-precision failure recognised in {where}. mpdoctor does not guess: "
            "`mpdoctor explain --list` shows what it knows."
        )
    return f"{_plural(len(report.recognised), 'known failure')} recognised in {where}:"


def _dim(console: Console, text: str, indent: int = 2) -> None:
    print_prose(console, sanitise.line(text), " " * indent, style="dim")


def _prose(console: Console, text: str, indent: str = "", **style) -> None:
    """Prose of the explanation, made safe to show; its own lines are kept (a fix may end in a code block)."""
    print_prose(console, sanitise.block(text), indent, **style)


def render_explanation(console: Console, item: Explanation, checked: bool, notice: bool = False) -> None:
    head = Text()
    head.append(sanitise.line(item.title), style="bold")
    head.append(f"  [{sanitise.line(item.id)}]", style="cyan")
    print_head(console, head, 2)
    for line in item.lines:
        _dim(console, f"line {line.line}: {line.text}")
    if item.frames:
        console.print("  where:", highlight=False)
        for frame in item.frames:
            _dim(console, frame, 4)
    _prose(console, item.cause, "  why: ")
    for number, step in enumerate(item.fixes, 1):
        _prose(console, step.text, f"  {number}. ")
        if step.command:
            print_command(console, sanitise.line(step.command))
    for other in item.alternatives:  # the same words can mean something else: rank it and say what tells them apart
        _prose(console, other.cause, "  or (less likely): ", hanging="    ")
        _dim(console, f"tells them apart: {other.tell}", 4)
        if other.checks:
            _dim(console, f"check: mpdoctor check --select {','.join(other.checks)}", 4)
        for step in other.fixes:
            _dim(console, f"fix: {step.text}" + (f"  $ {step.command}" if step.command else ""), 4)
    if item.checks:
        _prose(console, f"mpdoctor check --select {','.join(item.checks)}", "  confirm: ", style="dim")
    if checked:
        if item.findings:
            from mpdoctor.render.text import render_finding

            console.print("  on this machine:", highlight=False)
            for finding in item.findings:
                render_finding(console, finding)
        elif item.checks and item.unknown:  # a check that could not run found nothing: unknown, never fine
            print_prose(console, "unknown: those checks could not judge it", "  on this machine: ", style="yellow")
            for reason in item.unknown:
                _dim(console, reason, 4)
        elif item.checks:
            print_prose(
                console,
                "those checks found nothing"
                + ("" if notice else "; the cause is in the code or the data, not the environment"),
                "  on this machine: ",
            )
    console.print()


def render_text(report: ExplainReport, console: Console) -> None:
    print_prose(console, sanitise.line(headline(report)), style="bold")  # it names the file: one line
    console.print()
    for item in report.recognised:
        render_explanation(console, item, report.checked)
    if report.notices:
        if report.recognised:
            print_prose(
                console, f"Also {_plural(len(report.notices), 'notice')}, no mixed-precision failure:", style="bold"
            )
            console.print()
        for item in report.notices:  # a deprecation, or an environment fault beside the precision, and its fix
            render_explanation(console, item, report.checked, notice=True)
    if report.check_error:
        print_prose(console, sanitise.line(f"--check could not run the checks: {report.check_error}"), style="yellow")
    codes = selected_codes(report)
    if codes and not report.checked:
        print_prose(
            console, f"To confirm on this machine, add --check (or run: mpdoctor check --select {codes})", style="dim"
        )


def render_json(report: ExplainReport) -> str:
    return json.dumps(explain_data(report), indent=2) + "\n"


def render_list(signatures: list[Signature], console: Console) -> None:
    """The knowledge: one block per signature, grouped by family."""
    for signature in sorted(signatures, key=lambda s: (s.family, s.id)):
        print_prose(console, f"{signature.id}  ({signature.family})", style="bold")
        _dim(console, signature.title)
        _dim(console, f"e.g. {signature.examples[0].strip().splitlines()[-1]}")
        if signature.checks:
            _dim(console, f"confirmed by: {', '.join(signature.checks)}")
        _dim(console, f"learned from: {', '.join(signature.sources)}")
    console.print(Text(f"{_plural(len(signatures), 'known failure')}", style="bold"))


def list_json(signatures: list[Signature]) -> str:
    return (
        json.dumps(
            [
                {
                    "id": s.id,
                    "family": s.family,
                    "title": s.title,
                    "cause": s.cause,
                    "patterns": list(s.patterns),
                    "needles": list(s.needles),
                    "frames": list(s.frames),
                    "not_frames": list(s.not_frames),
                    "rank": s.rank,
                    "fixes": [{"text": f.text, "command": f.command} for f in s.fixes],
                    "checks": list(s.checks),
                    "sources": list(s.sources),
                    "examples": list(s.examples),
                    "near_misses": list(s.near_misses),
                    "alternatives": [
                        {
                            "cause": a.cause,
                            "tell": a.tell,
                            "checks": list(a.checks),
                            "fixes": [{"text": f.text, "command": f.command} for f in a.fixes],
                        }
                        for a in s.alternatives
                    ],
                }
                for s in signatures
            ],
            indent=2,
        )
        + "\n"
    )
