"""The one place mpdoctor makes a rich Console, and decides whether it may style.

Plain means plain: with ``NO_COLOR`` set to anything but an empty string
(https://no-color.org) or ``TERM=dumb`` (or ``unknown``, as rich reads it), nothing
mpdoctor writes carries an escape code, even on a terminal: no colour, no bold or
dim, no hyperlinks. rich's own ``NO_COLOR`` handling drops only colours and keeps
bold and dim, so the console is made without a colour system at all, which makes
rich write every style as plain text. A live display (progress) must also stay
off then, since it moves the cursor with escape codes: it asks :func:`styling_off`.

Every command's console comes from :func:`make_console`. Help screens are click's
plain text, never styled (``mpdoctor.cli.help``); usage errors never reach typer's
renderer (see ``mpdoctor.cli.app.run``).
"""

from __future__ import annotations

import errno
import functools
import os
from typing import IO, TYPE_CHECKING, Mapping, MutableMapping, Optional

if TYPE_CHECKING:  # rich is imported where a console is made: every command asks styling_off, few draw
    from rich.console import Console

DUMB_TERMS = ("dumb", "unknown")
MIN_COLUMNS = 20  # a COLUMNS below this (0 included) or not a number is a mistake, not a terminal: it is ignored


def sane_columns(environ: Optional[MutableMapping[str, str]] = None) -> None:
    """Forget a ``COLUMNS`` that no terminal has: ``0``, ``5``, ``abc``.

    rich, click and ``shutil.get_terminal_size`` all take ``COLUMNS`` at its word:
    ``COLUMNS=0`` made the text reports of check, explain and audit empty. Unset,
    the terminal's own width is used (80 columns off a terminal). Called once at
    start-up, before anything measures the terminal.
    """
    env = os.environ if environ is None else environ
    value = env.get("COLUMNS")
    if value is None:
        return
    try:
        sane = int(value.strip()) >= MIN_COLUMNS
    except ValueError:
        sane = False
    if not sane:
        del env["COLUMNS"]


def styling_off(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when the user asked for no escape codes: NO_COLOR non-empty, or a dumb terminal."""
    env = os.environ if environ is None else environ
    return env.get("NO_COLOR", "") != "" or env.get("TERM", "").lower() in DUMB_TERMS


def make_console(
    file: Optional[IO[str]] = None, *, stderr: bool = False, width: Optional[int] = None, plain: bool = False
) -> Console:
    """A console for mpdoctor's output; ``plain`` (or :func:`styling_off`) writes no escape code at all.

    A console on a terminal styles (bold, colour); one on a pipe or file is plain by
    rich's own rule (no terminal, no colour system). highlight=False: rich would
    colour numbers and paths by guesswork. emoji=False: rich would turn ``:ab:`` in a
    PCI bus id (0000:ab:00.0) or a path into an emoji.
    """
    off = plain or styling_off()
    return _console_class()(
        file=file,
        stderr=stderr,
        width=width,
        color_system=None if off else "auto",
        no_color=off or None,
        highlight=False,
        emoji=False,
    )


@functools.lru_cache(maxsize=None)
def _console_class() -> type:
    """rich's Console, but a reader that went away is not an exit: rich ends the program with status 1 there
    (``Console.on_broken_pipe``), whatever the report deserved. Here the rest of what it draws is dropped and
    the error reaches ``render.output.to_stdout``, which ends the output quietly and lets the command exit with
    its report's status."""
    from rich.console import Console

    class QuietConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more is written through it
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return QuietConsole
