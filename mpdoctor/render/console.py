"""The one place mpdoctor makes a rich Console, and decides whether it may style.

Plain means plain: with ``NO_COLOR`` set to anything but an empty string
(https://no-color.org) or ``TERM=dumb`` (or ``unknown``, as rich reads it), nothing
mpdoctor writes carries an escape code, even on a terminal: no colour, no bold or
dim, no hyperlinks. rich's own ``NO_COLOR`` handling drops only colours and keeps
bold and dim, so the console is made without a colour system at all, which makes
rich write every style as plain text. A live display (progress) must also stay
off then, since it moves the cursor with escape codes: it asks :func:`styling_off`.

Every command's console comes from :func:`make_console`; typer's own help screen
gets the same treatment from :func:`plain_help` (usage errors never reach typer's
renderer: see ``mpdoctor.cli.app.run``).
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING:  # rich is imported where a console is made: every command asks styling_off, few draw
    from rich.console import Console

DUMB_TERMS = ("dumb", "unknown")


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
    from rich.console import Console

    off = plain or styling_off()
    return Console(
        file=file,
        stderr=stderr,
        width=width,
        color_system=None if off else "auto",
        no_color=off or None,
        highlight=False,
        emoji=False,
    )


def plain_help() -> None:
    """Make typer's help screen plain too (it makes its own rich console, coloured by default)."""
    import typer.rich_utils  # only when help is shown with styling off: it costs a tenth of a second to import

    typer.rich_utils.COLOR_SYSTEM = None
