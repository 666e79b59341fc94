"""`mpdoctor explain`: recognise a known failure in an error message or a log."""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.options import bounded_timeout, check_temp, resolve_python, usage_error


class ExplainFormat(str, enum.Enum):
    text = "text"
    json = "json"


@app.command()
def explain(
    text: Annotated[Optional[str], typer.Argument(help="The error message or traceback; - reads stdin.")] = None,
    file: Annotated[Optional[str], typer.Option("--file", help="Read a log file instead.")] = None,
    format: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
    check: Annotated[bool, typer.Option("--check", help="Also run the checks that confirm it, here.")] = False,
    python: Annotated[Optional[str], typer.Option(help="With --check: diagnose this interpreter.")] = None,
    timeout: Annotated[float, typer.Option(help="With --check: seconds each probe may take.",
                                           min=0.1, callback=bounded_timeout)] = 60.0,
    list_known: Annotated[bool, typer.Option("--list", help="List the failures mpdoctor knows, and exit.")] = False,
) -> None:
    """Recognise known mixed-precision failures in an error message or a log; say why and what to do.

    Exit status: 0 when something was recognised, 1 when nothing was, 2 for usage errors.
    """
    from rich.console import Console

    from mpdoctor.explain import explainer
    from mpdoctor.render import explain as view

    if list_known:
        from mpdoctor.explain.known import all_signatures

        signatures = all_signatures()
        if format is ExplainFormat.json:
            sys.stdout.write(view.list_json(signatures))
        else:
            view.render_list(signatures, Console(highlight=False, emoji=False))
        return
    if (text is None) == (file is None):
        usage_error("give the message (or - for stdin), or --file LOG: exactly one of them")
    if python and not check:
        usage_error("--python only applies with --check")
    try:
        if file is not None:
            data, cut = explainer.read_file(file)
            source = file
        elif text == "-":
            data, cut = explainer.read_stream(sys.stdin.buffer)
            source = "stdin"
        else:
            data, cut, source = text.encode("utf-8", errors="replace"), False, "the argument"
    except explainer.InputError as exc:
        usage_error(str(exc))
    report = explainer.explain(data, source, cut)
    if check and report.recognised:
        check_temp()
        explainer.confirm(report, resolve_python(python), timeout)
    if format is ExplainFormat.json:
        sys.stdout.write(view.render_json(report))
    else:
        view.render_text(report, Console(highlight=False, emoji=False))
    raise typer.Exit(0 if report.recognised else 1)
