"""``mpdoctor check`` in a real terminal emulator (tmux) at 80 and 120 columns: progress shows, no word is split.

tmux is the terminal here: it interprets every byte mpdoctor writes (the live display's
cursor movements, the report's colours) and ``capture-pane`` returns the screen as a
user would see it, so what is asserted is what a screenshot would show.

"Split" is concrete: two consecutive screen lines where the first ends with a letter
and the second begins with one, and the two halves joined make a token that appears
whole in the same report rendered wide (``--format text`` to a pipe at COLUMNS=400).
A word wrapped onto the next line at a space never joins into such a token.

The diagnosed interpreter is a real wrapper script that waits for the test's "go"
before it execs the venv's python, so the check is busy for as long as the captures
need, with no assumption about how long anything takes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from mpdoctor.render.progress import SPINNER

MPDOCTOR = Path(sys.executable).parent / "mpdoctor"  # the venv's console script, as a user runs it
pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
    pytest.mark.skipif(not MPDOCTOR.exists(), reason=f"no console script {MPDOCTOR}: pip install -e ."),
]
WAIT = 120  # seconds; running out is a failure, never a pass
SPINNER_LINE = re.compile("^[" + SPINNER + r"] +\S", re.M)
ROWS = 60


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
    env.pop("TMUX", None)  # not a nested session of whoever runs the tests
    return env


class Tmux:
    """A private tmux server (its own socket) with one detached session of ``columns`` columns."""

    def __init__(self, columns: int, script: Path) -> None:
        self.socket = f"mpdoctor-test-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-s", "t", "-x", str(columns), "-y", str(ROWS), f"sh {script}")
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")  # keep the screen after the command ends

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
            env=clean_env(),
            timeout=30,
        ).stdout

    def screen(self, history: bool = False) -> list[str]:
        lines = self.tmux("capture-pane", "-p", "-t", "t", *(["-S", "-"] if history else [])).splitlines()
        return [line for line in lines if not line.startswith("Pane is dead")]

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def splits(lines: list[str], whole: set[str]) -> list[tuple[str, str]]:
    """Consecutive lines whose last and first tokens join into a token of the wide report."""
    found = []
    for upper, lower in zip(lines, lines[1:]):
        if upper[-1:].isalpha() and lower[:1].isalpha():
            joined = upper.split()[-1] + lower.split()[0]
            if joined in whole:
                found.append((upper, lower))
    return found


def wide_report(wrapper: Path, cwd: Path) -> set[str]:
    env = {**clean_env(), "COLUMNS": "400"}
    result = subprocess.run(
        [str(MPDOCTOR), "check", "--no-kernels", "--python", str(wrapper), "--format", "text"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=WAIT * 2,
    )
    assert result.returncode in (0, 1), result.stderr
    return set(result.stdout.split())


@pytest.fixture()
def short_tmp():
    """A directory with a short path, as a user's venv has (pytest's tmp_path alone is ~60 characters)."""
    path = Path(tempfile.mkdtemp(prefix="mpd"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("columns", [80, 120])
def test_check_in_tmux_shows_progress_and_splits_no_word(short_tmp, columns):
    tmp_path = short_tmp
    gate, done = tmp_path / "go", tmp_path / "status"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "run.sh"
    script.write_text(
        f'cd "{tmp_path}"\n"{MPDOCTOR}" check --no-kernels --python "{wrapper}"\n'
        f'echo $? > "{done}.part" && mv "{done}.part" "{done}"\n'
    )
    term = Tmux(columns, script)
    try:
        captures = []
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and len([c for c in captures if SPINNER_LINE.search(c)]) < 3:
            captures.append("\n".join(term.screen()))  # the probes wait at the gate, the display runs
            time.sleep(0.2)
        shown = [c for c in captures if SPINNER_LINE.search(c)]
        assert len(shown) >= 3, f"no progress seen in {len(captures)} captures; the last: {captures[-1:]}"
        for capture in shown:
            assert all(len(line) <= columns for line in capture.splitlines())
        gate.touch()
        deadline = time.monotonic() + WAIT * 2
        while not done.exists() and time.monotonic() < deadline:
            captures.append("\n".join(term.screen()))
            time.sleep(0.1)
        assert done.exists(), f"mpdoctor check did not end; the screen: {term.screen()}"
        assert done.read_text().strip() in ("0", "1")
        final = [line.rstrip() for line in term.screen(history=True)]
    finally:
        term.kill()
    report = [line for line in final if line]
    assert any(line.startswith("mpdoctor ") for line in report), report  # the report's header is on the screen
    assert not SPINNER_LINE.search("\n".join(final)), final  # the display was erased when the check ended
    broken = splits(final, wide_report(wrapper, tmp_path))
    assert not broken, f"words split across lines at {columns} columns: {broken}"


def test_the_split_rule_finds_a_word_broken_mid_way_and_not_a_wrap_at_a_space():
    whole = {"LibraryNotFound", "NVML:", "torch"}
    assert splits(["... | NVML: LibraryNotFoun", "d"], whole) == [("... | NVML: LibraryNotFoun", "d")]
    assert splits(["... | NVML:", "LibraryNotFound"], whole) == []
    assert splits(["uses torch", "and more"], whole) == []
