"""The input as the matcher reads it: the cleaned text, and the lower-cased bytes its needles are found in.

Cleaning replaces undecodable bytes, removes ANSI colour codes and control characters
(NULs included), makes the vertical tab and form feed spaces (they separate words: removing
them would glue ``found Half\\x0bfoo`` into one word), makes typographic quotes the ASCII ones every
message is written with (a paste through a chat or a word processor turns ``'Half'`` into a curly-quoted
one) and makes Windows and old-Mac line endings ``\\n``. A log is mostly
plain ASCII with none of those, so each step first asks, at memchr speed, whether it
has anything to do; a 100 MB log costs a few passes over its bytes, not a regex over
every character. The result is the same text the plain definition (decode, then the
regexes below) gives, on any input: when the bytes are valid UTF-8 each step can run
on the bytes, because it only removes or replaces whole ASCII characters; when they
are not, the steps run on the decoded text, as the definition says, since removing a
byte between two broken sequences could otherwise join them into a character.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]+")  # runs: a log of NULs is one match, not one per byte
SPACES = str.maketrans("\x0b\x0c", "  ")  # vertical tab and form feed: whitespace, kept as a space
# Typographic quotes, each one character for one ASCII quote (offsets and line numbers stay those of the input).
SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033"
QUOTES = str.maketrans(SINGLE_QUOTES + DOUBLE_QUOTES, "'" * len(SINGLE_QUOTES) + '"' * len(DOUBLE_QUOTES))
# The same two patterns over bytes, for input that is valid UTF-8 (every ASCII byte there is a character).
ANSI_BYTES = re.compile(ANSI.pattern.encode("ascii"))
CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])  # what CONTROL removes
_SPACES = bytes.maketrans(b"\x0b\x0c", b"  ")
# bytes.lower() in the table form (with the two spaces), so that lower-casing and removing control bytes is one
# pass over a log
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ\x0b\x0c", b"abcdefghijklmnopqrstuvwxyz  ")


def clean(data: bytes | bytearray | str) -> str:
    """Text safe to scan: decoded, colours and control characters gone, newlines normalised."""
    raw = _valid_utf8(data)
    if raw is None:
        return _clean_text(data.decode("utf-8", errors="replace") if not isinstance(data, str) else data)
    raw = _clean_bytes(raw)
    text = raw.translate(_SPACES, CONTROL_BYTES).decode("utf-8")
    return text if raw.isascii() else text.translate(QUOTES)


def prepare(data: bytes | bytearray | str) -> tuple[str | bytes | bytearray, bytes | bytearray]:
    """``(clean(data), its lower-cased UTF-8)``: the text the matcher shows, and the bytes its needles are
    searched in. For ASCII input (most logs) the text is given as its bytes, not decoded (a 100 MB log is only
    ever decoded a line at a time), the two have the same offsets, and the second costs one pass."""
    raw = _valid_utf8(data)
    if raw is None:
        text = _clean_text(data.decode("utf-8", errors="replace") if not isinstance(data, str) else data)
        return text, fold(text)
    raw = _clean_bytes(raw)
    if raw.isascii():
        folded = raw.translate(_LOWER, CONTROL_BYTES)  # lower-cased and control bytes gone, in one pass
        # there were control bytes, or a vertical tab or form feed: the text loses or spaces them too
        if len(folded) != len(raw) or b"\x0b" in raw or b"\x0c" in raw:
            raw = raw.translate(_SPACES, CONTROL_BYTES)
        return raw, folded
    text = raw.translate(_SPACES, CONTROL_BYTES).decode("utf-8").translate(QUOTES)
    return text, fold(text)


def fold(text: str) -> bytes:
    """``text`` lower-cased, as UTF-8: one character of it for each of ``text``, so a line found in it is the
    same line of ``text``."""
    lower = text.lower()
    if len(lower) != len(text):
        # U+0130 'İ' lower-cases to two characters (the only one that changes length): a line's offsets must
        # stay those of ``text``, so it becomes a plain 'i' first.
        lower = text.replace("\u0130", "i").lower()
    # surrogatepass: a str given by a caller may hold lone surrogates; each still encodes as one unit
    return lower.encode("utf-8", errors="surrogatepass")


def _valid_utf8(data: bytes | bytearray | str) -> bytes | bytearray | None:
    """``data`` when it is bytes of valid UTF-8 (cleaning can then work on the bytes), else None."""
    if isinstance(data, str):
        return None
    if data.isascii():
        return data  # a bytearray (a file read whole) is kept as it is: every step below takes one
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data


def _clean_bytes(raw: bytes | bytearray) -> bytes | bytearray:
    """Line endings and colour codes of valid UTF-8, each step only when its character is there at all
    (control bytes are left to the caller, which removes them in a pass it makes anyway)."""
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"\x1b" in raw:
        raw = ANSI_BYTES.sub(b"", raw)
    return raw


def _clean_text(text: str) -> str:
    """The definition, on decoded text; each step only when its character is there at all."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ANSI.sub("", text)
    return CONTROL.sub("", text).translate(SPACES).translate(QUOTES)


__all__ = ["ANSI", "CONTROL", "CONTROL_BYTES", "QUOTES", "clean", "fold", "prepare"]
