"""MPD003's report command is the run that failed, as the user ran it (issue 41 item 4).

The fix of a device mpdoctor's own process model left unmeasured asks for a Markdown
report: of the same interpreter, with the same --timeout and --kernels, as MPD001's
fix does, through the one builder (``checks/fixes.mpdoctor_check``).
"""

from __future__ import annotations

from helpers import load_fixture
from mpdoctor.doctor.judge import judge


def _report_command(snap) -> str:
    (finding,) = [f for f in judge(snap, select=["PREC"]) if f.code == "MPD003"]
    (step,) = [s for s in finding.fix if "report" in s.text.lower()]
    return step.command


def test_the_report_of_a_fork_refusal_is_taken_of_the_same_run():
    snap = load_fixture("h200-fork-refused")
    given = snap.invocation
    given.python, given.timeout, given.kernels, given.select = "../hf/bin/python", 60, "full", ["PREC"]
    assert _report_command(snap) == (
        "mpdoctor check --python ../hf/bin/python --timeout 60 --kernels full --select PREC "
        "--format markdown --output mpdoctor-report.md"
    )


def test_the_recorded_h200_run_is_asked_for_with_its_own_kernels():
    """The capture was taken with --kernels full: the report it asks for measures the same way."""
    assert _report_command(load_fixture("h200-fork-refused")) == (
        "mpdoctor check --kernels full --format markdown --output mpdoctor-report.md"
    )
