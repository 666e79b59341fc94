"""The live progress display: on a terminal's stderr only, never in pipes, JSON, CI, --quiet or plain mode.

The end-to-end tests run the real ``mpdoctor`` with its stderr on a pseudo-terminal
(``os.openpty``), the way a user's shell runs it. Where a test must see the display
while the command works, the diagnosed interpreter is a real wrapper script that waits
for the test to say "go" before it execs the venv's python: the command is then busy
for as long as the test needs, without any timing assumption.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest
from rich.console import Console

from helpers import fixture_path
from mpdoctor.probes.progress import ProgressBoard
from mpdoctor.render import progress as display
from mpdoctor.render.progress import ProgressView, fit, live_progress, progress_wanted

ESC = b"\x1b"
SPINNER_LINE = re.compile("[" + display.SPINNER + r"] +(\S[^\r\n\x1b]*)")
WAIT = 120  # seconds a test waits for something that must happen; a failure, not a pass, when it runs out


# --- the rule: when a display is shown ---------------------------------------------------------------------


@pytest.fixture()
def tty():
    """A real terminal (the slave end of a pty) opened as a text stream, and a second, different one."""
    opened = []

    def make():
        master, slave = os.openpty()
        stream = open(slave, "w")
        opened.extend([stream, master])
        return stream

    yield make
    for item in opened:
        item.close() if hasattr(item, "close") else os.close(item)


@pytest.fixture()
def pipe():
    read, write = os.pipe()
    stream = open(write, "w")
    yield stream
    stream.close()
    os.close(read)


PLAIN_ENV = {"TERM": "xterm-256color"}


def test_shown_on_a_terminal_stderr_with_the_report_piped(tty, pipe):
    assert progress_wanted(False, "text", stderr=tty(), stdout=pipe, environ=PLAIN_ENV)
    assert progress_wanted(False, "json", stderr=tty(), stdout=pipe, environ=PLAIN_ENV)  # JSON to a pipe: fine
    assert progress_wanted(False, "markdown", stderr=tty(), stdout=pipe, environ=PLAIN_ENV)


def test_never_with_quiet_or_stderr_not_a_terminal(tty, pipe):
    assert not progress_wanted(True, "text", stderr=tty(), stdout=pipe, environ=PLAIN_ENV)
    assert not progress_wanted(False, "text", stderr=pipe, stdout=tty(), environ=PLAIN_ENV)
    assert not progress_wanted(False, "text", stderr=io.StringIO(), stdout=pipe, environ=PLAIN_ENV)


@pytest.mark.parametrize(
    "env, shown",
    [
        ({"CI": "1"}, False),
        ({"CI": "true"}, False),
        ({"CI": "false"}, True),
        ({"CI": ""}, True),
        ({"TERM": "dumb"}, False),
        ({"NO_COLOR": "1"}, False),
        ({"NO_COLOR": ""}, True),  # no-color.org: non-empty
    ],
)
def test_ci_dumb_terminals_and_no_color_turn_it_off(tty, pipe, env, shown):
    assert progress_wanted(False, "text", stderr=tty(), stdout=pipe, environ={**PLAIN_ENV, **env}) is shown


def test_json_on_the_same_terminal_is_kept_clean_but_text_is_not_forbidden(tty):
    term = tty()
    same = open(os.dup(term.fileno()), "w")  # another stream on the very same terminal
    try:
        assert not progress_wanted(False, "json", stderr=term, stdout=same, environ=PLAIN_ENV)
        assert not progress_wanted(False, "junit", stderr=term, stdout=same, environ=PLAIN_ENV)
        assert progress_wanted(False, "text", stderr=term, stdout=same, environ=PLAIN_ENV)
        assert progress_wanted(False, "json", stderr=term, stdout=tty(), environ=PLAIN_ENV)  # another terminal
    finally:
        same.close()


def test_not_while_the_user_types_the_input_on_that_terminal(tty, pipe):
    term = tty()
    typing = open(os.dup(term.fileno()), "r")
    try:
        assert not progress_wanted(False, "text", stderr=term, stdout=pipe, stdin=typing, environ=PLAIN_ENV)
        assert progress_wanted(False, "text", stderr=term, stdout=pipe, stdin=io.StringIO(), environ=PLAIN_ENV)
    finally:
        typing.close()


# --- drawing: lines that fit ----------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


def drawn(view: ProgressView, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(view)
    return console.file.getvalue().splitlines()


def test_a_long_task_at_40_columns_is_cut_at_a_word_with_an_ellipsis_never_wrapped():
    long = (
        "importing torch from a very long site-packages directory that a conda environment put "
        "somewhere deep under the home directory of a user"
    )
    board, clock = ProgressBoard(), Clock()
    board.start("torch", long)
    board.start("kernels cpu", "float16 matmul accumulating in float32 over a long reduction", total=40, unit="tests")
    board.update("kernels cpu", completed=12)
    view = ProgressView(board, "check", clock=clock)
    clock.now += 5
    lines = drawn(view, 40)
    assert len(lines) == 2  # one line a task: nothing wrapped onto a second line
    words = set(long.split()) | set("float16 matmul accumulating in float32 over a long reduction".split())
    for line in lines:
        assert len(line) <= 40, line
        for word in line[2:].split():
            if word.endswith("…"):
                assert any(w.startswith(word[:-1]) for w in words), word
            else:
                assert word.rstrip(":") in words | {"torch", "kernels", "cpu", "12/40", "tests", "(5.0", "s)"}, word
    # the words that fit are kept whole; at 40 columns the count and the time win over the kernel's name
    assert lines[0].endswith(" importing torch… (5.0 s)") and lines[1].endswith("kernels cpu  12/40 tests (5.0 s)")


@pytest.mark.parametrize("width", [80, 40, 20, 12, 3, 1])
def test_no_line_is_ever_wider_than_the_terminal(width):
    board, clock = ProgressBoard(), Clock()
    board.start("explain", "reading /var/log/a/really/long/path/to/the/training/run.log", total=10**8, unit="bytes")
    board.update("explain", completed=48 * 10**6)
    board.start("project scan", "")
    clock.now += 3
    for line in drawn(ProgressView(board, "explain", clock=clock), width):
        assert len(line) <= width, line


def test_counts_bytes_and_the_time_a_step_has_taken():
    board, clock = ProgressBoard(), Clock()
    board.start("torch", "importing torch")
    board.start("kernels cpu", total=40, unit="tests")
    board.update("kernels cpu", completed=12)
    board.start("explain", total=100 * 10**6, unit="bytes")
    board.update("explain", completed=48 * 10**6)
    view = ProgressView(board, "check", clock=clock)
    clock.now += 0.5  # before ELAPSED_FROM: no time shown yet
    assert [line[2:] for line in view.lines(80)] == [
        "torch        importing torch",
        "kernels cpu  12/40 tests",
        "explain      48.0 of 100.0 MB",
    ]
    clock.now += 3.7
    assert view.lines(80)[0][2:] == "torch        importing torch (4.2 s)"


def test_a_finished_task_shows_done_briefly_then_goes():
    board, clock = ProgressBoard(), Clock()
    board.start("inventory", "listing packages")
    board.start("torch", "importing torch")
    view = ProgressView(board, "check", clock=clock)
    clock.now += 1
    board.finish("inventory", "done")
    assert view.lines(80)[0] == "✓ inventory  done"
    clock.now += display.DONE_SHOWN + 0.1
    assert [line[2:7] for line in view.lines(80)] == ["torch"]


def test_nothing_running_still_shows_a_sign_of_life_and_nothing_at_all_in_the_first_moment():
    clock = Clock()
    view = ProgressView(ProgressBoard(), "audit", clock=clock)
    assert view.lines(80) == []  # a command that ends within SHOW_AFTER does not flash a display
    clock.now += 2
    assert view.lines(80)[0][2:] == "audit  working (2.0 s)"


def test_fit_cuts_at_a_space_in_the_second_half_else_mid_word_always_with_an_ellipsis():
    assert fit("importing torch now", 18) == "importing torch…"
    assert fit("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefghi…"
    assert fit("short", 10) == "short"
    assert fit("日本語のテキスト", 7) == "日本語…"  # two cells a character: counted in cells


def test_a_display_that_is_not_wanted_writes_nothing():
    out = io.StringIO()
    board = ProgressBoard()
    with live_progress(board, False, console=Console(file=out, force_terminal=True)):
        board.start("torch", "importing torch")
    assert out.getvalue() == ""


# --- the real command on a real terminal -----------------------------------------------------------------------


class Terminal:
    """A pseudo-terminal of ``columns`` columns whose output a thread collects."""

    def __init__(self, columns: int = 100, rows: int = 30) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every process holding the terminal has closed it
                return
            if not data:
                return
            self.output += data

    def text(self) -> str:
        return bytes(self.output).decode("utf-8", "replace")

    def wait_for(self, pattern: re.Pattern, proc: subprocess.Popen) -> re.Match:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = pattern.search(self.text())
            if found or proc.poll() is not None:
                break
            time.sleep(0.05)
        found = pattern.search(self.text())
        assert found, f"never shown ({pattern.pattern}); the terminal got {self.text()!r}"
        return found

    def finish(self) -> None:
        os.close(self.slave)
        self._reader.join(10)
        os.close(self.master)


def terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def start(args: list[str], term: Terminal, stdout=subprocess.PIPE, env=None, stdin=subprocess.DEVNULL):
    """``mpdoctor ARGS`` with its stderr on ``term`` (and stdout too when ``stdout`` is the terminal's fd)."""
    return subprocess.Popen(
        [sys.executable, "-m", "mpdoctor", *args],
        stdin=stdin,
        stdout=stdout,
        stderr=term.slave,
        env=env or terminal_env(),
    )


def run(args: list[str], stdout_on_terminal: bool = False, **env: str) -> tuple[int, bytes, bytes]:
    """Run to the end; (exit status, stdout bytes, what the terminal received)."""
    term = Terminal()
    proc = start(args, term, stdout=term.slave if stdout_on_terminal else subprocess.PIPE, env=terminal_env(**env))
    out, _ = proc.communicate(timeout=WAIT * 2)
    term.finish()
    return proc.returncode, out or b"", bytes(term.output)


@pytest.fixture()
def gated_python(tmp_path):
    """A real interpreter for --python that waits until the test opens the gate, then execs the venv's python."""
    gate = tmp_path / "go"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, gate


@pytest.mark.parametrize("kernels", [["--no-kernels"], []], ids=["no-kernels", "cpu-kernels"])
def test_check_shows_the_probe_steps_on_the_terminal_and_erases_them_leaving_stdout_alone(gated_python, kernels):
    wrapper, gate = gated_python
    term = Terminal(columns=100)
    proc = start(["check", "--python", str(wrapper), *kernels], term)
    # the torch probe's interpreter waits at the gate: its task is on the display meanwhile
    term.wait_for(re.compile("[" + display.SPINNER + "] torch +\\S"), proc)
    gate.touch()
    if kernels == []:  # the CPU microkernels, counting their tests as they run
        term.wait_for(re.compile("kernels cpu +.*\\d+/\\d+ tests"), proc)
    out, _ = proc.communicate(timeout=WAIT * 2)
    term.finish()
    assert proc.returncode in (0, 1), out
    assert ESC not in out and b"Precision microkernels" not in term.output  # report on stdout, display on stderr
    # transient: the last thing drawn is the cursor coming back and the display's lines erased
    assert term.output.rstrip(b"\r\n").endswith(b"\x1b[2K") and b"\x1b[?25h" in term.output


@pytest.mark.parametrize(
    "how",
    [
        {"args": ["--quiet"]},
        {"args": ["-q"]},
        {"env": {"CI": "1"}},
        {"env": {"NO_COLOR": "1"}},
        {"env": {"TERM": "dumb"}},
    ],
    ids=["quiet", "q", "CI", "NO_COLOR", "TERM-dumb"],
)
def test_nothing_on_the_terminal_and_no_escape_byte_when_progress_is_off(how):
    rc, out, terminal = run(["check", "--no-kernels", *how.get("args", [])], **how.get("env", {}))
    assert rc in (0, 1) and out
    assert terminal == b"", terminal
    assert ESC not in out


def test_stderr_piped_gets_nothing():
    env = terminal_env()
    result = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "check", "--no-kernels"], capture_output=True, env=env, timeout=WAIT * 2
    )
    assert result.returncode in (0, 1)
    assert result.stderr == b"" and ESC not in result.stdout


