"""The registry: every code mpdoctor reports, declared next to the code that reports it.

A snapshot check is a pure function of the snapshot that yields findings::

    @check("TORCH005", "cpu-only-torch-with-gpus", family="torch",
           fires_on=("titan-rtx-1080ti-cpu-torch",), quiet_on=("cpu-laptop", "torch-missing"))
    def cpu_only_torch_with_gpus(snap: Snapshot) -> Iterator[Finding]:
        '''One line saying what it finds.

        ## Why it matters
        ...
        ## Fix
        ...
        '''

Its docstring is its user documentation (``mpdoctor rule CODE``). A check that
raises is reported as an MPD001 finding naming it; the other checks still run.

Each family has one code prefix (``FAMILIES``); a code must carry its family's.
Not every code judges a snapshot (``subject``): AUDIT001-005 judge a checkpoint
(``mpdoctor audit``), FLEET001-008 the ranks of one job (``mpdoctor fleet`` and
``mpdoctor fleet compare``), and MPD001-003 are mpdoctor's own. Whatever judges
them stamps its findings with the rule declared here (``Check.stamp``), so
``mpdoctor check`` runs only the snapshot checks, and every code is listed by
``mpdoctor checks`` and documented by ``mpdoctor rule``.

One way to declare: ``rule(CODE, name, family=..., subject=..., doc=...)`` for a
code that something else reports (its ``doc`` is the same two sections), and
``@check(CODE, name, family=..., ...)``, the same declaration written above the
function that the registry runs (its docstring is the ``doc``). Both go through
``Registry.add``. A rule whose findings carry severities of their own names them,
worst first (``severities=("error", "warning")``); tests hold its findings to them.

explain's signatures (``mpdoctor/explain/known/``, listed by ``known.MODULES``)
are not rules and stay data beside the registry: they have no code and judge no
machine, they recognise a pasted error message (needles, patterns, examples and
near misses, matched by one engine), and what they report is an explanation, not
a finding. Where they meet the registry they name it: a signature's ``checks``
are prefixes of snapshot codes here (the checks ``mpdoctor explain --check`` runs
to confirm it), held to the registry by tests/test_explain_signatures.py.

Relations between snapshot checks are declared, never hidden in an ``if``:

* ``superseded_by=("GPU002",)``: all of this check's findings stand down when
  GPU002 is selected and fires (produces a finding), because it says it better;
* ``defers_to=("TORCH006", "GPU005")``: only the findings this check wraps in
  ``defer(finding, "TORCH006")`` stand down, when TORCH006 is selected and fires:
  for a finding whose cause that check names (TORCH009's "CUDA unavailable"
  when the driver is too old), or one device or package among several;
* ``needs=("kernels",)``: facts the check reads beyond those always taken, so the
  run takes them only when a selected check needs them (``checks/facts.py``).

Selection comes first, every selected check runs, and only then do findings
stand down. With a superseding check ``--ignore``d, the superseded one speaks.

Each snapshot check also names the test fixtures that pin its behaviour, as explain
signatures carry examples and near misses:

* ``fires_on=("titan-1080ti-visible-devices-1", ...)``: fixtures on which the check
  must report (each still does with the check selected alone);
* ``quiet_on=("titan-1080ti-pci-order", ...)``: near misses, fixtures that look like
  its problem (the twin topology, a healthy node) on which it must not report,
  even selected alone. A finding that stands down for a superseding check is a
  relation, tested in tests/test_relations.py, not a near miss.

They are fixture *names* only: the fixtures are built by ``tests/fixtures/catalogue.py``,
which is not installed, so the registry stores the names and never loads them.
tests/test_checks_fixtures.py holds every built-in snapshot check to at least one of
each, every name to the catalogue, and every fixture to report exactly the codes
whose ``fires_on`` names it. Checkpoint, fleet and internal rules take neither.
"""

from __future__ import annotations

import importlib
import re
from typing import Callable, Iterable, Iterator, Mapping, Optional

from mpdoctor.checks.facts import FACTS

# What a rule is, what it may hold, and how a check runs: rule.py, re-exported here (the families' import path).
from mpdoctor.checks.rule import (  # noqa: F401
    CHECK_CRASHED as _CRASHED,
    CHECKPOINT,
    INTERNAL,
    NAME_PATTERN,
    RANKS,
    SNAPSHOT,
    SUBJECTS,
    Check,
    CheckFunc,
    Deferred,
    Outcome,
    defer,
    fixture_names as _fixture_names,
    severity_names as _severities,
)

CODE_PATTERN = re.compile(r"^([A-Z]+)[0-9]{3}$")
DOC_SECTIONS = ("## Why it matters", "## Fix")

# Every family and its code prefix. A new family adds a line here and one in checks/__init__.py.
FAMILIES: dict[str, str] = {
    "environment": "ENV",
    "torch": "TORCH",
    "driver": "DRV",
    "gpu": "GPU",
    "stack": "STACK",
    "precision": "PREC",
    "apex": "APEX",
    "oneflow": "ONEFLOW",
    "amp": "AMP",
    "audit": "AUDIT",
    "fleet": "FLEET",
    "mpdoctor": "MPD",
}


