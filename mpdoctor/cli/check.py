"""`mpdoctor check`, and the listing of what it checks: `mpdoctor checks`, `mpdoctor rule CODE`."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.help import HelpCommand
from mpdoctor.cli.options import (
    CheckFormat,
    FailOn,
    KernelMode,
    Quiet,
    Timeout,
    check_selection,
    check_temp,
    check_distinct,
    check_given,
    check_writable,
    codes,
    emit,
    emit_text,
    resolve_project,
    resolve_python,
    usage_error,
    write_output,
)
from mpdoctor.probes.budget import DEFAULT_TIMEOUT


@app.command(cls=HelpCommand)
def check(
    ctx: typer.Context,
    format: Annotated[
        CheckFormat,
        typer.Option(
            "--format",
            "-f",
            help="Output format: text, json, markdown (a ticket; its snapshot goes beside --output), "
            "github (Actions annotations) or junit (one test case per check).",
        ),
    ] = CheckFormat.text,
    output: Annotated[
        Optional[str],
        typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE (atomically) instead of stdout."),
    ] = None,
    fail_on: Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at least this severe.")] = FailOn.error,
    select: Annotated[
        Optional[list[str]],
        typer.Option(
            metavar="CODES", help="Only run checks whose code starts with one of these (comma-separated, repeatable)."
        ),
    ] = None,
    ignore: Annotated[
        Optional[list[str]], typer.Option(metavar="CODES", help="Skip checks whose code starts with one of these.")
    ] = None,
    python: Annotated[
        Optional[str],
        typer.Option(
            metavar="PYTHON", help="Diagnose this interpreter (a venv or conda env) instead of mpdoctor's own."
        ),
    ] = None,
    snapshot: Annotated[
        Optional[str], typer.Option(metavar="FILE", help="Judge a saved snapshot instead of probing this machine.")
    ] = None,
    save_snapshot: Annotated[
        Optional[str], typer.Option(metavar="FILE", help="Also save the snapshot (redacted) to FILE.")
    ] = None,
    project: Annotated[
        Optional[str],
        typer.Option(
            metavar="DIR",
            help="Read this directory as your code (apex.amp, torch AMP, OneFlow use). Default: the repository "
            "that holds the working directory, else the working directory, never other repositories below it.",
        ),
    ] = None,
    budget: Timeout = DEFAULT_TIMEOUT,
    kernels: Annotated[
        KernelMode,
        typer.Option(
            help="Microkernel problem sizes: quick (about a second per device) or full (larger, steadier timings)."
        ),
    ] = KernelMode.quick,
    no_kernels: Annotated[
        bool, typer.Option("--no-kernels", help="Skip the live precision microkernels (the precision family).")
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Diagnose the environment and print a triaged fix list."""
    from mpdoctor.checks.registry import builtin_registry
    from mpdoctor.doctor.diagnose import Options, diagnose
    from mpdoctor.findings import exit_code
    from mpdoctor.doctor.report import redacted
    from mpdoctor.snapshot import SnapshotError

    chosen, dropped = codes(select), codes(ignore)
    check_selection(builtin_registry(), chosen + dropped)
    if snapshot and python:
        usage_error("--snapshot and --python exclude each other: a snapshot is not probed")
    if snapshot and project is not None:
        usage_error("--snapshot and --project exclude each other: a snapshot is not probed")
    check_given("--snapshot", snapshot)
    project_dir = resolve_project(project)
    check_writable("--output", output)
    check_writable("--save-snapshot", save_snapshot)
    check_distinct(("--output", output), ("--save-snapshot", save_snapshot), "one would replace the other")
    check_distinct(("--snapshot", snapshot), ("--output", output), "the report would replace the snapshot")
    sidecar = _sidecar(format, output, save_snapshot)
    if not snapshot:
        check_temp()
    options = Options(
        python=resolve_python(python),
        budget=budget,
        snapshot=snapshot,
        select=chosen,
        ignore=dropped,
        kernels="off" if no_kernels else kernels.value,
        invocation=_invocation(ctx, python, chosen, dropped),
        progress=_probe_board(),
        project=project_dir,
    )
    from mpdoctor.render.progress import live_progress, progress_wanted

    shown = progress_wanted(quiet, format.value if output is None else "")  # JSON to a file: stdout is not used
    try:
        with live_progress(options.progress, shown, label="check"):  # the probes post their steps to it
            report = redacted(diagnose(options))
    except SnapshotError as exc:
        usage_error(str(exc))
    if save_snapshot:
        from mpdoctor.render.json_out import render_snapshot_json

        write_output("--save-snapshot", save_snapshot, render_snapshot_json(report.snapshot))
    if sidecar:
        _write_sidecar(output, sidecar, report)
    _emit(report, format, output, save_snapshot or sidecar, fail_on.value, chosen, dropped)
    raise typer.Exit(exit_code(report.findings, fail_on.value))


def _probe_board():
    """The board the probes post to: that of the snapshot started before the CLI loaded (prescan), else a new one."""
    from mpdoctor.probes.early import pending_board
    from mpdoctor.probes.progress import ProgressBoard

    return pending_board() or ProgressBoard()


