"""Run an ordered plan of steps in a forked worker, supervised: a crash or a hang costs only its step.

Runs inside the interpreter under diagnosis (stdlib only, Python 3.8+, POSIX: it
forks). The one way this package runs something that may crash or hang the
interpreter: the kernel runner's jobs (one per device, and one that counts the
CUDA devices) and ``loads`` (one job, one step per apex extension to import).

**A job** (:class:`Job`) is a *plan*, an ordered list of ``(step, callable)``,
run by a forked worker that writes the job's *step file*: JSON lines, each
flushed as it is written (:class:`StepWriter`)::

    {"step": "plan", "data": 40}                how many steps the plan has
    {"step": "matmul/float16", "begin": true}   before the step runs
    {"step": "matmul/float16", "data": {...}}   its result; an exception becomes {"status": "error", ...}
    {"step": "done", "data": true}              after the last step; then the worker exits

The worker is a fork of the supervisor, and ``plan()`` is called in the worker:
the plan may use what the supervisor imported (torch), but the supervisor must
not have started what does not survive ``fork`` (CUDA, an OpenMP pool).

**Supervision** (:func:`run`) looks after the jobs every ``POLL`` s, and at once
when a worker exits (a pidfd, where Python 3.9+ on Linux 5.3+ has one; elsewhere the
next tick): the last worker's end is the kernel runner's end, which the host waits
on. While a worker is alive and
its step file grew within the limit that applies, a poll is one ``waitpid`` and
one ``stat``: the file is parsed only once something may have happened, so a
supervisor sharing the cores with the kernels being timed costs them nothing.
Then:

* the worker exited after ``done``: the job is over, ``ok`` (``error`` when its
  first step said so, below);
* it died inside a step: that step gets a record with status ``crashed`` and how
  the process ended, marked ``by: runner`` (``steps.BY``, ``steps.SUPERVISOR``);
* the file did not grow for the running step's limit (``first_limit`` for the
  first step, ``step_limit`` otherwise), or the job's deadline passed: the worker
  is killed and the step recorded as ``timeout``.

After a crash or a timeout a fresh worker skips every step that has a result and
so resumes at the next one: at most ``max_restarts`` times (None: no limit), and
not past the deadline. A job's ``first`` step, when it has one, starts what the
others need (a device): a crash or timeout there ends the job, and a result with
``"status": "error"`` ends the plan. When the job is over the supervisor writes
an ``end`` record: status, detail, restarts, seconds (also left on the Job).
"""

import json
import math
import os
import select
import signal
import sys
import time

from . import steps
from ._portable import limits, redact

POLL = 0.01  # s; a tick costs a waitpid and a stat per job, nothing the timed kernels notice
WORKER_FAILED = 70  # the exit status of a worker whose plan could not even be built

# How the supervisor words its records. %(how)s: how the process ended ("was
# killed by SIGSEGV", "exited with status 7"); %(limit)s: the step's limit in s.
WORDING = {
    "crashed": "the process %(how)s",
    "timeout": "did not finish within %(limit)s s and was killed",
    "deadline": "the job's time ran out and the process was killed",
}


class StepWriter:
    """Appends one JSON line per step to a step file and flushes it at once."""

    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8")

    def begin(self, step):
        self.emit(step, None, begin=True)

    def emit(self, step, data, begin=False):
        record = {"step": step, "begin": True} if begin else {"step": step, "data": data}
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()


def parse_steps(text):
    """(finished step -> data, the step begun last) from a step file's text; junk lines are skipped.

    The one reader of step files, on both sides: the host's ``environment.StepFile`` uses it too.
    """
    data, begun = {}, ""
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a line cut short by a crash
            continue
        if isinstance(entry, dict) and "step" in entry:
            if entry.get("begin"):
                begun = str(entry["step"])
            else:
                data[str(entry["step"])] = entry.get("data")
    return data, begun


def read_steps(path):
    """:func:`parse_steps` of the file at ``path``; an unreadable file has no steps."""
    return parse_steps(step_text(path))


