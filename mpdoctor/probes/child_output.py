"""A child's output and how it ended: kept within bounds while it runs, told in words when it is over.

``child.run_child`` sends a child's stdout and stderr to files, each a ``_Spool``, which is cut while the child
runs so that one that prints forever fills neither the disk nor memory, and returns a ``ChildResult``: the exit
status, the output kept, what was cut, and ``describe()``, how the child ended in words.
"""

from __future__ import annotations

import fcntl
import os
import signal
from dataclasses import dataclass
from typing import Optional

from mpdoctor.portable import limits
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.portable.redact import redact_text
from mpdoctor.probes.remote.supervise import seconds_text

STDERR_TAIL = 3000
MAX_OUTPUT = limits.CHILD_KEPT  # of a child's stdout or stderr, the last this many bytes are kept: it may print forever


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
        lines = [line.strip() for line in split_lines(self.stderr.strip()) if line.strip()]
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


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02  # linux/falloc.h
_fallocate = None  # libc's fallocate(2), looked up once; False where there is none


def punch_hole(fd: int, offset: int, length: int) -> bool:
    """Give back the disk space of ``length`` bytes of the file from ``offset``, keeping its size (they read as
    zeros); False where the system or file system cannot, and the caller cuts the file instead."""
    global _fallocate
    if _fallocate is None:
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            _fallocate = libc.fallocate
            _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        except (OSError, AttributeError, TypeError):  # no libc, or no fallocate in it (macOS)
            _fallocate = False
    if not _fallocate:
        return False
    return length <= 0 or _fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, offset, length) == 0


def _size(count: int) -> str:
    """A byte count as people read it: 512 bytes, 3.2 MB, 16 MiB (a power of two: the bound itself)."""
    if count and count % (1 << 20) == 0:
        return f"{count >> 20} MiB"
    return f"{count} bytes" if count < 10_000 else f"{count / 1e6:.1f} MB"


class _Spool:
    """A child's stdout or stderr file (opened to append: the child writes at its end, wherever that is).

    Measured while the child runs (``trim``), so that a child that floods its output fills neither the temporary
    directory nor memory: ``text`` is the last MAX_OUTPUT bytes of all it wrote, ``cut`` how many were dropped.

    Where the file system can (Linux: ext4, xfs, btrfs, tmpfs), once the file holds more than half of
    ``limits.CHILD_SPOOL`` bytes on disk, all but its last MAX_OUTPUT bytes are given back by punching a hole in its
    start: its end, where the child writes, never moves, so nothing it writes meanwhile is lost (its last line, the
    result, among them), and the other half of the spool is room for what it writes before the next look.
    Elsewhere, once it holds more than ``limits.CHILD_SPOOL``, its tail is read aside and the file emptied; what
    the child writes between the read and the cut is dropped too, uncounted ("at least").
    """

    def __init__(self, handle) -> None:
        self.handle, self.kept, self.cut = handle, b"", 0
        self.freed = 0  # bytes at the file's start whose disk space was given back: never read again
        fd = handle.fileno()  # O_APPEND on the open file the child shares: after a cut it writes from 0 again
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)

    def trim(self) -> None:
        fd = self.handle.fileno()
        size = os.fstat(fd).st_size
        held = size - self.freed
        if held <= limits.CHILD_SPOOL // 2:
            return
        upto = size - MAX_OUTPUT
        if punch_hole(fd, self.freed, upto - self.freed):
            self.freed = upto  # ``text`` counts what was dropped: all but the tail it reads
            return
        if held <= limits.CHILD_SPOOL:
            return  # a cut copies the tail aside: only past the whole spool
        tail = os.pread(fd, MAX_OUTPUT, size - MAX_OUTPUT)
        os.ftruncate(fd, 0)  # what it writes between the read and here is dropped too, uncounted ("at least")
        self.cut += len(self.kept) + size - len(tail) - self.freed
        self.kept, self.freed = tail, 0

    def text(self) -> str:
        fd = self.handle.fileno()
        size = os.fstat(fd).st_size
        rest = os.pread(fd, MAX_OUTPUT, max(0, size - MAX_OUTPUT))
        whole = self.kept + rest
        self.cut += max(0, size - len(rest)) + max(0, len(whole) - MAX_OUTPUT)
        return whole[-MAX_OUTPUT:].decode("utf-8", "replace")
