"""`mpdoctor check`, and the listing of what it checks: `mpdoctor checks`, `mpdoctor rule CODE`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.options import (FailOn, Format, KernelMode, bounded_timeout, check_selection, check_temp,
                                  check_writable, codes, emit, emit_text, resolve_python, usage_error,
                                  write_output)


@app.command()
def check(
    ctx: typer.Context,
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
                                           min=0.1, callback=bounded_timeout)] = 60.0,
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

    chosen, dropped = codes(select), codes(ignore)
    check_selection(builtin_registry(), chosen + dropped)
    if snapshot and python:
        usage_error("--snapshot and --python exclude each other: a snapshot is not probed")
    check_writable("--output", output)
    check_writable("--save-snapshot", save_snapshot)
    if not snapshot:
        check_temp()
    options = Options(python=resolve_python(python), timeout=timeout, snapshot=snapshot,
                             select=chosen, ignore=dropped, kernels="off" if no_kernels else kernels.value,
                             invocation=_invocation(ctx, python, chosen, dropped))
    try:
        report = redacted(diagnose(options))
    except SnapshotError as exc:
        usage_error(str(exc))
    if save_snapshot:
        from mpdoctor.render.json_out import render_snapshot_json

        write_output("--save-snapshot", save_snapshot, render_snapshot_json(report.snapshot))
    _emit(report, format, output)
    raise typer.Exit(exit_code(report.findings, fail_on.value))


def _invocation(ctx: typer.Context, python: Optional[str], select: list[str], ignore: list[str]):
    """The options the user actually gave (not their defaults), for fix commands that rerun mpdoctor."""
    from mpdoctor.snapshot import Invocation

    def given(name: str) -> bool:  # by the source's name: typer vendors its own click
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")

    params = ctx.params
    return Invocation(python=python or "", timeout=params["timeout"] if given("timeout") else None,
                      kernels=params["kernels"].value if given("kernels") else "",
                      no_kernels=bool(params["no_kernels"]), select=list(select), ignore=list(ignore))


def _emit(report, format: Format, output: Optional[str]) -> None:
    if format is Format.json:
        from mpdoctor.render.json_out import render_json

        emit(output, render_json(report))
    elif format is Format.markdown:
        from mpdoctor.render.markdown import render_markdown

        emit(output, render_markdown(report))
    else:
        from mpdoctor.render.text import render_text

        emit_text(output, lambda console: render_text(report, console))


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
