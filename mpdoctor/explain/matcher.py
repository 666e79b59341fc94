"""Find known failures in text: a message, a traceback or a whole log, in linear time.

The input is cleaned first (``cleaning.py``: undecodable bytes replaced, ANSI colour
codes and NULs removed, Windows and old-Mac line endings made ``\\n``). Then one pass
over the lower-cased text finds every line that holds a needle (``needles.py``, an
Aho-Corasick automaton); only those lines are matched against regexes, each on at
most ``MAX_LINE`` characters. The traceback a line belongs to is read backwards from
it, within ``MAX_CONTEXT`` characters. Nothing depends on more than a bounded window
around a hit, so the cost grows with the size of the input and the number of hits,
never worse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from mpdoctor.explain.cleaning import fold, prepare
from mpdoctor.explain.frames import library_of, rank as rank_frames
from mpdoctor.explain.known.spelling import DTYPE_WORD, canonical, is_dtype, is_low
from mpdoctor.explain.needles import hit_lines
from mpdoctor.explain.ruled_out import precision_ruled_out
from mpdoctor.explain.signature import Signature
from mpdoctor.portable import limits
from mpdoctor.portable.redact import CLIP_MARGIN

MAX_LINE = limits.LOG_LINE  # characters of one line given to a regex
MAX_CONTEXT = 65_536  # characters searched backwards for the traceback a line is in
MAX_LINES_PER_MATCH = 5
MAX_FRAMES = 256  # innermost frames of one traceback a signature's frame rules look at
HEADLESS_LINES = 64  # lines read upwards for the frames of a traceback pasted without its head
HEADLESS_NEAR = 6  # ...when a frame is among the first of them (a code line, carets, a blank line between)
MAX_SHARED_CONTEXT = 8192  # a traceback up to this long is compared, so that a repeated one is judged once
MAX_VERDICTS = 4096  # (line, traceback) pairs remembered
# A traceback frame, also as torchrun prefixes it: `[rank0]:   File "...", line 12, in forward`.
FRAME = re.compile(
    r'^(?:\[(?:default)?rank\d{1,6}\]:)?\s{0,16}File "([^"\n]{1,1000})", line (\d{1,9})(?:, in (\S{1,200}))?'
)
TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}" if self.function else f"{self.file}:{self.line}"


@dataclass
class Match:
    """One recognised failure: the signature, the input lines that matched, the frames that matter."""

    signature: Signature
    lines: list[tuple[int, str]] = field(default_factory=list)  # (1-based line number, the line)
    frames: list[Frame] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)  # what its first line names: op, device, dtypes
    # the innermost installed package of its first line's traceback (frames.library_of), from all of its frames:
    # the frames kept above are only those a reader needs, which leave most libraries out
    library: str = ""


class Text:
    """Cleaned input with lazy line lookups: no list of millions of lines for a big log.

    ``text`` is a str, or for ASCII input the cleaned bytes themselves (``cleaning.prepare``): the same
    characters at the same offsets, decoded only where a line is shown or a traceback read, never whole.
    """

    def __init__(self, text: str | bytes | bytearray, folded: bytes | bytearray | None = None) -> None:
        self.text = text
        if isinstance(text, str):
            self._newline, self._head = "\n", TRACEBACK
        else:
            self._newline, self._head = b"\n", TRACEBACK.encode("ascii")
        if folded is None:
            folded = fold(text if isinstance(text, str) else text.decode("ascii"))
        self.folded = folded  # lower-cased UTF-8, what needles are found in
        self._counted = (0, 1)  # (offset, line number there): lines are numbered in one forward pass
        # The traceback last parsed: (its head, where parsing stopped, its frames so far). Hit lines come in
        # order, so the lines of one traceback are parsed once, however many of them are hits.
        self._traceback: tuple[int, int, list[Frame]] = (-1, -1, [])

    def line_at(self, offset: int) -> tuple[int, int]:
        """(start, end) of the line holding ``offset``."""
        start = self.text.rfind(self._newline, 0, offset) + 1
        end = self.text.find(self._newline, offset)
        return start, len(self.text) if end < 0 else end

    def slice(self, start: int, end: int) -> str:
        """The characters from ``start`` to ``end``."""
        part = self.text[start:end]
        return part if isinstance(part, str) else part.decode("ascii")

    def number(self, start: int) -> int:
        """1-based number of the line starting at ``start``; call with increasing offsets."""
        offset, number = self._counted
        if start < offset:
            offset, number = 0, 1
        number += self.text.count(self._newline, offset, start)
        self._counted = (start, number)
        return number

    def hit_lines(self, needles: Sequence[str], engine: str = "auto") -> dict[int, list[int]]:
        """{start offset of a line that holds any of the needles: the indexes of those it holds}, in order."""
        return hit_lines(self.folded, needles, len(self.text), engine)

    def frames_before(self, start: int) -> list[Frame]:
        """The frames of the traceback that line ``start`` ends, if it ends one."""
        window_start = max(0, start - MAX_CONTEXT)
        head = self.text.rfind(self._head, window_start, start)
        if head < 0:
            return self._headless_frames(start)
        cached_head, parsed, frames = self._traceback
        if cached_head != head or parsed > start:
            parsed, frames = head, []
        for line in self.slice(parsed, start).split("\n"):
            found = FRAME.match(line)
            if found:
                frames.append(Frame(found.group(1), int(found.group(2)), found.group(3) or ""))
        self._traceback = (head, start, frames)
        return frames[-MAX_FRAMES:]

    def _headless_block(self, start: int) -> int:
        """Where the frame lines right above line ``start`` begin (``start`` when there are none): a traceback pasted
        without its head, as issues often quote one (`  File ".../hqq/core/quantize.py", line 217` and the error
        under it). Only contiguous frame, code and caret lines count, at most HEADLESS_LINES of them."""
        begin, seen_frame = start, False
        for read in range(HEADLESS_LINES):
            if begin == 0 or read == HEADLESS_NEAR and not seen_frame:
                break  # a frame is among the few lines above (its code and carets between), or none is
            window = max(0, begin - 1 - MAX_LINE)
            found = self.text.rfind(self._newline, window, begin - 1)
            if found < 0 and window > 0:
                break  # a line too long to be a traceback's: never sliced (a log of huge lines costs nothing here)
            previous = found + 1
            line = self.slice(previous, begin - 1)
            if FRAME.match(line):
                seen_frame = True
            elif line.strip() and not line.startswith((" ", "\t")):
                break  # not a traceback's line
            begin = previous
        return begin if seen_frame else start

    def _headless_frames(self, start: int) -> list[Frame]:
        frames = []
        for line in self.slice(self._headless_block(start), start).split("\n"):
            found = FRAME.match(line)
            if found:
                frames.append(Frame(found.group(1), int(found.group(2)), found.group(3) or ""))
        return frames[-MAX_FRAMES:]

    def context_key(self, start: int, line: str) -> tuple[str, str]:
        """What judging line ``start`` depends on: the line, and the traceback it ends when that is short enough
        to compare (a log of the same traceback repeated is judged once); else a key of its own."""
        head = self.text.rfind(self._head, max(0, start - MAX_CONTEXT), start)
        if head < 0:
            return line, self.slice(self._headless_block(start), start)
        return (line, self.slice(head, start)) if start - head <= MAX_SHARED_CONTEXT else (line, str(start))


def _context_allows(signature: Signature, frames: Sequence[Frame]) -> bool:
    files = [f.file.replace("\\", "/") for f in frames]
    if signature.frames and not any(p.search(f) for p in signature.compiled_frames for f in files):
        return False
    return not any(p.search(f) for p in signature.compiled_not_frames for f in files)


def line_details(signature: Signature, line: str) -> dict[str, str] | None:
    """What the line names for a signature with ``details`` (op, device, dtypes), its defaults
    where a group is missing; None when the line does not fit: the first details pattern does not match, or
    dtypes ``a`` and ``b`` are the same, or neither is low precision (fp32 against fp64 is not mixed precision)."""
    named = dict(signature.defaults)
    for index, pattern in enumerate(signature.compiled_details):
        found = pattern.search(line)
        if found is None:
            if index == 0:
                return None
            continue
        for key, value in found.groupdict().items():
            if value and key not in named or (value and key in dict(signature.defaults)):
                named[key] = value
    if "a" in named and "b" in named:
        a, b = _distinct_pair(line)
        if not a:
            return None
        named["a"], named["b"] = a, b
    if "dtype" in named and signature.compiled_details:
        named["dtype"] = canonical(named["dtype"]) if is_dtype(named["dtype"]) else named["dtype"]
    return named


def _distinct_pair(line: str) -> tuple[str, str]:
    """Two different dtypes torch's message names, one of them low precision: its first dtype and the first
    one after it that differs (``input float, batch1: c10::Half``; ``self (Half) and source (Float)``).
    ("", "") when there is none. Only the message is read, after the last ``...Error:``/``...Warning:``: a
    log's own prefix ("fp16 run, model.half():") is not torch naming a dtype."""
    marker = None
    for marker in MESSAGE_START.finditer(line):
        pass
    message = line[marker.end() :] if marker else line
    names = [canonical(m.group(0)) for _, m in zip(range(32), DTYPE_WORD.finditer(message.lower()))]
    a = names[0] if names else ""
    b = next((n for n in names if n != a), "")
    if not b or not (is_low(a) or is_low(b)):
        return "", ""
    return a, b


