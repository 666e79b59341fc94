"""Run the precision microkernels on every device. Runs inside the interpreter under diagnosis.

Started by ``mpdoctor.probes.kernels`` through the same bootstrap as ``target.py``
(stdlib only, Python 3.8+, POSIX). It imports torch once, and that one import also
serves the environment probe's torch part: this process writes the torch part's
steps up to CUDA (find, import, build, apex_loads) to ``torch.jsonl``, then forks:

* a short-lived counting child that runs the torch part's CUDA steps (``cuda``,
  ``devices``) and so learns the device count, so that this process never starts
  CUDA itself: a CUDA context does not survive ``fork``, and every GPU worker
  needs its own;
* one worker per device (the CPU at once; each CUDA device once the count is known),
  each writing its results, one JSON line per step, to a file of its own.

This process does no torch work at all before forking (an OpenMP thread pool does
not survive ``fork`` either). It supervises: a worker that dies or stops making
progress is killed and its test recorded as crashed or timed out, then a fresh
worker resumes the device at the next test, so one bad kernel costs only itself.
"""

import json
import os
import signal
import sys
import time
import warnings

MAX_RESTARTS = 3  # per device; a device that keeps crashing is given up
POLL = 0.05
QUIET_FILE = "quiet"  # the parent creates it once its other probes are done
TORCH_FILE = "torch.jsonl"  # the environment probe's torch part, written by this process and its counting child


def _steps(path):
    """(finished step -> data, the step begun last) from a JSON-lines step file."""
    data, begun = {}, ""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return data, begun
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "step" in entry:
            if entry.get("begin"):
                begun = str(entry["step"])
            else:
                data[str(entry["step"])] = entry.get("data")
    return data, begun


def _how_it_ended(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return "killed by %s" % signal.Signals(number).name
        except ValueError:
            return "killed by signal %d" % number
    return "exited with status %d" % os.WEXITSTATUS(status)


def cuda_count(probe, torch):
    """The torch part's `cuda` facts, plus how many devices get a worker (this starts CUDA, in its own child)."""
    facts = probe.torch_cuda_facts(torch)
    count = facts.get("device_count")
    facts["count"] = count if facts.get("available") and isinstance(count, int) else 0
    if not (getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)):
        facts["why"] = "torch is a CPU-only build"
    return facts


def _counted(path):
    """The `cuda` facts the counting child wrote a step ago."""
    counted = _steps(path)[0].get(FIRST_STEP)
    return counted if isinstance(counted, dict) else {}


FIRST_STEP = "device"  # a plan's first step starts the device; nothing after it runs without it


class Job:
    """One forked worker running an ordered plan of steps, restarted past a step that kills it."""

    def __init__(self, path, plan, first_timeout, step_timeout, deadline, ready=lambda: True):
        self.path, self.plan, self.ready = path, plan, ready
        self.first_timeout, self.step_timeout, self.deadline = first_timeout, step_timeout, deadline
        self.restarts = 0
        self.pid = 0
        self.started = None  # when the first worker started: a job may wait to be ready
        self.size, self.changed = -1, time.monotonic()

    def start(self):
        if self.started is None:
            self.started = time.monotonic()
        skip = set(_steps(self.path)[0])
        pid = os.fork()
        if pid == 0:  # the worker: run the plan, never return into the supervisor
            code = 0
            try:
                run_plan(self.plan(), self.path, skip)
            except BaseException:
                code = 70
            os._exit(code)
        self.pid = pid
        self.size, self.changed = -1, time.monotonic()

    def poll(self):
        """Look after the worker; True once the job is over.

        Cheap while the worker runs (a waitpid and a stat): this process shares
        the cores with the worker's threads, and parsing the step file every few
        milliseconds would slow the very kernels being timed.
        """
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        now = time.monotonic()
        size = _size(self.path)
        if size != self.size:
            self.size, self.changed = size, now
        if not pid and now - self.changed <= min(self.first_timeout, self.step_timeout) and now <= self.deadline:
            return False  # making progress, and no limit can have passed yet
        data, begun = _steps(self.path)
        running = begun if begun and begun not in data else ""
        if pid:
            first = data.get(FIRST_STEP)
            if "done" in data and isinstance(first, dict) and first.get("status") == "error":
                return self.finish("error", str(first.get("detail", "")))
            if "done" in data:
                return self.finish("ok", "")
            if not running:
                return self.finish("error", "the worker %s between steps" % _how_it_ended(status))
            return self.failed(running, "crashed", "the process was %s" % _how_it_ended(status))
        limit = self.first_timeout if running == FIRST_STEP else self.step_timeout
        if now > self.deadline:
            _kill(self.pid)
            return self.failed(running, "timeout", "the device's time ran out and the process was killed")
        if now - self.changed > limit:
            _kill(self.pid)
            return self.failed(running, "timeout", "did not finish within %.0f s and was killed" % limit)
        return False

    def failed(self, step, status, detail):
        """Record the step that killed the worker; resume after it if that still makes sense."""
        step = step or "(between steps)"
        append_step(self.path, step, {"status": status, "detail": detail, "by": "runner"})
        if step == FIRST_STEP:
            return self.finish(status, detail)
        if self.restarts >= MAX_RESTARTS or time.monotonic() > self.deadline:
            return self.finish(status, "stopped at %s (%s); %d restarts already" % (step, status, self.restarts))
        self.restarts += 1
        self.start()
        return False

    def finish(self, status, detail):
        append_step(self.path, "end", {"status": status, "detail": detail, "restarts": self.restarts,
                                       "seconds": round(time.monotonic() - self.started, 3)})
        return True


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def run_plan(plan, path, skip):
    from . import target as probe

    out = probe.StepWriter(path)
    for key, func in plan:
        if key in skip:
            continue
        out.begin(key)
        try:
            data = func()
        except Exception as exc:  # the test failed before or around its kernel
            data = {"status": "error", "detail": probe._clip("%s: %s" % (type(exc).__name__, exc), 600)}
        out.emit(key, data)
        if key == FIRST_STEP and data.get("status") == "error":
            break  # the device did not start: every test would fail the same way
    out.emit("done", True)


