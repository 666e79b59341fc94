"""`mpdoctor audit`: the dtypes of a checkpoint or model folder."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.help import HelpCommand
from mpdoctor.cli.options import (
    FailOn,
    Format,
    Quiet,
    Timeout,
    check_distinct,
    check_given,
    check_writable,
    emit,
    emit_text,
    resolve_python,
    usage_error,
)
from mpdoctor.probes.budget import AUDIT_TIMEOUT


@app.command(cls=HelpCommand)
def audit(
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="A .safetensors/.pt/.bin/.ckpt file, a sharded checkpoint's "
            "index.json, or a transformers/diffusers model folder.",
        ),
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE.")
    ] = None,
    fail_on: Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at least this severe.")] = FailOn.error,
    python: Annotated[
        Optional[str], typer.Option(metavar="PYTHON", help="Read pickled checkpoints with this interpreter's torch.")
    ] = None,
    budget: Timeout = AUDIT_TIMEOUT,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="List every odd module, mixed subtree and odd tensor (text and Markdown; JSON always has them all).",
        ),
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Which dtypes a checkpoint or model folder holds, and the modules in another dtype than the model around them.

    A folder is judged checkpoint by checkpoint: files are one checkpoint only when
    an index, their -00001-of-0000N names or a diffusers layout say so.

    Safetensors are read by their header only; pickled files through
    torch.load(weights_only=True) in a child process, never a full unpickle.
    """
    from mpdoctor.checkpoint_audit.layout import layout
    from mpdoctor.checkpoint_audit.report import audit_layout, redacted
    from mpdoctor.checkpoint_audit.safetensors import AuditError
    from mpdoctor.checkpoint_audit.sources import read_all
    from mpdoctor.findings import exit_code
    from mpdoctor.probes.progress import ProgressBoard
    from mpdoctor.render import audit as view
    from mpdoctor.render.progress import live_progress, progress_wanted

    check_given("PATH", path)
    check_writable("--output", output)
    check_distinct(("PATH", path), ("--output", output), "the report would replace what it audits")
    interpreter = resolve_python(python)
    board = ProgressBoard()
    problem = None
    # A usage error is printed after the display is gone: a line written under a live display is erased with it.
    with live_progress(board, progress_wanted(quiet, format.value if output is None else ""), label="audit"):
        try:
            found = layout(path)
            read_all(found.files(), interpreter, budget, progress=board)
        except AuditError as exc:
            problem = str(exc)
    if problem is not None:
        usage_error(problem)
    report = redacted(audit_layout(path, found))
    if format is Format.json:
        emit(output, view.render_json(report))
    elif format is Format.markdown:
        emit(output, view.render_markdown(report, show_all))
    else:
        emit_text(output, lambda console: view.render_text(report, console, show_all))
    raise typer.Exit(exit_code(report.findings, fail_on.value))
