"""The rank-side runner of ``mpdoctor fleet``: check this rank as the job runs it, report, and hear the verdict.

This process never imports torch: the store lives in ``store_child`` (the job's own
interpreter, started through ``run_child`` like every mpdoctor child, talking through
files: ``mailbox``), and the check is the ordinary ``mpdoctor check`` of this
interpreter (probes in child processes, each with its limit). Each GPU rank times
the microkernels on the GPU its LOCAL_RANK selects, only (``devices``), so a node's
GPUs are measured in parallel and never by two ranks; on a node without GPUs local
rank 0 times the CPU. Rank 0 compares every report (``verdict``) and every rank
exits with the verdict.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

from mpdoctor.fleet import activity, mailbox
from mpdoctor.fleet.compare import worst
from mpdoctor.fleet.fingerprint import launch_env, rank_report
from mpdoctor.fleet.launcher import Launch
from mpdoctor.fleet.model import FleetReport
from mpdoctor.fleet.protocol import Gathered, Malformed, own_worst, verdict_line, verdict_of, worse
from mpdoctor.fleet.activity import check_step
from mpdoctor.fleet.cut_short import HURRY_WAIT, SHORT_WAIT, TERM_WAIT, Stop, deadline_too_short, launcher_stopped
from mpdoctor.fleet.store_child import ACK_WAIT, GRACE
from mpdoctor.fleet.gathered import judge_gathered, summary_line, verdict_numbers
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import own_argv, run_child
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.schema.serde import to_data

STAY = 5.0  # seconds past the deadline a rank without a verdict of its own stays, for rank 0 to report it
TICK = 0.1  # seconds between looks at the store child's files


@dataclass
class RankOptions:
    python: str
    budget: Budget  # the check's, from --timeout (built once: cli/fleet.py, fleet/api.py)
    deadline: float = 300.0  # seconds from start for every rank's report
    kernels: str = "quick"
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    snapshots: bool = False  # --save-snapshots: ranks send their whole (redacted) snapshot, the first of each group
    full_snapshots: bool = False  # --full-snapshots: every rank sends it


@dataclass
class Outcome:
    """How this rank's run ended: rank 0 has the report; every rank has the verdict or the problem."""

    report: Optional[FleetReport] = None
    worst: Optional[str] = None  # the verdict: the worst severity rank 0 found
    summary: str = ""
    problem: str = ""  # why there is no verdict (store unreachable, rank 0 silent)
    abandoned: bool = False  # this rank's own check was still running when the verdict came
    judged: bool = False  # rank 0 has judged (without this rank): no need to stay for it to name this rank
    release: Optional[object] = None  # call once the verdict is printed: lets the store child go (rank 0 waits)
    snapshots: dict = field(default_factory=dict)  # rank 0 with --save-snapshots: rank -> its snapshot (JSON data),
    # one rank per group (the first to claim it in the store), or every rank with --full-snapshots

    def done(self) -> None:
        if callable(self.release):
            self.release()


def run_rank(launch: Launch, options: RankOptions) -> Outcome:
    """Check this rank and take part in the fleet; returns when the verdict is known or no longer can be.

    Call the outcome's ``done()`` once its verdict is printed: rank 0 posts the verdict
    then, and waits (a few seconds at most) for the others to be done with it.
    """
    start = time.time()
    until = start + options.deadline
    box = tempfile.mkdtemp(prefix="mpdoctor-fleet-")
    stop = Stop().install() if launch.rank == 0 else Stop.released()  # rank 0 reports past the launcher's SIGTERM
    try:
        outcome = _run_in(box, launch, options, start, until, stop)
    except BaseException:  # a crash, Ctrl-C or SIGTERM (Interrupted) before the outcome exists: the files go too
        stop.restore()
        shutil.rmtree(box, ignore_errors=True)
        raise
    stop.restore()  # from now on a SIGTERM ends this rank at once, as before
    release = outcome.release

    def done() -> None:
        if callable(release):
            release()
        stop.exit()  # a SIGTERM held while the report was made ends the process now: 128 + 15, children killed

    outcome.release = done
    return outcome


