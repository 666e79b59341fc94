"""Read the input, recognise known failures, and (with --check) run the checks that confirm them."""

from __future__ import annotations

import os
import select
import stat
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, BinaryIO, Optional

from mpdoctor.explain.device import checks_for, device_of, fixes_for
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import ending_elsewhere, explain_by_shape
from mpdoctor.explain.signature import fill
from mpdoctor.explain.matcher import MAX_LINE, Match, find, is_error_line
from mpdoctor.explain.report import ExplainReport, Explanation, MatchedLine, OtherCause
from mpdoctor.explain.unbuilt import NOTICE as UNBUILT, unbuilt_as_notice
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.portable import limits
from mpdoctor.portable.redact import redact_clip, redact_text

if TYPE_CHECKING:
    from mpdoctor.probes.budget import Budget

# A log longer than this is read from its end: the failure that stopped a run is at the bottom. The text is held a
# few times over while it is cleaned and lower-cased (up to 4 bytes a character), so this bounds memory as well.
MAX_INPUT = 128 << 20
# A stream is read to its end, keeping only its last MAX_INPUT bytes; one that never ends (`yes | mpdoctor explain -`)
# is abandoned after this much, and what was kept is scanned as a cut input.
MAX_STREAM = 4 << 30
CHUNK = 1 << 20
PROGRESS_STEP = 4 << 20  # bytes read between two progress posts: never one per chunk of a slow pipe, nor per line
TASK = "explain"  # the progress task reading and matching post to


class InputError(ValueError):
    """Input that cannot be read; the message is meant for the user."""


def read_file(path: str, limit: int = MAX_INPUT, progress: ProgressBoard = SILENT) -> tuple[bytes | bytearray, bool]:
    """The file's bytes (its last ``limit`` when longer), and whether it was cut.

    Regular files and pipes only: a device such as /dev/zero never ends. A pipe is read
    like stdin, in bounded chunks. ``st_size`` only says where to start reading; a file
    that grows while it is read is still read in bounded chunks. ``progress`` gets a task
    "explain" counting the bytes read (of the file's size, when it has one).
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before its type can be checked.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if stat.S_ISFIFO(info.st_mode):
        # A pipe the user named (`--file <(zcat run.log.gz)`): read it like stdin, in bounded chunks, waiting for
        # its writer as a shell pipe would. A FIFO that no writer has opened yet reads as empty at once: wait
        # until one has (it wrote, or came and went) before the first read.
        os.set_blocking(fd, True)
        try:
            select.select([fd], [], [])
        except (OSError, ValueError):  # a descriptor select cannot watch: read at once, as before this wait
            pass
        with open(fd, "rb") as pipe:
            try:
                return read_stream(pipe, limit, progress=progress)
            except OSError as exc:
                raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{path}: is a directory")
        raise InputError(
            f"{path}: not a regular file or a pipe (a device or socket); pipe it in instead: ... | mpdoctor explain -"
        )
    # unbuffered: the bytes go from the file straight into the buffer they are scanned in
    with open(fd, "rb", buffering=0) as handle:
        expected = min(info.st_size, limit)
        progress.start(TASK, "reading the log", total=expected, unit="bytes")
        try:
            if info.st_size > limit:
                handle.seek(info.st_size - limit)
                data, cut = _read_sized(handle, expected, limit, progress)
                return data, True
            return _read_sized(handle, expected, limit, progress)
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_stream(
    stream: BinaryIO, limit: int = MAX_INPUT, most: int = MAX_STREAM, progress: ProgressBoard = SILENT
) -> tuple[bytes | bytearray, bool]:
    """A stream (stdin) read in bounded chunks, keeping only its last ``limit`` bytes; at most ``most`` are read.

    Stdin redirected from a file (``mpdoctor explain - < run.log``) is read as ``read_file`` reads one: from
    where its last ``limit`` bytes begin, into one buffer. ``progress`` gets a task "explain" counting the
    bytes read, of the file's size when there is one."""
    remaining = _file_remaining(stream)
    if remaining is None:
        progress.start(TASK, "reading the input", unit="bytes")
        return _read_chunks(stream, limit, most, progress)
    progress.start(TASK, "reading the input", total=min(remaining, limit), unit="bytes")
    if remaining > limit:
        stream.seek(remaining - limit, os.SEEK_CUR)
        data, cut = _read_sized(stream, limit, limit, progress)
        return data, True
    return _read_sized(stream, remaining, limit, progress)


