"""What one known failure looks like, what it means and what fixes it: plain data.

Each family module in ``mpdoctor/explain/known/`` lists ``SIGNATURES``. A signature
is recognised on one line of the input: the line must contain one of its
``needles`` (lower-case literals, found by a plain substring search, which keeps a
100 MB log cheap) and then match one of its ``patterns``. ``frames`` and
``not_frames`` look at the traceback the line belongs to, so the same message can
mean different things (an apex frame turns a dtype error into an apex problem).

The examples and near-misses are the real messages the signature was learned
from, in their different wordings; the tests hold every signature to them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from mpdoctor.findings import Step

FAMILIES = ("dtype", "cpu-half", "scaler", "overflow", "hardware", "attention", "kernel-image", "apex", "oneflow",
            "driver")
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Signature:
    """One known failure."""

    id: str  # kebab-case, unique: what `mpdoctor explain --list` and the JSON name it by
    family: str  # one of FAMILIES
    title: str  # what happened, in one line
    needles: tuple[str, ...]  # lower-case literals; a line is only tried when it contains one
    patterns: tuple[str, ...]  # regexes over one line (no nested quantifiers: they must stay linear)
    cause: str  # why it happens, in plain words
    fixes: tuple[Step, ...]  # ranked: the most likely fix first, each pasteable where it can be
    checks: tuple[str, ...]  # codes or code prefixes of the `mpdoctor check` checks that confirm it
    sources: tuple[str, ...]  # public threads and sources it was learned from (URLs)
    examples: tuple[str, ...]  # real messages (a line or a traceback) that must be recognised
    near_misses: tuple[str, ...] = ()  # real messages that look alike and must not be
    frames: tuple[str, ...] = ()  # regexes: some frame of the line's traceback must match one
    not_frames: tuple[str, ...] = ()  # regexes: no frame of the line's traceback may match one
    rank: int = 0  # when signatures claim the same line, the highest rank is the explanation
    notes: str = ""  # anything a maintainer should know about it

    @cached_property
    def compiled(self) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p) for p in self.patterns)

    @cached_property
    def compiled_frames(self) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p) for p in self.frames)

    @cached_property
    def compiled_not_frames(self) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p) for p in self.not_frames)


def fix(text: str, command: str | None = None) -> Step:
    """A fix step, spelled short in the data files."""
    return Step(text, command)


__all__ = ["FAMILIES", "ID_PATTERN", "Signature", "fix"]
