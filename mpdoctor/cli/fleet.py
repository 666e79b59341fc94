"""`mpdoctor fleet`: every rank of a distributed job checks itself; rank 0 compares (and `fleet compare`)."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

import os
import sys
from typing import Annotated, Optional

import typer

from mpdoctor.cli.help import HELP, HelpCommand, HelpGroup
from mpdoctor.cli.options import (
    FailOn,
    Format,
    KernelMode,
    Timeout,
    check_selection,
    check_distinct,
    check_given,
    check_writable,
    codes,
    emit,
    emit_text,
    shown,
    usage_error,
    write_output,
)
from mpdoctor.probes.budget import DEFAULT_TIMEOUT

DEADLINE_SLACK = 60.0  # s: --deadline's default is the check's whole budget plus this


def _fleet_deadline(value: Optional[float]) -> Optional[float]:
    """fleet --deadline: bounded as --timeout is (nan or inf would never end, 1e308 overflows the store's timeout)."""
    if value is None:
        return value
    from mpdoctor.probes.budget import timeout_problem

    problem = timeout_problem(value)
    if problem:
        raise typer.BadParameter(f"{value} {problem}")
    return value


fleet_app = typer.Typer(
    help="Check every rank of a distributed job and name the odd one out (see docs/fleet.md).",
    no_args_is_help=False,
    rich_markup_mode=None,  # plain help, as the root's (mpdoctor.cli.app)
    cls=HelpGroup,
    context_settings=HELP,
)


@fleet_app.callback(invoke_without_command=True)
def fleet(
    ctx: typer.Context,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format (rank 0's report).")] = Format.text,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Rank 0 writes the report to FILE.")
    ] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Every rank exits 1 when a finding is at least this severe.")
    ] = FailOn.error,
    select: Annotated[
        Optional[list[str]], typer.Option(metavar="CODES", help="Each rank's check: only these codes (as in check).")
    ] = None,
    ignore: Annotated[
        Optional[list[str]], typer.Option(metavar="CODES", help="Each rank's check: skip these codes.")
    ] = None,
    budget: Timeout = DEFAULT_TIMEOUT,
    deadline: Annotated[
        Optional[float],
        typer.Option(
            metavar="SECONDS",
            help="Seconds from start for every rank's report (0.1 to 86400); "
            "rank 0 then reports the missing ones. Default: the "
            f"check's whole budget + {DEADLINE_SLACK:g}.",
            callback=_fleet_deadline,
        ),
    ] = None,
    kernels: Annotated[
        KernelMode,
        typer.Option(
            help="Microkernel sizes: each rank times the GPU its LOCAL_RANK "
            "selects (local rank 0 the CPU of a node without GPUs)."
        ),
    ] = KernelMode.quick,
    no_kernels: Annotated[bool, typer.Option("--no-kernels", help="Skip the microkernels.")] = False,
    save_snapshots: Annotated[
        Optional[str],
        typer.Option(
            metavar="DIR",
            help="Rank 0 saves whole snapshots (redacted, about 35 KB each) in this directory as rank-N.json, for "
            "`fleet compare`: one per group of identical ranks (the first to report), or all with "
            "--full-snapshots.",
        ),
    ] = None,
    full_snapshots: Annotated[
        bool,
        typer.Option(
            "--full-snapshots", help="With --save-snapshots: every rank sends its whole snapshot, not one per group."
        ),
    ] = False,
) -> None:
    """Run under the job's launcher (torchrun, srun, mpirun): each rank checks itself, rank 0 compares.

    Ranks meet in a torch.distributed TCPStore (rank 0's, or torchrun's own) and use
    no collective; every rank exits with the verdict (--fail-on), 1 also when no verdict came.
    """
    if ctx.invoked_subcommand:
        return
    from mpdoctor.checks.registry import builtin_registry
    from mpdoctor.fleet.launcher import LaunchError, detect
    from mpdoctor.fleet.rank import RankOptions, run_rank

    if full_snapshots and not save_snapshots:
        usage_error("--full-snapshots needs --save-snapshots DIR (where rank 0 saves them)")
    chosen, dropped = codes(select), codes(ignore)
    check_selection(builtin_registry(), chosen + dropped)
    try:
        launch = detect(os.environ)
    except LaunchError as exc:
        usage_error(str(exc))
    if launch.rank == 0:
        check_writable("--output", output)
        if save_snapshots:
            check_writable("--save-snapshots", os.path.join(save_snapshots, "rank-0.json"))
    options = RankOptions(
        python=sys.executable,
        budget=budget,
        select=chosen,
        ignore=dropped,
        deadline=deadline or budget.whole + DEADLINE_SLACK,
        kernels="off" if no_kernels else kernels.value,
        snapshots=bool(save_snapshots),
        full_snapshots=full_snapshots,
    )
    outcome = run_rank(launch, options)
    try:
        code = _finish_rank(launch, outcome, format, output, save_snapshots, fail_on)
    except BaseException:  # the report could not be written (or a signal came): the store child and files go anyway
        outcome.done()
        raise
    outcome.done()  # printed: rank 0 may exit now (torchrun stops every worker once one fails)
    if outcome.abandoned:  # this rank's own check still hangs in a thread: end without waiting for it
        from mpdoctor.probes.child import kill_children

        kill_children()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise typer.Exit(code)