def _without_creation_time(text: bytes) -> bytes:
    # the one field that is the clock: two runs a second apart differ there and nowhere else
    return re.sub(rb'"created": "[^"]*"', b'"created": ""', text)


def test_json_on_stdout_is_the_same_bytes_with_and_without_a_terminal():
    snapshot = str(fixture_path("cpu-laptop"))
    rc_term, with_term, _ = run(["check", "--snapshot", snapshot, "--format", "json"])
    piped = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "check", "--snapshot", snapshot, "--format", "json"],
        capture_output=True,
        env=terminal_env(),
        timeout=WAIT,
    )
    assert rc_term == piped.returncode
    assert _without_creation_time(with_term) == _without_creation_time(piped.stdout)
    json.loads(with_term)


def test_live_json_piped_from_a_terminal_session_is_clean_json():
    rc, out, _terminal = run(["check", "--no-kernels", "--format", "json"])
    assert rc in (0, 1) and ESC not in out
    assert json.loads(out)["schema_version"]


def test_json_to_the_same_terminal_shows_no_display():
    rc, _, terminal = run(["check", "--no-kernels", "--format", "json"], stdout_on_terminal=True)
    text = terminal.decode("utf-8")
    assert rc in (0, 1)
    assert not SPINNER_LINE.search(text) and ESC not in terminal
    assert json.loads(text.replace("\r\n", "\n"))["schema_version"]


