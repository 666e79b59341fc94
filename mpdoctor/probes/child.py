"""Run a child process with a hard timeout, and say in words how it ended.

Everything that can crash or hang (importing torch, CUDA initialisation, GPU
kernels, NVML, torch.load) runs through :func:`run_child`, the one host-side way
to run a child. The child gets its own process group (a new session), so a
timeout kills it together with anything it spawned.

Every running child is in a registry, so that whatever ends mpdoctor, its
children end with it. :func:`on_signal`, the SIGINT and SIGTERM handler (the
CLI's ``main`` installs it for every command; :func:`stop_on_signals` does the
same for a block of code), kills every child's process group, lets no new child
start, and raises :class:`Interrupted` in the main thread: mpdoctor exits 128 +
the signal's number. The threads that waited on children see them die and stop
too, so nothing is left to wait for.

A process that left its child's group (a daemon the target's start-up code starts
with ``setsid``) escapes the group's kill. Under the CLI, which makes mpdoctor a
child subreaper on Linux, such a process is re-parented to mpdoctor, and once no
child is running (the last of a batch ended, or mpdoctor exits) it is stopped and
named (:func:`sweep_orphans`, ``orphans.py``).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, Callable, Iterator, Optional

# How a child is started (launch.py) and what its output becomes (child_output.py) live beside this module; named
# here too, where callers and tests have always imported them.
from mpdoctor.probes import orphans
from mpdoctor.probes.child_output import MAX_OUTPUT, STDERR_TAIL, ChildResult, _Spool  # noqa: F401
from mpdoctor.probes.launch import (  # noqa: F401
    BOOTSTRAP,
    LOAD_PACKAGES,
    OWN_BOOTSTRAP,
    child_env,
    own_argv,
    package_inits,
    remote_argv,
)
from mpdoctor.probes.remote.supervise import seconds_text  # noqa: F401  (one wording of limits, both sides)

WATCH_EVERY = 0.01  # s: how often a watch runs; it reads step files, so a step's end is seen within 10 ms
SPOOL_EVERY = 0.05  # s: how often a child's output files are measured (and cut: child_output._Spool)
REAP_WAIT = 5.0  # s: how long a child killed with SIGKILL is waited for (one stuck in the kernel may never end)


class Interrupted(SystemExit):
    """SIGINT or SIGTERM arrived: every child has been killed; unwind and exit 128 + the signal's number.

    A SystemExit (exit status :attr:`exit_code`), so that neither a probe's
    ``except Exception`` nor click's own Ctrl-C handling (which would exit 1)
    stops it on its way out, and the interpreter exits with that status.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + int(signum))
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Cancelled(Exception):
    """The work these children did was given up (:func:`cancel_children`): no child starts, none is reported."""


# The registry of running children (pid -> Popen), so that a signal can kill them all.
_lock = threading.RLock()  # re-entrant: the signal handler runs in the main thread, which may hold it
_live: dict[int, subprocess.Popen] = {}
_stopped_by: Optional[int] = None  # the signal on_signal got: from then on no child starts
_local = threading.local()  # .starting: this thread is between starting a child and registering it
_cancelled = threading.Event()  # cancel_children() runs: run_child raises Cancelled instead of starting one
# Children being started now (maybe forked, not yet in _live): no orphan sweep meanwhile, one of them is no orphan.
_starting = 0
# Children killed that did not end within REAP_WAIT (stuck in the kernel): still children, never orphans.
_unreaped: dict[int, subprocess.Popen] = {}


def live_children() -> list[int]:
    """The pids of the children running now (each leads its own process group)."""
    with _lock:
        return list(_live)


def sweep_orphans() -> list[orphans.Stopped]:
    """Stop what the children that ended left running (``orphans.adopted``), when no child is running or starting
    now (one that is could still need what it started); what was stopped. Nothing unless the CLI adopts orphans.
    """
    if not orphans.adopting():
        return []
    with _lock:
        if _live or _starting:
            return []
        for pid, proc in list(_unreaped.items()):
            if proc.poll() is not None:
                del _unreaped[pid]
        exclude = set(_unreaped)
        pids = orphans.adopted(exclude)  # found under the lock: no child of ours starts meanwhile
    return orphans.stop(pids) if pids else []


