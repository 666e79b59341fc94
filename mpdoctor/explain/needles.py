"""Which lines of a log hold which needles, found in one pass over it.

A signature is only tried on a line that holds one of its needles (lower-case
literals, see ``signature.py``), so this is the one step that reads the whole input.
One ``str.find`` pass per needle cost a 100 MB log about 130 passes; here an
Aho-Corasick automaton (``ahocorasick_rs``: a DFA over bytes, or where needles are
dense an NFA, which reports them faster) reads the lower-cased
UTF-8 once and reports every occurrence of every needle, overlapping ones included,
so a line holding ``no module named 'oneflow'`` counts for both of the needles it
holds. The work is linear in the input plus the occurrences, and the occurrences
come back a window at a time, so a log made of nothing but needles holds a bounded
list of them at once.

``reference_lines`` is the plain definition, one ``find`` per needle: it is what
the tests compare the automaton with, and what runs when ``ahocorasick_rs`` cannot
be imported (a checkout run without its dependencies): slower, never different.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

try:
    import ahocorasick_rs
except ImportError:  # a declared dependency; without it the reference search gives the same lines, slower
    ahocorasick_rs = None

# Bytes of the folded text given to the automaton at a time: what it returns for one window is a list of
# (needle, start, end) triples, at most one per byte even for input made of needles.
WINDOW = 1 << 20


def hit_lines(
    folded: bytes, needles: Sequence[str], text_length: Optional[int] = None, engine: str = "auto"
) -> dict[int, list[int]]:
    """{start of a line: the indexes of the needles it holds, ascending}, lines in order.

    ``folded`` is the lower-cased text as UTF-8 (``cleaning.fold``); a line's start is given as an offset
    into the text, which is a character offset: ``text_length`` (the text's length in characters) says
    whether the two differ, as they do for text that is not ASCII. ``engine``: "auto" (the automaton when it
    is installed), "automaton" or "reference".
    """
    needles = tuple(needles)
    if any(not needle for needle in needles):
        raise ValueError("a needle is empty: it would make every line a candidate")
    if engine == "reference" or (engine == "auto" and ahocorasick_rs is None) or not needles:
        found = reference_lines(folded, needles)
    elif engine in ("auto", "automaton"):
        found = _automaton_lines(folded, needles)
    else:
        raise ValueError(f"unknown engine {engine!r}")
    if text_length is not None and text_length != len(folded):
        found = _character_offsets(folded, found)
    return found


def reference_lines(folded: bytes, needles: Sequence[str]) -> dict[int, list[int]]:
    """The plain definition: each needle found with ``find`` over the whole text, one hit per line."""
    found: dict[int, list[int]] = {}
    for index, needle in enumerate(needles):
        literal = needle.encode("utf-8", errors="surrogatepass")
        at = folded.find(literal)
        while at >= 0:
            start = folded.rfind(b"\n", 0, at) + 1
            end = folded.find(b"\n", at)
            end = len(folded) if end < 0 else end
            lines = found.setdefault(start, [])
            if not lines or lines[-1] != index:
                lines.append(index)
            at = folded.find(literal, max(end, at + 1))  # one hit per line is enough; always forward
    return {start: found[start] for start in sorted(found)}


@lru_cache(maxsize=8)
def _automaton(needles: tuple[str, ...]):
    """The automata for these needles, built once per set (a few ms), reused by every call: ``(sparse, dense,
    longest)``. Both find the same occurrences; what each costs differs. A DFA (about 1 MB for ~600 needles)
    reads ordinary log fastest: the bench's 100 MB a quarter faster than an NFA (0.16 s against 0.22 s). Where
    needles are dense (a line made of them, the bench's adversarial log) reporting the occurrences is the work,
    and the contiguous NFA does that a third faster (0.07 s against 0.10 s for 9 MB of needles)."""
    literals = [needle.encode("utf-8", errors="surrogatepass") for needle in needles]
    return (
        ahocorasick_rs.BytesAhoCorasick(literals, implementation=ahocorasick_rs.Implementation.DFA),
        ahocorasick_rs.BytesAhoCorasick(literals, implementation=ahocorasick_rs.Implementation.ContiguousNFA),
        max(len(literal) for literal in literals),
    )


# The next window is read with the dense automaton after one with more than an occurrence every this many bytes:
# where the two cost the same, measured (about 5,000 a MB; an ordinary log has a few hundred, a log of needles tens
# of thousands).
DENSE_SPACING = 200


def _automaton_lines(folded: bytes, needles: tuple[str, ...]) -> dict[int, list[int]]:
    sparse, dense, longest = _automaton(needles)
    found: dict[int, list[int]] = {}
    size = len(folded)
    line_start, line_end, held, ordered = -1, -1, set(), True
    automaton = sparse
    with memoryview(folded) as view:
        for begin in range(0, size, WINDOW):
            # The window reaches a needle's length past its share, so a needle that starts in the share is whole
            # in it; one that starts past the share is left to the next window.
            share_end = begin + WINDOW
            matches = automaton.find_matches_as_indexes(view[begin : share_end + longest - 1], overlapping=True)
            # the next window is most likely alike
            automaton = dense if len(matches) * DENSE_SPACING > WINDOW else sparse
            for index, start, _ in matches:
                start += begin
                if start >= share_end:
                    continue
                if not line_start <= start <= line_end:  # another line: find its bounds once, not per needle
                    if held:  # the line before is complete: kept as a short sorted list, not a set
                        found[line_start] = sorted(held.union(found.get(line_start, ())))
                    following = folded.rfind(b"\n", 0, start) + 1
                    ordered = ordered and following > line_start
                    line_start, line_end = following, folded.find(b"\n", start)
                    line_end = size if line_end < 0 else line_end
                    held = set()
                held.add(index)
    if held:
        found[line_start] = sorted(held.union(found.get(line_start, ())))
    # matches come in the order they end, so lines come in order; sorted again only if that ever changed
    return found if ordered else {start: found[start] for start in sorted(found)}


def _character_offsets(folded: bytes, found: dict[int, list[int]]) -> dict[int, list[int]]:
    """The same lines keyed by character offsets: each line starts after a newline, on a character boundary,
    so the characters before it are those of the bytes before it, decoded a line gap at a time."""
    converted: dict[int, list[int]] = {}
    characters, previous = 0, 0
    for start, indexes in found.items():  # in order
        characters += len(folded[previous:start].decode("utf-8", errors="surrogatepass"))
        previous = start
        converted[characters] = indexes
    return converted


__all__ = ["DENSE_SPACING", "WINDOW", "hit_lines", "reference_lines"]