def _run_in(box: str, launch: Launch, options: RankOptions, start: float, until: float, stop: Stop) -> Outcome:
    config = {
        "addr": launch.master_addr,
        "port": launch.master_port,
        "rank": launch.rank,
        "world_size": launch.world_size,
        "host": launch.host,
        "local_rank": launch.local_rank,
        "run_id": launch.run_id,
        "agent_store": launch.agent_store,
        "until": until,
        "dir": box,
        "full_snapshots": options.full_snapshots,
        "parent": os.getpid(),  # the store child marks this rank crashed once it is gone (store_child.Rank)
    }
    mailbox.put(box, mailbox.STEP, activity.CHECKING)
    # Not `with`: a hung check must not keep this function from returning (the CLI then ends the process).
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mpdoctor-fleet")
    child = pool.submit(
        run_child,
        own_argv("mpdoctor.fleet.store_child", json.dumps(config)),  # not `-m`: nothing from the working directory
        until + GRACE + 2 * ACK_WAIT + 30 - time.time(),
    )
    checked: dict = {}
    board = ProgressBoard()  # what the check is doing: the heartbeat's step
    checker = pool.submit(check_rank, launch, options, checked, board)
    pool.shutdown(wait=False)
    outcome = _take_part(launch, box, child, checker, checked, start, until, board, stop)
    if outcome.problem and launch.rank == 0 and outcome.report is None:
        outcome = _alone(launch, box, child, checker, checked, outcome.problem, until, stop)
    if outcome.problem and not outcome.abandoned:
        outcome.abandoned = not checker.done()  # a hung check must not hold the exit (its thread is not waited for)
    if outcome.problem and launch.rank != 0 and not outcome.judged:
        # Stay until rank 0 has reported (it names this rank): torchrun stops every worker once one exits non-zero.
        time.sleep(max(0.0, until + STAY - time.time()))
    if outcome.release is None:
        outcome.release = lambda: _let_go(box, child)
    return outcome


def _take_part(
    launch: Launch,
    box: str,
    child: Future,
    checker: Future,
    checked: dict,
    start: float,
    until: float,
    board: ProgressBoard,
    stop: Stop,
) -> Outcome:
    reported = False
    announced = activity.CHECKING
    limit = until + (GRACE + 15.0 if launch.rank else 5.0)  # rank 0 gathers until `until`; the others hear later
    while time.time() < limit:
        if stop.stopped:  # rank 0 only: the launcher's SIGTERM, held
            return _stopped(launch, box, child, checker, checked, start, stop)
        error = mailbox.take(box, mailbox.ERROR)
        if error:
            return Outcome(problem=error)
        if not reported and not checker.done():
            now = check_step(board.tasks())
            if now != announced:  # the store child beats it: "importing torch", "running kernels on cuda:1"
                mailbox.put(box, mailbox.STEP, now)
                announced = now
        if mailbox.has(box, mailbox.CONNECTED) and not reported and checker.done():
            if "report" in checked:
                mailbox.put(box, mailbox.STEP, activity.SENDING)
                mailbox.put(box, mailbox.REPORT, checked["report"])
                mailbox.put(box, mailbox.STEP, activity.GATHERING if launch.rank == 0 else activity.WAITING)
            else:
                mailbox.put(box, mailbox.FAIL, checked.get("failed") or _failure(checker))
            reported = True
        gathered = mailbox.take(box, mailbox.GATHERED)
        if gathered is not None:
            got = Gathered.from_data(gathered)
            if not got.has(0) and ("report" in checked or not checker.done()):
                # The deadline came before rank 0's own report (late or still coming, not failed): it was too short.
                return _too_short(launch, box, child, got, checker, checked, until - start, board, stop)
            return _lead(launch, box, child, got, checker)
        if mailbox.has(box, mailbox.HEARD):
            verdict = mailbox.take(box, mailbox.HEARD)
            if verdict is None:
                return Outcome(problem=f"no verdict from rank 0 within {time.time() - start:.0f} s")
            if "problem" in verdict:  # the store child found no verdict it can take, or one that did not count it
                return Outcome(problem=str(verdict["problem"]), judged=bool(verdict.get("judged")))
            try:  # the child checked it (protocol.verdict_of); a severity we cannot name must not end this rank
                verdict = verdict_of(verdict.get("verdict"))
            except Malformed as exc:
                return Outcome(problem=f"rank 0's verdict could not be read: {exc}")
            return _heard(verdict, checked.get("report"), checker)
        if child.done():
            return Outcome(problem=f"the store child ended: {child.result().describe()}")
        time.sleep(TICK)
    if launch.rank == 0:
        return Outcome(problem=f"the store gave back no gathering within {time.time() - start:.0f} s")
    return Outcome(problem=f"no verdict from rank 0 within {time.time() - start:.0f} s")


