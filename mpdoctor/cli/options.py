"""What the commands share: output formats, the --timeout option, usage errors, option checks, where a report goes."""

from __future__ import annotations

import enum
import io
import sys
from typing import Annotated, Callable, NoReturn, Optional, Union

import typer

from mpdoctor.probes.budget import MAX_TIMEOUT, MIN_TIMEOUT, Budget, parse_timeout

EXIT_USAGE, EXIT_INTERNAL = 2, 3


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class CheckFormat(str, enum.Enum):
    """`mpdoctor check`'s formats: Format's, and the CI ones (render/github.py, render/junit.py)."""

    text = "text"
    json = "json"
    markdown = "markdown"
    github = "github"
    junit = "junit"


class KernelMode(str, enum.Enum):
    quick = "quick"
    full = "full"


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def usage_error(message: str) -> NoReturn:
    """Bad input from the user: one line on stderr, exit status 2, no traceback.

    The same shape as typer's own usage errors (``mpdoctor.cli.app.run``):
    ``mpdoctor: error: WHAT (see 'mpdoctor CMD --help')``, the command being the one that runs.
    """
    typer.echo(f"mpdoctor: error: {shown(message)}{see_help()}", err=True)
    raise typer.Exit(EXIT_USAGE)


def shown(message: object) -> str:
    """``message`` as an error line may show it: redacted (it may quote a path or URL with a token), then every
    control and bidi character made visible (it may quote a file name holding ``ESC ]52;`` or U+202E), on one
    line. Every line mpdoctor writes to stderr about the user's input goes through here."""
    from mpdoctor.portable.redact import redact_text
    from mpdoctor.render.sanitise import line

    return line(redact_text(str(message)))


def see_help() -> str:
    """`` (see 'mpdoctor check --help')`` for the command running now; "" outside any command."""
    from mpdoctor.cli._click import get_current_context  # the click typer runs on

    ctx = get_current_context(silent=True)
    return f" (see '{ctx.command_path} --help')" if ctx is not None else ""


def codes(values: Optional[list[str]]) -> list[str]:
    """``--select TORCH,STACK001 --select ENV`` -> ["TORCH", "STACK001", "ENV"]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def resolve_python(python: Optional[str]) -> str:
    """The interpreter ``--python`` names (``probes.target_python.find_python``), or a usage error."""
    from mpdoctor.probes.target_python import find_python

    found, problem = find_python(python)
    if problem:
        usage_error(problem)
    return found


def resolve_project(project: Optional[str]) -> str:
    """--project DIR as an absolute path ("" when not given), or a usage error: no such directory, a file, a
    directory that cannot be read (``probes.remote.project_root.problem``, the pre-scan's check too)."""
    import os

    from mpdoctor.probes.remote.project_root import problem

    if project is None:
        return ""
    why = problem(project)
    if why:
        usage_error(why)
    return os.path.abspath(project)


def check_writable(option: str, path: Optional[str]) -> None:
    """Refuse an output path before probing, rather than fail after the work is done (see render/output.py)."""
    from mpdoctor.render.output import target_problem

    if path is None:
        return
    check_given(option, path)
    problem = target_problem(path)
    if problem:
        usage_error(f"{option} {path}: {problem}")


def check_given(option: str, path: Optional[str]) -> None:
    """Refuse an empty path: ``--snapshot ""`` would run a live check, ``audit ""`` the working directory, each
    doing other work than was asked, exit 0 (a variable that was meant to hold the path and was empty)."""
    if path is not None and not path.strip():
        usage_error(f"{option}: an empty path{' (only spaces)' if path else ''}")


def check_distinct(first: tuple[str, Optional[str]], second: tuple[str, Optional[str]], why: str) -> None:
    """Refuse two paths that are one file where one is written: ``-o X --save-snapshot X`` (the second write would
    replace the first), ``audit X -o X`` (the report would replace the checkpoint). Work lost without a word."""
    import os

    (one, path), (other, path2) = first, second
    if path and path2 and os.path.normcase(os.path.realpath(path)) == os.path.normcase(os.path.realpath(path2)):
        usage_error(f"{one} and {other} name the same file {path2}: {why}")


def write_output(option: str, path: str, text: str) -> None:
    from mpdoctor.render.output import write_report

    try:
        write_report(path, text)
    except OSError as exc:
        usage_error(f"{option} {path}: cannot write: {exc.strerror or exc}")


def check_temp() -> None:
    """Probing needs a temporary directory (each child's output goes there): without one, say so and stop."""
    from mpdoctor.probes.tempdir import temp_problem

    problem = temp_problem()
    if problem:
        usage_error(problem)


def _timeout_budget(value: Union[str, float, Budget]) -> Budget:
    """--timeout SECONDS as the run's Budget (``budget.parse_timeout``: 0.1 to 86400; nan, inf and 1e308 refused)."""
    if isinstance(value, Budget):
        return value
    try:
        return parse_timeout(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


# The one declaration of --timeout, shared by every command that probes (check, explain --check, fleet, audit):
# typer reads it into the run's Budget, built here once and handed down (commands declare `budget: Timeout =
# DEFAULT_TIMEOUT`, or AUDIT_TIMEOUT, both from probes/budget.py). The pre-scan of a plain check reads it with
# the same budget.parse_timeout (see probes/prescan.py for why it parses at all).
Timeout = Annotated[
    Budget,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        parser=_timeout_budget,
        help=f"Seconds each probe may take before it is abandoned, {MIN_TIMEOUT:g} to {MAX_TIMEOUT:g}: each part of "
        "the environment probe (explain --check and each fleet rank: as in check), one pickled file's listing "
        "(audit); a device's microkernels get twice that, a single kernel a quarter. Every other time limit "
        "derives from it.",
    ),
]

# --quiet, the same for every command that shows live progress.
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="No live progress on stderr (the report is the same; progress shows only on a terminal).",
    ),
]