def step_text(path):
    """A step file's text, read to its bounds (``limits.STEP_FILE`` bytes; a line longer than
    ``limits.STEP_LINE`` is dropped unread, as a line cut by a crash is); "" for an unreadable file.

    The one way both sides read a step file: whatever the target wrote (a 1.5 GB line once ended mpdoctor in
    MemoryError) costs at most the bounds, in memory and time.
    """
    kept, line, skipping, read = [], [], False, 0
    try:
        with open(path, "rb") as handle:
            while read < limits.STEP_FILE:
                chunk = handle.read(min(1 << 20, limits.STEP_FILE - read))
                if not chunk:
                    break
                read += len(chunk)
                pieces = chunk.split(b"\n")
                for index, piece in enumerate(pieces):
                    ends = index < len(pieces) - 1
                    if not skipping:
                        line.append(piece)
                        if sum(map(len, line)) > limits.STEP_LINE:
                            line, skipping = [], True  # too long: dropped, up to its end
                    if ends:
                        if not skipping:
                            kept.append(b"".join(line))
                        line, skipping = [], False
            if line and not skipping:
                kept.append(b"".join(line))
    except OSError:
        return ""
    return b"\n".join(kept).decode("utf-8", "replace")


def append_step(path, step, data):
    """A supervisor's record in a worker's step file (the worker is dead by then)."""
    with open(path, "a+b") as handle:
        handle.seek(0, os.SEEK_END)
        cut = False
        if handle.tell():  # a worker killed mid-line: start ours on a line of its own
            handle.seek(-1, os.SEEK_END)
            cut = handle.read(1) != b"\n"
        handle.write((("\n" if cut else "") + json.dumps({"step": step, "data": data}) + "\n").encode("utf-8"))


def seconds_text(seconds):
    """A limit as people write it: 0.5, 2, 6.7, 185, never "0" for a third of a second (the host's too)."""
    if seconds >= 10:
        return "%.0f" % seconds
    return ("%.1f" % seconds).rstrip("0").rstrip(".") if seconds >= 0.1 else "%.2g" % seconds


def how_it_ended(status):
    """A waitpid status in words: "was killed by SIGSEGV", "exited with status 7"."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return "was killed by %s" % signal.Signals(number).name
        except ValueError:
            return "was killed by signal %d" % number
    return "exited with status %d" % os.WEXITSTATUS(status)


class Job:
    """One plan run by a forked worker, restarted past a step that kills it or hangs (see the module)."""

    def __init__(
        self,
        path,
        plan,
        step_limit,
        deadline,
        first=None,
        first_limit=None,
        max_restarts=None,
        ready=None,
        wording=None,
    ):
        self.path, self.plan = path, plan  # plan(): the [(step, callable)] list, called in the worker
        self.step_limit, self.deadline = step_limit, deadline  # seconds without progress; time.monotonic()
        self.first = first
        self.first_limit = step_limit if first_limit is None else first_limit
        self.max_restarts = max_restarts
        self.ready = ready or (lambda: True)  # run() starts the job once this says so
        self.wording = dict(WORDING, **(wording or {}))
        self.restarts = 0
        self.pid = 0
        self.started = None  # when the first worker started (a job may wait to be ready)
        self.status = self.detail = ""  # how the job ended, once it has
        self._size, self._changed, self._limit = -1, 0.0, 0.0
        self.pidfd = -1  # readable once the worker exits (see run); -1: none (py3.8, old kernel, no worker)

    def start(self):
        """Fork a worker that runs the plan, skipping the steps that already have a result."""
        if self.started is None:
            self.started = time.monotonic()
        skip = set(read_steps(self.path)[0])
        sys.stdout.flush()  # or the worker would write our buffered output again
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker: run the plan, never return into the supervisor
            code = 0
            try:
                _work(self.path, self.plan(), skip, self.first)
            except BaseException:  # SystemExit, KeyboardInterrupt, or no plan at all
                code = WORKER_FAILED
            os._exit(code)
        self.pid = pid
        self.pidfd = _pidfd(pid)
        self._progress(-1, time.monotonic())

    def _progress(self, size, now):
        # Until the next parse, assume the shortest limit that could apply.
        self._size, self._changed, self._limit = size, now, min(self.first_limit, self.step_limit)

    def poll(self):
        """Look after the worker; True once the job is over.

        Cheap while the worker makes progress (a waitpid and a stat): the step
        file is parsed only once the worker is gone or a limit may have passed.
        """
        if not self.pid:
            return True  # over already (waitpid(0) would wait for any child)
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self._close_pidfd()
        now = time.monotonic()
        size = _size(self.path)
        if size != self._size:
            self._progress(size, now)
        if not pid and now - self._changed <= self._limit and now <= self.deadline:
            return False  # making progress, and no limit can have passed yet
        data, begun = read_steps(self.path)
        running = begun if begun and begun not in data else ""
        if pid:
            self.pid = 0
            if steps.DONE in data:
                first = data.get(self.first) if self.first is not None else None
                if isinstance(first, dict) and first.get("status") == "error":
                    return self._finish("error", str(first.get("detail", "")))
                return self._finish("ok", "")
            how = how_it_ended(status)
            if not running:
                return self._finish("error", "the worker %s between steps" % how)
            return self._failed(running, "crashed", self.wording["crashed"] % {"how": how})
        limit = self.first_limit if self.first is not None and running == self.first else self.step_limit
        if now > self.deadline:
            self.kill()
            return self._failed(running, "timeout", self.wording["deadline"])
        if now - self._changed > limit:
            self.kill()
            return self._failed(running, "timeout", self.wording["timeout"] % {"limit": seconds_text(limit)})
        self._limit = limit  # the running step's own limit: no parsing again until it passes or the file grows
        return False

    def kill(self):
        """Kill the worker, if one runs, and reap it."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = 0
        self._close_pidfd()

    def _close_pidfd(self):
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1

    def _failed(self, step, status, detail):
        """Record the step that killed the worker; resume after it if that still makes sense."""
        step = step or steps.BETWEEN_STEPS
        append_step(self.path, step, {"status": status, "detail": detail, steps.BY: steps.SUPERVISOR})
        if self.first is not None and step == self.first:
            return self._finish(status, detail)
        if (self.max_restarts is not None and self.restarts >= self.max_restarts) or time.monotonic() > self.deadline:
            return self._finish(status, "stopped at %s (%s); %d restarts already" % (step, status, self.restarts))
        self.restarts += 1
        self.start()
        return False

    def _finish(self, status, detail):
        self.status, self.detail = status, detail
        append_step(
            self.path,
            steps.END,
            {
                "status": status,
                "detail": detail,
                "restarts": self.restarts,
                "seconds": round(time.monotonic() - self.started, 3),
            },
        )
        return True


