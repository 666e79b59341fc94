"""Run a child process with a hard timeout, and say in words how it ended.

Everything that can crash or hang (importing torch, CUDA initialisation, GPU
kernels) runs through :func:`run_child`. The child gets its own process group, so
a timeout kills it together with anything it spawned.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Optional

from mpdoctor.probes import remote
from mpdoctor.probes.remote.redact import redact_text

STDERR_TAIL = 3000

# Loads mpdoctor/probes/remote/ in the target interpreter as one private package,
# `_mpdoctor_remote`, by path: neither the target's sys.path nor another installed
# mpdoctor can interfere, and its modules import each other relatively. Kept to
# syntax that old interpreters parse, so a Python 2 fails with a readable error.
BOOTSTRAP = """\
import sys
if sys.version_info < (3, 8):
    sys.stderr.write("Python %d.%d is too old: mpdoctor can diagnose Python 3.8 or newer\\n" % sys.version_info[:2])
    sys.exit(3)
if sys.path and sys.path[0] == "":
    del sys.path[0]  # `-c` put the working directory first; a training script would not
import importlib, importlib.util, os
spec = importlib.util.spec_from_file_location("_mpdoctor_remote", sys.argv[1],
                                              submodule_search_locations=[os.path.dirname(sys.argv[1])])
package = importlib.util.module_from_spec(spec)
sys.modules["_mpdoctor_remote"] = package
spec.loader.exec_module(package)
importlib.import_module("_mpdoctor_remote." + sys.argv[2]).main(sys.argv[3:])
"""


def remote_argv(python: str, module: str, *args: str) -> list[str]:
    """The command that runs ``mpdoctor.probes.remote.<module>.main(args)`` in the interpreter ``python``."""
    return [python, "-c", BOOTSTRAP, remote.__file__, module, *args]


@dataclass
class ChildResult:
    exit_code: Optional[int]  # None when it could not start or was killed at the timeout
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    start_error: str = ""  # why the program could not be started at all

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
        return text if len(text) <= STDERR_TAIL else "..." + text[-STDERR_TAIL:]

    def describe(self) -> str:
        """How the child ended, in words."""
        if self.start_error:
            return self.start_error
        if self.timed_out:
            return f"did not finish within {self.seconds:.0f} s and was killed"
        if self.signal_name:
            return f"was killed by {self.signal_name}"
        return f"exited with status {self.exit_code}"


def run_child(argv: list[str], timeout: float, env: Optional[dict] = None, cwd: Optional[str] = None,
              watch: Optional[Callable[[float], bool]] = None) -> ChildResult:
    """Run ``argv``; kill its whole process group at ``timeout`` seconds.

    ``watch(elapsed)`` is called about every 50 ms while the child runs; when it
    returns True the child is abandoned (as timed out), e.g. because one of its
    steps overran a budget of its own.

    Output goes to temporary files, not pipes, and we wait for the child itself: a
    daemon it leaves behind (holding inherited pipes) must not make a finished
    probe look hung. Whatever it left in its process group is killed afterwards.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                    start_new_session=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return ChildResult(None, False, time.monotonic() - start, "", "", f"could not run {argv[0]}: {reason}")
        timed_out = _wait(proc, start, timeout, watch)
        _kill_group(proc)
        proc.wait()
        seconds = time.monotonic() - start
        return ChildResult(None if timed_out else proc.returncode, timed_out, seconds, _read(out), _read(err))


def _wait(proc: subprocess.Popen, start: float, timeout: float, watch: Optional[Callable[[float], bool]]) -> bool:
    """Wait for the child; True when it was abandoned (the timeout, or watch said so)."""
    while True:
        elapsed = time.monotonic() - start
        slice_ = timeout - elapsed if watch is None else min(0.05, timeout - elapsed)
        try:
            proc.wait(timeout=max(slice_, 0))
            return False
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - start
            if elapsed >= timeout or (watch is not None and watch(elapsed)):
                return True


def _read(handle) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
