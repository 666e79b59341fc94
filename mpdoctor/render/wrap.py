"""Lines of prose that fit a terminal without splitting a word.

On a terminal a line wider than the window is wrapped by the terminal at the last
column, mid-word (``LibraryNotFoun`` / ``d``). So prose is wrapped here, at spaces,
to the console's width, with a hanging indent that keeps a finding's evidence under
its bullet. A word longer than the whole line (a long path, a UUID) is never cut:
it gets a line of its own and the terminal shows it as it must. In a pipe or a file
every line stays whole, one fact per line, for grep and for editors that wrap.

A shell command (``$ export ...``) is never broken by a bare newline, which would
break the copy and paste it is there for: on a terminal a long one is continued
at a space outside quotes with `` \\`` (:func:`command_lines`), which a shell
reads as the same command, pasted whole or line by line.
"""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.text import Text


def fill(text: str, width: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """``indent + text`` as lines of at most ``width`` columns, broken only at spaces; later lines start
    with ``hanging`` (default: as many spaces as ``indent``)."""
    hanging = " " * len(indent) if hanging is None else hanging
    first, *rest = text.split("\n") or [""]
    lines = _fill_one(first, width, indent, hanging)
    for line in rest:  # a text's own later lines (a code block in a fix) keep their own indentation
        own = line[: len(line) - len(line.lstrip(" "))]
        lines += _fill_one(line.lstrip(" "), width, own, own + "  ")
    return lines


def _fill_one(text: str, width: int, indent: str, hanging: str) -> list[str]:
    if len(indent) + len(text) <= width:
        return [indent + text]
    lines = textwrap.wrap(
        text,
        width=max(width, len(indent) + 1),
        initial_indent=indent,
        subsequent_indent=hanging,
        break_long_words=False,
        break_on_hyphens=False,
        expand_tabs=False,
    )
    return lines or [indent + text]


def join_parts(parts: list[str], width: int, separator: str = " | ", hanging: str = "  ") -> list[str]:
    """Parts joined by ``separator`` on as few lines as fit ``width``, moving to the next line only between
    parts; a part too long for a line of its own is wrapped at its spaces."""
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and len(line) + len(separator) + len(part) <= width:
            line += separator + part
            continue
        if line:
            lines.append(line)
        *whole, line = fill(part, width, "" if not lines and not line else hanging, hanging)
        lines += whole
    return lines + [line] if line else lines


def command_lines(command: str, width: int, indent: str = "       $ ", hanging: str = "           ") -> list[str]:
    """``indent + command`` in lines of at most ``width`` columns, continued with `` \\`` at spaces outside
    quotes, so that a shell reads the lines as the one command. A word too long for any line keeps its own
    line whole. A command a continuation could change (a newline, a comment, a here-document) is one line."""
    if len(indent) + len(command) <= width or "\n" in command or "#" in command or "<<" in command:
        return [indent + command]
    words = shell_words(command)
    if words is None:
        return [indent + command]
    lines, line = [], indent + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 <= width:  # room for " word" and a later " \\"
            line += " " + word
        else:
            lines.append(line + " \\")
            line = hanging + word
    return lines + [line]


def shell_words(command: str) -> list[str] | None:
    """``command`` split at the spaces a shell splits at (outside quotes, not escaped), each word as written;
    None when its quotes do not close (then it is shown as it is)."""
    words, word, quote, escaped = [], "", "", False
    for char in command:
        if escaped:
            word, escaped = word + char, False
        elif char == "\\" and quote != "'":
            word, escaped = word + char, True
        elif quote:
            word += char
            quote = "" if char == quote else quote
        elif char in "'\"":
            word, quote = word + char, char
        elif char == " ":
            if word:
                words.append(word)
            word = ""
        else:
            word += char
    if quote or escaped:
        return None
    return words + [word] if word else words


def print_command(console: Console, command: str) -> None:
    """A fix's ``$ command`` in green: on a terminal continued at spaces to fit it, elsewhere one whole line."""
    lines = command_lines(command, console.width) if wraps(console) else ["       $ " + command]
    for line in lines:
        console.print(Text(line, style="green"), soft_wrap=True)  # soft_wrap: rich must not re-wrap mid-word


def wraps(console: Console) -> bool:
    """Whether prose is wrapped for this console: only on a terminal (see the module's docstring)."""
    return console.is_terminal


def print_prose(console: Console, text: str, indent: str = "", style: str = "", hanging: str | None = None) -> None:
    """``indent + text`` in ``style``: on a terminal wrapped at words to its width, elsewhere one whole line."""
    lines = fill(text, console.width, indent, hanging) if wraps(console) else [indent + text]
    for line in lines:
        console.print(Text(line, style=style), soft_wrap=True)  # soft_wrap: rich must not re-wrap mid-word


def print_head(console: Console, head: Text, hanging: int) -> None:
    """A styled line (a finding's head: severity, code, title) wrapped as prose with its styles kept;
    later lines start ``hanging`` columns in, under the title."""
    plain = head.plain
    if not wraps(console) or len(plain) <= console.width or "\n" in plain:
        console.print(head, soft_wrap=True)
        return
    offset = 0
    for line in fill(plain, console.width, "", " " * hanging):
        body = line.lstrip(" ")
        start = plain.index(body, offset)
        piece = Text(line[: len(line) - len(body)])
        piece.append_text(head[start : start + len(body)])
        console.print(piece, soft_wrap=True)
        offset = start + len(body)