def _heard(verdict: dict, report: Optional[dict], checker: Future) -> Outcome:
    """A rank's outcome from the verdict its store child accepted: this rank's own words around its numbers,
    and an exit never better than its own findings (the verdict counted them: one that did not is not trusted)."""
    mine = own_worst(report)
    summary = verdict_line(verdict)
    level = worse(verdict["worst"], mine)
    if level != verdict["worst"]:
        summary += f"; but this rank's own worst finding is {mine}, which it exits with"
    return Outcome(worst=level, summary=summary, abandoned=not checker.done())


def _alone(
    launch: Launch, box: str, child: Future, checker: Future, checked: dict, problem: str, until: float, stop: Stop
) -> Outcome:
    """Rank 0 when the store failed it (unreachable, its child ended, no gathering in time): its own report,
    judged alone (the others named as never heard from), printed with the problem, whatever the store holds."""
    # Polled, not checker.result(): a SIGTERM meanwhile shortens the wait to what the launcher leaves.
    while not checker.done() and time.time() < (stop.at + TERM_WAIT if stop.stopped else until + 5.0):
        time.sleep(TICK)
    if "report" not in checked:
        return Outcome(problem=problem, abandoned=not checker.done())
    outcome = _lead(launch, box, child, Gathered({0: checked["report"]}), checker)
    outcome.problem = f"{problem}; this report holds rank 0's own check only"
    outcome.release = lambda: _let_go(box, child)  # nothing to post: the store failed
    return outcome


def _stopped(
    launch: Launch, box: str, child: Future, checker: Future, checked: dict, start: float, stop: Stop
) -> Outcome:
    """Rank 0 after the launcher's SIGTERM: its own check gets what is left of ``TERM_WAIT``, its store child one
    last look at the store, and the report holds what it had, saying why; no verdict is posted (the other ranks
    are being stopped too). The process ends as the signal would have once the report is printed (``run_rank``)."""
    # The store child may still be importing torch (its own seconds, on a busy node): it gets the same wait.
    while time.time() < stop.at + TERM_WAIT and not (
        checker.done() and (child.done() or mailbox.has(box, mailbox.CONNECTED) or mailbox.has(box, mailbox.ERROR))
    ):
        time.sleep(TICK)
    data = None
    if mailbox.has(box, mailbox.CONNECTED) and not child.done():
        mailbox.put(box, mailbox.HURRY, True)
        hurry = time.time() + HURRY_WAIT
        while data is None and time.time() < hurry and not child.done():
            data = mailbox.take(box, mailbox.GATHERED)
            time.sleep(0 if data is not None else TICK)
    got = Gathered.from_data(data) if data is not None else Gathered()
    if "report" in checked:  # rank 0's own, whether or not it reached the store before the signal
        got.reports[0] = checked["report"]
        got.heartbeats.pop(0, None)
        got.silent.pop(0, None)
    report = launcher_stopped(judge_gathered(got, launch, cut="the launcher (SIGTERM)"), stop.at - start)
    return Outcome(
        report=report,
        worst=worst(report),
        summary=summary_line(report),
        problem=f"stopped by the launcher (SIGTERM) {stop.at - start:.1f} s in; the report holds what rank 0 had",
        abandoned=not checker.done(),
        release=lambda: shutil.rmtree(box, ignore_errors=True),  # the store child goes with the held signal
    )


def _too_short(
    launch: Launch,
    box: str,
    child: Future,
    got: Gathered,
    checker: Future,
    checked: dict,
    deadline: float,
    board: ProgressBoard,
    stop: Stop,
) -> Outcome:
    """Rank 0 when the deadline came before its own report: no rank can be blamed for being late. Its own check
    gets ``SHORT_WAIT`` s more, to say how long it needed, and joins the comparison when it is done in time."""
    wait = time.time() + SHORT_WAIT
    while not checker.done() and time.time() < wait and not stop.stopped:
        time.sleep(TICK)
    step = check_step(board.tasks())
    own = None
    if "report" in checked:
        got.reports[0] = checked["report"]
        got.heartbeats.pop(0, None)
        got.silent.pop(0, None)
        own = float(checked["report"].get("seconds") or 0.0)
    elapsed = deadline + SHORT_WAIT - max(0.0, wait - time.time())
    return _lead(
        launch,
        box,
        child,
        got,
        checker,
        cut=f"the deadline ({deadline:g} s)",
        amend=lambda report: deadline_too_short(report, deadline, own, step, elapsed),
    )


