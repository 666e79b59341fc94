"""What a long command is doing right now: a board that its workers write and a live display reads.

The probes, ``audit`` and ``explain`` post to a :class:`ProgressBoard` as they work
("torch: importing torch", "kernels cpu: 12 of 40 tests", "explain: 48 MB of 100 MB
read"). Writers never wait on a reader: posting is a dictionary update under a lock,
and a board that nobody displays (pipes, JSON, CI, ``--quiet``) costs nothing more.
A display (``mpdoctor.render.progress``) redraws from :meth:`ProgressBoard.tasks`
a few times a second, so the workers' threads never touch the terminal.

Task names are short and stable ("inventory", "torch", "kernels cpu", "nvml",
"project scan", "audit", "explain"); ``text`` says what the task is doing now, in
words a user understands ("importing torch", "starting CUDA").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Optional


@dataclass(frozen=True)
class TaskState:
    """One task as a display sees it (a copy: the board may move on while it is drawn)."""

    name: str
    text: str = ""
    started: float = 0.0  # time.monotonic() when the task began
    step_started: float = 0.0  # when ``text`` last changed: "importing torch (4 s)" counts from here
    completed: Optional[int] = None  # units done (tests, files, bytes), when the task counts them
    total: Optional[int] = None
    unit: str = ""  # what completed and total count: "tests", "files", "bytes"
    finished: bool = False


class ProgressBoard:
    """Thread-safe state of every task of one command, in the order they began."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskState] = {}

    def start(self, name: str, text: str = "", total: Optional[int] = None, unit: str = "") -> None:
        """Task ``name`` begins (again, if it had finished), doing ``text``."""
        now = time.monotonic()
        state = TaskState(name, text, now, now, 0 if total is not None else None, total, unit)
        with self._lock:
            self._tasks[name] = state

    def update(
        self,
        name: str,
        text: Optional[str] = None,
        completed: Optional[int] = None,
        total: Optional[int] = None,
        unit: Optional[str] = None,
    ) -> None:
        """Task ``name`` now does ``text`` and/or has done ``completed`` of ``total``; starts it if unknown."""
        with self._lock:
            state = self._tasks.get(name)
            if state is None:
                now = time.monotonic()
                state = TaskState(name, started=now, step_started=now)
            changes: dict = {}
            if text is not None and text != state.text:
                changes.update(text=text, step_started=time.monotonic())
            if completed is not None:
                changes["completed"] = completed
            if total is not None:
                changes["total"] = total
            if unit is not None:
                changes["unit"] = unit
            self._tasks[name] = replace(state, **changes) if changes else state

    def finish(self, name: str, text: Optional[str] = None) -> None:
        """Task ``name`` is done (``text``: how it ended, e.g. "timed out"); a display may drop or dim it."""
        with self._lock:
            state = self._tasks.get(name)
            if state is not None:
                self._tasks[name] = replace(state, finished=True, text=state.text if text is None else text)

    def tasks(self) -> list[TaskState]:
        """Every task, in the order they began."""
        with self._lock:
            return list(self._tasks.values())


class _Silent(ProgressBoard):
    """The board when nobody watches: posting does nothing at all."""

    def start(self, name: str, text: str = "", total: Optional[int] = None, unit: str = "") -> None:
        pass

    def update(
        self,
        name: str,
        text: Optional[str] = None,
        completed: Optional[int] = None,
        total: Optional[int] = None,
        unit: Optional[str] = None,
    ) -> None:
        pass

    def finish(self, name: str, text: Optional[str] = None) -> None:
        pass


SILENT = _Silent()  # the default everywhere a board is optional
