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
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Optional

from mpdoctor import portable
from mpdoctor.portable import limits
from mpdoctor.portable.redact import redact_text
from mpdoctor.probes import remote
from mpdoctor.probes.remote.supervise import seconds_text  # noqa: F401  (one wording of limits, both sides)

STDERR_TAIL = 3000
MAX_OUTPUT = limits.CHILD_KEPT  # of a child's stdout or stderr, the last this many bytes are kept: it may print forever
WATCH_EVERY = 0.01  # s: how often a watch runs; it reads step files, so a step's end is seen within 10 ms
SPOOL_EVERY = 0.05  # s: how often a child's output files are measured (and cut past limits.CHILD_SPOOL)
REAP_WAIT = 5.0  # s: how long a child killed with SIGKILL is waited for (one stuck in the kernel may never end)

# Loads mpdoctor/portable/ and then mpdoctor/probes/remote/ in the target interpreter as two private packages,
# `_mpdoctor_portable` and `_mpdoctor_remote`, by path (their __init__.py files are sys.argv[1] and [2]: see
# package_inits): neither the target's sys.path nor another installed mpdoctor can interfere, and their modules
# import each other relatively (remote reaches portable through one bridge, remote/_portable.py). Tests that drive
# remote modules by hand in another interpreter start their code with this too.
LOAD_PACKAGES = """\
import importlib, importlib.util, os, sys
for name, init in (("_mpdoctor_portable", sys.argv[1]), ("_mpdoctor_remote", sys.argv[2])):
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[os.path.dirname(init)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
"""

# Runs ``_mpdoctor_remote.<sys.argv[3]>.main(sys.argv[4:])``. Kept to syntax that old interpreters parse, so a
# Python 2 fails with a readable error.
BOOTSTRAP = (
    """\
import sys
if sys.version_info < (3, 8):
    sys.stderr.write("Python %d.%d is too old: mpdoctor can diagnose Python 3.8 or newer\\n" % sys.version_info[:2])
    sys.exit(3)
if sys.path and sys.path[0] == "":
    del sys.path[0]  # `-c` put the working directory first; a training script would not
import os
if "MPDOCTOR_PYTHONPATH" in os.environ:  # run_child left out the entries naming the working directory: see child_env
    os.environ["PYTHONPATH"] = os.environ.pop("MPDOCTOR_PYTHONPATH")  # the fact the probe reports is the user's
"""
    + LOAD_PACKAGES
    + """\
importlib.import_module("_mpdoctor_remote." + sys.argv[3]).main(sys.argv[4:])
# Every result is in a step file, flushed line by line, or on stdout: flush that and end here. A normal exit
# would first collect every object torch created (a third of a second after `import torch`) for nobody.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""
)


# Runs ``<sys.argv[2]>.main(sys.argv[3:])`` of this very mpdoctor (its package's parent is sys.argv[1]) in
# mpdoctor's own interpreter, exiting with what main returns. Not `python -m`, which puts the working directory
# first on sys.path, so that a `shutil.py` or `json.py` where the job is launched would run inside the child; and
# not `-I` (isolated mode), which would also drop PYTHONPATH and the user's site-packages, where torch (which the
# store child imports) or mpdoctor itself may be installed.
OWN_BOOTSTRAP = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]  # `-c` put the working directory first
sys.path.insert(0, sys.argv[1])  # this mpdoctor, ahead of any other on the path
import importlib
sys.exit(importlib.import_module(sys.argv[2]).main(sys.argv[3:]))
"""


def own_argv(module: str, *args: str) -> list[str]:
    """The command that runs ``<module>.main(args)`` (``mpdoctor.fleet.store_child``) in mpdoctor's own interpreter.

    The module comes from this very mpdoctor, and nothing from the working directory runs first (OWN_BOOTSTRAP).
    """
    # mpdoctor/portable/__init__.py -> the directory holding the mpdoctor package
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(portable.__file__))))
    return [sys.executable, "-c", OWN_BOOTSTRAP, package_parent, module, *args]


