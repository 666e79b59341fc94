"""``mpdoctor.fleet_check()``: the fleet check from inside a training script, after ``init_process_group``.

Every rank calls it (as the first thing after ``init_process_group``, before the
first step). It uses the process group's own store under mpdoctor's key prefix, so
it needs no port of its own, and no collective: a rank that never calls it costs
the others ``deadline`` seconds, not a hang. Each rank's check runs in child
processes (``mpdoctor.doctor.diagnose``), as ``mpdoctor check`` does.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from mpdoctor.findings import Severity
from mpdoctor.fleet import activity
from mpdoctor.fleet.compare import worst
from mpdoctor.fleet.model import FleetReport
from mpdoctor.fleet.protocol import (
    COUNTED,
    FOREIGN,
    POLL,
    Beater,
    Channel,
    Gatherer,
    Malformed,
    accepted,
    new_nonce,
    nonces_of,
    own_worst,
    verdict_line,
    worse,
)
from mpdoctor.fleet.rank import RankOptions, check_rank
from mpdoctor.fleet.gathered import judge_gathered, summary_line, verdict_numbers
from mpdoctor.fleet.launcher import Launch
from mpdoctor.fleet.activity import check_step
from mpdoctor.probes.budget import DEFAULT_TIMEOUT, Budget
from mpdoctor.probes.progress import ProgressBoard


class FleetCheckFailed(RuntimeError):
    """Raised on every rank when rank 0's verdict is at or above ``fail_on`` (or no verdict came).

    ``report`` is the fleet report on rank 0 (None on the others).
    """

    def __init__(self, message: str, report: Optional[FleetReport] = None) -> None:
        super().__init__(message)
        self.report = report


def fleet_check(
    *,
    fail_on: str = "error",
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = 300.0,
    kernels: str = "off",
    store: Any = None,
    run_id: str = "api",
) -> Optional[FleetReport]:
    """Check every rank of the running job; rank 0 returns the fleet report, the others None.

    Raises :class:`FleetCheckFailed` on every rank when the worst finding is at least
    ``fail_on`` (error, warning, info; never: only warn), so no rank walks into a
    collective the others will not reach. Findings below it are a warning on rank 0.
    ``kernels``: "off" (default: a training script's GPUs are busy), "quick" or "full"
    (each rank on the GPU its LOCAL_RANK selects; local rank 0 the CPU of a node
    without GPUs). ``store``: another c10d store (default: the
    default process group's).

    The check runs in child processes, so settings made in this process are not seen
    and not compared across ranks: ``torch.set_float32_matmul_precision()``,
    ``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``,
    ``torch.set_default_dtype()``, ``torch.use_deterministic_algorithms()``.
    Environment variables set before the call are.
    """
    import torch.distributed as dist

    if store is None:
        if not dist.is_initialized():
            raise RuntimeError("mpdoctor.fleet_check() needs torch.distributed.init_process_group() first")
        store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    host = socket.gethostname()
    launch = Launch("api", rank, world, local_rank, host, "", 0, run_id)
    channel = Channel(store, run_id)
    until = time.monotonic() + deadline
    beater = Beater(channel, rank, host, local_rank)
    beater.step(activity.CHECKING)
    checked: dict = {}
    board = ProgressBoard()
    options = RankOptions(
        python=sys.executable, budget=Budget.from_timeout(timeout), deadline=deadline, kernels=kernels
    )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpdoctor-fleet-check") as pool:
        job = pool.submit(check_rank, launch, options, checked, board)
        while not job.done():  # this thread beats while the check runs, with the step it is in
            beater.step(check_step(board.tasks()))
            beater.tick()
            time.sleep(0.2)
    nonce = new_nonce()  # the verdict meant for this rank must echo it (protocol.accepted)
    beater.sign(nonce)
    if "report" in checked:
        beater.step(activity.SENDING)
        channel.post_report(rank, checked["report"], nonce=nonce)
    else:
        beater.post(state="crashed", detail=checked.get("failed", "its check failed"))
    beater.step(activity.GATHERING if rank == 0 else activity.WAITING)
    report, level, summary = None, None, ""
    if rank == 0:
        gatherer = Gatherer(channel, world)
        while not gatherer.poll(until):
            beater.tick()
            time.sleep(POLL)
        report = judge_gathered(gatherer.got, launch)
        channel.post_verdicts(verdict_numbers(report), nonces_of(gatherer.got), world)
        level, summary = worst(report), summary_line(report)
    else:
        level, summary = _hear(channel, beater, rank, nonce, until + 15.0, deadline)
        level = worse(level, own_worst(checked.get("report")))  # never better than this rank's own findings
    beater.post(state="done", step=activity.DONE)
    if fail_on != "never" and level and Severity(level).rank >= Severity(fail_on).rank:
        raise FleetCheckFailed(f"mpdoctor fleet_check: {summary}", report)
    if rank == 0 and level:
        warnings.warn(f"mpdoctor fleet_check: {summary}", stacklevel=2)
    return report


def _hear(channel: Channel, beater: Beater, rank: int, nonce: str, until: float, deadline: float):
    """(worst, summary in this rank's words) of the verdict meant for this rank; FleetCheckFailed when none came.

    Anyone can write the key: a verdict that cannot be read or does not echo ``nonce`` ends nothing early.
    """
    refused = ""
    while time.monotonic() < until:
        beater.tick()
        try:
            verdict = channel.verdict(rank)
        except Malformed as exc:  # said in words at the end, never a ValueError from inside mpdoctor
            verdict, refused = None, f"; rank 0's verdict could not be read: {exc}"
        how = accepted(verdict, nonce) if verdict is not None else None
        if how == COUNTED:
            return verdict["worst"], verdict_line(verdict)
        if how == FOREIGN:
            refused = "; a verdict that did not echo this rank's nonce was refused"
        elif how is not None:
            refused = "; rank 0 judged the fleet without this rank's report"
        time.sleep(POLL)
    beater.post(state="done", step=activity.DONE)
    raise FleetCheckFailed(f"mpdoctor fleet_check: no verdict from rank 0 within {deadline + 15:.0f} s{refused}")


__all__ = ["FleetCheckFailed", "fleet_check"]
