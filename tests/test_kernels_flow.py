"""The kernel verdicts go one way: measured (the snapshot), judged (kernel_view), drawn (kernel_matrix).

A walk of the report's data through the analysis modules, as ``mpdoctor check`` and
``mpdoctor explain --check`` build it (``doctor.diagnose.report_of``), with a profiler
watching every call that crosses from one module into another: drawing the matrix goes
into the judge once, for every device's verdicts at once, and the judge never calls
the matrix. Before issue 41 the matrix called the speed rules per test, and the walk
entered kernel_view hundreds of times from kernel_matrix.
"""

from __future__ import annotations

import sys
import types
from collections import Counter

from helpers import load_fixture
from mpdoctor.analysis import kernel_matrix
from mpdoctor.analysis.kernel_matrix import kernel_table
from mpdoctor.doctor.diagnose import report_of

VIEW, MATRIX = "mpdoctor.analysis.kernel_view", "mpdoctor.analysis.kernel_matrix"


def entries(run) -> Counter:
    """(from module, into module) -> how many calls crossed from one into the other while ``run()`` ran."""
    crossings: Counter = Counter()

    def watch(frame, event, arg):
        if event == "call" and frame.f_back is not None:
            into, came_from = frame.f_globals.get("__name__"), frame.f_back.f_globals.get("__name__")
            if into != came_from and (into in (VIEW, MATRIX) or came_from in (VIEW, MATRIX)):
                crossings[came_from, into] += 1

    sys.setprofile(watch)
    try:
        run()
    finally:
        sys.setprofile(None)
    return crossings


def test_drawing_the_matrix_asks_the_judge_once_and_the_judge_never_asks_the_matrix():
    snap = load_fixture("kernels-gpu-shared")  # three devices, verdicts of every kind: slow, inconclusive, fails
    assert len(snap.kernels.devices) == 3
    crossings = entries(lambda: kernel_table(snap))
    assert crossings[MATRIX, VIEW] == 1  # kernel_view.judged: every device's verdicts at once
    assert crossings[VIEW, MATRIX] == 0
    assert sum(n for (_, into), n in crossings.items() if into == VIEW) == 1


def test_a_whole_report_enters_the_matrix_once_and_only_from_the_report():
    """The checks judge through kernel_view (many calls, from the checks); the matrix is entered once, to draw."""
    snap = load_fixture("kernels-gpu-shared")
    crossings = entries(lambda: report_of(snap))
    into_matrix = {came_from: n for (came_from, into), n in crossings.items() if into == MATRIX}
    assert into_matrix == {"mpdoctor.doctor.diagnose": 1}
    assert crossings[MATRIX, VIEW] == 1 and crossings[VIEW, MATRIX] == 0
    assert not any(came_from.startswith("mpdoctor.checks") for came_from, into in crossings if into == MATRIX)


def test_the_walk_sees_a_call_back_and_forth(monkeypatch):
    """The profiler counts what it should: a matrix that asked the judge once per device is seen doing so."""
    from mpdoctor.analysis.kernel_view import judged

    source = (
        "def per_device(snap, judge=judged):\n"
        "    return [one for device in snap.kernels.devices for one in judge(snap) if one.device is device]\n"
    )
    planted: dict = {}
    exec(compile(source, kernel_matrix.__file__, "exec"), kernel_matrix.__dict__.copy(), planted)
    per_device = types.FunctionType(planted["per_device"].__code__, kernel_matrix.__dict__, "per_device", (judged,))
    monkeypatch.setattr(kernel_matrix, "judged", per_device)
    snap = load_fixture("kernels-gpu-shared")
    crossings = entries(lambda: kernel_table(snap))
    assert crossings[MATRIX, VIEW] == 3