def child_env(env: Optional[Mapping[str, str]], cwd: Optional[str] = None) -> Optional[dict]:
    """``env`` (None: this process's) for a child, without the PYTHONPATH entries that name its working directory.

    Such an entry (``.``, an empty one, ``./`` or the directory's own path) puts the directory's files ahead of
    the standard library in every Python the child starts, before any line of mpdoctor's runs (``sitecustomize``
    is imported at startup): a ``shutil.py``, ``json.py`` or ``torch/`` where the job is launched would run
    inside it. Every other entry is kept, in its order, subdirectories of the working directory included: a
    cluster's module system or a hand-built torch is often found through PYTHONPATH, and so is OneFlow's
    ``mock_torch`` in a ``./.venv``; the target interpreter must import the torch the job imports. The user's
    value goes along as MPDOCTOR_PYTHONPATH, which BOOTSTRAP puts back, so the environment the probe reports is
    the user's. Returns None (inherit unchanged) when ``env`` is None and nothing needs to change.
    """
    source = os.environ if env is None else env
    value = source.get("PYTHONPATH")
    try:
        here = os.path.realpath(cwd or os.getcwd())
    except OSError:  # the working directory was removed: no file in it can be imported either
        return None if env is None else dict(env)
    kept = [] if value is None else [entry for entry in value.split(os.pathsep) if not _names(entry, here)]
    if value is None or os.pathsep.join(kept) == value:
        return None if env is None else dict(env)
    result = dict(source)
    result["MPDOCTOR_PYTHONPATH"] = value
    if kept:
        result["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del result["PYTHONPATH"]
    return result


def _names(entry: str, directory: str) -> bool:
    """Whether the path entry ``entry`` (a relative one, or the empty one, taken from ``directory``) is it."""
    return os.path.realpath(os.path.join(directory, entry)) == directory


def package_inits() -> list[str]:
    """The two __init__.py files LOAD_PACKAGES takes, in its order: mpdoctor/portable's, mpdoctor/probes/remote's."""
    return [portable.__file__, remote.__file__]


def remote_argv(python: str, module: str, *args: str) -> list[str]:
    """The command that runs ``mpdoctor.probes.remote.<module>.main(args)`` in the interpreter ``python``."""
    return [python, "-c", BOOTSTRAP, *package_inits(), module, *args]


@dataclass
class ChildResult:
    exit_code: Optional[int]  # None when it could not start or was killed at the timeout
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    start_error: str = ""  # why the program could not be started at all
    limit: Optional[float] = None  # when timed out: the limit it overran (None: say how long it ran)
    stdout_cut: int = 0  # bytes of its stdout dropped (at least): it wrote more than MAX_OUTPUT
    stderr_cut: int = 0

    @property
    def cut_note(self) -> str:
        """What was dropped of its output, in words ("" when nothing was)."""
        cut = [f"{_size(n)} of {name}" for name, n in (("stdout", self.stdout_cut), ("stderr", self.stderr_cut)) if n]
        if not cut:
            return ""
        return f"its output was cut: {' and '.join(cut)} dropped, the last {_size(MAX_OUTPUT)} of each kept"

    @property
    def signal_name(self) -> str:
        if self.exit_code is None or self.exit_code >= 0:
            return ""
        try:
            return signal.Signals(-self.exit_code).name
        except ValueError:
            return f"signal {-self.exit_code}"

    @property
    def stderr_tail(self) -> str:
        text = redact_text(self.stderr.strip())
        text = text if len(text) <= STDERR_TAIL else "..." + text[-STDERR_TAIL:]
        return f"[{self.cut_note}] {text}" if self.stderr_cut else text

    @property
    def stderr_last_line(self) -> str:
        """The last non-empty line of stderr (redacted): usually the error that ended it."""
        lines = [line.strip() for line in self.stderr.strip().splitlines() if line.strip()]
        return redact_text(lines[-1]) if lines else ""

    def describe(self) -> str:
        """How the child ended, in words (and what of its output was cut, when some was)."""
        if self.start_error:
            return self.start_error
        if self.timed_out:
            how = f"did not finish within {seconds_text(self.limit or self.seconds)} s and was killed"
        elif self.signal_name:
            how = f"was killed by {self.signal_name}"
        else:
            how = f"exited with status {self.exit_code}"
        return f"{how} ({self.cut_note})" if self.cut_note else how


def _size(count: int) -> str:
    """A byte count as people read it: 512 bytes, 3.2 MB, 16 MiB (a power of two: the bound itself)."""
    if count and count % (1 << 20) == 0:
        return f"{count >> 20} MiB"
    return f"{count} bytes" if count < 10_000 else f"{count / 1e6:.1f} MB"


class _Spool:
    """A child's stdout or stderr file (opened to append: the child writes at its end, wherever that is).

    Measured while the child runs (``trim``): once past ``limits.CHILD_SPOOL`` bytes, its last MAX_OUTPUT bytes
    are kept aside and the file is emptied, so a child that floods its output fills neither the temporary
    directory nor memory. ``text`` is the last MAX_OUTPUT bytes of all it wrote; ``cut`` how many were dropped.
    """

    def __init__(self, handle) -> None:
        self.handle, self.kept, self.cut = handle, b"", 0
        fd = handle.fileno()  # O_APPEND on the open file the child shares: after a cut it writes from 0 again
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)

    def trim(self) -> None:
        fd = self.handle.fileno()
        size = os.fstat(fd).st_size
        if size <= limits.CHILD_SPOOL:
            return
        tail = os.pread(fd, MAX_OUTPUT, size - MAX_OUTPUT)
        os.ftruncate(fd, 0)  # what it writes between the read and here is dropped too, uncounted ("at least")
        self.cut += len(self.kept) + size - len(tail)
        self.kept = tail

    def text(self) -> str:
        fd = self.handle.fileno()
        size = os.fstat(fd).st_size
        rest = os.pread(fd, MAX_OUTPUT, max(0, size - MAX_OUTPUT))
        whole = self.kept + rest
        self.cut += max(0, size - len(rest)) + max(0, len(whole) - MAX_OUTPUT)
        return whole[-MAX_OUTPUT:].decode("utf-8", "replace")


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


def live_children() -> list[int]:
    """The pids of the children running now (each leads its own process group)."""
    with _lock:
        return list(_live)


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
    start = time.monotonic()
    env = child_env(env, cwd)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _raise_if_stopped()
        spools = (_Spool(out), _Spool(err))  # appended to, and cut when too large
        _local.starting = True  # a signal now is raised below, once the child is registered
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


def temp_problem() -> str:
    """Why no temporary file can be made here, in words for the user, or "" when one can.

    Every child's output goes to temporary files, so without a writable temporary
    directory nothing can be probed; saying so up front beats a traceback later.
    """
    try:
        with tempfile.TemporaryFile():
            pass
    except OSError as exc:
        where = tempfile.tempdir or os.environ.get("TMPDIR") or "/tmp"
        return (
            f"no writable temporary directory ({where}: {exc.strerror or exc}); "
            "set TMPDIR to a directory you can write to"
        )
    return ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
