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

This process must never touch CUDA, nor anything that marks it as having done so:
real torch refuses CUDA in every child forked after ``torch.cuda.is_available()``,
``get_arch_list()``, ``backends.cudnn.version()`` or ``_C._cuda_getDeviceCount()``
("Cannot re-initialize CUDA in forked subprocess", measured on an H200). So it reads
only the CUDA-free build facts (``target.torch_build_facts``); everything that touches
CUDA, the cuDNN version and arch list included, runs in the counting child, which forks
nothing. Code of the target's that runs before this module (a ``sitecustomize``, a
``.pth`` file, a torch plugin loaded by ``import torch``) may still call
``torch.cuda.is_available()``: the host starts this process with
``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (:func:`runner_environment`), under which that call
counts through NVML and poisons nothing (the same H200 table), and each forked child
puts the user's own value back (:func:`users_view`) before it runs a step, so the facts
it reports are what the user's code sees. Nor does it do torch work before forking (an OpenMP thread pool does not
survive ``fork`` either). It supervises them (``supervise.py``): a worker that
dies or stops making progress is killed and its test recorded as crashed or timed
out, then a fresh worker resumes the device at the next test, so one bad kernel
costs only itself. File and step names are ``steps.py``'s.
"""

import os
import time
import warnings

from . import steps, supervise

MAX_RESTARTS = 3  # per device; a device that keeps crashing is given up
WORDING = {"deadline": "the device's time ran out and the process was killed"}
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
# The user's own NVML_CHECK while the runner runs with its own: "=" and the value, or "unset".
USERS_NVML_CHECK = "MPDOCTOR_USERS_NVML_CHECK"
_users = []  # this process's record of the user's value, taken from USERS_NVML_CHECK at start: [None] when unset


def runner_environment(env=None):
    """The runner's environment (called by the host): ``env`` (None: the host's own) with ``NVML_CHECK=1``.

    Real torch's ``is_available()`` then counts devices through NVML and marks no fork as bad
    (the H200 table, ``tests/test_fork_rules.py``), so start-up code of the target's that calls it
    cannot cost the workers their GPUs. Only this process runs so: the user's own value goes along
    as ``USERS_NVML_CHECK``, for :func:`users_view` to put back in every child.
    """
    out = dict(os.environ if env is None else env)
    given = out.get(NVML_CHECK)
    out[USERS_NVML_CHECK] = "unset" if given is None else "=" + given
    out[NVML_CHECK] = "1"
    return out


def _take_users_value():
    """Remember the user's NVML_CHECK (as the host recorded it) and drop the record from this process's environment.

    Started by hand (no record), the runner sets NVML_CHECK itself from here on, which still covers a torch
    plugin that ``import torch`` loads; the user's value is what the variable was.
    """
    recorded = os.environ.pop(USERS_NVML_CHECK, None)
    if recorded is None:
        recorded = "unset" if NVML_CHECK not in os.environ else "=" + os.environ[NVML_CHECK]
        os.environ[NVML_CHECK] = "1"
    _users[:] = [None if recorded == "unset" else recorded[1:]]


def users_view():
    """In a forked child (it forks no CUDA worker after this): the user's own NVML_CHECK, as their code has it."""
    if not _users:
        return
    if _users[0] is None:
        os.environ.pop(NVML_CHECK, None)
    else:
        os.environ[NVML_CHECK] = _users[0]


def cuda_count(probe, torch):
    """The torch part's `cuda` facts, plus how many devices get a worker (this starts CUDA, in its own child)."""
    facts = probe.torch_cuda_facts(torch)
    count = facts.get("device_count")
    facts["count"] = count if facts.get("available") and isinstance(count, int) else 0
    if not (getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)):
        facts["why"] = "torch is a CPU-only build"
    return facts


def _counted(path):
    """The `cuda` facts the counting child wrote (a step ago, or before it ended)."""
    counted = supervise.read_steps(path)[0].get(steps.CUDA)
    return counted if isinstance(counted, dict) else {}


class Job(supervise.Job):
    """A device's worker, or the counting child: its first step starts the device (see supervise.Job).

    A crash or hang in the first step ends the job; one in a later step costs that
    step, up to MAX_RESTARTS times.
    """

    def __init__(self, path, plan, first_timeout, step_timeout, deadline, ready=None, first=steps.DEVICE):
        def in_users_view():  # called in the forked worker (supervise.Job), before its first step
            users_view()
            return plan()

        supervise.Job.__init__(
            self,
            path,
            in_users_view,
            step_timeout,
            deadline,
            first=first,
            first_limit=first_timeout,
            max_restarts=MAX_RESTARTS,
            ready=ready,
            wording=WORDING,
        )