# Where torch's message starts in a line: after the exception's or warning's name.
MESSAGE_START = re.compile(r"(?:error|warning|exception): ", re.IGNORECASE)


def _relevant_frames(signature: Signature, frames: Sequence[Frame]) -> list[Frame]:
    """The frames a reader should look at: those the signature cares about, else the user's own code and the
    library that changes the meaning (frames.rank), never torch's plumbing alone."""
    wanted = [f for f in frames if any(p.search(f.file.replace("\\", "/")) for p in signature.compiled_frames)]
    return wanted or rank_frames(frames)


# Log channels that report what happened without anything failing: torch.compile's recompilation log names the guard
# that failed (`tensor 'x' dtype mismatch. expected Half, actual Float`) while the run goes on, recompiled.
INFORMATIONAL = re.compile(r"\[__recompiles(?:_verbose)?\]")


# A line that reports an error, by the first marker word it holds: an exception's name (`RuntimeError`, `Exception`),
# a failed assertion, a logger's ERROR. A warning ("UserWarning:", vLLM's "WARNING ...]") is none, even when it names
# an error it avoided, and so is a prediction ("running them will fail"). Whole words only: a path such as
# `test_error_cases/run.py` names no error.
LINE_MARKER = re.compile(
    r"\b(?:([a-z0-9_]*warning|warn)|[a-z0-9_]*(?:error|exception)|assert(?:ion)?|"
    r"(?<!will )(?<!would )(?<!could )(?<!might )(?<!may )fail(?:ed|ure)?|fatal|abort(?:ed)?)\b"
)


