"""Follow the probe children's step files as they grow, and post what they are doing to a progress board.

A probe child writes one JSON line per step as it goes (``remote/supervise.py``'s
``StepWriter``), so the step it is in is already on disk: the host reads it from
the watch callback it runs every ``child.WATCH_EVERY`` while waiting on the child.
:class:`StepFile` reads only the bytes written since its last look (one ``stat``
when nothing changed); the followers turn the steps into words on a
:class:`~mpdoctor.probes.progress.ProgressBoard` ("torch: importing torch",
"kernels cpu: 12 of 40 tests"). They only report: the facts are still read from
the whole files once the child has ended, by the same parser as before.
"""

from __future__ import annotations

import json
import os
from typing import Iterator, Optional

from mpdoctor.portable import limits
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.probes.remote import steps as names
from mpdoctor.probes.remote.supervise import seconds_text
from mpdoctor.snapshot import ProbeRun

# What a part is doing while a step runs, in a user's words (keyed by the step begun).
TORCH_WORDS = {
    names.FIND: "finding torch",
    names.IMPORT: "importing torch",
    names.BUILD: "reading torch's build",
    names.APEX_LOADS: "loading apex extensions",
    names.CUDA: "starting CUDA",
    names.DEVICES: "listing devices",
}
ENV_WORDS = {
    names.PYTHON: "reading the interpreter",
    names.DISTRIBUTIONS: "listing installed packages",
    names.APEX: "looking for apex",
    names.APEX_USERS: "looking for code that imports apex",
    names.PROJECT: "scanning the project",
    names.ONEFLOW: "looking for oneflow",
}
ONEFLOW_WORDS = {
    names.FIND: "finding oneflow",
    names.TORCH_IMPORT: "importing torch",
    names.ONEFLOW_IMPORT: "importing oneflow",
    names.ONEFLOW_BUILD: "reading oneflow's build",
    names.COEXIST: "running torch and oneflow together",
}
PART_WORDS = {names.PART_ENV: ENV_WORDS, names.PART_TORCH: TORCH_WORDS, names.PART_ONEFLOW: ONEFLOW_WORDS}
# Steps of a device's kernel run that are not tests (the device's start, the retiming summary, the bookkeeping).
NOT_TESTS = {names.PLAN, names.DEVICE, names.RETIME, names.END, names.DONE}
PLAN_NOT_TESTS = 2  # of the steps a device's plan counts (steps.PLAN), its DEVICE and RETIME are no tests


class StepFile:
    """A step file read incrementally: each look returns the complete lines written since the last one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""  # a line the writer has not finished yet

    def entries(self) -> Iterator[tuple[str, bool, object]]:
        """(step, begun, data) for each new line; junk lines (a crash mid-line) are skipped."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return
        if size <= self._offset:
            return
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(min(size - self._offset, limits.STEP_LINE))  # the rest at the next look
        except OSError:
            return
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > limits.STEP_LINE:  # a line over the bound: dropped (its end reads as junk)
            self._partial = b""
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("step"), str):
                yield entry["step"], bool(entry.get("begin")), entry.get("data")


class PartProgress:
    """A probe part's task on the board: the text follows the step the part is in."""

    def __init__(
        self, board: ProgressBoard, task: str, paths: list[str], words: dict[str, str], done_step: str = ""
    ) -> None:
        self.board, self.task, self.words, self.done_step = board, task, words, done_step
        self.files = [StepFile(path) for path in paths]

    def look(self) -> None:
        """Post the step begun last; finish the task once ``done_step`` has its result."""
        for step_file in self.files:
            for step, begun, _ in step_file.entries():
                if begun and step in self.words:
                    self.board.update(self.task, text=self.words[step])
                elif not begun and step == self.done_step:
                    self.board.finish(self.task, "done")


class KernelProgress:
    """One task per device, "kernels <device>": tests done of the plan's total, from the device's step file."""

    def __init__(self, board: ProgressBoard, directory: str) -> None:
        self.board, self.directory = board, directory
        self.runner = StepFile(os.path.join(directory, names.RUNNER_FILE))
        self.devices: list[tuple[str, StepFile, list[int]]] = []  # (task, file, [tests done])

    def look(self) -> None:
        for step, begun, data in self.runner.entries():
            if step == names.DEVICES and not begun and isinstance(data, list):
                for index in range(len(self.devices), len(data)):
                    path = os.path.join(self.directory, names.DEVICE_FILE % index)
                    self.devices.append((f"kernels {data[index]}", StepFile(path), [0]))
        for task, step_file, done in self.devices:
            for step, begun, data in step_file.entries():
                if step == names.PLAN and isinstance(data, int):
                    self.board.update(task, total=max(0, data - PLAN_NOT_TESTS), unit="tests", completed=done[0])
                elif step == names.DEVICE:
                    self.board.update(task, text="starting the device" if begun else "running tests")
                elif step == names.RETIME and begun:
                    self.board.update(task, text="summarising the timings")
                elif step == names.END and isinstance(data, dict):
                    self.board.finish(task, end_words(str(data.get("status") or ""), str(data.get("detail") or "")))
                elif step not in NOT_TESTS and not begun:
                    done[0] += 1
                    self.board.update(task, completed=done[0])

    def started(self) -> list[str]:
        return [task for task, _, _ in self.devices]


def end_words(status: str, detail: str = "", limit: Optional[float] = None) -> str:
    """How a task ended, in words: "done", "timed out after 60 s", "crashed (was killed by SIGSEGV)"."""
    if status == "ok":
        return "done"
    if status == "timeout":
        return f"timed out after {seconds_text(limit)} s" if limit is not None else "timed out"
    if status == "crashed":
        return f"crashed ({detail})" if detail else "crashed"
    if status in ("not-run", "skipped"):
        return "not run"
    return "failed" + (f": {detail}" if detail and len(detail) < 80 else "")


def finish_run(board: ProgressBoard, task: str, run: ProbeRun, limit: Optional[float] = None) -> None:
    """Finish ``task`` with how its child ended (``limit``: the limit it overran, when it timed out)."""
    if board is SILENT:
        return
    board.finish(task, end_words(run.status, _how(run.detail), limit))


def _how(detail: str) -> str:
    """ "was killed by SIGSEGV" from a ProbeRun's detail, which may say more."""
    return detail if detail.startswith(("was killed", "exited")) else ""