def append_step(path, step, data):
    """A supervisor record in a worker's step file (the worker is dead by then)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": step, "data": data}) + "\n")


def supervise(jobs, on_done):
    """Poll every job until all are over; ``on_done(job)`` returns jobs to add."""
    waiting, active = list(jobs), []
    while waiting or active:
        for job in [j for j in waiting if j.ready()]:
            waiting.remove(job)
            job.start()
            active.append(job)
        for job in list(active):
            if job.poll():
                active.remove(job)
                for extra in on_done(job):
                    extra.start()
                    active.append(extra)
        time.sleep(POLL)


def main(argv):
    out_dir, mode, timeout = argv[0], argv[1], float(argv[2])
    from . import kernel_suite as suite, target as probe

    out = probe.StepWriter(os.path.join(out_dir, "runner.jsonl"))
    # This process is also the environment probe's torch part: one `import torch` serves both.
    torch_out = probe.StepWriter(os.path.join(out_dir, TORCH_FILE))
    out.begin("import")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch, why = probe.import_torch(torch_out)
    if torch is None:  # missing, broken or OneFlow's: facts for the torch part, not a failure of it
        torch_out.emit("done", True)
        out.emit("import", {"ok": False, "error": why})
        out.emit("done", True)
        return
    out.emit("import", {"ok": True, "version": str(getattr(torch, "__version__", ""))})
    probe.torch_before_cuda(torch_out, torch, timeout)
    torch_out.emit("done", True)  # the rest of the torch part runs in the counting child below
    # Python 3.12+ warns that fork() in a threaded process may deadlock; we fork
    # before any torch work, when the only threads are idle ones torch started.
    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")

    deadline = time.monotonic() + 2 * timeout
    step_timeout = max(2.0, timeout / 4)

    quiet_path, quiet_by = os.path.join(out_dir, QUIET_FILE), time.monotonic() + timeout

    def quiet():
        # The CPU kernels are timed on the cores the other probes use: wait until
        # the parent says they are done (not forever). CUDA events need no wait.
        return os.path.exists(quiet_path) or time.monotonic() > quiet_by

    def device_job(index, name):
        path = os.path.join(out_dir, "device-%d.jsonl" % index)
        ready = quiet if name == "cpu" else (lambda: True)
        return Job(path, lambda: suite.tests(torch, name, mode), timeout, step_timeout, deadline, ready)

    devices = ["cpu"]
    count_path = os.path.join(out_dir, "count.jsonl")
    count_job = Job(count_path, lambda: [(FIRST_STEP, lambda: cuda_count(probe, torch)),
                                         ("devices", lambda: probe.torch_devices_step(torch, _counted(count_path)))],
                    timeout, timeout, deadline)

    def after(job):
        if job is not count_job:
            return []
        counted = _steps(count_path)[0].get(FIRST_STEP)
        counted = counted if isinstance(counted, dict) else {}
        out.emit("cuda", counted)
        number = counted.get("count") if isinstance(counted.get("count"), int) else 0
        names = ["cuda:%d" % i for i in range(number)]
        devices.extend(names)
        out.emit("devices", devices)
        return [device_job(i + 1, name) for i, name in enumerate(names)]

    out.emit("devices", devices)
    supervise([device_job(0, "cpu"), count_job], after)
    out.emit("done", True)
