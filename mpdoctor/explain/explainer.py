"""Read the input, recognise known failures, and (with --check) run the checks that confirm them."""

from __future__ import annotations

import os
from typing import BinaryIO, Optional

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import Match, find
from mpdoctor.explain.report import ExplainReport, Explanation, MatchedLine
from mpdoctor.probes.remote.redact import redact_text

# A log longer than this is read from its end: the failure that stopped a run is at the bottom.
MAX_INPUT = 512 << 20


class InputError(ValueError):
    """Input that cannot be read; the message is meant for the user."""


def read_file(path: str, limit: int = MAX_INPUT) -> tuple[bytes, bool]:
    """The file's bytes (its last ``limit`` when longer), and whether it was cut."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                handle.seek(size - limit)
                return handle.read(limit), True
            return handle.read(), False
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_stream(stream: BinaryIO, limit: int = MAX_INPUT) -> tuple[bytes, bool]:
    """All of a stream (stdin), keeping only its last ``limit`` bytes."""
    chunks, kept, cut = [], 0, False
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        kept += len(chunk)
        while kept - len(chunks[0]) >= limit:  # drop whole chunks that fall before the last ``limit`` bytes
            kept -= len(chunks.pop(0))
            cut = True
    data = b"".join(chunks)
    if len(data) > limit:
        data, cut = data[-limit:], True
    return data, cut


def explanation(match: Match) -> Explanation:
    s = match.signature
    return Explanation(
        id=s.id, family=s.family, title=s.title, cause=s.cause,
        lines=[MatchedLine(number, redact_text(text)) for number, text in match.lines],
        frames=[redact_text(str(frame)) for frame in match.frames],
        fixes=list(s.fixes), checks=list(s.checks), sources=list(s.sources),
    )


def explain(data: bytes | str, source: str, truncated: bool = False) -> ExplainReport:
    """Every known failure in ``data``."""
    matches = find(data, all_signatures())
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    lines = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)
    return ExplainReport(source=source, input_lines=lines, input_bytes=len(raw), truncated=truncated,
                         recognised=[explanation(m) for m in matches])


def confirm(report: ExplainReport, python: str, timeout: float) -> None:
    """Run the checks the explanations name on this machine (or ``python``); attach what they find."""
    from mpdoctor.doctor.diagnose import Options, diagnose
    from mpdoctor.doctor.report import redacted

    codes = sorted({code for item in report.recognised for code in item.checks})
    report.checked = True
    if not codes:
        return
    try:
        result = redacted(diagnose(Options(python=python, timeout=timeout, select=codes)))
    except Exception as exc:  # a failed probe must not cost the explanation
        report.check_error = f"{type(exc).__name__}: {exc}"
        return
    for item in report.recognised:
        item.findings = [f for f in result.findings if any(f.code.startswith(code) for code in item.checks)]


def selected_codes(report: ExplainReport) -> Optional[str]:
    """The `mpdoctor check --select ...` that confirms everything recognised."""
    codes = sorted({code for item in report.recognised for code in item.checks})
    return ",".join(codes) if codes else None
