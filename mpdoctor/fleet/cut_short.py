"""Rank 0's report when the run was cut short: the launcher stopped the job (SIGTERM), or the deadline came first.

**Stopped by the launcher.** torchrun's agent sends SIGTERM to every surviving worker
as soon as one worker exits non-zero (a crash, a bad ``WORLD_SIZE``, ``exit 3`` in a
job script), and SIGKILL 30 s later; ``srun --kill-on-bad-exit`` and Kubernetes
(``terminationGracePeriodSeconds``) give the same kind of grace. That early exit is
exactly what a fleet check is for, so rank 0 does not die with the others: ``Stop``
takes the first SIGTERM, rank 0 gives its own check up to ``TERM_WAIT`` s more, has
its store child gather what the store holds now, prints (and writes) the report, and
only then exits as the signal would have made it (128 + 15, every child killed). A
second SIGTERM, or SIGINT (Ctrl-C), ends it at once as before.

**The deadline came before rank 0's own check.** Then no rank can be blamed for
being late: the deadline was too short for this machine, and the report says so, with
the time rank 0's own check needed (``rank`` waits up to ``SHORT_WAIT`` s for it),
instead of naming every rank "stuck".

In both cases a rank that was still running is not accused: its state says what it was
doing when the run was cut short, and one finding (FLEET001) tells what happened.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import replace
from typing import Optional

from mpdoctor.checks import fleet as rules
from mpdoctor.findings import Finding, FixStep, error, triage
from mpdoctor.fleet.missing import CUT_SHORT, never_reached
from mpdoctor.fleet.model import FleetReport
from mpdoctor.fleet.naming import rank_list
from mpdoctor.fleet import held_term

# Seconds rank 0 still gives its own check after SIGTERM: torchrun's agent sends SIGKILL 30 s after SIGTERM, and
# the gathering, the judging and the printing must fit in what is left.
TERM_WAIT = 15.0
HURRY_WAIT = 5.0  # seconds rank 0 waits for its store child's last gathering once it asked for one
# Seconds rank 0 waits past the deadline for its own check, to say how long it needed: under the other ranks'
# GRACE (store_child), so that they still hear the verdict.
SHORT_WAIT = 10.0


class Stop:
    """The first SIGTERM, held while rank 0 finishes its report; ``exit()`` then ends the process as it would have.

    Installed only in the main thread (a handler can be set nowhere else); elsewhere it holds nothing and the
    signal ends the process as before.
    """

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.at = 0.0  # time.time() of the signal
        self.previous: Optional[object] = None
        self.installed = False

    def install(self) -> "Stop":
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._held)
            self.installed = True
            if held_term.is_holding(self.previous):  # the CLI held SIGTERM from its first lines (held_term)
                self.previous = held_term.fallback()
                if held_term.pending() is not None:  # and one came before this run began: held already
                    self.signum, self.at = signal.SIGTERM, held_term.pending()
        return self

    @classmethod
    def released(cls) -> "Stop":
        """A Stop that holds nothing, for a rank other than 0: a SIGTERM the CLI held for it ends it now."""
        if threading.current_thread() is threading.main_thread():
            held_term.release()
        return cls()

    @property
    def stopped(self) -> bool:
        return self.signum is not None

    def _held(self, signum: int, frame: object) -> None:
        if self.signum is not None:  # a second SIGTERM: out at once, as without this handler
            self.restore()
            self._previous(signum, frame)
            return
        self.signum, self.at = signum, time.time()

    def restore(self) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, self.previous)  # type: ignore[arg-type]
            self.installed = False

    def _previous(self, signum: int, frame: object) -> None:
        # The CLI's handler kills every child's group and raises Interrupted (exit 128 + the signal).
        if callable(self.previous):
            self.previous(signum, frame)
        raise SystemExit(128 + signum)

    def exit(self) -> None:
        """Once the report is out: end as the held signal would have (every child killed, exit 128 + 15)."""
        self.restore()
        if self.signum is not None:
            self._previous(self.signum, None)


def launcher_stopped(report: FleetReport, seconds: float) -> FleetReport:
    """``report`` (judged from what rank 0 had when SIGTERM came, ``seconds`` after it started), with why it is
    partial and which rank most likely ended first."""
    absent = [s for s in report.ranks if s.status != "reported"]
    crashed = [s.rank for s in absent if s.status == "crashed"]
    never = [s.rank for s in absent if never_reached(s)]
    running = [s.rank for s in absent if s.detail.startswith(CUT_SHORT)]
    if crashed:
        after = f"after {_ranks(crashed)} exited"
    elif never:
        after = (
            f"most likely after {_ranks(never)} exited ({'it' if len(never) == 1 else 'they'} never reached the store)"
        )
    else:
        after = "after a rank exited (the ranks without a report were all still running: which one, rank 0 cannot tell)"
    reported = [s.rank for s in report.ranks if s.status == "reported"]
    evidence = [
        "torchrun (and srun --kill-on-bad-exit) stops every worker with SIGTERM once one exits with a failure",
        f"ranks that reported: {rank_list(reported) or 'none'}",
    ]
    if running:
        evidence.append(f"still running when it came (not at fault): {rank_list(running)}")
    culprits = crashed or never
    finding = rules.RANK_MISSING.stamp(
        error(
            f"the launcher stopped the job (SIGTERM) {seconds:.1f} s in, {after}: "
            "this report holds what rank 0 had by then",
            evidence,
            [
                FixStep(
                    f"Read {_ranks(culprits) if culprits else 'the failed rank'}'s own output and exit status in the "
                    "launcher's log, then run the single-process check in that rank's environment",
                    "mpdoctor check",
                )
            ],
        )
    )
    return _with(report, finding)


def deadline_too_short(
    report: FleetReport, deadline: float, own_seconds: Optional[float], step: str, elapsed: float
) -> FleetReport:
    """``report`` (judged at a deadline that came before rank 0's own report) saying the deadline was too short,
    with what rank 0's own check needed (``own_seconds``; None: still running, in ``step``, ``elapsed`` s in)."""
    running = [s.rank for s in report.ranks if s.detail.startswith(CUT_SHORT)]
    if own_seconds is not None:
        needed = f"rank 0's own check needed {own_seconds:.1f} s"
        suggest = max(60, int(own_seconds * 3) + 30)
    else:
        needed = f"rank 0's own check was still {step or 'running'} after {elapsed:.0f} s"
        suggest = int(elapsed) * 3 + 30
    evidence = [f"--deadline {deadline:g} s, counted from each rank's start", needed]
    if running:
        evidence.append(f"still checking at the deadline (not stuck, not at fault): {rank_list(running)}")
    finding = rules.RANK_MISSING.stamp(
        error(
            f"the --deadline of {deadline:g} s is too short for this machine: {needed}; "
            "no rank was late, the comparison is incomplete",
            evidence,
            [
                FixStep(
                    "Run it again with a deadline that leaves the check its time",
                    f"mpdoctor fleet --deadline {suggest}",
                )
            ],
        )
    )
    return _with(report, finding)


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {rank_list(ranks)}"


def _with(report: FleetReport, finding: Finding) -> FleetReport:
    return replace(report, findings=triage([finding, *report.findings]))