def check_selection(registry, prefixes: list[str]) -> None:
    """--select/--ignore take codes that `mpdoctor check` runs: snapshot checks, not audit, fleet or internal codes."""
    from mpdoctor.checks.registry import CHECKPOINT, INTERNAL, RANKS

    for prefix in prefixes:
        if registry.matches(prefix):
            continue
        subjects = {entry.subject for entry in registry.matching(prefix)}
        if CHECKPOINT in subjects:
            usage_error(
                f"{prefix!r} names checkpoint-audit codes, which judge a checkpoint, not this environment: "
                "`mpdoctor audit PATH` reports them; `mpdoctor checks` lists every code"
            )
        if RANKS in subjects:
            usage_error(
                f"{prefix!r} names fleet codes, which compare the ranks of one job, not this environment: "
                "`mpdoctor fleet` reports them; `mpdoctor checks` lists every code"
            )
        if INTERNAL in subjects:
            usage_error(
                f"{prefix!r} names mpdoctor's own codes (a check that crashed, facts a snapshot lacked): they "
                "cannot be selected or ignored; --ignore the check concerned instead; `mpdoctor checks` lists every code"
            )
        usage_error(f"no check code starts with {prefix!r}; `mpdoctor checks` lists every code")


def emit(output: Optional[str], text: str) -> None:
    """A rendered report to --output FILE (atomically, see render/output.py) or to stdout."""
    from mpdoctor.render.output import to_stdout

    if output:
        write_output("--output", output, text)
    else:
        to_stdout(lambda: sys.stdout.write(text))  # a reader that went away (`| head`) ends the output quietly


def emit_text(output: Optional[str], draw: Callable) -> None:
    """The text format: drawn on the terminal's console (styled unless NO_COLOR or TERM=dumb), plain 100 columns
    in a file (see mpdoctor/render/console.py)."""
    from mpdoctor.render.console import make_console
    from mpdoctor.render.output import to_stdout

    if not output:
        to_stdout(lambda: draw(make_console()))
        return
    buffer = io.StringIO()
    draw(make_console(buffer, width=100, plain=True))
    write_output("--output", output, buffer.getvalue())
