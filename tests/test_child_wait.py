"""Waiting on a child: event-driven where a pidfd exists, the old polling elsewhere, the same outcomes either way.

Real processes (``sh``, ``sleep``, this interpreter). "Without a pidfd" makes ``os.pidfd_open`` fail as it
does on a kernel before 5.3 or under a seccomp filter, so the fallback is exercised on this machine too.
No time is asserted: only how each wait ended and what the watch saw.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from mpdoctor.probes import child
from mpdoctor.probes.child import WATCH_EVERY, run_child
from mpdoctor.probes.remote import supervise


@pytest.fixture(params=["pidfd", "no pidfd"])
def waits(request, monkeypatch):
    if request.param == "no pidfd":

        def refused(pid):
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", refused, raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("this Python has no os.pidfd_open")
    return request.param


def test_a_child_that_exits_is_reported_with_its_status(waits):
    result = run_child(["sh", "-c", "echo out; echo err >&2; exit 7"], 30)
    assert (result.exit_code, result.timed_out, result.stdout, result.stderr) == (7, False, "out\n", "err\n")


def test_a_child_killed_by_a_signal_says_so(waits):
    result = run_child(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
        30,
        watch=lambda elapsed: None,
    )
    assert result.describe() == "was killed by SIGSEGV" and not result.timed_out


def test_a_child_that_outlives_its_timeout_is_killed_at_it(waits):
    result = run_child(["sleep", "60"], 0.3)
    assert result.timed_out and result.limit == 0.3 and result.exit_code is None


def test_a_watch_runs_while_the_child_runs_and_can_abandon_it(waits):
    seen: list[float] = []

    def watch(elapsed: float):
        seen.append(elapsed)
        return 4.5 if len(seen) == 5 else None  # "one of its steps overran its own 4.5 s"

    result = run_child(["sleep", "60"], 30, watch=watch)
    assert result.timed_out and result.limit == 4.5 and len(seen) == 5
    assert seen == sorted(seen)


def test_a_watch_is_not_called_once_the_child_has_ended(waits):
    seen: list[float] = []
    result = run_child(["true"], 30, watch=lambda elapsed: seen.append(elapsed))
    assert result.exit_code == 0 and not result.timed_out
    assert len(seen) <= 1  # at most a tick before `true` was seen to end, never after


def test_the_watch_cadence_is_ten_milliseconds():
    assert WATCH_EVERY == 0.01 and supervise.POLL == 0.01


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no pidfd"])
def test_the_supervisor_sees_each_worker_end_with_or_without_pidfds(tmp_path, monkeypatch, pidfd):
    if not pidfd:
        monkeypatch.setattr(supervise, "_pidfd", lambda pid: -1)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("this Python has no os.pidfd_open")
    plan = [("ok", lambda: {"status": "ok"}), ("dies", lambda: os._exit(3)), ("after", lambda: {"status": "ok"})]
    job = supervise.Job(str(tmp_path / "job.jsonl"), lambda: plan, 30, time.monotonic() + 60)
    supervise.run([job])
    data = supervise.read_steps(job.path)[0]
    assert data["ok"]["status"] == "ok" and data["after"]["status"] == "ok"
    assert data["dies"]["status"] == "crashed" and data["dies"]["detail"] == "the process exited with status 3"
    assert data["plan"] == 3 and job.status == "ok" and job.restarts == 1
    assert job.pidfd == -1  # closed once the worker was reaped


def test_no_descriptor_is_left_open_after_many_children(waits):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        run_child(["true"], 30, watch=lambda elapsed: None)
    assert len(os.listdir("/proc/self/fd")) <= before
    assert child.live_children() == []