def main(argv):
    """argv: the output directory, the mode (quick, full), the limits as JSON, then switches (``steps.NO_CPU``,
    ``steps.NAMES``).

    The limits are the host's ``Budget.runner_limits()``, in seconds: ``apex_loads``
    and ``apex_load_each`` (the torch part's apex extension imports, all and one),
    ``cuda_count`` (each step of the counting child), ``device_start`` (a device's first step),
    ``kernel_step`` (a test without progress), ``device_run`` (each device's whole
    run, from here on) and ``quiet_wait`` (the CPU worker's wait for the host).
    They are used as given: this process derives none of them.
    """
    import json

    from . import kernel_suite as suite, target as probe

    _take_users_value()  # before `import torch`, which may load a plugin that calls is_available()
    out_dir, mode, limits = argv[0], argv[1], json.loads(argv[2])
    cpu = steps.NO_CPU not in argv[3:]  # a fleet rank times only its own GPU: its node's CPU is timed once
    # What the caller calls the CUDA devices this process sees, in order (steps.NAMES); None: cuda:0, cuda:1...
    named = [arg[len(steps.NAMES) :].split(",") for arg in argv[3:] if arg.startswith(steps.NAMES)]
    labels = named[-1] if named else None

    out = probe.StepWriter(os.path.join(out_dir, steps.RUNNER_FILE))
    # This process is also the environment probe's torch part: one `import torch` serves both.
    torch_out = probe.StepWriter(os.path.join(out_dir, steps.TORCH_FILE))
    out.begin(steps.IMPORT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch, why = probe.import_torch(torch_out)
    if torch is None:  # missing, broken or OneFlow's: facts for the torch part, not a failure of it
        torch_out.emit(steps.DONE, True)
        out.emit(steps.IMPORT, {"ok": False, "error": why})
        out.emit(steps.DONE, True)
        return
    out.emit(steps.IMPORT, {"ok": True, "version": str(getattr(torch, "__version__", ""))})
    probe.torch_before_cuda(torch_out, torch, limits["apex_loads"], limits["apex_load_each"])
    torch_out.emit(steps.DONE, True)  # the rest of the torch part runs in the counting child below
    # Python 3.12+ warns that fork() in a threaded process may deadlock; we fork
    # before any torch work, when the only threads are idle ones torch started.
    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")

    deadline = time.monotonic() + limits["device_run"]
    quiet_path, quiet_by = os.path.join(out_dir, steps.QUIET_FILE), time.monotonic() + limits["quiet_wait"]

    def quiet():
        # The CPU kernels are timed on the cores the other probes use: wait until
        # the parent says they are done (not forever). CUDA events need no wait.
        return os.path.exists(quiet_path) or time.monotonic() > quiet_by

    def device_job(index, name):
        """The worker of torch's device ``name`` ("cpu", "cuda:0"), whose results go to step file ``index``."""
        path = os.path.join(out_dir, steps.DEVICE_FILE % index)
        ready = quiet if name == "cpu" else (lambda: True)
        return Job(
            path, lambda: suite.plan(torch, name, mode), limits["device_start"], limits["kernel_step"], deadline, ready
        )

    devices = ["cpu"] if cpu else []  # a device's step file is numbered by its place in this list
    count_path = os.path.join(out_dir, steps.COUNT_FILE)
    count_job = Job(
        count_path,
        lambda: [
            (steps.CUDA, lambda: cuda_count(probe, torch)),
            (steps.DEVICES, lambda: probe.torch_devices_step(torch, _counted(count_path))),
        ],
        limits["cuda_count"],
        limits["cuda_count"],
        deadline,
        first=steps.CUDA,
    )

    def after(job):
        if job is not count_job:
            return []
        counted = _counted(count_path)
        out.emit(steps.CUDA, counted)
        number = counted.get("count") if isinstance(counted.get("count"), int) else 0
        ordinals = ["cuda:%d" % i for i in range(number)]  # as torch in this process numbers them
        names = ordinals if labels is None else labels[:number]  # as the caller does: the DEVICES step says so
        first = len(devices)
        devices.extend(names)
        out.emit(steps.DEVICES, devices)
        return [device_job(first + i, ordinals[i]) for i in range(len(names))]

    out.emit(steps.DEVICES, devices)
    supervise.run(([device_job(0, "cpu")] if cpu else []) + [count_job], after)
    out.emit(steps.DONE, True)
