"""The work explain's regexes may do on one line is bounded, for every signature (issue 40, item 8).

``op-support-low-precision-linalg``'s details pattern began with ``[a-z_][a-z0-9_.]{0,60}``: a search tried it at
every character of a line and read up to 60 more from each, some 40 ms for a 4 KB line it then rejected (a crafted
log: 11 s/MB). A line is cut at ``matcher.MAX_LINE`` characters; what each start of a search may cost is what this
guards, by the patterns' structure, with no clock: from one start, how many characters can the pattern consume by
character classes before it needs a literal? A pattern whose start is a literal (``not implemented for``) fails
at the first character that differs; one that starts at a word only (a lookbehind: ``(?<![a-z0-9_])``) or at
the line's start tries one start a word. Only an unguarded pattern that opens with a class repeat scans many
characters from every start, so that one is refused beyond ``LEADING_LIMIT``.
"""

from __future__ import annotations

import re

import pytest

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import MAX_LINE

try:  # Python 3.11 moved the parser
    from re import _constants as C, _parser as sre_parse
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as C
    import sre_parse

LEADING_LIMIT = 16  # characters a search may read by classes from one unguarded start (`[a-z_]{0,8}` and so on)
GUARDED_LIMIT = 512  # ...and from one start at a word or the line's start (a word is read once)
CLASSES = {C.IN, C.ANY, C.NOT_LITERAL, C.CATEGORY}
REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)}


def leading(items) -> tuple[int, str]:
    """How many characters ``items`` (a parsed pattern) can consume by character classes from one start before
    it reaches a literal, and why it stopped: "literal", "guarded" (a lookbehind or ``^`` decides where it may
    start), or "open" (it ended, or a group may match without a literal)."""
    run = 0
    for op, av in items:
        if op is C.AT:
            return run, "guarded"
        if op in (C.ASSERT, C.ASSERT_NOT):
            if av[0] < 0 and run == 0:  # a lookbehind before anything: only some starts are tried
                return run, "guarded"
            continue  # a lookahead consumes nothing
        if op is C.LITERAL:
            return run, "literal"
        if op in CLASSES:
            run += 1
            continue
        if op is C.BRANCH:
            outcomes = [leading(branch.data) for branch in av[1]]
            width = max(width for width, _ in outcomes)
            if all(kind != "open" for _, kind in outcomes):
                return run + width, "guarded" if all(kind == "guarded" for _, kind in outcomes) else "literal"
            run += _width(items, op, av)
            continue
        if op is C.SUBPATTERN:
            width, kind = leading(av[-1].data)
            if kind != "open":
                return run + width, kind
            run += width
            continue
        if op in REPEATS:
            low, high, sub = av
            width, kind = leading(sub.data)
            if kind != "open" and low >= 1:
                return run + width, kind
            run += min(high, 10**6) * _width(sub.data)
            continue
        run += _width(items, op, av)
    return run, "open"


def _width(items, op=None, av=None) -> int:
    pattern = sre_parse.SubPattern(sre_parse.State(), [(op, av)] if op is not None else list(items))
    return min(pattern.getwidth()[1], 10**6)


def scan_per_start(pattern: str, flags: int = 0) -> tuple[int, str]:
    return leading(sre_parse.parse(pattern, flags).data)


def every_pattern():
    for signature in all_signatures():
        for kind, patterns in (("pattern", signature.patterns), ("details", signature.details)):
            for pattern in patterns:
                yield signature.id, kind, pattern


def test_no_pattern_scans_far_from_every_start():
    over = []
    for signature, kind, pattern in every_pattern():
        width, stop = scan_per_start(pattern, re.IGNORECASE)
        limit = GUARDED_LIMIT if stop == "guarded" else LEADING_LIMIT
        if width > limit:
            over.append((signature, kind, width, stop, pattern[:90]))
    assert over == [], over


def test_the_work_per_line_is_bounded():
    # characters read for one line, at most, summed over every pattern: a bound, counted, not timed
    patterns = list(every_pattern())
    assert len(patterns) > 100  # the guard saw the whole library
    per_line = sum(MAX_LINE * max(1, scan_per_start(p, re.IGNORECASE)[0]) for _, _, p in patterns)
    assert per_line <= MAX_LINE * len(patterns) * LEADING_LIMIT * 2


@pytest.mark.parametrize(
    "pattern, refused",
    [
        # the pattern issue 40 timed, as it was, and as it is
        (r"(?P<op>[a-z_][a-z0-9_.]{0,60})(?:\([a-z0-9_]{0,20}\{[^}]{0,60}\}\))?: (?:low precision|expected a)", True),
        (r"(?<![a-z0-9_.])(?P<op>[a-z_][a-z0-9_.]{0,60})(?:\([a-z0-9_]{0,20}\{[^}]{0,60}\}\))?: low", False),
        (r"(?P<op>[a-z0-9_]{1,60}_cpu) not implemented", True),
        (r"[^\n]{0,300}? got half", True),
        (r"(?:_cuda|cuda_|cudnn)[a-z0-9_]{0,60}\" not implemented", False),  # a literal first: fails at once
        (r"^(?:[^\n]{0,200}?error: )?(?P<op>[a-z_]{1,60}): ", False),  # the line's start: one start a line
        (r"[a-z]{0,8}_cpu", False),
    ],
)
def test_the_guard_tells_a_scanning_pattern(pattern, refused):
    width, stop = scan_per_start(pattern, re.IGNORECASE)
    assert (width > (GUARDED_LIMIT if stop == "guarded" else LEADING_LIMIT)) is refused, (width, stop)