def _finish_rank(launch, outcome, format: Format, output: Optional[str], save_snapshots, fail_on: FailOn) -> int:
    """Print this rank's part (rank 0: the report; the others: the verdict in a line); the exit status it deserves."""
    from mpdoctor.findings import Severity

    if outcome.report is not None:
        _emit_fleet(outcome.report, format, output)
    if save_snapshots and outcome.snapshots:
        import json

        for rank, data in sorted(outcome.snapshots.items()):
            write_output(
                "--save-snapshots", os.path.join(save_snapshots, f"rank-{rank}.json"), json.dumps(data, indent=2) + "\n"
            )
    if outcome.problem:
        typer.echo(f"mpdoctor fleet: rank {launch.rank}: {shown(outcome.problem)}", err=True)
        code = 0 if fail_on is FailOn.never else 1
    else:
        if launch.rank != 0:
            typer.echo(f"mpdoctor fleet: rank {launch.rank}: {shown(outcome.summary)} (report on rank 0)", err=True)
        failed = (
            fail_on is not FailOn.never
            and outcome.worst is not None
            and Severity(outcome.worst).rank >= Severity(fail_on.value).rank
        )
        code = 1 if failed else 0
    return code


@fleet_app.command("compare", cls=HelpCommand)
def fleet_compare(
    files: Annotated[
        list[str],
        typer.Argument(metavar="FILES...", help="Saved snapshots or JSON reports, one per node or environment."),
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE.")
    ] = None,
    fail_on: Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at least this severe.")] = FailOn.error,
) -> None:
    """Compare saved snapshots or reports as the ranks of one fleet (file N plays rank N)."""
    from mpdoctor.findings import exit_code
    from mpdoctor.fleet.offline import compare_files
    from mpdoctor.snapshot import SnapshotError

    if len(files) < 2:
        usage_error("fleet compare needs at least two files")
    for number, file in enumerate(files, 1):
        check_given(f"FILES (file {number})", file)
    check_writable("--output", output)
    for number, file in enumerate(files, 1):
        check_distinct((f"FILES (file {number})", file), ("--output", output), "the report would replace it")
    try:
        report = compare_files(files)
    except SnapshotError as exc:
        usage_error(str(exc))
    _emit_fleet(report, format, output)
    raise typer.Exit(exit_code(report.all_findings(), fail_on.value))


@fleet_app.command("rules", cls=HelpCommand)
def fleet_rules() -> None:
    """List the fleet family's codes (FLEET001...): what each finds."""
    from mpdoctor.checks.registry import RANKS, builtin_registry
    from mpdoctor.cli.check import print_table

    entries = builtin_registry().judging(RANKS)
    print_table(None, [(entry.code, entry.name, entry.summary) for entry in entries])


@fleet_app.command("rule", cls=HelpCommand)
def fleet_rule(code: Annotated[str, typer.Argument(help="A fleet code (FLEET001) or name.")]) -> None:
    """Print the documentation of one fleet code."""
    from mpdoctor.checks.registry import RANKS, builtin_registry

    entry = builtin_registry().get(code)
    if entry is None or entry.subject != RANKS:
        usage_error(f"no fleet code {code!r}; `mpdoctor fleet rules` lists them")
    from mpdoctor.render.output import to_stdout

    to_stdout(lambda: typer.echo(f"{entry.code} {entry.name} ({entry.family})\n\n{entry.doc}"))


def _emit_fleet(report, format: Format, output: Optional[str]) -> None:
    from mpdoctor.fleet.model import redacted_fleet
    from mpdoctor.render import fleet as view

    if format is Format.json:  # redacted as data, written as it is: no round trip through the dataclasses
        emit(output, view.render_fleet_json_redacted(report))
        return
    report = redacted_fleet(report)
    if format is Format.markdown:
        emit(output, view.render_fleet_markdown(report))
    else:
        emit_text(output, lambda console: view.render_fleet_text(report, console))
