"""The odd-module-out analysis of ``tree.py``, on sorted names: work for the mixed modules only, not every tensor.

``tree.analyse`` builds a node per module and adds every tensor to each module
above it: about 15 dictionary updates a tensor, 1.2 s for a 100,000-tensor MoE
checkpoint. This gives the same :class:`tree.Tree`, entry for entry and in the
same order, from the names sorted once. A module's tensors are then one run of
the sorted names (every name that starts with ``module.``), found by bisection,
and its per-dtype totals are differences of running sums, so asking about a module
costs a few bisections whatever its size. Only modules holding more than one
dtype are looked into (``tree._walk`` returns at once from the rest), and within
one, only the submodules holding a tensor of a dtype other than its dominant one
can be odd or mixed: those are found from the positions of such tensors, skipping
each submodule's run once it is found.

Names with an empty part (``a..b``, a leading or trailing dot, an empty name)
are left to ``tree.analyse``, whose handling of them this does not copy.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from itertools import accumulate, compress, repeat
from operator import eq, floordiv
from typing import Iterable, Optional

from mpdoctor.checkpoint_audit import gc_pause
from mpdoctor.checkpoint_audit import tree as reference
from mpdoctor.checkpoint_audit.tree import FLOATING, ITEM_SIZE, Judge, ModelFacts, Tree


class _Sorted:
    """One component's floating tensors, sorted by name, with running sums per dtype."""

    def __init__(self, names: list[str], dtypes: list[str], sizes: list[int]) -> None:
        self.order = sorted(range(len(names)), key=names.__getitem__)  # sorted position -> position in the file
        self.names = list(map(names.__getitem__, self.order))
        self.dtypes = list(map(dtypes.__getitem__, self.order))
        sizes = list(map(sizes.__getitem__, self.order))
        self._by_dots: dict[int, list[int]] = {}  # dots -> the sorted positions of the names with that many
        self.positions: dict[str, list[int]] = {}  # dtype -> its tensors' sorted positions
        self.bytes: dict[str, list[int]] = {}  # dtype -> running sum of their bytes (0 first)
        self.elements: dict[str, list[int]] = {}
        for dtype in set(self.dtypes):
            at = list(compress(range(len(names)), map(eq, self.dtypes, repeat(dtype))))
            held = list(map(sizes.__getitem__, at))
            self.positions[dtype] = at
            self.bytes[dtype] = [0, *accumulate(held)]
            self.elements[dtype] = [0, *accumulate(map(floordiv, held, repeat(ITEM_SIZE[dtype])))]

    def run(self, path: str) -> tuple[int, int]:
        """The sorted positions of the tensors inside module ``path`` ("" for the whole model)."""
        if not path:
            return 0, len(self.names)
        # Every name that starts with "path." sorts from "path." up to, not including, "path/" ("/" follows ".").
        return bisect_left(self.names, path + "."), bisect_left(self.names, path + "/")

    def totals(self, lo: int, hi: int) -> dict[str, list[int]]:
        """dtype -> [tensors, bytes, elements] of the positions lo to hi."""
        found = {}
        for dtype, at in self.positions.items():
            a, b = bisect_left(at, lo), bisect_left(at, hi)
            if b > a:
                found[dtype] = [
                    b - a,
                    self.bytes[dtype][b] - self.bytes[dtype][a],
                    self.elements[dtype][b] - self.elements[dtype][a],
                ]
        return found

    def own(self, path: str, lo: int, hi: int) -> list[int]:
        """The sorted positions of the module's own tensors (one dot more than its path has), in the file's order."""
        if not self._by_dots:  # made the first time: the sorted positions of the names with 0, 1, 2, ... dots
            dots = list(map(str.count, self.names, repeat(".")))
            by_dots = sorted(range(len(dots)), key=dots.__getitem__)  # stable: positions ascending within a count
            start = 0
            for count, many in sorted(Counter(dots).items()):
                self._by_dots[count] = by_dots[start : start + many]
                start += many
        at = self._by_dots.get(path.count(".") + 1 if path else 0, [])
        return sorted(at[bisect_left(at, lo) : bisect_left(at, hi)], key=self.order.__getitem__)

    def first(self, lo: int, hi: int) -> int:
        """Where the first of these tensors is in the file: submodules are visited in that order, as tree.py does."""
        return min(self.order[lo:hi])


