"""Find known failures in text: a message, a traceback or a whole log, in linear time.

The input is cleaned first (undecodable bytes replaced, ANSI colour codes and NULs
removed, Windows and old-Mac line endings made ``\\n``). Then each needle is found
with ``str.find`` over the whole lower-cased text, a C-speed scan; only the lines
it hits are matched against regexes, each on at most ``MAX_LINE`` characters. The
traceback a line belongs to is read backwards from it, within ``MAX_CONTEXT``
characters. Nothing depends on more than a bounded window around a hit, so the
cost grows with the size of the input and the number of hits, never worse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from mpdoctor.explain.frames import rank as rank_frames
from mpdoctor.explain.signature import Signature
from mpdoctor.probes.remote.redact import CLIP_MARGIN

MAX_LINE = 4096  # characters of one line given to a regex
MAX_CONTEXT = 65_536  # characters searched backwards for the traceback a line is in
MAX_LINES_PER_MATCH = 5
MAX_FRAMES = 256  # innermost frames of one traceback a signature's frame rules look at
MAX_SHARED_CONTEXT = 8192  # a traceback up to this long is compared, so that a repeated one is judged once
MAX_VERDICTS = 4096  # (line, traceback) pairs remembered
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")  # runs: a log of NULs is one match, not one per byte
# A traceback frame, also as torchrun prefixes it: `[rank0]:   File "...", line 12, in forward`.
FRAME = re.compile(r'^(?:\[(?:default)?rank\d{1,6}\]:)?\s{0,16}File "([^"\n]{1,1000})", line (\d{1,9})(?:, in (\S{1,200}))?')
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


def clean(data: bytes | str) -> str:
    """Text safe to scan: decoded, colours and control characters gone, newlines normalised."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ANSI.sub("", text)
    return CONTROL.sub("", text)


class Text:
    """Cleaned input with lazy line lookups: no list of millions of lines for a big log."""

    def __init__(self, text: str) -> None:
        self.text = text
        lower = text.lower()
        if len(lower) != len(text):
            # U+0130 'İ' lower-cases to two characters (the only one that changes length): offsets found in
            # ``lower`` must index ``text`` too, so it becomes a plain 'i' first.
            lower = text.replace("\u0130", "i").lower()
        self.lower = lower
        self._counted = (0, 1)  # (offset, line number there): lines are numbered in one forward pass
        # The traceback last parsed: (its head, where parsing stopped, its frames so far). Hit lines come in
        # order, so the lines of one traceback are parsed once, however many of them are hits.
        self._traceback: tuple[int, int, list[Frame]] = (-1, -1, [])

    def line_at(self, offset: int) -> tuple[int, int]:
        """(start, end) of the line holding ``offset``."""
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        return start, len(self.text) if end < 0 else end

    def number(self, start: int) -> int:
        """1-based number of the line starting at ``start``; call with increasing offsets."""
        offset, number = self._counted
        if start < offset:
            offset, number = 0, 1
        number += self.text.count("\n", offset, start)
        self._counted = (start, number)
        return number

    def hit_lines(self, needles: Iterable[str]) -> list[int]:
        """Start offsets of the lines that contain any of the needles, in order."""
        starts = set()
        for needle in needles:
            at = self.lower.find(needle)
            while at >= 0:
                start, end = self.line_at(at)
                starts.add(start)
                at = self.lower.find(needle, max(end, at + 1))  # one hit per line is enough; always forward
        return sorted(starts)

    def frames_before(self, start: int) -> list[Frame]:
        """The frames of the traceback that line ``start`` ends, if it ends one."""
        window_start = max(0, start - MAX_CONTEXT)
        head = self.text.rfind(TRACEBACK, window_start, start)
        if head < 0:
            return []
        cached_head, parsed, frames = self._traceback
        if cached_head != head or parsed > start:
            parsed, frames = head, []
        for line in self.text[parsed:start].split("\n"):
            found = FRAME.match(line)
            if found:
                frames.append(Frame(found.group(1), int(found.group(2)), found.group(3) or ""))
        self._traceback = (head, start, frames)
        return frames[-MAX_FRAMES:]

    def context_key(self, start: int, line: str) -> tuple[str, str]:
        """What judging line ``start`` depends on: the line, and the traceback it ends when that is short enough
        to compare (a log of the same traceback repeated is judged once); else a key of its own."""
        head = self.text.rfind(TRACEBACK, max(0, start - MAX_CONTEXT), start)
        if head < 0:
            return line, ""
        return (line, self.text[head:start]) if start - head <= MAX_SHARED_CONTEXT else (line, str(start))


def _context_allows(signature: Signature, frames: Sequence[Frame]) -> bool:
    files = [f.file.replace("\\", "/") for f in frames]
    if signature.frames and not any(p.search(f) for p in signature.compiled_frames for f in files):
        return False
    return not any(p.search(f) for p in signature.compiled_not_frames for f in files)


def _relevant_frames(signature: Signature, frames: Sequence[Frame]) -> list[Frame]:
    """The frames a reader should look at: those the signature cares about, else the user's own code and the
    library that changes the meaning (frames.rank), never torch's plumbing alone."""
    wanted = [f for f in frames if any(p.search(f.file.replace("\\", "/")) for p in signature.compiled_frames)]
    return wanted or rank_frames(frames)


def find(data: bytes | str, signatures: Sequence[Signature]) -> list[Match]:
    """Every signature recognised in ``data``, in the order its first line appears."""
    text = Text(clean(data))
    by_line: dict[int, dict[str, Signature]] = {}  # by id: each once, in a stable order, without hashing a Signature
    needles: dict[str, list[Signature]] = {}
    for signature in signatures:
        for needle in signature.needles:
            needles.setdefault(needle, []).append(signature)
    for needle, owners in needles.items():
        for start in text.hit_lines([needle]):
            slot = by_line.setdefault(start, {})
            for owner in owners:
                slot.setdefault(owner.id, owner)
    matches: dict[str, Match] = {}
    verdicts: dict[tuple[str, str], dict[str, bool]] = {}  # (line, its traceback) -> {signature id: it claims the line}
    for start in sorted(by_line):
        candidates = [s for s in by_line[start].values()
                      if s.id not in matches or len(matches[s.id].lines) < MAX_LINES_PER_MATCH]
        if not candidates:
            continue  # a line only full signatures could claim costs nothing more (a log of repeated tracebacks)
        _, end = text.line_at(start)
        line = text.text[start:min(end, start + MAX_LINE)]
        folded = line.lower()  # signatures' patterns are compiled lower-cased (Signature.compiled): any case matches
        frames: list[Frame] | None = None
        if len(verdicts) >= MAX_VERDICTS:
            verdicts.clear()
        seen = verdicts.setdefault(text.context_key(start, line), {})
        claimed = []
        for signature in candidates:
            claims = seen.get(signature.id)
            if claims is None:
                claims = any(p.search(folded) for p in signature.compiled)
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
            if match is None:
                frames = text.frames_before(start) if frames is None else frames
                match = matches[signature.id] = Match(signature, frames=_relevant_frames(signature, frames))
            # the line as far as it is shown, plus a margin so that redaction sees a secret whole before the cut
            match.lines.append((text.number(start), text.text[start:min(end, start + MAX_LINE + CLIP_MARGIN)].strip()))
    return list(matches.values())
