"""Findings: what a check reports, with its evidence and the fix a user can paste."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal, Optional, Sequence

from mpdoctor.schema.serde import fact


# The values of Severity, for annotations (Finding.severity); mpdoctor.snapshot.vocab re-exports it.
SeverityName = Literal["error", "warning", "info"]
# FixStep.role, for the same reason: "step" (do it, after the steps before it), "alternative" (another way to the
# same end: "Or ..."; the steps after it, up to the next alternative, belong to it), "inspect" (a command that only
# looks and changes nothing). Written by checks/fixes.py's helpers; read by renderers, and by the tests that apply
# each way of a fix to a snapshot.
StepRole = Literal["step", "alternative", "inspect"]


class Severity(str, enum.Enum):
    """How bad a finding is. Ordered: ERROR > WARNING > INFO."""

    ERROR = "error"  # mixed precision will fail or give wrong results
    WARNING = "warning"  # it will be slow, fragile or surprising
    INFO = "info"  # worth knowing

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@dataclass(frozen=True)
class FixStep:
    """One step of a fix: what to do, and the command that does it when there is one."""

    text: str = fact("What to do, in words")
    command: Optional[str] = fact("A shell command that does it, ready to paste", None)
    role: StepRole = fact(
        "step (do it, in order), alternative (another way to the same end: the steps after it "
        "belong to it) or inspect (only looks, changes nothing)",
        "step",
    )


@dataclass(frozen=True)
class Finding:
    """One problem found by one check."""

    severity: SeverityName = fact("error, warning or info")
    title: str = fact("What is wrong, in one line")
    evidence: list[str] = fact("The facts the finding rests on", factory=list)
    fix: list[FixStep] = fact("StepFile that fix it, in order", factory=list)
    code: str = fact("Code of the check that found it, e.g. TORCH005", "")
    name: str = fact("Name of that check, e.g. cpu-only-torch-with-gpus", "")
    family: str = fact("Check family, e.g. torch", "")

    @property
    def level(self) -> Severity:
        return Severity(self.severity)


def error(title: str, evidence: Sequence[str] = (), fix: Sequence[FixStep] = ()) -> Finding:
    return Finding(Severity.ERROR.value, title, list(evidence), list(fix))


def warning(title: str, evidence: Sequence[str] = (), fix: Sequence[FixStep] = ()) -> Finding:
    return Finding(Severity.WARNING.value, title, list(evidence), list(fix))


def info(title: str, evidence: Sequence[str] = (), fix: Sequence[FixStep] = ()) -> Finding:
    return Finding(Severity.INFO.value, title, list(evidence), list(fix))


def triage(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; by code within a severity."""
    return sorted(findings, key=lambda f: (-f.level.rank, f.code))


def exit_code(findings: list[Finding], fail_on: str) -> int:
    """1 when any finding is at or above ``fail_on`` (error, warning, info; never: always 0), else 0."""
    if fail_on == "never":
        return 0
    threshold = Severity(fail_on).rank
    return 1 if any(f.level.rank >= threshold for f in findings) else 0
