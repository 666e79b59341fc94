"""The typer application every command registers on, and its root options."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

import sys
from typing import Annotated, NoReturn, Optional

import typer

from mpdoctor import __version__
from mpdoctor.cli.help import HELP, HelpGroup
from mpdoctor.cli.options import EXIT_USAGE

app = typer.Typer(
    help="Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help, laid out by mpdoctor.cli.help
    cls=HelpGroup,
    context_settings=HELP,
)


def version_callback(value: bool) -> None:
    if value:
        from mpdoctor.render.output import to_stdout

        to_stdout(lambda: typer.echo(f"mpdoctor {__version__}"))
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""


def run(args: Optional[list[str]] = None) -> NoReturn:
    """Run the application; every usage error, typer's own included, is one line on stderr and exit status 2.

    typer would draw click's usage errors (a bad choice, a missing argument, an unknown
    option or command) as a six-line box. Run without click's standalone mode, the
    errors come here instead and are written as ``usage_error`` writes ours:
    ``mpdoctor: error: MESSAGE (see 'mpdoctor CMD --help')``. ``mpdoctor`` alone
    still prints the help, and exits 2 as click does.
    """
    from mpdoctor.cli import _click  # the click typer raises its errors from, whichever typer this is

    argv = sys.argv[1:] if args is None else list(args)
    if not argv:  # `mpdoctor` alone: the help, on stdout as --help's, exit 2 (click 8.2's way; 8.1 exits 0)
        from mpdoctor.render.output import to_stdout

        screen = root_help()
        to_stdout(lambda: typer.echo(screen))
        raise SystemExit(EXIT_USAGE)
    try:
        code = app(args=argv, prog_name="mpdoctor", standalone_mode=False)
    except _click.UsageError as exc:  # BadParameter, NoSuchOption, MissingParameter... are UsageErrors
        typer.echo(usage_line(exc), err=True)
        code = EXIT_USAGE
    except _click.ClickException as exc:  # any other click error: still one line
        typer.echo(f"mpdoctor: error: {one_line(exc.format_message())}", err=True)
        code = exc.exit_code
    except typer.Abort:  # end of input at a prompt, as click has it
        code = 1
    raise SystemExit(code if isinstance(code, int) else 0)


def root_help() -> str:
    """``mpdoctor --help``'s screen, made without running a command."""
    import typer.main

    command = typer.main.get_command(app)
    with command.make_context("mpdoctor", [], resilient_parsing=True) as ctx:  # resilient: no no-args check
        return ctx.get_help()


def one_line(message: str) -> str:
    from mpdoctor.cli.options import shown

    return shown(" ".join(message.split()))  # it may quote a path or URL with a token, or an escape


def usage_line(exc: Exception) -> str:
    """``mpdoctor: error: Invalid value for '--fail-on': ... (see 'mpdoctor check --help')``."""
    ctx = getattr(exc, "ctx", None) or _raised_in(exc)
    names = []
    while ctx is not None:
        names.insert(0, ctx.info_name if ctx.parent is not None else "mpdoctor")
        ctx = ctx.parent
    command = " ".join(names or ["mpdoctor"])
    return f"mpdoctor: error: {one_line(exc.format_message())} (see '{command} --help')"


def _raised_in(exc: Exception):
    """The command whose parsing raised ``exc``, for the errors click raises without one (an option that lacks
    its value): the innermost frame of the traceback that holds a click context."""
    from mpdoctor.cli import _click

    found, frame = None, exc.__traceback__
    while frame is not None:
        ctx = frame.tb_frame.f_locals.get("ctx")
        if isinstance(ctx, _click.Context):
            found = ctx
        frame = frame.tb_next
    return found
