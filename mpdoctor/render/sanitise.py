"""The one output sanitiser for every human format (text, Markdown, GitHub annotations).

What mpdoctor prints quotes what it read: a snapshot's interpreter path, a traceback, an
env value, a tensor name in a checkpoint, a file name in the project, a rank's report, a
log line. Any of them can hold a terminal escape (``ESC [2J`` clears the screen, ``ESC ]0;``
retitles the window, the C1 ``CSI`` U+009B does the same on many terminals) or a bidi
override (U+202E) that makes the text read other than it is. Printed raw, the report
is the attacker's screen. So every field a human format shows goes through here, and
each such character becomes visible as its Python escape (``\\x1b``, ``\\x9b``,
``\\u202e``): the reader sees that it was there and what it was, and the terminal does
nothing. JSON and JUnit escape by their own grammar and do not come here.

:func:`line` is for one-line fields (titles, commands, cells, labels): a newline or a
tab in them is shown too, so a value cannot fake a line of the report. :func:`block`
keeps ``\\n`` and ``\\t`` for fields that are laid out in lines (evidence such as a
traceback); a carriage return is never layout (it rewrites the line it ends).

Invisible characters (zero-width ones, the BOM, the Unicode tag characters that spell
hidden ASCII) are shown the same way: two names that read alike must not differ unseen,
and a ticket must not carry text its reader cannot see.

Markdown renders more than a terminal: in a ticket, ``[the fix](https://evil)`` from a
tensor name is a link, ``<img src=...>`` loads and ``@name`` notifies a user. :func:`markdown` escapes every
character with a meaning there, outside inline code, after :func:`line`. mpdoctor's
own words put code in backticks (``run `nvidia-smi -L` ``), so a balanced backtick pair
stays code, which is inert: nothing inside a code span is a link or HTML. A backtick
with no partner is escaped. The renderers add their own markup (``###``, ``**``, ``|``)
around fields they have escaped.
"""

from __future__ import annotations

import re

# Bidi formatting characters: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), the marks
# (U+200E, U+200F) and the Arabic letter mark (U+061C). Line and paragraph separators (U+2028, U+2029) and
# NEL (U+0085, a C1 control) end a line on some terminals and editors: shown too.
_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029"
# Invisible characters, which make two names that read the same differ (``torch`` and ``tor\u200bch``) or carry
# hidden text (the Unicode tag characters U+E0000-U+E007F spell ASCII invisibly, a way to hide instructions in a
# ticket): zero-width space, non-joiner and joiner, word joiner and the invisible operators, the BOM, the soft
# hyphen, the Mongolian vowel separator and the Hangul fillers.
_INVISIBLE = "\u200b-\u200d\u2060-\u2064\ufeff\u00ad\u180e\u115f\u1160\u3164\uffa0\U000e0000-\U000e007f"
# C0 controls but \t and \n, DEL, C1 controls, bidi, invisible.
_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")
# The same and \t and \n.
_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")
# What Markdown (GitHub's) gives a meaning outside code that can hide, link or load: links and images ([ ]: with
# the brackets inert, "(url)" and "!" are words), HTML and autolinks (< >), entities (&: "&#x202e;" would be the
# character itself), emphasis (*, which could also end mpdoctor's own **bold**), tables (|), headings (#),
# escapes (\). "_" and "~" only emphasise, and "_" inside a word not even that: left as they are, so names such
# as CUDA_VISIBLE_DEVICES read as they are written.
_MARKDOWN = re.compile(r"([\\\[\]<>&*|#])")
_TICKS = re.compile(r"`+")
# An @mention (GitHub, GitLab): ``@name`` or ``@org/team`` where a word does not run into the @ (an e-mail address
# or ``pkg.git@v1`` is none). A ticket that quotes ``@torch.compile`` from a traceback would notify the user
# "torch". A backslash does not stop GitHub (it finds mentions after Markdown is rendered); an empty HTML comment
# after the @ does, and renders as nothing, so the text reads and copies as it was.
_MENTION = re.compile(r"(?<![A-Za-z0-9_.+\-`@])@(?=[A-Za-z0-9])")
NO_MENTION = "@<!-- -->"


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _visible(match: re.Match) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def line(text: str) -> str:
    """``text`` for a one-line field: every control (newline and tab too), DEL and bidi character made visible."""
    return _LINE.sub(_visible, text)


def block(text: str) -> str:
    """``text`` laid out in lines: as :func:`line`, but ``\\n`` and ``\\t`` are kept (``\\r`` is shown)."""
    return _BLOCK.sub(_visible, text)


def lines(text: str) -> list[str]:
    """``text``'s lines, each safe (split at ``\\n`` only: ``str.splitlines`` would also split at ``\\x0b``,
    ``\\x1c`` and U+2028, which :func:`block` shows)."""
    return block(text).split("\n")


def _escape(text: str) -> str:
    return _MENTION.sub(NO_MENTION, _MARKDOWN.sub(r"\\\1", text))


def markdown(text: str, cell: bool = False) -> str:
    """``text`` for Markdown prose (a heading, a list item, a table cell): :func:`line`, then inert.

    Outside inline code every character with a meaning in GitHub's Markdown is backslash-escaped; a code span
    (a backtick run and the next run of the same length, as CommonMark pairs them) is kept as it is, but in a
    table ``cell``, where GitHub splits cells at a ``|`` even inside code, its ``|`` is escaped too.
    """
    text = line(text)
    out, at = [], 0
    while True:
        opening = _TICKS.search(text, at)
        if opening is None:
            break
        closing = _TICKS.search(text, opening.end())
        while closing is not None and len(closing.group(0)) != len(opening.group(0)):
            closing = _TICKS.search(text, closing.end())
        if closing is None:  # no partner: literal backticks, escaped so a later one cannot pair with them
            out.append(_escape(text[at : opening.start()]) + "\\`" * len(opening.group(0)))
            at = opening.end()
            continue
        code = text[opening.start() : closing.end()]
        out.append(_escape(text[at : opening.start()]) + (code.replace("|", "\\|") if cell else code))
        at = closing.end()
    out.append(_escape(text[at:]))
    return "".join(out)


def code(text: str) -> str:
    """``text`` as Markdown inline code, which shows it literally: :func:`line`, in a backtick run longer than any
    inside it (so a backtick from the input cannot end the span early)."""
    text = line(text)
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