def _file_remaining(stream: BinaryIO) -> Optional[int]:
    """The bytes left in ``stream`` when it is a regular file (stdin redirected from one), else None."""
    try:
        info = os.fstat(stream.fileno())
        return max(0, info.st_size - stream.tell()) if stat.S_ISREG(info.st_mode) else None
    except (AttributeError, OSError, ValueError):  # no descriptor (BytesIO), closed, or not seekable
        return None


def _read_sized(handle: BinaryIO, expected: int, limit: int, progress: ProgressBoard) -> tuple[bytes | bytearray, bool]:
    """A file ``fstat`` says holds ``expected`` more bytes: read into one bytearray of that size, in ``CHUNK``s
    (a 100 MB log is not copied again to join chunks, nor to make it ``bytes``: everything downstream takes a
    bytearray), then on in bounded chunks if it grew meanwhile."""
    buffer = bytearray(expected)
    got = posted = 0
    with memoryview(buffer) as view:
        while got < expected:
            count = handle.readinto(view[got : got + CHUNK])
            if not count:
                break  # it shrank while it was read
            got += count
            if got - posted >= PROGRESS_STEP:
                progress.update(TASK, completed=got)
                posted = got
    progress.update(TASK, completed=got)
    if got < expected:
        del buffer[got:]
        return buffer, False
    more, cut = _read_chunks(handle, limit, MAX_STREAM, progress, got)
    if not more:
        return buffer, cut
    data = buffer + more
    return (data[-limit:], True) if len(data) > limit else (data, cut)


def _read_chunks(stream: BinaryIO, limit: int, most: int, progress: ProgressBoard, done: int = 0) -> tuple[bytes, bool]:
    chunks: deque[bytes] = deque()
    kept, total, cut = 0, 0, False
    posted = done
    while total < most:
        chunk = stream.read(min(CHUNK, most - total))
        if not chunk:
            break
        chunks.append(chunk)
        kept += len(chunk)
        total += len(chunk)
        if done + total - posted >= PROGRESS_STEP:
            progress.update(TASK, completed=done + total)
            posted = done + total
        while kept - len(chunks[0]) >= limit:  # drop whole chunks that fall before the last ``limit`` bytes
            kept -= len(chunks.popleft())
            cut = True
    else:
        cut = cut or bool(stream.read(1))  # stopped at ``most``: cut unless it ended exactly there
    progress.update(TASK, completed=done + total)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk (a short message) is not copied
    chunks.clear()
    if len(data) > limit:
        data, cut = data[-limit:], True
    return data, cut


def explanation(match: Match) -> Explanation:
    s = match.signature
    # a grammar signature names what its line names: the op, the device, the two dtypes (Signature.details)
    details = dict(match.details)
    # a general signature names the library its line names, else the library its traceback runs in
    named = details.get("library")
    if "library" in details and details["library"] == dict(s.defaults).get("library"):
        named = match.library
        details["library"] = named or details["library"]
    elif s.library_fixes and not named:
        named = match.library
    # ...and then its fixes come first in that library's own terms
    fixes = s.fixes_for_library(named) + s.fixes if named and s.library_fixes else s.fixes
    # the device the lines name decides which fixes and checks fit: no CUDA cure for an op that ran on the CPU
    device = device_of([text for _, text in match.lines], details.get("device"))
    details["device"] = {"cpu": "the CPU", "cuda": "the GPU"}.get(device, "its device")
    checks = list(dict.fromkeys(s.checks + tuple(c for a in s.alternatives for c in a.checks)))
    return Explanation(
        id=s.id,
        family=s.family,
        title=fill(s.title, details),
        cause=fill(s.cause, details),
        lines=[MatchedLine(number, redact_clip(text, MAX_LINE)) for number, text in match.lines],  # redacted, then cut
        frames=[redact_text(str(frame)) for frame in match.frames],
        fixes=[
            replace(f, text=fill(f.text, details), command=f.command and fill(f.command, details))
            for f in fixes_for(device, fixes)
        ],
        sources=list(s.sources),
        # the checks that tell the ranked causes apart run (and are listed) with the explanation's own
        checks=checks_for(device, checks),
        alternatives=[OtherCause(a.cause, a.tell, list(a.checks), list(a.fixes)) for a in s.alternatives],
    )