def _pidfd(pid):
    """A descriptor that becomes readable when ``pid`` exits, or -1 where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # Python 3.8, a kernel before 5.3, a sandbox that refuses it
        return -1


def _pause(jobs, seconds):
    """Sleep ``seconds``, or less: until one of ``jobs``' workers exits, where their pidfds tell."""
    fds = [job.pidfd for job in jobs if job.pidfd >= 0]
    if not fds:
        time.sleep(seconds)
        return
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    poller.poll(int(math.ceil(seconds * 1000)))


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _work(path, plan, skip, first):
    """The worker's loop: every step of the plan not in ``skip``, in order, then ``done``."""
    out = StepWriter(path)
    out.emit(steps.PLAN, len(plan))  # so that the host can say "12 of 40 tests"
    for key, func in plan:
        if key in skip:
            continue
        out.begin(key)
        try:
            data = func()
        except Exception as exc:  # the step failed, the worker did not
            detail = redact.redact_clip("%s: %s" % (type(exc).__name__, exc), limits.ERROR_TEXT, tail=True)
            data = {"status": "error", "detail": detail}
        out.emit(key, data)
        if key == first and isinstance(data, dict) and data.get("status") == "error":
            break  # what the first step starts did not start: every later step would fail the same way
    out.emit(steps.DONE, True)


def run(jobs, on_done=None, poll=POLL):
    """Supervise ``jobs`` until every one is over.

    A job starts once its ``ready()`` says so (or its deadline has passed: then
    it ends at once, as timed out); ``on_done(job)``, called as each job ends,
    returns jobs to add (the kernel runner adds a job per CUDA device once the
    counting job is over). Should this raise, no worker is left running.
    """
    waiting, active = list(jobs), []
    try:
        while True:
            for job in [j for j in waiting if j.ready() or time.monotonic() > j.deadline]:
                waiting.remove(job)
                job.start()
                active.append(job)
            for job in list(active):
                if job.poll():
                    active.remove(job)
                    waiting.extend(on_done(job) if on_done is not None else ())
            if not (waiting or active):
                return
            _pause(active, poll)
    finally:
        for job in active:
            job.kill()
