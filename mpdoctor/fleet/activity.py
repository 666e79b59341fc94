"""A rank's activity, in words: what its check is doing right now, as its heartbeat announces it.

A rank's check posts to a progress board (``mpdoctor.probes.progress``) as ``mpdoctor
check`` does; the probes follow their children's step files there ("torch: importing
torch", "kernels cuda:1: 12 of 40 tests"). This turns the board into the one step a
heartbeat carries, so a hung rank is reported as "stuck importing torch for 60 s",
not "checking". Pure: a function of the board's tasks.
"""

from __future__ import annotations

from typing import Iterable

from mpdoctor.probes.progress import TaskState

CHECKING = "starting its check"  # the check began; no probe has said more yet
JUDGING = "judging"  # every probe ended; the checks run on the snapshot
SENDING = "sending its report"
WAITING = "waiting for rank 0"  # the other ranks, once their report is in the store
GATHERING = "waiting for the other ranks"  # rank 0, once its own report is in
COMPARING = "comparing"  # rank 0 gathered everything (or the deadline came)
DONE = "done"

# The task whose step is the news, first: a hang in `import torch` matters more than the inventory beside it.
PRIORITY = ("torch", "kernels", "inventory", "oneflow", "project scan", "nvml")


def _rank_of(task: TaskState) -> int:
    for place, name in enumerate(PRIORITY):
        if task.name == name or task.name.startswith(name + " "):
            return place
    return len(PRIORITY)


def _words(task: TaskState) -> str:
    if task.name.startswith("kernels "):  # no count of tests: a step that changes every test never looks stuck
        return f"running kernels on {task.name[len('kernels ') :]}"
    return task.text or task.name


def check_step(tasks: Iterable[TaskState]) -> str:
    """The step of a check whose board holds ``tasks``: the most telling unfinished task, else judging."""
    tasks = list(tasks)
    running = sorted((t for t in tasks if not t.finished), key=lambda t: (_rank_of(t), t.started))
    if running:
        return _words(running[0])
    return JUDGING if tasks else CHECKING