def _invocation(ctx: typer.Context, python: Optional[str], select: list[str], ignore: list[str]):
    """The options the user actually gave (not their defaults), for fix commands that rerun mpdoctor."""
    from mpdoctor.snapshot import Invocation

    def given(name: str) -> bool:  # by the source's name: typer vendors its own click
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")

    params = ctx.params
    return Invocation(
        python=python or "",
        project=params["project"] or "",
        timeout=params["budget"].timeout if given("budget") else None,
        # ctx.params holds the option as click parsed it (a str), not typer's enum
        kernels=KernelMode(params["kernels"]).value if given("kernels") else "",
        no_kernels=bool(params["no_kernels"]),
        select=list(select),
        ignore=list(ignore),
    )


def _sidecar(format: CheckFormat, output: Optional[str], save_snapshot: Optional[str]) -> str:
    """`--format markdown --output report.md` also writes report.snapshot.json beside it (unless --save-snapshot
    names the file): the ticket names it instead of embedding it. Refused before probing, as --output is."""
    import os

    from mpdoctor.render.output import target_problem

    if format is not CheckFormat.markdown or not output or save_snapshot:
        return ""
    sidecar = os.path.splitext(output)[0] + ".snapshot.json"
    problem = target_problem(sidecar)
    if problem:
        usage_error(f"--output {output}: its snapshot {sidecar} cannot be written beside it: {problem}")
    return sidecar


def _write_sidecar(output: str, sidecar: str, report) -> None:
    """The snapshot first: when it fails nothing has changed, and a report never names a file that is missing."""
    from mpdoctor.render.json_out import render_snapshot_json
    from mpdoctor.render.output import write_report

    try:
        write_report(sidecar, render_snapshot_json(report.snapshot))
    except OSError as exc:
        usage_error(f"--output {output}: cannot write: {exc.strerror or exc} (its snapshot {sidecar})")


def _emit(
    report,
    format: CheckFormat,
    output: Optional[str],
    snapshot_file: Optional[str] = None,
    fail_on: str = "error",
    select: list[str] = (),
    ignore: list[str] = (),
) -> None:
    if format is CheckFormat.json:
        from mpdoctor.render.json_out import render_json

        emit(output, render_json(report))
    elif format is CheckFormat.markdown:
        from mpdoctor.render.markdown import render_markdown

        emit(output, render_markdown(report, snapshot_file or ""))
    elif format is CheckFormat.github:
        from mpdoctor.render.github import render_github

        emit(output, render_github(report, fail_on))
    elif format is CheckFormat.junit:
        from mpdoctor.render.junit import render_junit

        emit(output, render_junit(report, fail_on, select, ignore))
    else:
        from mpdoctor.render.text import render_text

        emit_text(output, lambda console: render_text(report, console))


@app.command("checks", cls=HelpCommand)
def list_checks() -> None:
    """List every code: the snapshot checks, the checkpoint-audit rules, the fleet's and mpdoctor's own."""
    from mpdoctor.checks.registry import builtin_registry

    header = ("CODE", "NAME", "FAMILY", "JUDGES", "WHAT IT FINDS")
    print_table(header, [(e.code, e.name, e.family, e.subject, e.summary) for e in builtin_registry()])


MIN_ROOM = 30  # columns: a narrower last column reads as a word a line; it then goes under the others instead


def print_table(header: Optional[tuple], rows: list[tuple]) -> None:
    """Plain columns (:func:`table_lines`), one code a line, no box drawing: grep-able. On a terminal the last
    column is wrapped at words to its width; piped, every line is whole."""
    import shutil
    import sys

    from mpdoctor.render.output import to_stdout

    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    lines = table_lines(header, rows, width)
    to_stdout(lambda: typer.echo("\n".join(lines)))


def table_lines(header: Optional[tuple], rows: list[tuple], width: Optional[int] = None) -> list[str]:
    """Columns as wide as their longest entry, the last one prose. Within ``width`` columns (None: no limit) the
    prose wraps at words under itself; where it would have fewer than MIN_ROOM columns it goes on the lines
    below its row, indented, wrapped to the whole width. The code column is never broken."""
    from mpdoctor.render.wrap import fill

    table = ([header] if header else []) + list(rows)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    room = None if width is None else width - sum(widths) - 2 * len(widths)
    lines: list[str] = []
    for row in table:
        columns = "  ".join(cell.ljust(wide) for cell, wide in zip(row, widths)) + "  "
        if room is None:
            lines.append(columns + row[-1])
        elif room >= MIN_ROOM:
            lines += [line.rstrip() for line in fill(row[-1], width, columns)]
        else:
            lines.append(columns.rstrip())
            lines += fill(row[-1], width, "    ")
    return lines


@app.command(cls=HelpCommand)
def rule(
    code: Annotated[
        str, typer.Argument(help="A code (TORCH005, AUDIT002, MPD001, FLEET001) or name (cpu-only-torch-with-gpus).")
    ],
) -> None:
    """Print the documentation of one check or rule."""
    from mpdoctor.checks.registry import SNAPSHOT, SUBJECTS, builtin_registry

    entry = builtin_registry().get(code)
    if entry is None:
        usage_error(f"no check {code!r}; `mpdoctor checks` lists every code")
    from mpdoctor.render.output import to_stdout

    where = "" if entry.subject == SNAPSHOT else f", {SUBJECTS[entry.subject]}"
    to_stdout(lambda: typer.echo(f"{entry.code} {entry.name} ({entry.family}{where})\n\n{entry.doc}"))
