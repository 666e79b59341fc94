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

import dataclasses
import importlib
import inspect
import re
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Optional, Union

from mpdoctor.findings import Finding, Severity, FixStep, warning
from mpdoctor.checks.facts import FACTS
from mpdoctor.snapshot import Snapshot

CODE_PATTERN = re.compile(r"^([A-Z]+)[0-9]{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
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
    "audit": "AUDIT",
    "fleet": "FLEET",
    "mpdoctor": "MPD",
}

# What a rule judges, and the command that reports it. Only snapshot checks run in `mpdoctor check`.
SNAPSHOT, CHECKPOINT, RANKS, INTERNAL = "snapshot", "checkpoint", "ranks", "internal"
SUBJECTS = {
    SNAPSHOT: "reported by `mpdoctor check`",
    CHECKPOINT: "reported by `mpdoctor audit PATH`",
    RANKS: "reported by `mpdoctor fleet` and `mpdoctor fleet compare`, comparing the ranks of one job",
    INTERNAL: "reported by `mpdoctor check` about its own run (a check that crashed, facts it lacked)",
}

CheckFunc = Callable[[Snapshot], Iterable[Union[Finding, "Deferred"]]]


@dataclass(frozen=True)
class Deferred:
    """A finding that stands down when one of ``to`` (declared in the check's ``defers_to``) is selected and fires."""

    finding: Finding
    to: tuple[str, ...]


def defer(finding: Finding, *to: str) -> Deferred:
    """Yield this instead of ``finding`` when only this finding gives way to the codes ``to``."""
    if not to:
        raise ValueError("defer() needs the codes the finding gives way to")
    return Deferred(finding, to)


@dataclass(frozen=True)
class Outcome:
    """One finding of a check that ran, with the codes it stands down for."""

    finding: Finding
    superseded_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """A registered code: its name, family, what it judges, its relations and its documentation."""

    code: str
    name: str
    family: str
    func: Optional[CheckFunc] = None  # None for rules judged outside the registry (checkpoint, ranks, internal)
    subject: str = SNAPSHOT
    superseded_by: tuple[str, ...] = ()
    defers_to: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    text: str = ""  # the documentation of a rule without a function; a check's is its docstring
    fires_on: tuple[str, ...] = ()  # test fixture names on which it must report (tests/fixtures/catalogue.py)
    quiet_on: tuple[str, ...] = ()  # test fixture names, near misses, on which it must not
    severities: tuple[str, ...] = ()  # the severities its findings can have, worst first; () when not declared

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.text or (self.func.__doc__ if self.func else "") or "")

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0] if self.doc else ""

    @property
    def runs_on_snapshot(self) -> bool:
        return self.subject == SNAPSHOT and self.func is not None

    def stamp(self, finding: Finding) -> Finding:
        """The finding, marked as this rule's (code, name, family)."""
        return dataclasses.replace(finding, code=self.code, name=self.name, family=self.family)

    def verdicts(self, snap: Snapshot) -> list[Outcome]:
        """Run the check: its findings, stamped, each with the codes it stands down for.

        A check that raises gives one MPD001 finding instead, which stands down for nothing.
        """
        if self.func is None:
            raise TypeError(f"{self.code} judges {self.subject}, not a snapshot")
        try:
            found = list(self.func(snap))
            out = []
            for item in found:
                if isinstance(item, Deferred):
                    undeclared = [code for code in item.to if code not in self.defers_to]
                    if undeclared:
                        raise ValueError(
                            f"{self.code} defers a finding to {', '.join(undeclared)}, which it does "
                            f"not declare in defers_to {self.defers_to}"
                        )
                    out.append(Outcome(self.stamp(item.finding), self.superseded_by + item.to))
                else:
                    out.append(Outcome(self.stamp(item), self.superseded_by))
            return out
        except Exception as exc:  # one broken check must not cost the others
            return [Outcome(self._crash_finding(exc, snap))]

    def run(self, snap: Snapshot) -> list[Finding]:
        """Run the check alone: every finding it makes, stamped with its code, name and family."""
        return [v.finding for v in self.verdicts(snap)]

    def _crash_finding(self, exc: Exception, snap: Snapshot) -> Finding:
        # Imported here: loading mpdoctor.checks loads the families, which import this module.
        from mpdoctor.checks.fixes import mpdoctor_check

        frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
        crash = warning(
            f"Check {self.code} ({self.name}) crashed: {type(exc).__name__}: {exc}",
            evidence=["".join(frames[-3:]).strip()],
            fix=[
                FixStep(
                    "Its verdict is unknown. Please report this mpdoctor bug with the JSON report attached.",
                    mpdoctor_check(snap, extra=("--format", "markdown", "--output", "mpdoctor-report.md")),
                )
            ],
        )
        return CHECK_CRASHED.stamp(crash)


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


def _fixture_names(code: str, field: str, names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple of distinct fixture names (kebab-case strings), or a ValueError saying what is wrong."""
    if isinstance(names, str):
        raise ValueError(f"{code}: {field} takes a tuple of fixture names, not the string {names!r}")
    names = tuple(names)
    for name in names:
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise ValueError(f"{code}: {field} names {name!r}, which is no fixture name (kebab-case)")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{code}: {field} names {', '.join(repeated)} more than once")
    return names


def _severities(code: str, severities: Iterable[str]) -> tuple[str, ...]:
    """``severities`` as a tuple of distinct severity names, worst first, or a ValueError saying what is wrong."""
    if isinstance(severities, str):
        raise ValueError(f"{code}: severities takes a tuple of severities, not the string {severities!r}")
    severities = tuple(severities)
    known = [level.value for level in Severity]
    for name in severities:
        if name not in known:
            raise ValueError(f"{code}: severities names {name!r}, which is no severity ({', '.join(known)})")
    if len(set(severities)) != len(severities) or list(severities) != sorted(severities, key=known.index):
        raise ValueError(f"{code}: severities {severities} must be distinct and worst first ({', '.join(known)})")
    return severities


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


CHECK_CRASHED = rule(
    "MPD001",
    "check-crashed",
    family="mpdoctor",
    subject=INTERNAL,
    doc="""
    A check raised an exception instead of giving a verdict.

    ## Why it matters
    Its problem may or may not be present: treat the check as not run. The other
    checks are unaffected and their findings stand; a check that crashed counts
    as not having fired, so the checks it would supersede still speak.

    ## Fix
    It is a bug in mpdoctor: report it with the Markdown report attached
    (`mpdoctor check --format markdown --output mpdoctor-report.md`); meanwhile
    `--ignore` the crashing code to keep CI gating on the rest.
    """,
)

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