def _plain(names: list[str]) -> bool:
    """No empty name, no empty part: what the sorted runs assume.

    Joined by dots, an empty part anywhere (``a..b``, ``.a``, ``a.``, ``""``) shows as two dots in a row, or
    as a dot at either end.
    """
    joined = ".".join(names)
    return bool(names) and ".." not in joined and not joined.startswith(".") and not joined.endswith(".")


def analyse(tensors: Iterable[tuple[str, str, str, int]], facts: Optional[ModelFacts] = None) -> Tree:
    """``tree.analyse`` of ``(component, name, dtype, nbytes)`` tensors, the same result, faster (see the module)."""
    rows = list(tensors)
    if not rows:
        return Tree()
    components, names, dtypes, sizes = zip(*rows)
    floating = list(map(FLOATING.__contains__, dtypes))
    return analyse_columns(
        *(list(compress(column, floating)) for column in (components, names, dtypes, sizes)), facts=facts
    )


def analyse_columns(
    components: list[str], names: list[str], dtypes: list[str], sizes: list[int], facts: Optional[ModelFacts] = None
) -> Tree:
    """:func:`analyse` of floating tensors given as columns, one list per field, a tensor per index."""
    if not _plain(names):
        return reference.analyse(zip(components, names, dtypes, sizes), facts)
    with gc_pause.paused():
        return _analyse(components, names, dtypes, sizes, facts or ModelFacts())


def _analyse(components: list[str], names: list[str], dtypes: list[str], sizes: list[int], facts: ModelFacts) -> Tree:
    tree = Tree()
    for component in sorted(set(components)):
        if len(set(components)) > 1:
            mine = list(map(eq, components, repeat(component)))
            tensors = _Sorted(list(compress(names, mine)), list(compress(dtypes, mine)), list(compress(sizes, mine)))
        else:
            tensors = _Sorted(names, dtypes, sizes)
        Judge(_Runs(tensors), component, facts, tree).run((0, len(tensors.names)))
    tree.close()
    return tree


class _Runs:
    """:class:`tree.Judge`'s view of the sorted names: a module is its run ``(lo, hi)`` of sorted positions."""

    def __init__(self, tensors: _Sorted) -> None:
        self.tensors = tensors

    def totals(self, run: tuple[int, int], path: str) -> dict[str, list[int]]:
        return self.tensors.totals(*run)

    def own(self, run: tuple[int, int], path: str) -> list[tuple[str, str, int]]:
        start = len(path) + 1 if path else 0
        tensors = self.tensors
        return [(tensors.names[i][start:], tensors.dtypes[i], _size(tensors, i)) for i in tensors.own(path, *run)]

    def has_children(self, run: tuple[int, int], path: str) -> bool:
        return len(self.tensors.own(path, *run)) < run[1] - run[0]

    def children(self, run: tuple[int, int], path: str, dtype: str) -> list[tuple[str, tuple[int, int]]]:
        return _children(self.tensors, path, run[0], run[1], dtype)

    def names(self, run: tuple[int, int], path: str) -> list[str]:
        return self.tensors.names[run[0] : run[1]]


def _size(tensors: _Sorted, i: int) -> int:
    at = tensors.positions[tensors.dtypes[i]]
    k = bisect_left(at, i)
    return tensors.bytes[tensors.dtypes[i]][k + 1] - tensors.bytes[tensors.dtypes[i]][k]


def _children(tensors: _Sorted, path: str, lo: int, hi: int, dom: str) -> list[tuple[str, tuple[int, int]]]:
    """The submodules of ``path`` holding a tensor not in ``dom``, with their runs, in the file's order.

    The rest are wholly in ``dom``: neither odd nor mixed, nothing to say.
    """
    start = len(path) + 1 if path else 0
    found: dict[str, tuple[int, int]] = {}
    for dtype, at in tensors.positions.items():
        if dtype == dom:
            continue
        k, end = bisect_left(at, lo), bisect_left(at, hi)
        while k < end:
            name = tensors.names[at[k]]
            dot = name.find(".", start)
            if dot < 0:  # one of the module's own tensors
                k += 1
                continue
            child = name[start:dot]
            if child in found:
                run = found[child]
            else:
                run = found[child] = tensors.run(name[:dot])
            k = bisect_left(at, run[1], k)  # past this submodule's tensors
    return sorted(found.items(), key=lambda item: tensors.first(*item[1]))
