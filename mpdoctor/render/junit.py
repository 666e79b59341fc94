"""``--format junit``: one JUnit test case per check, for the test report views of GitLab, Jenkins and Azure.

* Every snapshot check that ran is a ``<testcase>``: ``classname`` its family,
  ``name`` its code and name (``TORCH005 cpu-only-torch-with-gpus``).
* Its findings at or above ``--fail-on`` make it fail: one ``<failure>`` whose
  ``type`` is the worst severity, ``message`` the title (or the first of several,
  with a count), and text the evidence and fix of each.
* Its findings below ``--fail-on`` do not fail it: it passes, with their text in
  ``<system-out>`` (a test report shows it on the case; the build stays green, as
  the exit status does).
* A check that crashed (MPD001 names it) is an ``<error>``; a check that could not
  judge because the snapshot lacks a fact it needs, and a check left out by
  ``--select``/``--ignore``, is ``<skipped>`` with the reason.
* mpdoctor's own findings (MPD001, MPD002) are cases of the ``mpdoctor`` class,
  under the same rules.

No time is given: the checks are not timed one by one, and a made-up zero would
read as a measurement. Everything is XML-escaped, and characters that XML 1.0
forbids (control characters, lone surrogates from a non-UTF-8 path) are written as
a visible ``\\x1b`` / ``\\ud800`` escape instead, so the file always parses; so are
those XML allows but a reader's screen must not get raw (C1 controls such as the CSI
U+009B, bidi overrides, invisible characters: render/sanitise.py's ``block``). The
layout validates against the Jenkins xUnit plugin's JUnit schema (tests/fixtures/junit-10.xsd).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable
from xml.sax.saxutils import escape, quoteattr

from mpdoctor.checks.facts import FACTS
from mpdoctor.checks.registry import Check, builtin_registry
from mpdoctor.doctor.report import Report
from mpdoctor.findings import Finding, Severity
from mpdoctor.render import sanitise
from mpdoctor.render.text import environment_line, summary_line

# Everything outside XML 1.0's Char production (https://www.w3.org/TR/xml/#charsets).
FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
CRASHED = re.compile(r"^Check ([A-Z]+[0-9]{3}) \(")  # MPD001's title, from registry.Check._crash_finding


def clean(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold, and every one the sanitiser shows, as a visible escape."""
    text = sanitise.block(text)  # C1 controls, bidi, invisible: XML holds them, a CI log view would show them raw
    return FORBIDDEN.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def _attr(text: str) -> str:
    # quoteattr writes \n, \r and \t as character references, so a parser keeps them
    return quoteattr(clean(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _text(text: str) -> str:
    return escape(clean(text))


def finding_text(finding: Finding) -> str:
    lines = [f"{finding.severity.upper()} {finding.code} {finding.title}"]
    lines += [f"  - {line}" for line in finding.evidence]
    for number, step in enumerate(finding.fix, 1):
        lines.append(f"  {number}. {step.text}")
        if step.command:
            lines.append(f"       $ {step.command}")
    return "\n".join(lines)


def _joined(findings: list[Finding]) -> str:
    return _text("\n".join(finding_text(f) for f in findings))


def _failing(finding: Finding, fail_on: str) -> bool:
    return fail_on != "never" and finding.level.rank >= Severity(fail_on).rank


def _not_judged(check: Check, report: Report) -> str:
    """Why ``check`` could not judge this snapshot (a fact it needs was never taken), or ""."""
    for name in check.needs:
        why = FACTS[name].not_taken(report.snapshot) if name in FACTS else ""
        if why:
            return f"could not judge: this snapshot has no {name} ({why})"
    return ""


def _case(
    classname: str, name: str, findings: list[Finding], fail_on: str, crashed: list[Finding] = (), skipped: str = ""
) -> tuple[list[str], str]:
    """A testcase's lines, and its outcome: failure, error, skipped or passed."""
    lines = [f"    <testcase classname={_attr(classname)} name={_attr(name)}>"]
    failing = [f for f in findings if _failing(f, fail_on)]
    passing = [f for f in findings if not _failing(f, fail_on)]
    outcome = "passed"
    if crashed:
        outcome = "error"
        lines.append(f'      <error type="crashed" message={_attr(crashed[0].title)}>{_joined(crashed)}</error>')
    if failing:
        outcome = "failure" if outcome == "passed" else outcome
        worst = max(failing, key=lambda f: f.level.rank)
        title = failing[0].title + (f" (and {len(failing) - 1} more)" if len(failing) > 1 else "")
        lines.append(f"      <failure type={_attr(worst.severity)} message={_attr(title)}>{_joined(failing)}</failure>")
    elif skipped and not crashed and not findings:
        outcome = "skipped"
        lines.append(f"      <skipped message={_attr(skipped)}/>")
    if passing:
        lines.append(f"      <system-out>{_joined(passing)}</system-out>")
    if len(lines) == 1:  # passed, with nothing to say
        return [lines[0][:-1] + "/>"], outcome
    lines.append("    </testcase>")
    return lines, outcome


def render_junit(report: Report, fail_on: str, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> str:
    """The report as a JUnit XML document: one testsuite, one testcase per snapshot check."""
    registry = builtin_registry()
    selected = {c.code for c in registry.select(select, ignore)}
    by_code: dict[str, list[Finding]] = defaultdict(list)
    crashes: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        match = CRASHED.match(finding.title) if finding.code == "MPD001" else None
        if match and match.group(1) in selected:
            crashes[match.group(1)].append(finding)
        else:
            by_code[finding.code].append(finding)
    cases, outcomes = [], []
    for check in registry.snapshot_checks():
        skipped = "not selected (--select/--ignore)" if check.code not in selected else _not_judged(check, report)
        lines, outcome = _case(
            check.family,
            f"{check.code} {check.name}",
            by_code.pop(check.code, []),
            fail_on,
            crashes.get(check.code, []),
            skipped,
        )
        cases += lines
        outcomes.append(outcome)
    for code in sorted(by_code):  # mpdoctor's own findings (MPD002, an MPD001 for no selected check)
        findings = by_code[code]
        lines, outcome = _case(
            findings[0].family or "mpdoctor", f"{code} {findings[0].name}".strip(), findings, fail_on
        )
        cases += lines
        outcomes.append(outcome)
    counts = {kind: outcomes.count(kind) for kind in ("failure", "error", "skipped")}
    totals = (
        f'tests="{len(outcomes)}" failures="{counts["failure"]}" errors="{counts["error"]}" '
        f'skipped="{counts["skipped"]}"'
    )
    properties = [
        ("mpdoctor_version", report.mpdoctor_version),
        ("fail_on", fail_on),
        ("summary", summary_line(report.findings)),
        ("environment", environment_line(report.snapshot)),
    ]
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<testsuites name="mpdoctor" tests="{len(outcomes)}" failures="{counts["failure"]}" '
            f'errors="{counts["error"]}">',
            f'  <testsuite name="mpdoctor check" {totals} timestamp={_attr(report.created)}>',
            "    <properties>",
            *(f"      <property name={_attr(name)} value={_attr(value)}/>" for name, value in properties),
            "    </properties>",
            *cases,
            "  </testsuite>",
            "</testsuites>",
            "",
        ]
    )
