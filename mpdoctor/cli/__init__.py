"""Command-line interface. Thin: parse options, call one function, hand the result to a renderer.

One module a command (check.py also lists the checks), options.py what they share, help.py how --help
is laid out, app.py the typer application they register on. Importing this package registers every
command; nothing heavy is imported until a command runs (torch never: the probes run it in a child).

Exit codes: 0 nothing at or above --fail-on; 1 something is; 2 usage error (bad
option, unreadable or corrupt snapshot, an output that is not a regular file or
cannot be written, no temporary directory); 3 internal error, and nothing else.
A reader that went away (`| head -1`) or a closed stdout/stdin changes none of them:
the output ends quietly and the status is the report's (mpdoctor.render.output.to_stdout).
"""

from __future__ import annotations

import sys

import typer

# Each registers its command on import, in the order `mpdoctor --help` lists them.
from mpdoctor.cli import check, explain, audit, fleet, numerics  # noqa: F401,I001
from mpdoctor.cli.app import app, run
from mpdoctor.cli.fleet import fleet_app
from mpdoctor.cli.options import EXIT_INTERNAL, EXIT_USAGE, shown

app.add_typer(fleet_app, name="fleet")

__all__ = ["app", "main"]


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
        progress = sys.modules.get("mpdoctor.render.progress")
        if progress is not None:  # a second signal exits without unwinding: the display cannot restore the cursor
            progress.show_cursor()
        handler = getattr(sys.modules.get("mpdoctor.probes.child"), "on_signal", None)
        if handler is None:
            raise SystemExit(128 + signum)  # no probe was ever loaded, so no child is running
        handler(signum, frame)  # kills every child's group, then raises Interrupted (a SystemExit)

    from mpdoctor.render.console import sane_columns
    from mpdoctor.render.output import WRITE_ERRNOS, prepare_stdout, reader_gone, stdout_problem, target_problem

    prepare_stdout()  # a closed stream reads and writes the null device; a lone surrogate is written escaped
    sane_columns()  # COLUMNS=0 would make every report empty
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    if sys.argv[1:2] == ["fleet"] and sys.argv[2:3] != ["compare"]:
        from mpdoctor.fleet import held_term

        if held_term.is_rank_zero():  # rank 0 must outlive the launcher's first SIGTERM to report (cut_short)
            held_term.hold(on_signal)
    if sys.argv[1:2] == ["check"]:  # a plain `check` starts probing now (under `python -m mpdoctor`: did already)
        from mpdoctor.probes.prescan import start_check_early

        start_check_early(sys.argv[1:], target_problem)
    try:
        run()  # app() without click's standalone mode: every usage error one line (mpdoctor.cli.app.run)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        problem = stdout_problem()  # stdout on a full disk (/dev/full) fails only when flushed
        if problem:
            typer.echo(f"mpdoctor: error: cannot write the output: {shown(problem)}", err=True)
            sys.exit(EXIT_USAGE)
        raise
    except Exception as exc:  # the last line of defence
        if reader_gone(exc):  # a write outside render.output.to_stdout met a reader that went away: quiet
            stdout_problem()
            sys.exit(1)  # what the report deserved is not known here (every command writes through to_stdout)
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:  # the disk, not a bug
            stdout_problem()
            typer.echo(f"mpdoctor: error: cannot write the output: {shown(exc.strerror or exc)}", err=True)
            sys.exit(EXIT_USAGE)
        from mpdoctor.portable import limits
        from mpdoctor.portable.redact import redact_clip
        from mpdoctor.render.sanitise import line

        typer.echo(
            f"mpdoctor: internal error: {type(exc).__name__}: {line(redact_clip(exc, limits.FAILURE_TEXT))}\n"
            "Please report it at https://github.com/mpdoctor/mpdoctor/issues",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    finally:
        started = sys.modules.get("mpdoctor.probes.early")
        if started is not None:
            started.discard()  # a snapshot started early that no command claimed (a usage error): end its children
