"""A snapshot started early: `mpdoctor check`'s probes run while the CLI is still loading.

The children that import torch are the critical path of a check; the CLI's own
start (typer, rich, the checks registry) need not come first. ``mpdoctor.prescan``
reads a plain ``mpdoctor check`` command line before anything heavy is imported and
calls :func:`start` with the snapshot it will need; ``doctor.gather`` then
:func:`claim`\\ s it, with the request it computed itself from the parsed options
and the selected checks. Only an identical request gets the early snapshot; any
other, and a command that never claims it (``--help`` after all, a usage error),
gives it up: :func:`discard` kills its children and waits for its thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from mpdoctor.probes.progress import ProgressBoard

if TYPE_CHECKING:
    from mpdoctor.probes.budget import Budget
    from mpdoctor.snapshot import Snapshot

JOIN_LIMIT = 10.0  # s: a given-up snapshot's thread ends as soon as its children are killed; this is a backstop


@dataclass(frozen=True)
class Request:
    """What ``take_snapshot`` is asked for; two requests for the same snapshot are equal."""

    python: str
    budget: Budget  # the run's, built once from --timeout (budget.parse_timeout)
    kernels: str  # quick, full or off
    project: bool
    project_dir: str = ""  # --project DIR (absolute); "": the project the working directory is in


class Early:
    """A snapshot being taken in a thread of its own, and the board its probes post to."""

    def __init__(self, request: Request) -> None:
        # Imported here, in the caller's thread, before the snapshot's thread starts: were it imported there,
        # the caller's own imports (typer, rich) would share the interpreter lock with it, and the child that
        # imports torch, the critical path, would start later.
        from mpdoctor.probes.collect import take_snapshot

        self.request = request
        self.board = ProgressBoard()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpdoctor-early")
        self._future = self._pool.submit(
            take_snapshot,
            request.python,
            request.budget,
            request.kernels,
            request.project,
            progress=self.board,
            project_dir=request.project_dir,
        )
        self._pool.shutdown(wait=False)  # the thread ends with the snapshot

    def result(self) -> Snapshot:
        """The snapshot, once taken; raises what taking it raised (``child.Cancelled`` once given up)."""
        return self._future.result()

    def join(self, limit: float) -> None:
        """Wait up to ``limit`` s for the snapshot to be taken or given up."""
        wait([self._future], timeout=limit)

    @property
    def running(self) -> bool:
        return not self._future.done()


_lock = threading.Lock()
_pending: Optional[Early] = None


def start(request: Request) -> Early:
    """Start taking the snapshot ``request`` asks for (giving up one started before)."""
    global _pending
    discard()
    early = Early(request)
    with _lock:
        _pending = early
    return early


def pending_board() -> Optional[ProgressBoard]:
    """The board of the snapshot being taken early, if one is (a display may show it before it is claimed)."""
    with _lock:
        return _pending.board if _pending is not None else None


def claim(request: Request) -> Optional[Early]:
    """The early snapshot, when it is the one ``request`` asks for; else None (and any early one is given up)."""
    global _pending
    with _lock:
        early, _pending = _pending, None
    if early is None:
        return None
    if early.request == request:
        return early
    _give_up(early)
    return None


def discard() -> None:
    """Give up the early snapshot, if one is being taken: kill its children, wait for its thread."""
    global _pending
    with _lock:
        early, _pending = _pending, None
    if early is not None:
        _give_up(early)


def _give_up(early: Early) -> None:
    from mpdoctor.probes.child import cancel_children

    with cancel_children():
        early.join(JOIN_LIMIT)