def _in_passing_as_notices(data: bytes | bytearray | str, matches: list[Match]) -> list[Match]:
    """``matches``, those a run's end shows in passing made notices: when the input ends on another failure (a
    ``KeyError``, an out-of-memory error) and every failure recognised is a warning or a bare line above it ("Flash
    Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dtype is float32" logged
    at load time), the precision did not stop the run; what was recognised is still answered, as a notice."""
    failures = [match for match in matches if not match.signature.notice]
    if not failures or any(is_error_line(text.lower()) for match in failures for _, text in match.lines):
        return matches
    ending = ending_elsewhere(data)
    if ending is None or any(number >= ending for match in failures for number, _ in match.lines):
        return matches
    return [replace(match, signature=replace(match.signature, notice=True)) for match in matches]


def explain(
    data: bytes | bytearray | str, source: str, truncated: bool = False, progress: ProgressBoard = SILENT
) -> ExplainReport:
    """Every known failure in ``data``. ``progress``: the task "explain" says it is matching, then finishes."""
    progress.update(TASK, text="looking for known failures")
    signatures = all_signatures()
    matches = find(data, signatures)
    # xFormers refusing every kernel only because none was built: the build's notice, not an attention failure
    matches = unbuilt_as_notice(data, matches, next(s for s in signatures if s.id == UNBUILT))
    matches = _in_passing_as_notices(data, matches)
    if all(match.signature.notice for match in matches):
        # only notices (or nothing) known: the failure that ended the input may still be read by its shape, on
        # lines no notice explains already (xFormers' warning is not read again as an attention failure)
        noticed = {number for match in matches for number, _ in match.lines}
        matches += [m for m in explain_by_shape(data, signatures) if not noticed.intersection(n for n, _ in m.lines)]
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    # Lines as the matcher numbers them: a lone carriage return (a progress bar redrawn in place) ends a line too, so
    # "line 57" of an explanation is within the "57 lines" of its headline.
    breaks = raw.count(b"\n") + (raw.count(b"\r") - raw.count(b"\r\n") if b"\r" in raw else 0)
    lines = breaks + (1 if raw and not raw.endswith((b"\n", b"\r")) else 0)
    # the source is a file name the user gave: a log named after a run can carry the run's token
    report = ExplainReport(
        source=redact_text(source),
        input_lines=lines,
        input_bytes=len(raw),
        truncated=truncated,
        recognised=[explanation(m) for m in matches if not m.signature.notice],
        notices=[explanation(m) for m in matches if m.signature.notice],
    )
    progress.finish(TASK)
    return report


def confirm(report: ExplainReport, python: str, budget: Budget) -> None:
    """Run the checks the explanations name on this machine (or ``python``); attach what they find."""
    from mpdoctor.doctor.diagnose import Options, diagnose
    from mpdoctor.doctor.report import redacted

    items = [*report.recognised, *report.notices]  # a notice's checks too: --check asked for them, whatever they are
    codes = sorted({code for item in items for code in item.checks})
    report.checked = True
    if not codes:
        return
    try:
        # The torch import checks run too: when torch cannot be imported, they say why the others could not judge.
        result = redacted(diagnose(Options(python=python, budget=budget, select=codes + list(TORCH_IMPORT_CHECKS))))
    except Exception as exc:  # a failed probe must not cost the explanation
        report.check_error = redact_clip(f"{type(exc).__name__}: {exc}", limits.FAILURE_TEXT)
        return
    for item in items:
        item.findings = [f for f in result.findings if any(f.code.startswith(code) for code in item.checks)]
        item.unknown = could_not_judge(result, item.checks)


# What makes a snapshot unable to judge precision: no usable torch (these checks say why), a check that crashed
# (MPD001) or a fact that was not taken (MPD002).
TORCH_IMPORT_CHECKS = ("TORCH001", "TORCH002", "TORCH003", "TORCH004", "TORCH011")


def could_not_judge(result, checks: list[str]) -> list[str]:
    """Why the checks named by ``checks`` could not judge the diagnosed machine: a check that could not run
    proves nothing, so an explanation must not read its silence as "the environment is fine"."""
    reasons = []
    if result.snapshot.torch.status != "imported":
        reasons += [f"{f.code}: {f.title}" for f in result.findings if f.code in TORCH_IMPORT_CHECKS] or [
            f"torch is {result.snapshot.torch.status.replace('-', ' ')} in the diagnosed interpreter"
        ]
    for finding in result.findings:
        if finding.code in ("MPD001", "MPD002") and any(
            code in " ".join([finding.title, *finding.evidence]) for code in checks
        ):
            reasons.append(f"{finding.code}: {finding.title}")
    return reasons


def selected_codes(report: ExplainReport) -> Optional[str]:
    """The `mpdoctor check --select ...` that confirms everything recognised."""
    codes = sorted({code for item in report.recognised for code in item.checks})
    return ",".join(codes) if codes else None