def kill_children() -> None:
    """Kill the process group of every running child; their run_child calls return at once."""
    with _lock:
        procs = list(_live.values())
    for proc in procs:
        _kill_group(proc)


@contextlib.contextmanager
def cancel_children() -> Iterator[None]:
    """Within it, every running child is killed and no child starts: run_child raises :class:`Cancelled`.

    For giving up a snapshot nobody will read (``probes.early``): its threads
    stop at their next child instead of starting the next probe. Like
    :func:`kill_children`, it concerns every child: mpdoctor takes one snapshot
    at a time, and starts the next one only after this block.
    """
    _cancelled.set()
    try:
        kill_children()
        yield
    finally:
        kill_children()  # one a thread registered just as the block began
        _cancelled.clear()


@contextlib.contextmanager
def kill_children_on_error() -> Iterator[None]:
    """Around code whose threads wait on children: if it raises (Ctrl-C included), kill every child first.

    Its threads' children then die at once, so an executor's exit does not wait
    out their limits (up to ``Budget.runner``) for results nobody will read.
    Kills every running child, not only this block's: mpdoctor takes one
    snapshot at a time.
    """
    try:
        yield
    except BaseException:
        kill_children()
        raise


def on_signal(signum: int, frame: object = None) -> None:
    """The SIGINT/SIGTERM handler: kill every child's group, start no more, raise :class:`Interrupted`."""
    global _stopped_by
    with _lock:
        again, _stopped_by = _stopped_by is not None, signum
    kill_children()
    if again:  # a second Ctrl-C while unwinding: wait for nothing more
        os._exit(128 + signum)
    if getattr(_local, "starting", False):
        return  # run_child raises once the child it is starting is registered and killed
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_on_signals(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Within it, SIGINT or SIGTERM kill every child's group and raise :class:`Interrupted` in the main thread.

    From the signal on, run_child starts no child (it raises Interrupted too), and
    one waiting on a child that was killed raises Interrupted instead of returning
    its result, so the probe threads stop as soon as their child is dead. A second
    signal exits at once (``os._exit``). Outside the main thread this changes nothing.
    """
    global _stopped_by
    previous = {}
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, on_signal)
    except ValueError:  # signal handlers can only be set in the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        with _lock:
            _stopped_by = None


def _raise_if_stopped() -> None:
    stopped_by = _stopped_by
    if stopped_by is not None:
        raise Interrupted(stopped_by)
    if _cancelled.is_set():
        raise Cancelled("the snapshot was given up")


def run_child(
    argv: list[str],
    timeout: float,
    env: Optional[dict] = None,
    cwd: Optional[str] = None,
    watch: Optional[Callable[[float], Optional[float]]] = None,
) -> ChildResult:
    """Run ``argv``; kill its whole process group at ``timeout`` seconds.

    ``watch(elapsed)`` is called about every 10 ms (``WATCH_EVERY``) while the child runs; when it
    returns a number the child is abandoned (as timed out) and that number is the
    limit it overran, e.g. because one of its steps overran a budget of its own.

    Output goes to temporary files, not pipes, and we wait for the child itself: a
    daemon it leaves behind (holding inherited pipes) must not make a finished
    probe look hung. However this returns or raises, the child's whole process
    group is killed first. Within :func:`stop_on_signals`, once a signal came it
    raises :class:`Interrupted` rather than start a child or report a killed one.
    """
    global _starting
    start = time.monotonic()
    env = child_env(env, cwd)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _raise_if_stopped()
        spools = (_Spool(out), _Spool(err))  # appended to, and cut when too large
        _local.starting = True  # a signal now is raised below, once the child is registered
        with _lock:
            _starting += 1
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True
            )
            with _lock:
                _live[proc.pid] = proc
        except OSError as exc:
            _raise_if_stopped()
            reason = exc.strerror or str(exc)
            return ChildResult(None, False, time.monotonic() - start, "", "", f"could not run {argv[0]}: {reason}")
        finally:
            _local.starting = False
            with _lock:
                _starting -= 1
        try:
            _raise_if_stopped()
            limit = _wait(proc, start, timeout, watch, spools)
        finally:
            _kill_group(proc)
            try:  # bounded: a child stuck in the kernel (D state) ignores SIGKILL until it leaves it
                proc.wait(timeout=REAP_WAIT)
            except subprocess.TimeoutExpired:
                pass
            with _lock:
                _live.pop(proc.pid, None)
                if proc.returncode is None:
                    _unreaped[proc.pid] = proc
            try:
                sweep_orphans()  # a daemon that left the group escaped the kill: stopped once no child runs
            except OSError:  # /proc unreadable, say: the exit's sweep tries again, and the probe's result stands
                pass
        _raise_if_stopped()  # killed by the signal, not by its own fault: its result means nothing
        seconds = time.monotonic() - start
        timed_out = limit is not None or proc.returncode is None
        stdout, stderr = spools[0].text(), spools[1].text()
        return ChildResult(
            None if timed_out else proc.returncode,
            timed_out,
            seconds,
            stdout,
            stderr,
            limit=limit,
            stdout_cut=spools[0].cut,
            stderr_cut=spools[1].cut,
        )


def run_attached(argv: list[str], env: Optional[dict] = None, stdout: Optional[IO] = None) -> int:
    """Run a user's own program attached to this terminal, with no time limit; its exit status.

    For ``mpdoctor numerics``, which runs the user's training script under a watch: the script keeps
    mpdoctor's terminal, stdin and stderr (and stdout unless ``stdout`` is given) and its process group, as
    ``python train.py`` would, so a Ctrl-C reaches the script itself, which stops and reports as it would,
    while mpdoctor waits for it (SIGINT is ignored here for that while). It is registered like every child:
    SIGTERM, or anything that ends mpdoctor, kills it. Raises OSError when it cannot start.
    """
    _raise_if_stopped()
    with orphans.not_adopting():  # what the user's program leaves running is its own, as without mpdoctor
        return _run_attached(argv, env, stdout)


def _run_attached(argv: list[str], env: Optional[dict], stdout: Optional[IO]) -> int:
    _local.starting = True
    try:
        proc = subprocess.Popen(argv, stdout=stdout, env=env)
        with _lock:
            _live[proc.pid] = proc
    finally:
        _local.starting = False
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # after the start: the script keeps its default
    except ValueError:  # not the main thread: signals are the main thread's business
        previous = None
    try:
        _raise_if_stopped()
        return proc.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=REAP_WAIT)
        except subprocess.TimeoutExpired:
            pass
        with _lock:
            _live.pop(proc.pid, None)


def _wait(
    proc: subprocess.Popen,
    start: float,
    timeout: float,
    watch: Optional[Callable[[float], Optional[float]]],
    spools: tuple = (),
) -> Optional[float]:
    """Wait for the child; None when it ended, else the limit it overran (the timeout, or watch's).

    Its output files are measured every SPOOL_EVERY s meanwhile, and cut when too large (``_Spool``).
    """
    with _exit_waiter(proc) as ended:
        while True:
            elapsed = time.monotonic() - start
            slice_ = min(SPOOL_EVERY if watch is None else WATCH_EVERY, timeout - elapsed)
            if ended(max(slice_, 0.0)):
                return None
            for spool in spools:
                spool.trim()
            elapsed = time.monotonic() - start
            if elapsed >= timeout:
                return timeout
            overran = watch(elapsed) if watch is not None else None
            if overran is not None:
                return overran


@contextlib.contextmanager
def _exit_waiter(proc: subprocess.Popen) -> Iterator[Callable[[float], bool]]:
    """``ended(seconds)``: wait up to that long for the child to exit (and reap it); True once it has.

    Event-driven where the system allows: a pidfd (Linux 5.3+, Python 3.9+) becomes
    readable the moment the child exits, so a finished probe is seen at once rather
    than at the next tick of ``Popen.wait``'s sleep loop (up to 50 ms). Elsewhere
    (macOS, older kernels, a sandbox that refuses the call) it falls back to that loop.
    """
    pidfd = -1
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            pidfd = pidfd_open(proc.pid)
        except OSError:  # ENOSYS, EPERM under seccomp: poll instead
            pidfd = -1
    if pidfd < 0:

        def ended(seconds: float) -> bool:
            try:
                proc.wait(timeout=seconds)
                return True
            except subprocess.TimeoutExpired:
                return False

        yield ended
        return
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    try:

        def ended(seconds: float) -> bool:
            poller.poll(math.ceil(seconds * 1000))  # rounded up: 0.3 ms rounded down to 0 would spin
            return proc.poll() is not None

        yield ended
    finally:
        os.close(pidfd)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
