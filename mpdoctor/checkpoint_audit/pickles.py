"""Every pickled checkpoint of an audit listed in one child: one ``import torch``, the files read in parallel.

The child (``probes/remote/checkpoint_loader.py``, run by the interpreter under
diagnosis) imports torch once, within ``Budget.checkpoint`` of ``--timeout``, and
reads the files with ``torch.load(weights_only=True)`` in a few forked workers
(:func:`workers`: the cores, and memory for the largest file each), each file
within that same limit. It writes one step per file as each ends, and this side
reads those step files as they grow (the progress board's count, and nothing
flushed is lost). A file that crashes or hangs its worker is recorded against
that file, and a fresh fork goes on with the worker's next file.

Should the child itself die or overrun (killed from outside, or by a file that
kills the process it was forked from), the files it finished keep their results
and the rest are read in a fresh child: the files it was reading first, one at a
time, so that one killing the child again is the one named; at most
``MAX_ATTEMPTS`` children in all.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.checkpoint_audit.progress_text import short
from mpdoctor.checkpoint_audit.safetensors import NO_TEMP, NO_TORCH, REFUSED, AuditError, TensorEntry
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import ChildResult, remote_argv, run_child
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.probes.remote import checkpoint_loader as loader

MAX_WORKERS = 4  # parallel torch.loads: past a few, they only contend for the disk and the cores
MAX_ATTEMPTS = 6  # children per audit, should one die with files unread
SLACK = 5.0  # s: the child's start and end around its own limits


def workers(paths: list[str], needs: Optional[list[int]] = None) -> int:
    """How many files to read at once: the cores this process may use, and memory for the largest file each.

    ``mmap=True`` keeps a zip checkpoint's data out of memory, but the old tar
    format (and a torch before 2.1) reads the whole file: each worker is allowed
    twice the largest file of what the machine has available. ``needs`` gives each
    file's memory when it is more than its size (a zip's pickle, inflated: ``zip_bound``).
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    count = max(1, min(MAX_WORKERS, cores, len(paths)))
    available = _available_memory()
    largest = max(needs if needs else [_size(p) for p in paths], default=0)
    if available is not None and largest:
        count = max(1, min(count, available // (2 * largest)))
    return count


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _available_memory() -> Optional[int]:
    """MemAvailable from /proc/meminfo in bytes; None where the system does not say (then cores alone decide)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class _Tail:
    """A step file read as it grows: the finished steps' data, and the step begun last."""

    def __init__(self, path: str) -> None:
        self.path, self.offset, self.rest = path, 0, b""
        self.data: dict[str, object] = {}
        self.files_done = 0  # steps named by a file's index: counted as they come, not recounted at every look
        self.begun = ""

    def read(self) -> bool:
        """Take in what was appended since; True when something was."""
        try:
            if os.path.getsize(self.path) == self.offset:
                return False
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return False
        self.offset += len(chunk)
        *lines, self.rest = (self.rest + chunk).split(b"\n")
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:  # a line cut short by a crash; the supervisor's record starts on a new line
                continue
            if isinstance(entry, dict) and "step" in entry:
                if entry.get("begin"):
                    self.begun = str(entry["step"])
                else:
                    step = str(entry["step"])
                    self.files_done += step.isdigit() and step not in self.data
                    self.data[step] = entry.get("data")
        return bool(lines)

    @property
    def running(self) -> str:
        return self.begun if self.begun and self.begun not in self.data else ""


@dataclass
class _Attempt:
    """One child's run over ``paths``: what it found, file index -> step data, and how it ended."""

    folder: str
    paths: list[str]
    workers: int
    budget: Budget
    results: dict[int, object] = field(default_factory=dict)
    imported: Optional[dict] = None  # the IMPORT step's data, once written
    running: list[int] = field(default_factory=list)  # files being read when the child ended
    ended: Optional[ChildResult] = None

    def run(self, python: str, progress: ProgressBoard, done_before: int, total: int) -> None:
        os.makedirs(self.folder)
        request = os.path.join(self.folder, "request.json")
        with open(request, "w", encoding="utf-8") as handle:
            json.dump({"files": self.paths, "workers": self.workers, "file_limit": self.budget.checkpoint}, handle)
        imports = _Tail(os.path.join(self.folder, loader.IMPORT_FILE))
        tails = [_Tail(os.path.join(self.folder, loader.WORKER_FILE % n)) for n in range(self.workers)]
        import_limit = self.budget.checkpoint  # importing torch gets what one file gets

        def look(elapsed: float) -> Optional[float]:
            """Called while the child runs: take in new results, post them; abandon an import that overran."""
            if self.imported is None and imports.read():
                self.imported = imports.data.get(loader.IMPORT)  # type: ignore[assignment]
            if any([tail.read() for tail in tails]):
                finished = sum(tail.files_done for tail in tails)
                now = [tail.running for tail in tails if tail.running]
                text = short(os.path.basename(self.paths[int(now[-1])])) if now else None
                progress.update("audit", text, completed=done_before + finished, total=total)
            if self.imported is None and elapsed > import_limit:
                return import_limit
            return None

        per_worker = math.ceil(len(self.paths) / self.workers)
        timeout = import_limit + self.budget.checkpoint * (per_worker + 1) + SLACK
        self.ended = run_child(remote_argv(python, "checkpoint_loader", request), timeout, watch=look)
        look(0.0)  # what was written after the last look
        for tail in tails:
            for key, data in tail.data.items():
                if key.isdigit() and int(key) < len(self.paths):
                    self.results[int(key)] = data
            if tail.running.isdigit():
                self.running.append(int(tail.running))


def read_pickles(
    files: list,
    python: str,
    budget: Budget,
    progress: ProgressBoard = SILENT,
    done_before: int = 0,
    total: Optional[int] = None,
) -> None:
    """Fill in each pickled ``WeightFile``'s tensors, or its error; never raises for a bad file.

    ``progress``'s "audit" task counts files: ``done_before`` were read before these, of ``total``.
    """
    total = done_before + len(files) if total is None else total
    pending = list(files)
    try:
        scratch = tempfile.TemporaryDirectory(prefix="mpdoctor-audit-")
    except OSError as exc:
        for file in pending:
            file.error, file.cause = (
                (
                    f"{file.path}: not read: no writable temporary directory "
                    f"({exc.strerror or exc}); set TMPDIR to a directory you can write to"
                ),
                NO_TEMP,
            )
        return
    suspects: list = []  # files being read when a child died: read first, and one at a time, by the next
    with scratch as tmp:
        for attempt in range(MAX_ATTEMPTS):
            serial = bool(suspects)
            pending = suspects + [f for f in pending if f not in suspects]
            paths = [f.path for f in pending]
            count = 1 if serial else workers(paths, [max(f.memory, _size(f.path)) for f in pending])
            run = _Attempt(os.path.join(tmp, str(attempt)), paths, count, budget)
            run.run(python, progress, done_before, total)
            for index, data in run.results.items():
                try:
                    _fill(pending[index], data)
                except AuditError as exc:
                    pending[index].error, pending[index].cause = str(exc), exc.cause
            done_before += len(run.results)
            left = [pending[i] for i in range(len(pending)) if i not in run.results]
            if not left:
                return
            why = _child_failure(run, python)
            if why is not None:  # torch never came: no file of this call can be read
                for file in left:
                    file.error, file.cause = f"{file.path}: {why[0]}", why[1]
                return
            # The child died (or overran) past its import: what it was reading is suspect. Read alone, a file
            # that kills it again is the culprit, named; the files read beside it are innocent.
            ended = run.ended.describe() if run.ended else "ended"
            running = [pending[i] for i in run.running]
            if serial or attempt == MAX_ATTEMPTS - 1:
                for file in running:
                    file.error = f"{file.path}: torch.load: the loading process {ended} while reading it"
            if attempt == MAX_ATTEMPTS - 1 or not (run.results or running):
                for file in left:
                    if not file.error:
                        file.error = f"{file.path}: torch.load: the loading process {ended} before reading it"
                return
            suspects = [] if serial else running
            pending = [file for file in left if not file.error]
            if not pending:
                return


def _child_failure(run: _Attempt, python: str) -> Optional[tuple[str, str]]:
    """(why, cause) when the child read nothing because torch could not come; None otherwise."""
    imported = run.imported
    if isinstance(imported, dict) and imported.get("ok"):
        return None
    if isinstance(imported, dict):
        return (
            f"not read: {python} cannot import torch ({imported.get('type')}: {imported.get('message')}), and only "
            "torch reads a pickled checkpoint (give --python an environment that has it)",
            NO_TORCH,
        )
    ended = run.ended
    if ended is not None and ended.start_error:
        return f"torch.load {ended.describe()}", ""
    if ended is not None and ended.timed_out:
        return (
            f"not read: importing torch in {python} {ended.describe()}; only torch reads a pickled checkpoint",
            NO_TORCH,
        )
    tail = ended.stderr_last_line if ended is not None else ""
    return (
        f"not read: the loading process {ended.describe() if ended else 'ended'} before importing torch"
        + (f" ({tail})" if tail else ""),
        "",
    )


def _fill(file, data: object) -> None:
    """A pickled ``WeightFile``'s tensors, model copies and entries that are not model weights, from its step data."""
    entries = _tensors(file.path, data)
    rows = data.get("tensors", []) if isinstance(data, dict) else []
    copies = [str(row[4]) if len(row) > 4 else "" for row in rows]
    roles = {str(key): str(role) for key, role in (data.get("copies") or [["", "model"]])}  # type: ignore[union-attr]
    file.tensors, file.copies = entries, []
    for key in dict.fromkeys(copies):  # the child lists a copy's tensors together: one run each
        start = copies.index(key)
        stop = start + copies.count(key)
        file.copies.append((key, roles.get(key, "model"), start, stop))
    file.skipped = [
        (str(key), str(role), int(count), int(nbytes))
        for key, role, count, nbytes in (data.get("skipped") or [])  # type: ignore[union-attr]
    ]


def _tensors(path: str, data: object) -> list[TensorEntry]:
    """One file's step data as its tensors; AuditError says why there are none."""
    if not isinstance(data, dict):
        raise AuditError(f"{path}: torch.load gave no result")
    if data.get("status") in ("crashed", "timeout"):  # the supervisor's record: the file ended its worker
        raise AuditError(f"{path}: torch.load {data.get('detail')}")
    if data.get("status") == "error":
        raise AuditError(f"{path}: torch.load failed: {data.get('detail')}")
    if not data.get("ok") and data.get("stage") == "list":
        raise AuditError(f"{path}: read, but not listed: {data.get('message')}")
    if not data.get("ok"):
        raise AuditError(
            f"{path}: torch.load(weights_only=True) refused it: {data.get('type')}: {data.get('message')}",
            REFUSED if data.get("type") == "UnpicklingError" else "",
        )
    return [TensorEntry(str(row[0]), str(row[1]), tuple(row[2]), int(row[3]), path) for row in data.get("tensors", [])]