def _lead(
    launch: Launch,
    box: str,
    child: Future,
    gathered: Gathered,
    checker: Future,
    cut: str = "",
    amend: Optional[Callable[[FleetReport], FleetReport]] = None,
) -> Outcome:
    """Rank 0: the report from what was gathered (``cut``, ``amend``: when the deadline cut it short); the verdict
    is posted by done(), after the report is printed."""
    report = judge_gathered(gathered, launch, cut)
    if amend is not None:
        report = amend(report)
    outcome = Outcome(
        report=report,
        worst=worst(report),
        summary=summary_line(report),
        abandoned=not checker.done(),
        snapshots={
            rank: data["snapshot"]
            for rank, data in gathered.reports.items()
            if isinstance(data, dict) and isinstance(data.get("snapshot"), dict)
        },
    )
    verdict = {"verdict": verdict_numbers(report)}  # the store child posts it for each rank, with its nonce
    # Rank 0 prints its report first, then posts the verdict: once another rank has the verdict it exits,
    # and torchrun stops every worker once one exits non-zero.
    outcome.release = lambda: (mailbox.put(box, mailbox.VERDICT, verdict), _let_go(box, child))
    return outcome


def _let_go(box: str, child: Future) -> None:
    """Tell the store child this rank is done (it acknowledges on the store) and wait for it, a few seconds at most."""
    try:
        mailbox.put(box, mailbox.EXIT, True)
        child.result(timeout=2 * ACK_WAIT + 5)
    except Exception:  # noqa: BLE001 - a child still running is killed with the process group at exit
        pass
    finally:  # SIGTERM here too (torchrun stopping this worker): the files go either way
        shutil.rmtree(box, ignore_errors=True)


def _failure(checker: Future) -> str:
    error = checker.exception()
    return f"its check failed: {type(error).__name__}: {error}" if error else "its check produced no report"


def check_rank(launch: Launch, options: RankOptions, out: dict, progress: ProgressBoard = SILENT) -> None:
    """The single-process check of this rank, as ``mpdoctor check`` runs it; its rank report lands in ``out``.

    Its probes post what they are doing to ``progress`` (the heartbeat's step, ``activity.check_step``).
    """
    from mpdoctor.doctor.diagnose import report_of
    from mpdoctor.doctor.report import redacted

    began = time.monotonic()
    try:
        report = redacted(report_of(own_snapshot(launch, options, progress), options.select, options.ignore))
    except Exception as exc:  # noqa: BLE001 - rank 0 names this rank with the reason instead of waiting for it
        out["failed"] = f"its check failed: {type(exc).__name__}: {exc}"
        return
    mine = rank_report(
        launch.rank, launch.host, launch.local_rank, report.snapshot, report.findings, time.monotonic() - began
    )
    # What this rank was launched believing: a rank given another WORLD_SIZE by its job script differs (FLEET006).
    mine.fingerprint.env.update(launch_env(launch.world_size, dict(os.environ)))
    out["report"] = to_data(mine)
    if options.snapshots:  # beside the report's fields: a reader of RankReport ignores a key it does not know
        out["report"]["snapshot"] = to_data(report.snapshot)


def own_snapshot(launch: Launch, options: RankOptions, progress: ProgressBoard = SILENT):
    """This rank's snapshot: its facts as the job sees them, then the microkernels on the GPU its LOCAL_RANK selects.

    Every GPU rank times its own GPU (``devices.own_gpu_kernels``), so a node's GPUs
    are measured in parallel and no GPU by two ranks. Local rank 0 of a node without
    GPUs times the CPU (the other ranks would time it against each other), as it
    times every device when its GPU cannot be named exactly (no UUID).
    """
    from mpdoctor.doctor.gather import Options, gather, needed_facts
    from mpdoctor.fleet.devices import own_gpu_kernels, select_device

    plain = Options(
        python=options.python,
        budget=options.budget,
        kernels="off",
        select=options.select,
        ignore=options.ignore,
        progress=progress,
    )
    snapshot = gather(plain)
    if options.kernels == "off" or "kernels" not in needed_facts(plain):
        return snapshot
    kernels = own_gpu_kernels(
        options.python, options.budget, options.kernels, select_device(snapshot, launch.local_rank), progress
    )
    if kernels is None and launch.local_rank == 0:
        from mpdoctor.probes.kernels import probe_kernels_and_torch

        kernels = probe_kernels_and_torch(options.python, options.budget, options.kernels, None, progress)[0]
    if kernels is not None:
        snapshot.kernels = kernels
    return snapshot
