"""Ctrl-C or SIGTERM during ``mpdoctor check`` ends it at once, and every probe child with it.

The probe children run in sessions of their own (so that a timeout can kill each
with everything it spawned), which also means a Ctrl-C at the terminal reaches
only mpdoctor: mpdoctor itself must kill them. Proven with the real CLI against
throwaway venvs whose probes hang: mpdoctor exits 130 (SIGINT) or 143 (SIGTERM),
without waiting for the children (they sleep 600 s, each probe's --timeout is 60 s),
and no process it started, or they started, is left.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import dist_info
from mpdoctor.probes.child import Interrupted, kill_children_on_error, live_children, run_child, stop_on_signals

# torch that hangs on import, with a grandchild in the probe's process group, as a real import's helpers would be.
SLEEPY_TORCH = """\
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)  # grandchild"])
time.sleep(600)
"""
GRANDCHILD = "time.sleep(600)  # grandchild"
# A hang guard, not a speed claim. What is proven is that nothing is waited out: the children would sleep 600 s
# and a probe's --timeout is 60 s. Handling the signal (kill the process groups, reap, exit) takes a fraction of
# a second on an idle machine (0.08 to 0.19 s for the CLI, measured here); 20 s leaves a loaded 2-core
# CI machine more than ten times that, and is still a third of the shortest wait it would otherwise be.
EXIT_WITHIN = 20.0
NEVER = 3 * EXIT_WITHIN  # a wait that the signal (or the error) must cut short: reaching its end fails the test


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), fields[0])
    return table


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (by PPid chains: they run in sessions of their own)."""
    table, found, parents = _processes(), [], [pid]
    while parents:
        parent = parents.pop()
        for child, (ppid, state) in table.items():
            if ppid == parent and state != "Z":
                found.append(child)
                parents.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def interrupt_check(python: Path, signum: int, ready, *extra: str) -> tuple[int, float, list[int]]:
    """Run ``mpdoctor check --python python``; once ``ready(descendant cmdlines)``, send ``signum``.

    Returns mpdoctor's exit status, how long after the signal it exited, and the
    descendants recorded just before the signal, each checked dead by then.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpdoctor", "check", "--python", str(python), "--timeout", "60", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    recorded: list[int] = []
    try:
        give_up = time.monotonic() + 60
        while not ready([cmdline(pid) for pid in descendants(proc.pid)]):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < give_up, "the probe children never showed up"
            time.sleep(0.05)
        recorded = descendants(proc.pid)
        sent = time.monotonic()
        os.kill(proc.pid, signum)
        try:
            code = proc.wait(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"mpdoctor still running {EXIT_WITHIN} s after {signal.Signals(signum).name}")
        exited = time.monotonic() - sent
        while any(alive(pid) for pid in recorded) and time.monotonic() < sent + EXIT_WITHIN:
            time.sleep(0.02)
        left = [(pid, cmdline(pid)) for pid in recorded if alive(pid)]
        assert not left, f"still alive {EXIT_WITHIN} s after the signal: {left}"
        assert "Traceback" not in proc.stderr.read().decode()
        return code, exited, recorded
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in recorded:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()


def test_ctrl_c_while_torch_hangs_kills_every_probe_child_and_exits_130(fake_venv):
    venv = fake_venv("torch-sleeps-with-grandchild", {"torch/__init__.py": SLEEPY_TORCH, **dist_info("torch", "2.3.0")})

    def torch_is_importing(cmdlines):  # the kernel runner, and the grandchild its `import torch` started
        return any("kernel_runner" in c for c in cmdlines) and any(GRANDCHILD in c for c in cmdlines)

    code, exited, recorded = interrupt_check(fake_venv.python(venv), signal.SIGINT, torch_is_importing)
    assert code == 130  # the signal's status, within the guard (interrupt_check): no probe's end was waited for
    assert len(recorded) >= 2


def test_sigterm_while_every_probe_hangs_at_start_exits_143(fake_venv):
    """Here the main thread is itself waiting on a child (the env part) when the signal comes."""
    venv = fake_venv("hangs-at-start", {"zz_hang.pth": "import time; time.sleep(600)\n"})
    python = str(fake_venv.python(venv))

    def env_part_and_runner_started(cmdlines):
        return sum(python in c for c in cmdlines) >= 2

    code, exited, recorded = interrupt_check(fake_venv.python(venv), signal.SIGTERM, env_part_and_runner_started)
    assert code == 143


def test_a_signal_kills_the_children_of_every_thread_and_raises_interrupted():
    """In-process: stop_on_signals turns SIGTERM into Interrupted, and the waiting threads stop too."""
    slept_through = []
    with pytest.raises(Interrupted) as caught, stop_on_signals():
        with ThreadPoolExecutor(max_workers=1) as pool:  # as in take_snapshot: its exit waits for the thread
            job = pool.submit(run_child, ["sleep", str(NEVER)], NEVER)
            while not live_children():
                time.sleep(0.01)
            pids = live_children()
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(NEVER)  # the handler raises out of this sleep: the line below is never reached
            slept_through.append(True)
    assert not slept_through
    # The thread stopped rather than report a killed child; the executor's exit did not wait out the child's sleep
    # (which would have ended it with status 0, not Interrupted).
    assert isinstance(job.exception(timeout=0), Interrupted)
    assert caught.value.exit_code == 143
    assert not any(alive(pid) for pid in pids)
    assert run_child(["true"], 5).exit_code == 0  # outside stop_on_signals, children run again


def test_an_error_while_threads_wait_on_children_kills_them():
    with ThreadPoolExecutor(max_workers=1) as pool:
        start = time.monotonic()
        with pytest.raises(RuntimeError), kill_children_on_error():
            job = pool.submit(run_child, ["sleep", str(NEVER)], NEVER)
            while not live_children():
                time.sleep(0.01)
            raise RuntimeError("the main thread's probe failed")
    # Killed, not waited out: a child that slept to its end would have exited 0 (the event); the guard, far short
    # of that sleep, keeps a regression from hanging the suite for it.
    assert job.result().signal_name == "SIGKILL"
    assert time.monotonic() - start < EXIT_WITHIN
    assert not live_children()


def test_every_host_child_goes_through_run_child():
    """Outside child.py (and the remote package, which runs in the target), mpdoctor starts no process itself."""
    root = Path(__file__).resolve().parent.parent
    forbidden = {"subprocess", "multiprocessing", "pty"}
    offenders = []
    for path in sorted((root / "mpdoctor").rglob("*.py")) + sorted((root / "checks").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("mpdoctor/probes/remote/") or rel == "mpdoctor/probes/child.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{rel}: import {n}" for n in names if n.split(".")[0] in forbidden]
            if isinstance(node, ast.Attribute) and node.attr in ("fork", "system", "popen", "spawnv", "Thread"):
                offenders.append(f"{rel}:{node.lineno}: .{node.attr}")
    assert offenders == []
