"""The live progress display: what a command is doing, on the terminal's stderr, gone when it ends.

A :class:`~mpdoctor.probes.progress.ProgressBoard` is written by the workers (the
probes, ``audit``, ``explain``); this module only reads it, a few times a second,
from rich's ``Live`` refresh thread, and draws one line per running task::

    ⠋ torch        importing torch (4.2 s)
    ⠙ kernels cpu  float16 matmul: 12/40 tests
    ⠹ explain      48.0 of 100.0 MB

The display is transient: it is erased when the command ends, so the report on
stdout is the same with or without it. Whether it is shown at all is decided in
one place, :func:`progress_wanted`. Every line is cut to the terminal's width
(at a space where it can, with an ellipsis), so no line ever wraps: a wrapped line
would break the cursor arithmetic that erases the display, and split words.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from typing import IO, Iterator, Mapping, Optional

from mpdoctor.probes.progress import ProgressBoard, TaskState

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
DONE_SHOWN = 1.0  # seconds a finished task stays on the display, marked done, before it is dropped
ELAPSED_FROM = 1.0  # a step's elapsed time is shown once it has run this long (sooner it only flickers)
REFRESH_PER_SECOND = 8
SHOW_AFTER = 0.3  # seconds before the first line: a command that ends sooner does not flash a display
ELLIPSIS = "…"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
MACHINE_FORMATS = ("json", "github", "junit")  # read by programs: no display on their terminal


def progress_wanted(
    quiet: bool,
    format: str = "text",
    stderr: Optional[IO] = None,
    stdout: Optional[IO] = None,
    stdin: Optional[IO] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> bool:
    """Whether a command shows its live progress display on stderr: the one rule every command follows.

    Shown only when all of these hold:

    * not ``--quiet``;
    * stderr is a terminal (never in a pipe, a file or a CI log); the display never goes to stdout;
    * not in CI (``CI`` set to anything but ``""``, ``0`` or ``false``: CI runners often
      give jobs a pseudo-terminal, and a log full of redraws helps nobody);
    * ``TERM`` is not ``dumb`` and ``NO_COLOR`` is not set (to a non-empty value, per
      no-color.org): a live display needs cursor movement, which are escape codes, and
      those two promise none at all;
    * not a format that programs read (``json``, and ``github``/``junit`` likewise) written
      to the same terminal as stderr: a JSON pipeline stays clean even while someone
      watches it (JSON or Markdown to a pipe or a file, with stderr on a terminal, still
      shows progress);
    * ``stdin`` (when given: ``explain -``) is not that terminal, where the user is typing
      the input: a display redrawing under their typing would garble it.
    """
    stderr = sys.stderr if stderr is None else stderr
    stdout = sys.stdout if stdout is None else stdout
    environ = os.environ if environ is None else environ
    if quiet or not _is_terminal(stderr):
        return False
    if environ.get("CI", "").strip().lower() not in ("", "0", "false"):
        return False
    if environ.get("TERM", "") == "dumb" or environ.get("NO_COLOR", ""):
        return False
    if format in MACHINE_FORMATS and _is_terminal(stdout) and _same_file(stdout, stderr):
        return False
    if stdin is not None and _is_terminal(stdin) and _same_file(stdin, stderr):
        return False
    return True


def _is_terminal(stream: Optional[IO]) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed, or a stand-in without isatty
        return False


def _same_file(a: IO, b: IO) -> bool:
    """Both streams are the same device (one terminal), as far as fstat can tell."""
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (AttributeError, ValueError, OSError):  # no file descriptor (io.StringIO): not a terminal either
        return False


class ProgressView:
    """A rich renderable of a board: each time it is drawn, one line per task as it is now."""

    def __init__(self, board: ProgressBoard, label: str = "mpdoctor", clock=time.monotonic) -> None:
        self.board, self.label, self.clock = board, label, clock
        self.began = clock()
        self._done_at: dict[str, float] = {}  # when the display first saw each task finished
        self._name_width = 0

    def lines(self, width: int) -> list[str]:
        """The display's lines at ``width`` columns, none longer."""
        now = self.clock()
        if now - self.began < SHOW_AFTER:
            return []
        tasks = [task for task in self.board.tasks() if self._shown(task, now)]
        if not any(not task.finished for task in tasks):
            # Nothing running (yet, or between steps): a sign of life rather than a blank terminal.
            tasks.append(TaskState(self.label, "working", self.began, self.began))
        # the widest name so far: the text column does not jump left when a long-named task ends
        self._name_width = name_width = max([self._name_width] + [len(task.name) for task in tasks])
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        return [self._line(task, frame, name_width, width, now) for task in tasks]

    def _shown(self, task: TaskState, now: float) -> bool:
        if not task.finished:
            self._done_at.pop(task.name, None)  # started again
            return True
        return now - self._done_at.setdefault(task.name, now) < DONE_SHOWN

    def _line(self, task: TaskState, frame: str, name_width: int, width: int, now: float) -> str:
        mark = frame if not task.finished else ("✓" if task.text in ("", "done") else "•")
        prefix = f"{mark} {_printable(task.name).ljust(name_width)}  "
        text = _printable(task.text)
        count = _count(task)
        running = now - task.step_started
        elapsed = f"({running:.1f} s)" if not task.finished and running >= ELAPSED_FROM else ""
        tail = " ".join(part for part in (count, elapsed) if part)  # kept whole: the text is what gets cut
        if not text or not tail:
            return fit(prefix + (text or tail), width)
        sep = ": " if count else " "
        room = width - _cells(prefix) - len(sep) - _cells(tail)
        if room < 8:  # too narrow for the text to say anything: the count and the time matter more
            return fit(prefix + tail, width)
        return prefix + fit(text, room) + sep + tail

    def __rich_console__(self, console, options):
        from rich.text import Text

        width = max(1, options.max_width)
        for line in self.lines(width):
            # no_wrap and an ellipsis again: should a character's width differ from rich's reckoning, cut, not wrap
            yield Text(line, no_wrap=True, overflow="ellipsis", end="\n")


