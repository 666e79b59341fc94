"""Code paths in the project scan's AMP sites: which steps run together, in which function, under which branches.

The scan (``mpdoctor/probes/remote/scan.py``, ``amp_sites``) records each step of mixed
precision with its function and the if/else branches above it. Two steps are on one
path when a function reaches both (itself, or through calls to functions of the same
file) and no branch separates them:

* branches that exclude each other are not one path: the two arms of one if/else, the
  same condition taken both ways, ``x == "apex"`` beside ``x == "native"``;
* and a step under a flag of its own is not on the path of a step under another flag
  (``if args.apex:`` ... ``if args.amp:``): those are alternatives a run configuration
  picks. One path needs every condition of one step to hold for the other as well
  (an unconditional step, or the same flag for both).

autocast's and GradScaler's ``enabled=`` expression is a condition like a branch's.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import lru_cache
from typing import Iterable, Optional

from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.project import AmpSite

MAX_DEPTH = 6  # calls followed from one function
TORCH_SETUPS = ("autocast", "grad_scaler")
APEX_SETUPS = ("apex.amp.initialize", "apex.amp.scale_loss")


def sites(snap: Snapshot) -> list[AmpSite]:
    """The project's AMP sites under its root (``ProjectScan.under_root``)."""
    scan = snap.environment.project
    return scan.under_root(scan.amp_sites)


def on(site: AmpSite) -> bool:
    """autocast or GradScaler not switched off by a constant: ``enabled=False`` is a guard, not a use."""
    return site.enabled != "false"


def torch_setup(site: AmpSite) -> bool:
    return site.kind in TORCH_SETUPS and on(site)


def apex_setup(site: AmpSite) -> bool:
    return site.kind == "apex_amp" and site.what in APEX_SETUPS


def where(site: AmpSite) -> str:
    """``file:line`` first (CI annotations point there), then the function and the line's text."""
    scope = f" in {site.scope}" if site.scope else ""
    return f"{site.file}:{site.line}{scope}: `{site.text or site.what}`"


Condition = tuple[str, bool]  # (condition's source, whether it holds)


def conditions(guards: Iterable[str], site: Optional[AmpSite] = None) -> list[Condition]:
    """The conditions a step runs under: its branches, and its own enabled= expression."""
    found = []
    for guard in guards:
        _, branch, text = guard.split(":", 2) if guard.count(":") >= 2 else ("", "if", guard)
        found.append(_normal(text, branch == "if"))
    if site is not None and site.enabled and site.enabled != "false" and site.kind in TORCH_SETUPS:
        found.append(_normal(site.enabled, True))
    return found


def _normal(text: str, holds: bool) -> Condition:
    text = " ".join(text.split())
    while text.startswith("not "):
        text, holds = text[4:].strip(), not holds
    return text, holds


@lru_cache(maxsize=4096)
def _equality(text: str) -> Optional[tuple[str, object]]:
    """(left side, constant) of ``E == constant`` (either way round); None for anything else."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if isinstance(right, ast.Constant):
            return ast.dump(left), right.value
    return None


def exclusive(first: list[Condition], second: list[Condition]) -> bool:
    """Whether no run meets both lists: one condition taken both ways, or one value compared to two constants."""
    return bool(separating(first, second))


def separating(first: list[Condition], second: list[Condition]) -> list[str]:
    """The conditions that keep two lists apart (``exclusive``): each one taken both ways, and both sides of
    each value compared to two constants; [] when some run meets both."""
    found = []
    for text, holds in first:
        for other, other_holds in second:
            if text == other and holds != other_holds:
                found.append(text)
            elif holds and other_holds:
                a, b = _equality(text), _equality(other)
                if a and b and a[0] == b[0] and a[1] != b[1]:
                    found += [text, other]
    return found


def one_path(first: list[Condition], second: list[Condition]) -> bool:
    """Whether two steps run together: nothing excludes them, and one's conditions are all the other's too."""
    if exclusive(first, second):
        return False
    a, b = set(first), set(second)
    return a <= b or b <= a


def by_file(found: list[AmpSite]) -> dict[str, list[AmpSite]]:
    grouped: dict[str, list[AmpSite]] = defaultdict(list)
    for site in found:
        grouped[site.file].append(site)
    return grouped


def reach(file_sites: list[AmpSite], scope: str) -> list[tuple[AmpSite, list[Condition], list[str]]]:
    """Every step ``scope`` runs, itself or through calls in its file: (step, its conditions from ``scope``,
    the functions called on the way)."""
    steps: dict[str, list[AmpSite]] = defaultdict(list)
    for site in file_sites:
        steps[site.scope].append(site)
    found: list[tuple[AmpSite, list[Condition], list[str]]] = []

    def walk(name: str, above: list[Condition], chain: list[str]) -> None:
        for site in steps.get(name, []):
            if site.kind == "call":
                if site.what not in chain and site.what != name and len(chain) < MAX_DEPTH:
                    walk(site.what, above + conditions(site.guards), chain + [site.what])
            else:
                found.append((site, above + conditions(site.guards, site), chain))

    walk(scope, [], [])
    return found


def in_order(
    file_sites: list[AmpSite], scope: str
) -> list[tuple[tuple[int, ...], AmpSite, list[Condition], list[AmpSite]]]:
    """Every step ``scope`` runs, itself or through calls in its file, in the order it runs them: (position, step,
    its conditions from ``scope``, the call sites on the way). A position is the lines of those calls, then the
    step's own: a helper's steps run where it is called (``reach``, with the order kept)."""
    steps: dict[str, list[AmpSite]] = defaultdict(list)
    for site in file_sites:
        steps[site.scope].append(site)
    found: list[tuple[tuple[int, ...], AmpSite, list[Condition], list[AmpSite]]] = []

    def walk(name: str, above: list[Condition], at: tuple[int, ...], calls: list[AmpSite], chain: list[str]) -> None:
        for site in steps.get(name, []):
            if site.kind == "call":
                if site.what not in chain and site.what != name and len(chain) < MAX_DEPTH:
                    walk(site.what, above + conditions(site.guards), at + (site.line,), calls + [site], chain + [name])
            else:
                found.append((at + (site.line,), site, above + conditions(site.guards, site), calls))

    walk(scope, [], (), [], [])
    found.sort(key=lambda step: step[0])
    return found
