"""Processes a probe left running after it ended: adopted by mpdoctor's CLI, found, stopped and named.

Every child :func:`mpdoctor.probes.child.run_child` starts leads a session of its own, and its whole process
group is killed when it ends. A process that left the group escapes that kill: a daemon (fork, ``setsid``,
fork), such as one a ``sitecustomize`` or a ``.pth`` file of the target starts whenever its interpreter starts,
went on running after mpdoctor exited, one for each probe that started the interpreter.

On Linux the CLI (``mpdoctor/__main__.py``: never ``import mpdoctor``, which must leave a user's program as it
is) makes its process a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, :func:`adopt`): an orphan among its
descendants is re-parented to mpdoctor instead of to init. When no child of mpdoctor is running or starting,
``run_child`` and the CLI's exit look for them (``child.sweep_orphans``, :func:`adopted`): processes whose parent
is mpdoctor, which are no child it started itself, and which are outside mpdoctor's own session (every probe
starts a new session, so what is in mpdoctor's own one is no probe's). Each gets SIGTERM, then SIGKILL after
``GRACE`` s, and is reaped (:func:`stop`); :func:`note` names them (pid, command line, redacted) for the CLI to
say so on stderr.

A process mpdoctor did not start is never touched: only its own descendants can be re-parented to it, and as
process 1 (a container's entry point, where every orphan of the namespace comes) it adopts nothing. While the
user's own program runs (``run_attached``, ``mpdoctor numerics``) it adopts nothing either
(:func:`not_adopting`): what that program leaves running is its own business, as under ``python train.py``.
Elsewhere (macOS, or a kernel or sandbox that refuses the call) nothing is adopted, nothing is swept, and
nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
GRACE = 1.0  # s: how long a process has to end after SIGTERM before it gets SIGKILL
REAP = 1.0  # s: how long one is waited for after SIGKILL (one stuck in the kernel may never end)
POLL = 0.01  # s

_adopting = False  # adopt() made this process a subreaper (and not_adopting() does not hold it off)
_lock = threading.Lock()
_stopped: list[Stopped] = []


@dataclass(frozen=True)
class Stopped:
    """One process a probe left running, which mpdoctor stopped."""

    pid: int
    command: str  # its command line, redacted and clipped
    signal: str  # the last signal it got: SIGTERM, or SIGKILL when SIGTERM did not end it
    ended: bool  # reaped; False: it outlived SIGKILL for REAP s (stuck in the kernel)


def _prctl_subreaper(on: bool) -> bool:
    """Set or clear this process's child-subreaper attribute; whether the kernel did."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # here: only a CLI run on Linux pays for it

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc to load, no prctl in it
        return False


def adopt() -> bool:
    """Make this process a child subreaper (Linux), for the CLI only; whether it is one now. Silent when refused.

    Never as process 1 (mpdoctor as a container's entry point): every orphan of the namespace comes to init,
    those of a ``docker exec`` session too, and none could be told from mpdoctor's own."""
    global _adopting
    if os.getpid() == 1:
        return False
    _adopting = _adopting or _prctl_subreaper(True)
    return _adopting


def adopting() -> bool:
    """Whether orphans of this process's descendants come to it now (:func:`adopt`)."""
    return _adopting


@contextlib.contextmanager
def not_adopting() -> Iterator[None]:
    """Within it no orphan comes to this process: for the user's own program, whose daemons are its own."""
    global _adopting
    if not _adopting:
        yield
        return
    _adopting = False
    _prctl_subreaper(False)
    try:
        yield
    finally:
        _adopting = _prctl_subreaper(True)


def _stat(pid: str) -> tuple[int, int, str] | None:
    """(parent pid, session id, state) of ``pid`` from /proc, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()  # the command name before it may hold spaces and ')'
    try:
        return int(fields[1]), int(fields[3]), fields[0].decode("ascii", "replace")
    except (IndexError, ValueError):
        return None


def adopted(exclude: Iterable[int]) -> list[int]:
    """Processes re-parented to this one: its children, less ``exclude`` (those it started itself) and those
    in its own session (no probe's: each starts a session of its own)."""
    me, excluded = os.getpid(), set(exclude)
    try:
        session, names = os.getsid(0), os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) in excluded:
            continue
        facts = _stat(name)
        if facts is not None and facts[0] == me and facts[1] != session:
            found.append(int(name))
    return found


def _command(pid: int) -> str:
    """``pid``'s command line, redacted and clipped (its name from /proc/PID/stat when it has none)."""
    from mpdoctor.portable import limits
    from mpdoctor.portable.redact import redact_clip  # here: the CLI's start-up does not pay for it

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4096)
    except OSError:
        raw = b""
    text = " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)
    if not text:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                data = handle.read()
            text = "[" + data.partition(b"(")[2].rpartition(b")")[0].decode("utf-8", "replace") + "]"
        except OSError:
            text = "?"
    return redact_clip(text, limits.PROCESS_COMMAND)


def _reaped(pid: int) -> bool:
    """Reap ``pid`` if it has ended; whether it has (a pid that is no child of ours any more counts as ended)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def _wait(pids: list[int], seconds: float) -> list[int]:
    """Reap those of ``pids`` that end within ``seconds``; the ones still running."""
    left = [pid for pid in pids if not _reaped(pid)]
    end = time.monotonic() + seconds
    while left and time.monotonic() < end:
        time.sleep(POLL)
        left = [pid for pid in left if not _reaped(pid)]
    return left


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)  # an unreaped child of ours: the pid cannot have been reused
        except (ProcessLookupError, PermissionError):
            pass


def stop(pids: list[int]) -> list[Stopped]:
    """SIGTERM to each of ``pids`` (children of this process), SIGKILL to those still running ``GRACE`` s
    later, each reaped; what was stopped. One that had already ended (a zombie) is only reaped, not named."""
    running = [pid for pid in pids if not _reaped(pid)]
    commands = {pid: _command(pid) for pid in running}
    _signal(running, signal.SIGTERM)
    stubborn = _wait(running, GRACE)
    _signal(stubborn, signal.SIGKILL)
    stuck = set(_wait(stubborn, REAP))
    out = [
        Stopped(pid, commands[pid], "SIGKILL" if pid in stubborn else "SIGTERM", pid not in stuck) for pid in running
    ]
    with _lock:
        _stopped.extend(out)
    return out


def stopped() -> list[Stopped]:
    """Every process stopped so far."""
    with _lock:
        return list(_stopped)


def note(processes: list[Stopped]) -> str:
    """What the CLI says about ``processes`` (on stderr, after the report), or "" when there are none."""
    if not processes:
        return ""
    shown = "; ".join(
        f"pid {p.pid} `{p.command}` ({p.signal}{'' if p.ended else ', still not gone'})" for p in processes[:5]
    )
    more = f"; and {len(processes) - 5} more" if len(processes) > 5 else ""
    return (
        f"mpdoctor: note: stopped {len(processes)} process{'es' if len(processes) != 1 else ''} left running by "
        "the interpreters it ran (a daemon started by their start-up code, such as a sitecustomize or a .pth file, "
        f"leaves the probe's process group and outlives it): {shown}{more}"
    )
