"""What a rule is: a registered code, and for a snapshot check the function it runs and how it is run.

:class:`Check` is one code of the registry (``mpdoctor.checks.registry``, which declares,
validates and looks them up): its name, family, subject (what it judges), relations,
documentation and, for a snapshot check, its function. Running one (:meth:`Check.verdicts`)
stamps each finding with the code and says which codes it stands down for
(:class:`Outcome`, :func:`defer`); a check that raises is reported as MPD001
(:data:`CHECK_CRASHED`, declared here beside the code that reports it, and registered by
the registry like every other rule). What a declaration may hold is checked here too
(:func:`fixture_names`, :func:`severity_names`). ``mpdoctor.checks.registry`` re-exports
every name here, the import path the check families use.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

from mpdoctor.findings import Finding, FixStep, Severity, warning
from mpdoctor.snapshot import Snapshot

NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # a rule's name, and a fixture's

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


def fixture_names(code: str, field: str, names: Iterable[str]) -> tuple[str, ...]:
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


def severity_names(code: str, severities: Iterable[str]) -> tuple[str, ...]:
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


# MPD001: what :meth:`Check.verdicts` reports for a check that raised. Registered by the registry (registry.py).
CHECK_CRASHED = Check(
    "MPD001",
    "check-crashed",
    "mpdoctor",
    subject=INTERNAL,
    text="""
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
