"""A daemon the target's start-up code leaves running does not outlive ``mpdoctor check``, and nothing else is touched.

The target is a real throwaway venv whose ``sitecustomize`` double-forks a ``setsid`` ``sleep 300`` whenever its
interpreter starts (each probe starts one), recording the daemon's pid: out of the probe's process group, it escaped
the group's kill and was still running after mpdoctor exited. The CLI adopts such orphans (a child subreaper, Linux)
and stops them; library use (``import mpdoctor``) and the user's own program (``run_attached``) adopt nothing. Every
daemon a test made is killed at its end, whatever happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")

# Run at every start of the target's interpreter: fork; the child leaves the session and forks the daemon, which
# writes its pid beside this file and becomes `sleep 300`; the first child exits at once, orphaning it.
SITECUSTOMIZE = """\
import os
_pids = os.path.join(os.path.dirname(os.path.abspath(__file__)), "daemon-pids")
_first = os.fork()
if _first == 0:
    os.setsid()
    if os.fork() == 0:
        with open(_pids, "a") as f:
            f.write("%d\\n" % os.getpid())
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.waitpid(_first, 0)
"""
DAEMON = b"sleep\x00300\x00"  # a daemon's /proc/PID/cmdline

# mpdoctor used as a library, or running the user's program: the subreaper state, what was re-parented to this
# process, and what a sweep stopped, after a run_child or a run_attached of the target.
LIBRARY = """\
import ctypes, json, sys
import mpdoctor
from mpdoctor.probes import child, orphans
if sys.argv[2] == "attached":
    orphans.adopt()
    child.run_attached([sys.argv[1], "-c", "pass"])
else:
    child.run_child([sys.argv[1], "-c", "pass"], 60)
adopted = orphans.adopted(())
stopped = child.sweep_orphans()
state = ctypes.c_int(-1)
ctypes.CDLL(None).prctl(37, ctypes.byref(state), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
print(json.dumps({"subreaper": state.value, "adopted": len(adopted), "stopped": len(stopped)}))
"""


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _is_daemon(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == DAEMON
    except OSError:  # gone (a zombie's cmdline is empty)
        return False


class Daemons:
    """The daemons a target's sitecustomize started (its pid file), and their cleanup."""

    def __init__(self, venv: Path) -> None:
        self.file = next((venv / "lib").glob("python3*/site-packages")) / "daemon-pids"  # found without running it

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in self.file.read_text().split()]
        except OSError:
            return []

    def running(self) -> list[int]:
        return [pid for pid in self.pids() if _is_daemon(pid)]

    def kill(self) -> None:
        for pid in self.running():
            os.kill(pid, signal.SIGKILL)
        self.file.unlink(missing_ok=True)


def daemons_of(venv: Path):
    found = Daemons(venv)
    found.kill()  # none from before
    try:
        yield found
    finally:
        found.kill()


@pytest.fixture(scope="module")
def target(fake_venv) -> Path:
    """The venv whose every interpreter start leaves a daemon."""
    return fake_venv("starts-a-daemon", {"sitecustomize.py": SITECUSTOMIZE})


@pytest.fixture
def daemons(target):
    yield from daemons_of(target)


def check(python: Path, cwd: Path, *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "mpdoctor", "check", "--python", str(python), "--no-kernels", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=cwd)


def the_note(stderr: str) -> str:
    notes = [line for line in stderr.splitlines() if line.startswith("mpdoctor: note: stopped ")]
    assert len(notes) == 1, stderr
    return notes[0]


def test_a_daemon_the_targets_start_up_code_leaves_is_stopped_and_named(target, daemons, tmp_path):
    # A bystander in a session of its own, started by this test and not by mpdoctor: it must survive the check.
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        proc = check(target / "bin" / "python", tmp_path, "--format", "json")
        out, err = proc.communicate(timeout=120)
        report = json.loads(out)  # the report is whole
        assert report["snapshot"]["environment"]["probe"]["status"] == "ok"
        started = daemons.pids()
        assert len(started) >= 2, "each probe of the target starts a daemon: the premise failed"
        assert daemons.running() == []
        note = the_note(err)
        assert note.startswith(f"mpdoctor: note: stopped {len(started)} processes left running by the interpreters")
        for pid in started:
            assert f"pid {pid} `sleep 300` (SIGTERM)" in note
        assert bystander.poll() is None  # not mpdoctor's: untouched
    finally:
        bystander.kill()
        bystander.wait()


def test_the_daemons_are_stopped_when_mpdoctor_is_stopped_mid_check(fake_venv, tmp_path):
    """SIGTERM while ``import torch`` hangs: every child's group is killed and mpdoctor exits 143; the daemons that
    left the groups are stopped on the way out, and named."""
    venv = fake_venv(
        "starts-a-daemon-torch-hangs",
        {"sitecustomize.py": SITECUSTOMIZE, "torch/__init__.py": "import time\ntime.sleep(120)\n"},
    )
    for daemons in daemons_of(venv):
        proc = check(venv / "bin" / "python", tmp_path)
        try:
            end = time.monotonic() + 60
            while len(daemons.pids()) < 2 and time.monotonic() < end:  # the env probe and the torch part both run
                time.sleep(0.05)
            time.sleep(0.3)  # into the hanging import
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert len(daemons.pids()) >= 2 and daemons.running() == []
        for pid in daemons.pids():
            assert f"pid {pid} `sleep 300`" in the_note(err)


def library(venv: Path, how: str, tmp_path: Path) -> dict:
    """LIBRARY's answer. Its output goes to files, not pipes: the attached program's daemon inherits them, and a
    pipe would not end before the daemon does."""
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        command = [sys.executable, "-c", LIBRARY, str(venv / "bin" / "python"), how]
        done = subprocess.run(command, stdout=stdout, stderr=stderr, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, err.read_text()
    return json.loads(out.read_text())


def test_library_use_adopts_nothing(target, daemons, tmp_path):
    """``import mpdoctor`` in a user's program leaves its process as it was: no subreaper, nothing re-parented to
    it, nothing swept; the daemon a child left goes where it would without mpdoctor."""
    assert library(target, "child", tmp_path) == {"subreaper": 0, "adopted": 0, "stopped": 0}
    assert len(daemons.running()) == 1


def test_the_users_own_program_keeps_what_it_starts(target, daemons, tmp_path):
    """Under ``run_attached`` (``mpdoctor numerics``) the CLI adopts nothing: the daemon the user's program starts
    is left running, as under ``python train.py``; adoption is back on afterwards."""
    assert library(target, "attached", tmp_path) == {"subreaper": 1, "adopted": 0, "stopped": 0}
    assert len(daemons.running()) == 1
