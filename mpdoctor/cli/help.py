"""How `--help` is laid out: click's plain layout, wrapped at words, as wide as the terminal up to HELP_WIDTH.

typer's rich panels squeezed the help into a third of an 80-column screen and split
choices mid-word (``<text|json|markdown|gith`` / ``ub|junit>``); click's own wrapper
still breaks at hyphens (``cpu-only-torch-`` / ``with-gpus``) and cuts a command's
summary with ``...``. Here a line breaks only at a space, a word longer than the line
keeps a line of its own, and a command's summary is its whole first sentence.
Every command and group is made with these classes (``cls=HelpCommand``, ``cls=HelpGroup``).
"""

from __future__ import annotations

import textwrap

from typer.core import TyperCommand, TyperGroup

from mpdoctor.cli._click import Context, HelpFormatter

HELP_WIDTH = 120  # columns: wider than this, help lines are harder to read than to wrap
HELP = {"max_content_width": HELP_WIDTH}  # context_settings for every typer application


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Paragraphs (blank-line separated) of ``text``, each wrapped at spaces only, a blank line between them."""
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        words = " ".join(paragraph.split())
        if not words:
            continue
        if lines:
            lines.append("")
        lines += textwrap.wrap(
            words,
            width=max(width, len(indent) + 1),
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return lines


class WordFormatter(HelpFormatter):
    """click's HelpFormatter, with its two wrapping methods breaking only at spaces."""

    def write_text(self, text: str) -> None:
        for line in wrap(text, self.width, " " * self.current_indent):
            self.write(f"{line}\n")

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((len(first) for first, _ in rows), default=0), col_max) + col_spacing
        margin = " " * self.current_indent
        for first, second in rows:
            self.write(f"{margin}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:  # the help beside its option
                self.write(" " * (first_col - len(first)))
            else:  # an option too long for its column: the help starts on the next line
                self.write("\n" + " " * (first_col + self.current_indent))
            lines = wrap(second, max(self.width - first_col - 2, 10)) or [""]
            self.write(f"{lines[0]}\n")
            for line in lines[1:]:
                self.write(f"{' ' * (first_col + self.current_indent)}{line}\n" if line else "\n")


class WordContext(Context):
    formatter_class = WordFormatter


def show_help(ctx: Context, param, value: bool) -> None:
    """--help: the help screen, written as a report is (``render.output.to_stdout``): read by `| head -1`, it
    exits 0 quietly (typer would exit 1 on the broken pipe)."""
    if not value or ctx.resilient_parsing:
        return
    from mpdoctor.cli._click import echo
    from mpdoctor.render.output import to_stdout

    screen = ctx.get_help()
    to_stdout(lambda: echo(screen, color=ctx.color))
    ctx.exit()


class _QuietHelp:
    """--help through :func:`show_help`."""

    def get_help_option(self, ctx: Context):
        option = super().get_help_option(ctx)
        if option is not None:
            option.callback = show_help
        return option


class HelpCommand(_QuietHelp, TyperCommand):
    """A command whose help is laid out by WordFormatter."""

    context_class = WordContext


class HelpGroup(_QuietHelp, TyperGroup):
    """A group laid out by WordFormatter, whose list of commands gives each one's whole first sentence."""

    context_class = WordContext

    def format_commands(self, ctx, formatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000_000)))  # the sentence, never "..."
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
