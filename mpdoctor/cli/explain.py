"""`mpdoctor explain`: recognise a known failure in an error message or a log."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

import enum
import os
import sys
from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.help import HelpCommand
from mpdoctor.cli.options import Quiet, Timeout, check_given, check_temp, resolve_python, usage_error
from mpdoctor.probes.budget import DEFAULT_TIMEOUT


class ExplainFormat(str, enum.Enum):
    text = "text"
    json = "json"


@app.command(cls=HelpCommand)
def explain(
    text: Annotated[
        Optional[str],
        typer.Argument(metavar="[TEXT]", help="The error message or traceback, or a log's path; - reads stdin."),
    ] = None,
    file: Annotated[Optional[str], typer.Option("--file", metavar="LOG", help="Read a log file instead.")] = None,
    format: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
    check: Annotated[bool, typer.Option("--check", help="Also run the checks that confirm it, here.")] = False,
    python: Annotated[
        Optional[str], typer.Option(metavar="PYTHON", help="With --check: diagnose this interpreter.")
    ] = None,
    budget: Timeout = DEFAULT_TIMEOUT,
    list_known: Annotated[bool, typer.Option("--list", help="List the failures mpdoctor knows, and exit.")] = False,
    quiet: Quiet = False,
) -> None:
    """Recognise known mixed-precision failures in an error message or a log; say why and what to do.

    Exit status: 0 when something was recognised, 1 when nothing was, 2 for usage errors.
    """
    from mpdoctor.explain import explainer
    from mpdoctor.probes.progress import ProgressBoard
    from mpdoctor.render import explain as view
    from mpdoctor.render.console import make_console
    from mpdoctor.render.output import to_stdout
    from mpdoctor.render.progress import live_progress, progress_wanted

    if list_known:
        from mpdoctor.explain.known import all_signatures
        from mpdoctor.explain.shapes import SIGNATURES as GENERAL, UNNAMED_NON_FINITE

        # the general explanations last, then the notice for NaNs in a text that names no precision
        signatures = all_signatures() + list(GENERAL.values()) + [UNNAMED_NON_FINITE]
        if format is ExplainFormat.json:
            to_stdout(lambda: sys.stdout.write(view.list_json(signatures)))
        else:
            to_stdout(lambda: view.render_list(signatures, make_console()))
        return
    if (text is None) == (file is None):
        usage_error("give the message (or - for stdin), or --file LOG: exactly one of them")
    if python and not check:
        usage_error("--python only applies with --check")
    check_given("--file", file)
    if text == "-" and _is_terminal(sys.stdin):
        typer.echo(
            "mpdoctor: reading the error text from stdin; end it with Ctrl-D (Ctrl-Z then Enter on Windows)", err=True
        )
    board = ProgressBoard()
    shown = progress_wanted(quiet, format.value, stdin=sys.stdin if text == "-" else None)
    # Usage errors are printed outside the display: a line written under a live display is erased with it.
    with live_progress(board, shown, label="explain"):
        try:
            report = _explain(explainer, text, file, board)
        except explainer.InputError as exc:
            report, problem = None, str(exc)
    if report is None:
        usage_error(problem)
    if check and (report.recognised or report.notices):
        check_temp()
        interpreter = resolve_python(python)
        with live_progress(board, shown, label="explain"):
            _call(explainer.confirm, report, interpreter, budget, progress=board)
    # A reader that went away (`| head -1`) ends the output quietly; the status is still the report's.
    if format is ExplainFormat.json:
        to_stdout(lambda: sys.stdout.write(view.render_json(report)))
    else:
        to_stdout(lambda: view.render_text(report, make_console()))
    raise typer.Exit(0 if report.recognised else 1)


def _explain(explainer, text: Optional[str], file: Optional[str], board):
    """Read the input (the argument, --file or stdin) and explain it; InputError when it cannot be read."""
    if file is not None:
        data, cut = explainer.read_file(file, progress=board)
        source = file
    elif text == "-":
        stream = _TypedInput(sys.stdin.buffer) if _is_terminal(sys.stdin) else sys.stdin.buffer
        data, cut = explainer.read_stream(stream, progress=board)
        source = "stdin"
    elif _names_a_file(text):  # `mpdoctor explain train.log`: the log, not its name, is what to read
        data, cut = explainer.read_file(text, progress=board)
        source = text
    else:
        data, cut, source = text.encode("utf-8", errors="replace"), False, "the argument"
    return explainer.explain(data, source, cut, progress=board)


def _names_a_file(text: str) -> bool:
    """Whether the argument is the path of an existing file: no error message is one line naming a file that exists,
    and reading the path's few characters as the error would answer "nothing recognised" about a log never read."""
    if "\n" in text or len(text) > 4096:
        return False
    try:
        return os.path.isfile(os.path.expanduser(text))
    except (OSError, ValueError):  # a NUL in the text, a name too long for the filesystem
        return False


def _call(function, *args, progress):
    """``function(*args, progress=progress)`` where it takes a progress board, else ``function(*args)``.

    For ``explainer.confirm``, which does not take one yet: its probes then run under the "working" line.
    """
    import inspect

    if "progress" in inspect.signature(function).parameters:
        return function(*args, progress=progress)
    return function(*args)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed, or replaced by something without isatty
        return False


class _TypedInput:
    """Input typed on a terminal, ended by the first Ctrl-D.

    A terminal's end of input is not sticky: a read after Ctrl-D waits for more typing, so
    a reader that reads until an empty read would make the user press Ctrl-D twice (or
    three times, after a buffered read returned the last line with the first one).
    """

    def __init__(self, stream) -> None:
        self.stream, self.ended = stream, False

    def read(self, size: int = -1) -> bytes:
        if self.ended or size == 0:
            return b""
        whole = size is None or size < 0
        data = self.stream.read() if whole else self.stream.read1(size)  # read1: what was typed, not a full chunk
        self.ended = whole or not data
        return data
