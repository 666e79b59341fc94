"""When no known signature recognises the input: read the failure that ended it by its shape.

Two steps, both on the input's last ``reader.TAIL`` characters only, so they cost the same on any log:

1. The message as a library wrapped it (a log prefix such as glog's ``E0519 12:00:00.000 123 file.py:12]``,
   torchrun's ``[rank0]:``, vLLM's ``(Worker pid=1) ERROR ... [file.py:8]``, or quotes escaped by a JSON or
   HTTP error) is unwrapped, and the known signatures are tried again on it.
2. Else the general reader (``reader.py``) reads the final failure's dtypes, refusal and context into a family,
   and answers with that family's general signature (``signatures.py``), whose title says it is the general
   explanation.
3. Else, when the input's end shows NaNs and names no precision (``unnamed.py``), a notice says how to tell whether
   the precision caused them; it is never a recognised failure.
"""

from __future__ import annotations

import re
from typing import Sequence

from mpdoctor.explain.cleaning import clean
from mpdoctor.explain.frames import library_of
from mpdoctor.explain.known._library_terms import LIBRARY
from mpdoctor.explain.matcher import FRAME, Frame, Match, find
from mpdoctor.explain.shapes.reader import TAIL, ended_elsewhere, read
from mpdoctor.explain.shapes.signatures import SIGNATURES, UNNAMED_NON_FINITE
from mpdoctor.explain.shapes.unnamed import non_finite_line
from mpdoctor.explain.signature import Signature

NAMED_LIBRARY = re.compile(LIBRARY, re.IGNORECASE)
# A log's own prefix before the message, repeated as loggers nest (`[rank0]:[rank0]:E0623 13:13:49.827 ...]`).
_PREFIX = re.compile(
    r"^(?:\s{0,8}(?:"
    r"\[(?:default)?rank\d{1,6}\]:"  # torchrun
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9} {1,8}\d{1,10} [^\]\s]{1,300}:\d{1,7}\](?: \[[\d/]{1,20}\])?"  # glog
    r"|\([\w-]{1,60} pid=\d{1,10}\)"  # vLLM's worker
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) {1,4}\d\d-\d\d \d\d:\d\d:\d\d(?: \[[^\]\s]{1,200}\])?"  # vLLM
    r"))+\s?"
)
_ESCAPED = re.compile(r"\\(['\"])")


def _tail(data: bytes | bytearray | str) -> tuple[int, list[str], list[str]]:
    """The input's last ``TAIL`` characters, cleaned: the input's number of their first line, their lines, and the
    lines unwrapped from a log's prefix and escaped quotes."""
    tail = data[-TAIL * 4 :] if not isinstance(data, str) else data[-TAIL:]  # a character is at most 4 bytes
    text = clean(tail)
    # the input's number of the text's first line: the line ends before the tail, then those of the cleaned tail
    # left out to keep TAIL characters (the matcher numbers the cleaned text's lines the same way)
    first = 1 + (_line_count(data[: len(data) - len(tail)]) if len(tail) < len(data) else 0)
    first += text.count("\n", 0, max(0, len(text) - TAIL))
    lines = text[-TAIL:].split("\n")
    return first, lines, [_ESCAPED.sub(r"\1", _PREFIX.sub("", line)) for line in lines]


def ending_elsewhere(data: bytes | bytearray | str) -> int | None:
    """The input's number of the line where it ends on another failure than a precision's (a ``KeyError``, an
    out-of-memory error), or None: what a precision warning above that line said was in passing."""
    first, _, unwrapped = _tail(data)
    index = ended_elsewhere(unwrapped)
    return None if index is None else first + index


def explain_by_shape(data: bytes | bytearray | str, signatures: Sequence[Signature]) -> list[Match]:
    """What the input's end says when ``find`` recognised nothing in the whole input (see the module's doc)."""
    first, lines, unwrapped = _tail(data)
    notices: list[Match] = []
    if unwrapped != lines:
        matches = find("\n".join(unwrapped), signatures)
        for match in matches:
            match.lines = [(first + number - 1, lines[number - 1].strip()) for number, _ in match.lines]
        if not all(match.signature.notice for match in matches):
            return matches  # a failure known once unwrapped (notices, if any, with it)
        notices = matches  # only notices: the failure that ended the input may still be read by its shape
    reading = read(unwrapped)
    if reading is None:
        return notices or _non_finite_notice(first, lines, unwrapped)
    start = reading.lines[0][0]
    frames = [
        Frame(hit.group(1), int(hit.group(2)), hit.group(3) or "")
        for hit in map(FRAME.match, lines[max(0, start - 200) : start])
        if hit
    ]
    low = [name for name in reading.dtypes if name in ("fp16", "bf16", "fp8", "fp4")]
    details = {
        "dtype": low[0] if low else "this precision",
        "dtypes": " and ".join(dict.fromkeys(reading.dtypes)) or "two dtypes",
        "cue": reading.cue,
    }
    return notices + [
        Match(
            SIGNATURES[reading.family],
            lines=[(first + index, lines[index].strip()) for index, _ in reading.lines][:5],
            frames=frames[-3:],
            details=details,
            # the library the traceback runs in, else the one the failure's own words name ("Unsloth: ...")
            library=library_of(frames) or _named_library(lines[index] for index, _ in reading.lines),
        )
    ]


def _non_finite_notice(first: int, lines: list[str], unwrapped: list[str]) -> list[Match]:
    """The notice for NaNs shown at the input's end in a text that names no precision (``unnamed.py``), unless the
    input ends on another failure."""
    found = non_finite_line(unwrapped)
    if found is None or ended_elsewhere(unwrapped) is not None:
        return []
    index, words = found
    return [Match(UNNAMED_NON_FINITE, lines=[(first + index, lines[index].strip())], details={"cue": words})]


def _named_library(lines) -> str:
    """The library the failure's lines name, as the grammar signatures read it (``_library_terms.LIBRARY``)."""
    for line in lines:
        hit = NAMED_LIBRARY.search(line)
        if hit:
            return hit.group("library").lower()
    return ""


def _line_count(head: bytes | bytearray | str) -> int:
    """Line ends in the part of a long input before its tail (a line cut by the tail's start counts once)."""
    return head.count("\n" if isinstance(head, str) else b"\n")


__all__ = ["SIGNATURES", "UNNAMED_NON_FINITE", "ending_elsewhere", "explain_by_shape"]
