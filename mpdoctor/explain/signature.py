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

from mpdoctor.findings import FixStep

FAMILIES = (
    "dtype",
    "cpu-half",
    "scaler",
    "overflow",
    "hardware",
    "attention",
    "kernel-image",
    "apex",
    "oneflow",
    "driver",
    "framework",
    "mps",
    "numerics",
    "op-support",
    "compiler",
    "quantization",
)
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Alternative:
    """Another cause the same words can have, ranked below the signature's own, and what tells them apart."""

    cause: str  # the other cause, in plain words
    tell: str  # what tells the two apart: a frame, a package, a setting the user can look at
    checks: tuple[str, ...] = ()  # codes (or prefixes) of the `mpdoctor check` checks that confirm it
    fixes: tuple[FixStep, ...] = ()  # what fixes it when it is this one


@dataclass(frozen=True)
class Signature:
    """One known failure."""

    id: str  # kebab-case, unique: what `mpdoctor explain --list` and the JSON name it by
    family: str  # one of FAMILIES
    title: str  # what happened, in one line
    needles: tuple[str, ...]  # lower-case literals; a line is only tried when it contains one
    patterns: tuple[str, ...]  # regexes over one line (no nested quantifiers: they must stay linear)
    cause: str  # why it happens, in plain words
    fixes: tuple[FixStep, ...]  # ranked: the most likely fix first, each pasteable where it can be
    checks: tuple[str, ...]  # codes or code prefixes of the `mpdoctor check` checks that confirm it
    sources: tuple[str, ...]  # public threads and sources it was learned from (URLs)
    examples: tuple[str, ...]  # real messages (a line or a traceback) that must be recognised
    near_misses: tuple[str, ...] = ()  # real messages that look alike and must not be
    frames: tuple[str, ...] = ()  # regexes: some frame of the line's traceback must match one
    not_frames: tuple[str, ...] = ()  # regexes: no frame of the line's traceback may match one
    rank: int = 0  # when signatures claim the same line, the highest rank is the explanation
    # A notice, not a mixed-precision failure: a deprecation with its replacement (the run goes on), or an
    # environment fault beside the precision (a CPU-only torch, xFormers built for another torch, a scaler that turned
    # itself off without CUDA) that every held-out round labels no precision failure. explain still answers it, with
    # the move to make, but among the report's notices, never as a recognised failure.
    notice: bool = False
    notes: str = ""  # anything a maintainer should know about it
    alternatives: tuple[Alternative, ...] = ()  # other causes of the same words, most likely first
    # Regexes over the lower-cased line whose named groups fill ``{op}``, ``{device}``, ``{dtype}``... in the
    # title, cause and fixes (``fill``). Groups ``a`` and ``b`` name two dtypes: the line is only claimed when
    # they are different dtypes in torch's spellings (``known/spelling.py``), so "Half and Half" is no mismatch.
    details: tuple[str, ...] = ()  # the first must match the line; the others add what they find
    defaults: tuple[tuple[str, str], ...] = ()  # (group, text) used when the group did not match
    # A general shape's fixes in each library's own terms: (regex over the library's name, as the line or the
    # traceback's installed packages name it, lower-cased; the fixes ranked first when it matches). Several
    # libraries say the same thing, and each is fixed with its own settings (`compute_type=` for CTranslate2, a
    # recipe for TransformerEngine, `module_filter_fn` for torchao).
    library_fixes: tuple[tuple[str, tuple[FixStep, ...]], ...] = ()

    @cached_property
    def compiled(self) -> tuple[re.Pattern, ...]:
        """The patterns for a lower-cased line: people paste messages in any case (issue titles, chat, logs
        passed through `str.lower()`), and the needles are already found case-insensitively. Lower-casing the
        pattern, not re.IGNORECASE, keeps the regex engine's fast scan for a literal prefix: IGNORECASE made
        the adversarial 100 MB log five times slower."""
        return tuple(re.compile(folded(p)) for p in self.patterns)

    @cached_property
    def compiled_details(self) -> tuple[re.Pattern, ...]:
        # run on the line as written, so that an op or a call is shown in its own case (`torch.amp.GradScaler`)
        return tuple(re.compile(p, re.IGNORECASE) for p in self.details)

    @cached_property
    def compiled_library_fixes(self) -> tuple[tuple[re.Pattern, tuple[FixStep, ...]], ...]:
        return tuple((re.compile(pattern), steps) for pattern, steps in self.library_fixes)

    def fixes_for_library(self, library: str) -> tuple[FixStep, ...]:
        """The fixes in the named library's terms (none when it is not named or not one this shape knows)."""
        name = library.lower()
        return tuple(step for pattern, steps in self.compiled_library_fixes if pattern.search(name) for step in steps)

    @cached_property
    def compiled_frames(self) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p) for p in self.frames)

    @cached_property
    def compiled_not_frames(self) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p) for p in self.not_frames)


def folded(pattern: str) -> str:
    """``pattern`` for lower-cased text: its letters lower-cased, its escapes (``\\D``, ``\\W``, ``\\S``) kept.

    On lower-cased text this matches what ``pattern`` matches with re.IGNORECASE (ASCII letters; patterns
    spell letters literally, never as ``\\x`` escapes).
    """
    out, i = [], 0
    while i < len(pattern):
        step = 2 if pattern[i] == "\\" else 1
        out.append(pattern[i : i + step] if step == 2 else pattern[i].lower())
        i += step
    return "".join(out)


def fill(text: str, details: dict[str, str]) -> str:
    """``text`` with each ``{name}`` of ``details`` replaced; other braces (code in a fix) are left alone."""
    for name, value in details.items():
        text = text.replace("{" + name + "}", value)
    return text


def fix(text: str, command: str | None = None) -> FixStep:
    """A fix step, spelled short in the data files."""
    return FixStep(text, command)


__all__ = ["FAMILIES", "ID_PATTERN", "Alternative", "Signature", "fill", "fix", "folded"]
