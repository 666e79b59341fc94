"""``--format github``: GitHub Actions workflow commands, so findings show as annotations on the run and the PR.

One line per finding, as ruff and mypy write them, then one plain summary line::

    ::error title=TORCH005 cpu-only-torch-with-gpus::torch is a CPU-only build ...%0A- evidence%0AFix: ...
    ::warning file=train.py,line=12,title=APEX007 apex-amp-with-torch-amp::your code mixes apex.amp ...
    mpdoctor: 1 error, 1 warning, 0 info; fails at --fail-on error

error, warning and info findings become ``::error``, ``::warning`` and ``::notice``.
The syntax is GitHub's (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands):
``::COMMAND key=value,key=value::message``. Data is escaped as actions/toolkit's
``escapeData`` does (``%``, ``\\r``, ``\\n``), property values as its
``escapeProperty`` (those and ``:`` and ``,``), so a finding's text can neither end
its line early nor start a command of its own. ``file=`` and ``line=`` are given only
when a finding quotes a line of the project's code (the project scan's
``file:line``), relative to the directory scanned: run the check from the
repository root for the annotation to land on the file in the PR.
"""

from __future__ import annotations

from typing import Optional

from mpdoctor.doctor.report import Report
from mpdoctor.findings import Finding, Severity
from mpdoctor.render import sanitise
from mpdoctor.render.text import summary_line
from mpdoctor.snapshot import Snapshot

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
MESSAGE = 4_000  # characters of one annotation's message; the JSON report has the rest


def escape_data(text: str) -> str:
    """actions/toolkit ``escapeData``: the message after ``::``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """actions/toolkit ``escapeProperty``: a ``key=value`` value, where ``:`` and ``,`` end it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def project_sites(snap: Snapshot) -> list[tuple[str, int]]:
    """(file, line) of every use the project scan found in the user's own code (not installed packages)."""
    scan = snap.environment.project
    uses = [u for u in scan.apex_uses if not u.distribution] + scan.torch_amp_uses + scan.oneflow_uses + scan.amp_sites
    return [(use.file, use.line) for use in uses if use.file and use.line > 0]


def site(finding: Finding, sites: list[tuple[str, int]]) -> Optional[tuple[str, int]]:
    """The first project line the finding's evidence quotes, as ``file:line`` at the start of a line."""
    for line in finding.evidence:
        for file, number in sites:
            quoted = f"{file}:{number}"
            if line.startswith(quoted) and line[len(quoted) : len(quoted) + 1] in (" ", ":", ""):
                return file, number
    return None


def message(finding: Finding) -> str:
    """The title, the evidence and the fix steps, one per line.

    Each field is made safe to show (``render/sanitise.py``): GitHub draws an annotation as plain text, and the
    runner's log shows the line raw, so a control or bidi character from the machine is shown, never obeyed.
    Markdown escapes would print as backslashes there: plain text needs none.
    """
    lines = [sanitise.line(finding.title)] + [f"- {sanitise.block(line)}" for line in finding.evidence]
    if finding.fix:
        lines.append("Fix:")
        for number, step in enumerate(finding.fix, 1):
            command = f"\n   $ {sanitise.line(step.command)}" if step.command else ""
            lines.append(f"{number}. {sanitise.line(step.text)}{command}")
    text = "\n".join(lines)
    if len(text) > MESSAGE:
        text = f"{text[:MESSAGE]}\n... ({len(text) - MESSAGE} more characters in `mpdoctor check --format json`)"
    return text


def annotation(finding: Finding, sites: list[tuple[str, int]]) -> str:
    where = site(finding, sites)
    properties = [f"file={escape_property(sanitise.line(where[0]))}", f"line={where[1]}"] if where else []
    properties.append(f"title={escape_property(sanitise.line(f'{finding.code} {finding.name}'.strip()))}")
    command = COMMANDS.get(finding.severity, "notice")
    return f"::{command} {','.join(properties)}::{escape_data(message(finding))}"


def render_github(report: Report, fail_on: str) -> str:
    """One workflow command per finding, then the summary line (plain text, never a command)."""
    sites = project_sites(report.snapshot)
    lines = [annotation(finding, sites) for finding in report.findings]
    if fail_on == "never":
        verdict = "never fails (--fail-on never)"
    else:
        failing = sum(1 for f in report.findings if f.level.rank >= Severity(fail_on).rank)
        verdict = (
            f"fails: {failing} at or above --fail-on {fail_on}"
            if failing
            else f"passes: nothing at or above --fail-on {fail_on}"
        )
    lines.append(f"mpdoctor: {summary_line(report.findings)}; {verdict}")
    return "\n".join(lines) + "\n"