def test_explain_of_a_stream_shows_progress_while_it_reads():
    term = Terminal()
    proc = start(["explain", "-"], term, stdin=subprocess.PIPE)
    proc.stdin.write(b"Traceback (most recent call last):\n" * 1000)
    proc.stdin.flush()
    term.wait_for(re.compile("explain"), proc)  # still reading: the stream is open
    proc.stdin.write(b"RuntimeError: expected scalar type Half but found Float\n")
    out, _ = proc.communicate(timeout=WAIT)
    term.finish()
    assert proc.returncode in (0, 1) and ESC not in out
    assert "Ctrl-D" not in term.text()  # the hint is for a user typing on the terminal, not a pipe


def test_explain_from_a_terminal_says_how_to_end_the_input_and_draws_nothing_over_the_typing():
    term = Terminal()
    proc = start(["explain", "-"], term, stdin=term.slave)
    term.wait_for(re.compile("Ctrl-D"), proc)
    os.write(term.master, b"RuntimeError: expected scalar type Half but found Float\n\x04")
    out, _ = proc.communicate(timeout=WAIT)
    term.finish()
    assert proc.returncode == 0, out
    assert b"Half" in out
    hint = [line for line in term.text().splitlines() if "Ctrl-D" in line]
    assert hint == ["mpdoctor: reading the error text from stdin; end it with Ctrl-D (Ctrl-Z then Enter on Windows)"]
    assert not SPINNER_LINE.search(term.text())


