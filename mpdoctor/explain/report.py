"""What `mpdoctor explain` found, as data. Its JSON is a contract like the check report's.

``EXPLAIN_SCHEMA_VERSION`` changes when a field is removed, renamed or changes
type; new fields may appear within a version. The JSON Schema shipped in
``mpdoctor/schema/`` is generated from these dataclasses (``python -m
mpdoctor.schema``), and a test fails when the shipped file is out of date.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mpdoctor import __version__
from mpdoctor.schema.contract import ordered_data, schema_document, schema_path, version_fact
from mpdoctor.explain.signature import FAMILIES
from mpdoctor.findings import Finding, FixStep
from mpdoctor.schema.serde import fact

EXPLAIN_SCHEMA_VERSION = 1
SCHEMA_PATH = schema_path("explain", EXPLAIN_SCHEMA_VERSION)

# Explanation.family: the families of explain/signature.FAMILIES, that very tuple. A vocabulary like those of
# mpdoctor.snapshot.vocab, declared here because `mpdoctor explain` does not load the snapshot package.
ExplainFamily = Literal[FAMILIES]


@dataclass
class MatchedLine:
    """A line of the input that the failure was recognised on."""

    line: int = fact("1-based line number in the input")
    text: str = fact("The line, redacted")


@dataclass
class OtherCause:
    """Another cause the same message can have, ranked below the explanation's own."""

    cause: str = fact("The other cause, in plain words")
    tell: str = fact("What tells it apart from the explanation's own cause")
    checks: list[str] = fact("Codes (or prefixes) of the `mpdoctor check` checks that confirm it", factory=list)
    fixes: list[FixStep] = fact("What fixes it when it is this one", factory=list)


@dataclass
class Explanation:
    """One recognised failure: what happened, why, what to do, and how to confirm it."""

    id: str = fact("The signature's id (see `mpdoctor explain --list`)")
    family: ExplainFamily = fact(", ".join(FAMILIES[:-1]) + " or " + FAMILIES[-1])
    title: str = fact("What happened, in one line")
    cause: str = fact("Why it happens, in plain words")
    lines: list[MatchedLine] = fact("The input lines it was recognised on (at most 5)", factory=list)
    frames: list[str] = fact("Traceback frames that matter for it (file:line in function)", factory=list)
    fixes: list[FixStep] = fact("Ranked fixes, the most likely first", factory=list)
    checks: list[str] = fact("Codes (or prefixes) of the `mpdoctor check` checks that confirm it", factory=list)
    sources: list[str] = fact("Public threads and sources it was learned from", factory=list)
    findings: list[Finding] = fact("With --check: what those checks found on this machine", factory=list)
    unknown: list[str] = fact(
        "With --check: why those checks could not judge this machine (torch missing or "
        "broken, a fact not taken, a check that crashed); then nothing found means unknown, "
        "not fine",
        factory=list,
    )
    alternatives: list[OtherCause] = fact(
        "Other causes the same message can have, most likely first, each with what tells it apart", factory=list
    )


@dataclass
class ExplainReport:
    """Everything `mpdoctor explain` recognised in its input."""

    source: str = fact("Where the input came from: argument, stdin or the file's path")
    input_lines: int = fact("Lines read", 0)
    input_bytes: int = fact("Bytes read", 0)
    truncated: bool = fact("The input was longer than mpdoctor reads; only its end was scanned", False)
    recognised: list[Explanation] = fact(
        "Every known failure found: those recognised on a line that reports an error (an exception, a failed "
        "assertion, a logged ERROR) first, then the others (warnings, bare messages), each in the order it first "
        "appears",
        factory=list,
    )
    notices: list[Explanation] = fact(
        "Notices found that are no mixed-precision failure, with their fix: a deprecation and the call that replaces "
        "it (the run goes on), or an environment fault beside the precision (a CPU-only torch, xFormers built for "
        "another torch, a GradScaler that disabled itself without CUDA); each in the order it first appears",
        factory=list,
    )
    checked: bool = fact("--check ran the confirming checks", False)
    check_error: str = fact("Why --check could not run them, when it could not", "")
    schema_version: int = version_fact("Version of this JSON layout", EXPLAIN_SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote it", __version__)


def explain_data(report: ExplainReport) -> dict:
    return ordered_data(report, ("schema_version", "mpdoctor_version"))


def explain_schema() -> dict:
    return schema_document(ExplainReport, "explain", EXPLAIN_SCHEMA_VERSION, "mpdoctor explain report")
