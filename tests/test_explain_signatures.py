"""Every known failure is held to its own data: its real examples are recognised (and it is the
explanation given for them), its near-misses are not, and its patterns stay linear."""

from __future__ import annotations

import re

try:  # the regex parser's own modules; sre_parse and sre_constants are their deprecated names
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # Python before 3.11
    import sre_constants
    import sre_parse

import pytest

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import find
from mpdoctor.explain.signature import FAMILIES, ID_PATTERN
from mpdoctor.checks.registry import builtin_registry

SIGNATURES = all_signatures()
BY_ID = {s.id: s for s in SIGNATURES}
MAX_GAP = 200  # the longest a non-literal repeat may run
MIN_LITERAL = 4  # every pattern starts with a literal this long, so the regex engine skips to its occurrences


def examples():
    return [pytest.param(s, text, id=f"{s.id}-{i}") for s in SIGNATURES for i, text in enumerate(s.examples)]


def near_misses():
    return [pytest.param(s, text, id=f"{s.id}-{i}") for s in SIGNATURES for i, text in enumerate(s.near_misses)]


def test_there_are_at_least_40_distinct_failures():
    assert len(SIGNATURES) >= 40


def test_signature_data_is_well_formed():
    codes = [check.code for check in builtin_registry()]
    assert len(BY_ID) == len(SIGNATURES), "duplicate ids"
    for s in SIGNATURES:
        assert ID_PATTERN.match(s.id), s.id
        assert s.family in FAMILIES, s.id
        assert s.title and s.cause and s.fixes and s.examples, s.id
        assert s.sources and all(src.startswith("https://") for src in s.sources), s.id
        assert all(n == n.lower() and n for n in s.needles), s.id
        for check in s.checks:
            assert any(code.startswith(check) for code in codes), f"{s.id}: no check {check}"


@pytest.mark.parametrize("signature,text", examples())
def test_each_example_is_recognised_as_its_signature(signature, text):
    found = [m.signature.id for m in find(text, SIGNATURES)]
    assert signature.id in found, f"{signature.id} not recognised; found {found}"


@pytest.mark.parametrize("signature,text", near_misses())
def test_each_near_miss_is_not(signature, text):
    assert signature.id not in [m.signature.id for m in find(text, SIGNATURES)]


def _repeats(tree, inside=False):
    """Yield (max, nested) for every repeat in a parsed pattern."""
    for op, value in tree:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, body = value
            yield high, inside
            yield from _repeats(body, True)
        elif op == sre_constants.SUBPATTERN:
            yield from _repeats(value[-1], inside)
        elif op == sre_constants.BRANCH:
            for branch in value[1]:
                yield from _repeats(branch, inside)


def _leading_literal(tree) -> int:
    """How many literal characters every match must start with."""
    count = 0
    for op, value in tree:
        if op == sre_constants.LITERAL:
            count += 1
        elif op == sre_constants.SUBPATTERN:
            return count + _leading_literal(value[-1])
        elif op == sre_constants.BRANCH:
            return count + min(_leading_literal(branch) for branch in value[1])
        else:
            return count
    return count


@pytest.mark.parametrize("signature", SIGNATURES, ids=[s.id for s in SIGNATURES])
def test_patterns_stay_linear(signature):
    for pattern in signature.patterns:
        tree = sre_parse.parse(pattern)
        for high, nested in _repeats(tree):
            assert not nested, f"{signature.id}: nested repeat in {pattern!r}"
            assert high != sre_constants.MAXREPEAT and high <= MAX_GAP, f"{signature.id}: unbounded {pattern!r}"
        assert _leading_literal(tree) >= MIN_LITERAL, f"{signature.id}: {pattern!r} must start with a literal"
        re.compile(pattern)
