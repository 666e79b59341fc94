"""Command-line interface. Thin: parse options, call one function, hand the result to a renderer.

Exit codes: 0 nothing at or above --fail-on; 1 something is; 2 usage error (bad
option, unreadable or corrupt snapshot); 3 internal error.
"""

from __future__ import annotations

import enum
import io
import os
import shutil
import sys
from typing import Annotated, NoReturn, Optional

import typer

from mpdoctor import __version__

app = typer.Typer(
    help="Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_USAGE, EXIT_INTERNAL = 2, 3


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class KernelMode(str, enum.Enum):
    quick = "quick"
    full = "full"


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def usage_error(message: str) -> NoReturn:
    """Bad input from the user: one line on stderr, exit status 2, no traceback."""
    typer.echo(f"mpdoctor: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _codes(values: Optional[list[str]]) -> list[str]:
    """``--select TORCH,STACK001 --select ENV`` -> ["TORCH", "STACK001", "ENV"]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _resolve_python(python: Optional[str]) -> str:
    if not python:
        return sys.executable
    found = shutil.which(python) if os.sep not in python else (python if os.path.exists(python) else None)
    if not found:
        usage_error(f"--python {python}: no such interpreter")
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        usage_error(f"--python {python}: not an executable file")
    return found


def _check_writable(option: str, path: Optional[str]) -> None:
    """Refuse an output path before probing, rather than fail after the work is done."""
    if not path:
        return
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        usage_error(f"{option} {path}: is a directory")
    if not os.path.isdir(directory):
        usage_error(f"{option} {path}: no such directory {directory}")
    if not os.access(directory, os.W_OK):
        usage_error(f"{option} {path}: directory {directory} is not writable")


def _write(option: str, path: str, text: str) -> None:
    from mpdoctor.render.output import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        usage_error(f"{option} {path}: cannot write: {exc.strerror or exc}")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mpdoctor {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""


@app.command()
def check(
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the report to FILE (atomically) instead of stdout.")] = None,
    fail_on: Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at least this severe.")] = FailOn.error,
    select: Annotated[Optional[list[str]], typer.Option(help="Only run checks whose code starts with one of these (comma-separated, repeatable).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(help="Skip checks whose code starts with one of these.")] = None,
    python: Annotated[Optional[str], typer.Option(help="Diagnose this interpreter (a venv or conda env) instead of mpdoctor's own.")] = None,
    snapshot: Annotated[Optional[str], typer.Option(help="Judge a saved snapshot instead of probing this machine.")] = None,
    save_snapshot: Annotated[Optional[str], typer.Option(help="Also save the snapshot (redacted) to FILE.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds each probe may take before it is abandoned (a device's "
                                                "microkernels get twice that, a single kernel a quarter). Every "
                                                "time limit derives from it, in mpdoctor/probes/budget.py.",
                                           min=0.1)] = 60.0,
    kernels: Annotated[KernelMode, typer.Option(help="Microkernel problem sizes: quick (about a second per device) "
                                                     "or full (larger, steadier timings).")] = KernelMode.quick,
    no_kernels: Annotated[bool, typer.Option("--no-kernels", help="Skip the live precision microkernels "
                                                                  "(the precision family).")] = False,
) -> None:
    """Diagnose the environment and print a triaged fix list."""
    from mpdoctor.checks.registry import builtin_registry
    from mpdoctor.doctor.diagnose import Options, diagnose
    from mpdoctor.findings import exit_code
    from mpdoctor.doctor.report import redacted
    from mpdoctor.snapshot import SnapshotError

    chosen, dropped = _codes(select), _codes(ignore)
    _check_selection(builtin_registry(), chosen + dropped)
    if snapshot and python:
        usage_error("--snapshot and --python exclude each other: a snapshot is not probed")
    _check_writable("--output", output)
    _check_writable("--save-snapshot", save_snapshot)
    options = Options(python=_resolve_python(python), timeout=timeout, snapshot=snapshot,
                             select=chosen, ignore=dropped, kernels="off" if no_kernels else kernels.value)
    try:
        report = redacted(diagnose(options))
    except SnapshotError as exc:
        usage_error(str(exc))
    if save_snapshot:
        from mpdoctor.render.json_out import render_snapshot_json

        _write("--save-snapshot", save_snapshot, render_snapshot_json(report.snapshot))
    _emit(report, format, output)
    raise typer.Exit(exit_code(report.findings, fail_on.value))


def _check_selection(registry, prefixes: list[str]) -> None:
    """--select/--ignore take codes that `mpdoctor check` runs: snapshot checks, not audit or internal codes."""
    from mpdoctor.checks.registry import CHECKPOINT, INTERNAL

    for prefix in prefixes:
        if registry.matches(prefix):
            continue
        subjects = {entry.subject for entry in registry.matching(prefix)}
        if CHECKPOINT in subjects:
            usage_error(f"{prefix!r} names checkpoint-audit codes, which judge a checkpoint, not this environment: "
                        "`mpdoctor audit PATH` reports them (see `mpdoctor checks`)")
        if INTERNAL in subjects:
            usage_error(f"{prefix!r} names mpdoctor's own codes (a check that crashed, facts a snapshot lacked): they "
                        "cannot be selected or ignored; --ignore the check concerned instead (see `mpdoctor checks`)")
        usage_error(f"no check code starts with {prefix!r} (see `mpdoctor checks`)")


def _emit(report, format: Format, output: Optional[str]) -> None:
    if format is Format.json:
        from mpdoctor.render.json_out import render_json

        text = render_json(report)
    elif format is Format.markdown:
        from mpdoctor.render.markdown import render_markdown

        text = render_markdown(report)
    else:
        from rich.console import Console

        from mpdoctor.render.text import render_text

        if output:
            buffer = io.StringIO()
            render_text(report, Console(file=buffer, no_color=True, width=100, highlight=False))
            text = buffer.getvalue()
        else:
            render_text(report, Console(highlight=False))
            return
    if output:
        _write("--output", output, text)
    else:
        sys.stdout.write(text)


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
    timeout: Annotated[float, typer.Option(help="With --check: seconds each probe may take.", min=0.1)] = 60.0,
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
            view.render_list(signatures, Console(highlight=False))
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
        explainer.confirm(report, _resolve_python(python), timeout)
    if format is ExplainFormat.json:
        sys.stdout.write(view.render_json(report))
    else:
        view.render_text(report, Console(highlight=False))
    raise typer.Exit(0 if report.recognised else 1)


@app.command()
def audit(
    path: Annotated[str, typer.Argument(help="A .safetensors/.pt/.bin/.ckpt file, a sharded checkpoint's "
                                             "index.json, or a transformers/diffusers model folder.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the report to FILE.")] = None,
    fail_on: Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at least this severe.")] = FailOn.error,
    python: Annotated[Optional[str], typer.Option(help="Read pickled checkpoints with this interpreter's torch.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one pickled file may take to list.", min=0.1)] = 120.0,
) -> None:
    """Which dtypes a checkpoint or model folder holds, and the modules whose tensors mix them.

    Safetensors are read by their header only; pickled files through
    torch.load(weights_only=True) in a child process, never a full unpickle.
    """
    from mpdoctor.checkpoint_audit.report import audit_files, redacted
    from mpdoctor.checkpoint_audit.safetensors import AuditError
    from mpdoctor.checkpoint_audit.sources import read, weight_files
    from mpdoctor.findings import exit_code
    from mpdoctor.render import audit as view

    _check_writable("--output", output)
    interpreter = _resolve_python(python)
    try:
        files = [read(file, interpreter, timeout) for file in weight_files(path)]
    except AuditError as exc:
        usage_error(str(exc))
    report = redacted(audit_files(path, files))
    if format is Format.json:
        text = view.render_json(report)
    elif format is Format.markdown:
        text = view.render_markdown(report)
    else:
        from rich.console import Console

        if not output:
            view.render_text(report, Console(highlight=False))
            raise typer.Exit(exit_code(report.findings, fail_on.value))
        buffer = io.StringIO()
        view.render_text(report, Console(file=buffer, no_color=True, width=100, highlight=False))
        text = buffer.getvalue()
    if output:
        _write("--output", output, text)
    else:
        sys.stdout.write(text)
    raise typer.Exit(exit_code(report.findings, fail_on.value))


@app.command("checks")
def list_checks() -> None:
    """List every code: the snapshot checks, the checkpoint-audit rules and mpdoctor's own; what each finds."""
    from mpdoctor.checks.registry import builtin_registry

    # Plain columns as wide as their longest entry, one line per code: readable piped, and grep-able.
    header = ("CODE", "NAME", "FAMILY", "JUDGES", "WHAT IT FINDS")
    rows = [(entry.code, entry.name, entry.family, entry.subject, entry.summary) for entry in builtin_registry()]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])


