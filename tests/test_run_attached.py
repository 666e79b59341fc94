"""run_attached: a user's program run on mpdoctor's terminal (``mpdoctor numerics``), with the signal rules of a shell.

A Ctrl-C reaches the program itself, which stops and reports as it would, while mpdoctor waits for it; a
SIGTERM to mpdoctor, inside stop_on_signals as every command runs, kills the program too. Real processes,
real signals: each driver runs in a session of its own, as a terminal's foreground job would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The user's program: says it started, then waits for a signal; on SIGINT it "reports" and exits 7.
PROGRAM = textwrap.dedent(
    """\
    import os, signal, sys, time
    def stop(signum, frame):
        open(sys.argv[1] + ".reported", "w").write("reported")
        sys.exit(7)
    signal.signal(signal.SIGINT, stop)
    open(sys.argv[1] + ".started", "w").write(str(os.getpid()))
    time.sleep(60)
    """
)
# mpdoctor's side: run_attached inside stop_on_signals, as the CLI runs every command.
DRIVER = textwrap.dedent(
    """\
    import sys
    from mpdoctor.probes.child import Interrupted, run_attached, stop_on_signals
    try:
        with stop_on_signals():
            code = run_attached([sys.executable, sys.argv[1], sys.argv[2]])
    except Interrupted as exc:
        print("interrupted", exc.signum, flush=True)
        sys.exit(130)
    print("status", code, flush=True)
    """
)


def _start(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "driver.py").write_text(DRIVER)
    mark = str(tmp_path / "run")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    driver = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "program.py"), mark],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # the driver leads a group, as a shell's foreground job does
    )
    started = Path(mark + ".started")
    deadline = time.monotonic() + 60  # a hang guard: the program starts in well under a second
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the program never started"
    time.sleep(0.2)  # the driver ignores SIGINT only once the program runs
    return driver, mark, int(started.read_text())


def test_a_ctrl_c_reaches_the_program_which_reports_while_mpdoctor_waits(tmp_path):
    driver, mark, _ = _start(tmp_path)
    os.killpg(driver.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
    out, _ = driver.communicate(timeout=60)
    assert Path(mark + ".reported").exists()
    assert out.strip() == "status 7" and driver.returncode == 0


def test_a_sigterm_to_mpdoctor_kills_the_program(tmp_path):
    driver, mark, program = _start(tmp_path)
    os.kill(driver.pid, signal.SIGTERM)  # to mpdoctor alone
    out, _ = driver.communicate(timeout=60)
    assert out.strip() == f"interrupted {int(signal.SIGTERM)}" and driver.returncode == 130
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(program, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the program outlived mpdoctor")
    assert not Path(mark + ".reported").exists()  # killed, not asked