class Registry:
    """Codes to rules. Built-in ones register into ``REGISTRY`` on import."""

    def __init__(self, families: Mapping[str, str] = FAMILIES) -> None:
        self.families = dict(families)
        self._checks: dict[str, Check] = {}

    def add(
        self,
        code: str,
        name: str,
        family: str,
        func: Optional[CheckFunc] = None,
        *,
        subject: str = SNAPSHOT,
        superseded_by: Iterable[str] = (),
        defers_to: Iterable[str] = (),
        needs: Iterable[str] = (),
        doc: str = "",
        fires_on: Iterable[str] = (),
        quiet_on: Iterable[str] = (),
        severities: Iterable[str] = (),
    ) -> Check:
        match = CODE_PATTERN.match(code)
        if not match:
            raise ValueError(f"check code {code!r} must be letters then three digits")
        if not NAME_PATTERN.match(name):
            raise ValueError(f"check name {name!r} must be kebab-case")
        if family not in self.families:
            raise ValueError(f"{code}: unknown family {family!r} (families: {', '.join(self.families)})")
        if match.group(1) != self.families[family]:
            raise ValueError(f"{code}: family {family} has the prefix {self.families[family]}, not {match.group(1)}")
        if code in self._checks:
            raise ValueError(f"check code {code} registered twice")
        if any(c.name == name for c in self._checks.values()):
            raise ValueError(f"check name {name} registered twice")
        if subject not in SUBJECTS:
            raise ValueError(f"{code}: unknown subject {subject!r} (one of {', '.join(SUBJECTS)})")
        superseded_by, defers_to, needs = tuple(superseded_by), tuple(defers_to), tuple(needs)
        fires_on, quiet_on = _fixture_names(code, "fires_on", fires_on), _fixture_names(code, "quiet_on", quiet_on)
        severities = _severities(code, severities)
        if subject == SNAPSHOT:
            if func is None:
                raise ValueError(f"{code}: a snapshot check needs a function")
        elif func is not None or superseded_by or defers_to or needs or fires_on or quiet_on:
            raise ValueError(
                f"{code} judges {subject}: the registry does not run it, so it takes documentation "
                "only, no function, relations, needs or fixtures"
            )
        both = sorted(set(fires_on) & set(quiet_on))
        if both:
            raise ValueError(f"{code} both fires_on and is quiet_on {', '.join(both)}")
        if subject != SNAPSHOT and not doc.strip():
            raise ValueError(f"{code}: a rule without a function needs its documentation")
        for fact in needs:
            if fact not in FACTS:
                raise ValueError(f"{code} needs {fact!r}, which is no fact a run can take ({', '.join(FACTS)})")
        for other in superseded_by + defers_to:
            if other == code:
                raise ValueError(f"{code} cannot be superseded by itself")
        entry = Check(
            code, name, family, func, subject, superseded_by, defers_to, needs, doc, fires_on, quiet_on, severities
        )
        self._checks[code] = entry
        return entry

    def validate(self) -> None:
        """Relations name known snapshot checks and have no cycles (codes may be declared in any order)."""
        for entry in self._checks.values():
            for other in entry.superseded_by + entry.defers_to:
                target = self._checks.get(other)
                if target is None:
                    raise ValueError(f"{entry.code} is superseded by {other}, which is no registered code")
                if not target.runs_on_snapshot:
                    raise ValueError(
                        f"{entry.code} is superseded by {other}, which judges {target.subject}, "
                        "not a snapshot: it can never fire beside it"
                    )
        cycle = self._cycle()
        if cycle:
            raise ValueError(
                "checks supersede each other in a cycle, so all of them would stand down: " + " -> ".join(cycle)
            )

    def _cycle(self) -> list[str]:
        """One cycle of "is superseded by", as codes, or [] when there is none."""
        done: set[str] = set()

        def visit(path: list[str]) -> list[str]:
            entry = self._checks.get(path[-1])
            for other in (entry.superseded_by + entry.defers_to) if entry else ():
                if other in path:
                    return path[path.index(other) :] + [other]
                if other not in done:
                    found = visit(path + [other])
                    if found:
                        return found
            done.add(path[-1])
            return []

        for code in sorted(self._checks):
            found = [] if code in done else visit([code])
            if found:
                return found
        return []

    def __iter__(self) -> Iterator[Check]:
        return iter(sorted(self._checks.values(), key=lambda c: c.code))

    def get(self, code_or_name: str) -> Check | None:
        key = code_or_name.strip()
        if key.upper() in self._checks:
            return self._checks[key.upper()]
        return next((c for c in self._checks.values() if c.name == key.lower()), None)

    def snapshot_checks(self) -> list[Check]:
        """The checks `mpdoctor check` can run."""
        return [c for c in self if c.runs_on_snapshot]

    def select(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Check]:
        """Snapshot checks whose code starts with a --select prefix and with no --ignore prefix."""
        chosen = tuple(p.upper() for p in select)
        dropped = tuple(p.upper() for p in ignore)
        return [
            c
            for c in self.snapshot_checks()
            if (not chosen or c.code.startswith(chosen)) and not (dropped and c.code.startswith(dropped))
        ]

    def needs(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> frozenset[str]:
        """The facts the selected checks need beyond those every run takes."""
        return frozenset(fact for entry in self.select(select, ignore) for fact in entry.needs)

    def matches(self, prefix: str, subjects: Iterable[str] = (SNAPSHOT,)) -> bool:
        """Does some code of these subjects start with ``prefix``? (--select/--ignore take snapshot codes.)"""
        wanted = set(subjects)
        return any(c.code.startswith(prefix.upper()) and c.subject in wanted for c in self)

    def matching(self, prefix: str) -> list[Check]:
        """Every rule whose code starts with ``prefix``, whatever it judges."""
        return [c for c in self if c.code.startswith(prefix.strip().upper())]

    def judging(self, subject: str) -> list[Check]:
        """Every rule of one subject (``RANKS``: the FLEET codes), by code."""
        if subject not in SUBJECTS:
            raise ValueError(f"unknown subject {subject!r} (one of {', '.join(SUBJECTS)})")
        return [c for c in self if c.subject == subject]


REGISTRY = Registry()


def rule(code: str, name: str, *, family: str, subject: str, doc: str, severities: Iterable[str] = ()) -> Check:
    """Declare a rule that something other than the registry judges (a checkpoint, the ranks of a job, mpdoctor's own
    run): its code, name, family, subject and documentation. Whatever judges it stamps its findings with it."""
    return REGISTRY.add(code, name, family, subject=subject, doc=doc, severities=severities)


def check(
    code: str,
    name: str,
    *,
    family: str,
    superseded_by: Iterable[str] = (),
    defers_to: Iterable[str] = (),
    needs: Iterable[str] = (),
    fires_on: Iterable[str] = (),
    quiet_on: Iterable[str] = (),
    severities: Iterable[str] = (),
) -> Callable[[CheckFunc], CheckFunc]:
    """``rule()`` for a snapshot check, written above the function the registry runs (its docstring is its
    documentation), with its relations, needs and test fixtures."""

    def register(func: CheckFunc) -> CheckFunc:
        REGISTRY.add(
            code,
            name,
            family,
            func,
            superseded_by=superseded_by,
            defers_to=defers_to,
            needs=needs,
            fires_on=fires_on,
            quiet_on=quiet_on,
            severities=severities,
        )
        return func

    return register


# MPD001 is declared in rule.py, beside Check, which reports it; registered here like every rule.
CHECK_CRASHED = REGISTRY.add(_CRASHED.code, _CRASHED.name, _CRASHED.family, subject=_CRASHED.subject, doc=_CRASHED.text)

FACT_NOT_TAKEN = rule(
    "MPD002",
    "fact-not-taken",
    family="mpdoctor",
    subject=INTERNAL,
    doc="""
    Selected checks need a fact that this snapshot never took, so they could not judge.

    ## Why it matters
    A run takes the slow or optional facts (the precision microkernels, the
    scan of your code) only when a selected check needs them. A snapshot saved
    by a run with a narrower `--select`, or with `--no-kernels`, lacks them;
    judged later with more checks selected, those checks have nothing to look
    at, and their silence is not a verdict.

    ## Fix
    Take the snapshot again with the checks you want selected (on the machine
    and in the directory it describes), or run `mpdoctor check` there directly.
    The finding says why the fact is missing; when `--no-kernels` took it away,
    its fix says to run again without it, and its command does.
    """,
)


DEVICE_NOT_MEASURED = rule(
    "MPD003",
    "device-not-measured",
    family="mpdoctor",
    subject=INTERNAL,
    doc="""
    mpdoctor could not measure a device because of how mpdoctor ran, not because the device failed.

    ## Why it matters
    Nothing is known about that device's precision from this run: it is neither
    healthy nor broken. Two causes: the kernel worker was refused CUDA because a
    process before it had touched CUDA and then forked ("Cannot re-initialize CUDA
    in forked subprocess", a bug in mpdoctor's process model), or the device's
    share of `--timeout` ran out before its kernels were done. Neither says
    anything about the GPU, so PREC009 (a device that fails to start or kills its
    worker) stays quiet for them. Reported whenever a selected check needs the
    microkernels.

    ## Fix
    For a time limit: run again with a larger `--timeout`. For the process
    model: report it with the Markdown report attached
    (`mpdoctor check --format markdown --output mpdoctor-report.md`).
    """,
)

_validated = False


def builtin_registry() -> Registry:
    """The registry with every built-in family loaded (see ``mpdoctor/checks``), its relations checked."""
    global _validated
    from mpdoctor.checks import FAMILY_MODULES

    for module in FAMILY_MODULES:
        importlib.import_module(f"mpdoctor.checks.{module}")
    if not _validated:
        REGISTRY.validate()
        _validated = True
    return REGISTRY