@app.command()
def rule(code: Annotated[str, typer.Argument(help="A code (TORCH005, AUDIT002, MPD001) or name "
                                                  "(cpu-only-torch-with-gpus).")]) -> None:
    """Print the documentation of one check or rule."""
    from mpdoctor.checks.registry import SNAPSHOT, SUBJECTS, builtin_registry

    entry = builtin_registry().get(code)
    if entry is None:
        usage_error(f"no check {code!r} (see `mpdoctor checks`)")
    where = "" if entry.subject == SNAPSHOT else f", {SUBJECTS[entry.subject]}"
    typer.echo(f"{entry.code} {entry.name} ({entry.family}{where})\n\n{entry.doc}")


def main() -> None:
    """Console-script entry point: usage errors exit 2, internal errors 3, never a traceback.

    SIGINT (Ctrl-C) exits 130 and SIGTERM 143 (128 + the signal), at once: every
    child process mpdoctor started is killed with its whole process group first
    (``mpdoctor.probes.child.on_signal``); a second signal exits without waiting
    for anything. The handler imports nothing: commands that start no child
    (``--help``, ``explain``) never load the probes.
    """
    import signal

    def on_signal(signum: int, frame: object) -> None:
        handler = getattr(sys.modules.get("mpdoctor.probes.child"), "on_signal", None)
        if handler is None:
            raise SystemExit(128 + signum)  # no probe was ever loaded, so no child is running
        handler(signum, frame)  # kills every child's group, then raises Interrupted (a SystemExit)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # the last line of defence
        typer.echo(f"mpdoctor: internal error: {type(exc).__name__}: {exc}\n"
                   "Please report it at https://github.com/mpdoctor/mpdoctor/issues", err=True)
        sys.exit(EXIT_INTERNAL)
