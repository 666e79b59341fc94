"""The check registry: checks declare their code, name and family next to their code.

A check is a pure function of the snapshot that yields findings::

    @check("TORCH005", "cpu-only-torch-with-gpus", family="torch")
    def cpu_only_torch_with_gpus(snap: Snapshot) -> Iterator[Finding]:
        '''One line saying what it finds.

        ## Why it matters
        ...
        ## Fix
        ...
        '''

Its docstring is its user documentation (``mpdoctor rule CODE``). A check that
raises is reported as an MPD001 finding naming it; the other checks still run.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from mpdoctor.findings import Finding, Step, warning
from mpdoctor.snapshot import Snapshot

CheckFunc = Callable[[Snapshot], Iterable[Finding]]
CODE_PATTERN = re.compile(r"^[A-Z]+[0-9]{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("## Why it matters", "## Fix")


CHECK_CRASHED = ("MPD001", "check-crashed", "mpdoctor")
CHECK_CRASHED_DOC = """A check raised an exception instead of giving a verdict.

## Why it matters
Its problem may or may not be present: treat the check as not run. The other
checks are unaffected and their findings stand.

## Fix
It is a bug in mpdoctor: report it with the Markdown report attached
(`mpdoctor check --format markdown --output mpdoctor-report.md`); meanwhile
`--ignore` the crashing code to keep CI gating on the rest.
"""


@dataclass(frozen=True)
class Check:
    code: str
    name: str
    family: str
    func: CheckFunc

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0] if self.doc else ""

    def run(self, snap: Snapshot) -> list[Finding]:
        """Run the check; findings come back stamped with its code, name and family."""
        try:
            found = list(self.func(snap))
        except Exception as exc:  # one broken check must not cost the others
            return [self._crash_finding(exc)]
        return [dataclasses.replace(f, code=self.code, name=self.name, family=self.family) for f in found]

    def _crash_finding(self, exc: Exception) -> Finding:
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
        crash = warning(
            f"Check {self.code} ({self.name}) crashed: {type(exc).__name__}: {exc}",
            evidence=["".join(frames[-3:]).strip()],
            fix=[Step("Its verdict is unknown. Please report this mpdoctor bug with the JSON report attached.",
                      "mpdoctor check --format markdown --output mpdoctor-report.md")],
        )
        code, name, family = CHECK_CRASHED
        return dataclasses.replace(crash, code=code, name=name, family=family)


class Registry:
    """Codes to checks. Built-in checks register into ``REGISTRY`` on import."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, code: str, name: str, family: str, func: CheckFunc) -> Check:
        if not CODE_PATTERN.match(code):
            raise ValueError(f"check code {code!r} must be letters then three digits")
        if not NAME_PATTERN.match(name):
            raise ValueError(f"check name {name!r} must be kebab-case")
        if code in self._checks:
            raise ValueError(f"check code {code} registered twice")
        if any(c.name == name for c in self._checks.values()):
            raise ValueError(f"check name {name} registered twice")
        entry = Check(code, name, family, func)
        self._checks[code] = entry
        return entry

    def __iter__(self) -> Iterator[Check]:
        return iter(sorted(self._checks.values(), key=lambda c: c.code))

    def get(self, code_or_name: str) -> Check | None:
        key = code_or_name.strip()
        if key.upper() in self._checks:
            return self._checks[key.upper()]
        return next((c for c in self._checks.values() if c.name == key.lower()), None)

    def select(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Check]:
        """Checks whose code starts with a --select prefix and with no --ignore prefix."""
        chosen = [p.upper() for p in select]
        dropped = [p.upper() for p in ignore]
        return [
            c for c in self
            if (not chosen or c.code.startswith(tuple(chosen)))
            and not (dropped and c.code.startswith(tuple(dropped)))
        ]

    def matches(self, prefix: str) -> bool:
        return any(c.code.startswith(prefix.upper()) for c in self)


REGISTRY = Registry()


def check(code: str, name: str, *, family: str) -> Callable[[CheckFunc], CheckFunc]:
    """Register the decorated function as check ``code``."""

    def register(func: CheckFunc) -> CheckFunc:
        REGISTRY.add(code, name, family, func)
        return func

    return register


def builtin_registry() -> Registry:
    """The registry with every built-in family loaded (see ``mpdoctor/checks``)."""
    importlib.import_module("mpdoctor.checks")
    return REGISTRY


def run_checks(snap: Snapshot, checks: Iterable[Check]) -> list[Finding]:
    findings: list[Finding] = []
    for entry in checks:
        findings.extend(entry.run(snap))
    return findings