def test_audit_shows_the_files_it_reads(gated_python, tmp_path):
    torch = pytest.importorskip("torch")
    wrapper, gate = gated_python
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("a.pt", "b.pt"):
        torch.save({"weight": torch.zeros(2, dtype=torch.float16)}, folder / name)
    term = Terminal()
    proc = start(["audit", str(folder), "--python", str(wrapper)], term)
    found = term.wait_for(re.compile(r"audit +(\S.*?)\d/2 files"), proc)  # waiting at the gate on a file
    gate.touch()
    out, _ = proc.communicate(timeout=WAIT * 2)
    term.finish()
    assert proc.returncode in (0, 1), out
    assert found and ESC not in out and b"float16" in out


def test_ctrl_c_erases_the_display_and_gives_the_cursor_back(gated_python):
    import signal

    wrapper, _gate = gated_python  # never opened: the probes wait until the interrupt
    term = Terminal()
    proc = start(["check", "--no-kernels", "--python", str(wrapper)], term)
    term.wait_for(SPINNER_LINE, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=WAIT)
    term.finish()
    assert proc.returncode == 130
    assert b"\x1b[?25h" in term.output[term.output.rfind(b"\x1b[?25l") :]  # the cursor, hidden while drawing, is back
    # The last thing drawn was erasing a line. After it, mpdoctor may note a process it stopped: the wrapper's
    # `sleep 0.05`, when the interrupt lands while the gate loop runs one (plain text, no display left to erase).
    drawn = term.output.split(b"mpdoctor: note: stopped", 1)[0]
    assert drawn.rstrip(b"\r\n").endswith(b"\x1b[2K")


def test_show_cursor_gives_the_cursor_back_while_a_display_draws():
    """A second Ctrl-C exits with os._exit, skipping the display's cleanup: cli.main's handler calls show_cursor
    first (the race of two real signals is not reproducible on demand, so this calls it as the handler does)."""
    import io

    from rich.console import Console

    from mpdoctor.render.progress import live_progress, show_cursor

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=60)
    board = ProgressBoard()
    board.start("torch", "importing torch")
    show_cursor()  # no display: nothing to give back, nothing written
    assert buffer.getvalue() == ""
    with live_progress(board, True, console=console):
        hidden = buffer.getvalue().rfind("\x1b[?25l")
        assert hidden >= 0
        show_cursor()
        assert "\x1b[?25h" in buffer.getvalue()[hidden:]  # before the display's own exit shows it
    written = len(buffer.getvalue())
    show_cursor()  # the display is gone: nothing more
    assert len(buffer.getvalue()) == written


def test_control_characters_in_a_task_are_drawn_never_obeyed():
    board, clock = ProgressBoard(), Clock()
    board.start("audit", "evil\x1b[2J\nname\r.pt", total=2, unit="files")
    view = ProgressView(board, "audit", clock=clock)
    clock.now += 0.5
    (line,) = view.lines(80)
    assert line[2:].startswith("audit  evil?[2J?name?.pt: 0/2 files")


def test_the_text_column_stays_put_when_a_long_named_task_goes():
    board, clock = ProgressBoard(), Clock()
    board.start("kernels cpu", "running tests")
    board.start("torch", "importing torch")
    view = ProgressView(board, "check", clock=clock)
    clock.now += 0.5
    before = view.lines(80)[1]
    board.finish("kernels cpu")
    assert view.lines(80)[0][2:].startswith("kernels cpu  ")  # shown done for a moment
    clock.now += display.DONE_SHOWN + 0.1
    (after,) = view.lines(80)
    assert after.index("importing") == before.index("importing") and after[2:].startswith("torch        importing")