def _count(task: TaskState) -> str:
    """``12/40 tests``, ``48.0 of 100.0 MB``, ``3 files``; "" when the task counts nothing."""
    if task.completed is None:
        return ""
    if task.unit == "bytes":
        done = f"{task.completed / 1e6:.1f}"
        return f"{done} of {task.total / 1e6:.1f} MB" if task.total else f"{done} MB"
    unit = f" {task.unit}" if task.unit else ""
    return f"{task.completed}/{task.total}{unit}" if task.total is not None else f"{task.completed}{unit}"


def _printable(text: str) -> str:
    """Control characters (a file named with an escape sequence or a newline) as "?": drawn, never obeyed."""
    return _CONTROL.sub("?", text)


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def fit(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal cells: cut at a space when one is near the end, then an ellipsis.

    A cut word ends in "…", so it is never read as a whole one; a line is never wrapped.
    """
    if _cells(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    from rich.cells import cell_len

    cut = used = 0
    for char in text:  # the longest head that leaves a cell for the ellipsis (a CJK character takes two)
        used += cell_len(char)
        if used > width - 1:
            break
        cut += 1
    head = text[:cut]
    if text[cut] != " ":  # the cut falls inside a word
        space = head.rfind(" ")
        if space >= len(head) // 2:  # a word boundary in the second half: lose the partial word, not half the line
            head = head[:space]
    return head.rstrip(" :,;-") + ELLIPSIS


@contextmanager
def live_progress(
    board: Optional[ProgressBoard], enabled: bool, label: str = "mpdoctor", console=None
) -> Iterator[None]:
    """Show ``board`` live on stderr while the block runs (when ``enabled``: see :func:`progress_wanted`).

    Transient: the lines are erased when the block ends, by an exception or Ctrl-C too.
    ``redirect_stdout`` is off: rich would otherwise route stdout writes through the
    stderr console, and the report must reach stdout unchanged.
    """
    if not enabled or board is None:
        yield
        return
    from rich.console import Console
    from rich.live import Live

    global _drawing
    console = console or Console(stderr=True, highlight=False, emoji=False)
    with Live(
        ProgressView(board, label),
        console=console,
        transient=True,
        refresh_per_second=REFRESH_PER_SECOND,
        redirect_stdout=False,
        redirect_stderr=False,
    ):
        _drawing = console
        try:
            yield
        finally:
            _drawing = None


_drawing = None  # the console a live display is drawing on, while it is


def show_cursor() -> None:
    """Give the terminal its cursor back (rich hides it while drawing), for an exit that skips unwinding.

    A second Ctrl-C ends mpdoctor at once (``os._exit``): the display's own cleanup
    never runs, and the user's shell would be left without a cursor.
    """
    console = _drawing
    if console is not None:
        try:
            console.show_cursor(True)
            console.file.flush()
        except (OSError, ValueError):  # the terminal is gone: nothing to give back
            pass