# A path on the line (`/srv/terror/train.py:5: UserWarning`, `File "handle_error.py"`): its words name a file, not
# what the line reports, so they are not read for markers.
_WORD_SEPARATORS = re.compile(r"[\s'\"]+")


def _is_path(word: str) -> bool:
    return "/" in word or "\\" in word or ".py" in word


def is_error_line(line: str) -> bool:
    """Whether a (lower-cased) line reports an error: its first marker is an error's, not a warning's."""
    if "/" in line or "\\" in line or ".py" in line:
        line = " ".join(word for word in _WORD_SEPARATORS.split(line) if not _is_path(word))
    found = LINE_MARKER.search(line)
    return found is not None and not found.group(1)


def _errors_first(matches: list[Match]) -> list[Match]:
    """The matches found on an error line first, then the others (warnings, bare messages, a warning's continuation
    lines), each group in the order it first appears: the failure that stopped the run is what a reader acts on, not
    a warning logged above it ("float16 is not supported on CPU, casting to bfloat16" above the ValueError that
    ended the run). The sort is stable: input of one kind keeps its order."""
    return sorted(matches, key=lambda m: not any(is_error_line(text.lower()) for _, text in m.lines))


def find(data: bytes | bytearray | str, signatures: Sequence[Signature], engine: str = "auto") -> list[Match]:
    """Every signature recognised in ``data``: those found on an error line first, then the others, each group in
    the order its first line appears (``_errors_first``).

    ``engine`` picks how needles are found (``needles.hit_lines``); every engine finds the same lines."""
    text = Text(*prepare(data))
    needles: dict[str, list[Signature]] = {}
    for signature in signatures:
        for needle in signature.needles:
            needles.setdefault(needle, []).append(signature)
    owners = list(needles.values())
    matches: dict[str, Match] = {}
    verdicts: dict[tuple[str, str], dict[str, bool]] = {}  # (line, its traceback) -> {signature id: it claims the line}
    for start, indexes in text.hit_lines(list(needles), engine).items():  # lines in order
        # A line's signatures by id (each once, without hashing a Signature), in the order the needles were
        # declared, as one search per needle found them: the order of explanations that tie on a line does not
        # depend on how the needles were found.
        slot: dict[str, Signature] = {}
        for index in indexes:
            for owner in owners[index]:
                slot.setdefault(owner.id, owner)
        if all(s.id in matches and len(matches[s.id].lines) >= MAX_LINES_PER_MATCH for s in slot.values()):
            continue  # a line only full signatures could claim costs nothing more (a log of repeated tracebacks)
        # A full signature still takes part: it outranks a lower-ranked one on the line (its verdict is cached),
        # so the sixth copy of a message is not handed to a weaker explanation.
        candidates = list(slot.values())
        _, end = text.line_at(start)
        line = text.slice(start, min(end, start + MAX_LINE))
        if INFORMATIONAL.search(line):
            continue  # a log channel that reports, not a failure (torch.compile's recompilations)
        folded = line.lower()  # signatures' patterns are compiled lower-cased (Signature.compiled): any case matches
        if precision_ruled_out(folded):
            continue  # "I switched to fp32, but the loss is NaN now": the writer ruled the precision out
        frames: list[Frame] | None = None
        if len(verdicts) >= MAX_VERDICTS:
            verdicts.clear()
        seen = verdicts.setdefault(text.context_key(start, line), {})
        claimed = []
        for signature in candidates:
            claims = seen.get(signature.id)
            if claims is None:
                claims = any(p.search(folded) for p in signature.compiled)
                if claims and signature.details:
                    claims = line_details(signature, line) is not None
                if claims and (signature.frames or signature.not_frames):
                    frames = text.frames_before(start) if frames is None else frames
                    claims = _context_allows(signature, frames)
                seen[signature.id] = claims
            if claims:
                claimed.append(signature)
        if not claimed:
            continue
        best = max(s.rank for s in claimed)
        for signature in (s for s in claimed if s.rank == best):
            match = matches.get(signature.id)
            if match is not None and len(match.lines) >= MAX_LINES_PER_MATCH:
                continue
            if match is None:
                frames = text.frames_before(start) if frames is None else frames
                match = matches[signature.id] = Match(
                    signature,
                    frames=_relevant_frames(signature, frames),
                    details=line_details(signature, line) or {},
                    library=library_of(frames),
                )
            # the line as far as it is shown, plus a margin so that redaction sees a secret whole before the cut
            match.lines.append(
                (text.number(start), text.slice(start, min(end, start + MAX_LINE + CLIP_MARGIN)).strip())
            )
    return _errors_first(list(matches.values()))


__all__ = ["FRAME", "MAX_LINE", "Frame", "Match", "Text", "find"]
