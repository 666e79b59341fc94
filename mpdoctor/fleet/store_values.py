"""Values read from the fleet's c10d store, checked without trusting them, and a verdict in a rank's own words.

Anyone who reaches the store's port (or one bad rank) can write any key, so every value
``protocol.Channel`` reads comes through here: ``decode`` parses it within its bound,
``heartbeat_of``, ``verdict_of`` and ``nonce_of`` check it field by field, and raise
``Malformed`` (which costs the rank that wrote it, no other). ``verdict_line`` words a
checked verdict's numbers, ``accepted`` says whether a verdict echoes this rank's nonce,
and ``worse`` / ``own_worst`` rank severities, so no text from the store is printed.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from typing import Any, Optional

from mpdoctor.portable import files, limits

MAX_VALUE = limits.STORE_REPORT  # bytes of the largest value read from the store (each kind has its own bound)
MAX_DEPTH = 96  # nesting of a value: a report, its fingerprint and its snapshot need under 20 levels
MAX_TEXT = limits.STORE_BEAT_TEXT  # characters kept of a heartbeat's host, step or detail
SEVERITIES = ("error", "warning", "info")  # findings.Severity's values: what a verdict's "worst" may be
STATES = ("running", "crashed", "done")
NONCE = re.compile(r"[0-9a-f]{32}\Z")  # a rank's nonce: 128 random bits, in hex
MAX_COUNT = 1 << 31  # a verdict's counts of ranks


def new_nonce() -> str:
    """A rank's nonce for this run: what the verdict meant for it must echo."""
    return secrets.token_hex(16)


class Malformed(ValueError):
    """A value in the store that is not what the protocol writes: it costs the rank that wrote it, no other."""


def decode(raw: Any, bound: int = MAX_VALUE) -> Any:
    """A store value's JSON, parsed without trusting it (any rank, or anyone who reaches the port, can write it).

    Raises Malformed, saying what is wrong in words: larger than ``bound`` bytes, not UTF-8, not JSON, nested
    too deeply, an integer of thousands of digits (``files.json_value``'s limits).
    """
    if isinstance(raw, (bytes, bytearray)):
        if len(raw) > bound:
            raise Malformed(f"{len(raw)} bytes, more than the {bound} read")
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Malformed(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return files.json_value(raw, max_depth=MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise Malformed(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, TypeError) as exc:
        raise Malformed(f"not a value mpdoctor reads: {exc}") from None


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{name}: expected a string, got {type(value).__name__}")
    return value[:MAX_TEXT]


def heartbeat_of(value: Any) -> dict:
    """A heartbeat as ``Beater`` posts it, checked field by field (missing fields get their defaults)."""
    if not isinstance(value, dict):
        raise Malformed(f"expected an object, got {type(value).__name__}")
    beat = {
        "host": _text(value.get("host", ""), "host"),
        "step": _text(value.get("step", ""), "step"),
        "detail": _text(value.get("detail", ""), "detail"),
        "state": _text(value.get("state", "running"), "state"),
    }
    if beat["state"] not in STATES:
        raise Malformed(f"state: expected one of {', '.join(STATES)}, got {beat['state'][:40]!r}")
    local_rank = value.get("local_rank")
    if local_rank is not None and (type(local_rank) is not int or not 0 <= local_rank < 1 << 31):
        raise Malformed(f"local_rank: expected a rank, got {_shown(local_rank)}")
    seconds = value.get("step_seconds", 0.0)
    if type(seconds) not in (int, float) or not math.isfinite(seconds) or not 0 <= seconds < 1e9:
        raise Malformed(f"step_seconds: expected seconds, got {_shown(seconds)}")
    counter = value.get("beat", 0)
    if type(counter) is not int:
        raise Malformed(f"beat: expected a counter, got {_shown(counter)}")
    beat.update(local_rank=local_rank, step_seconds=float(seconds), beat=counter)
    if "nonce" in value:  # posted from the rank's report (or its failure) on
        beat["nonce"] = nonce_of(value["nonce"])
    return beat


def nonce_of(value: Any) -> str:
    """A rank's nonce as the protocol writes it (32 hex digits), or Malformed."""
    if not isinstance(value, str) or not NONCE.match(value):
        raise Malformed(f"nonce: expected 32 hex digits, got {_shown(value)}")
    return value


def unreadable_beat(why: str) -> dict:
    """What stands for a heartbeat that could not be read: the rank is named with why, and waited for."""
    return heartbeat_of({"detail": f"its heartbeat in the store could not be read: {why}"})


VERDICT_COUNTS = ("ranks", "agree", "differ", "absent")  # a verdict's numbers, which a rank words itself


def verdict_of(value: Any) -> dict:
    """Rank 0's verdict for one rank, checked field by field.

    ``worst``: one of SEVERITIES, or null; ``ranks``, ``agree``, ``differ``, ``absent``: counts of ranks;
    ``nonce``: the nonce of the rank it is for, or null when rank 0 judged without that rank's report. Nothing
    else is kept: no text from the store reaches what a rank prints.
    """
    if not isinstance(value, dict):
        raise Malformed(f"expected an object, got {type(value).__name__}")
    worst = value.get("worst")
    if worst is not None and worst not in SEVERITIES:
        raise Malformed(f"worst: expected one of {', '.join(SEVERITIES)} or null, got {_shown(worst)}")
    verdict: dict = {"worst": worst}
    for name in VERDICT_COUNTS:
        count = value.get(name, 0)
        if type(count) is not int or not 0 <= count < MAX_COUNT:
            raise Malformed(f"{name}: expected a count of ranks, got {_shown(count)}")
        verdict[name] = count
    nonce = value.get("nonce")
    verdict["nonce"] = None if nonce is None else nonce_of(nonce)
    return verdict


def verdict_line(verdict: dict) -> str:
    """A verdict in this rank's own words: "3 ranks; 2 agree; 1 differs; worst finding: warning"."""
    ranks, agree, differ, absent = (verdict[name] for name in VERDICT_COUNTS)
    parts = [f"{ranks} rank{'' if ranks == 1 else 's'}"]
    if agree:
        parts.append(f"{agree} agree" if agree > 1 else "1 is the reference")
    if differ:
        parts.append(f"{differ} differ{'s' if differ == 1 else ''}")
    if absent:
        parts.append(f"{absent} missing or crashed")
    return "; ".join(parts) + f"; worst finding: {verdict['worst'] or 'none'}"


def worse(first: Optional[str], second: Optional[str]) -> Optional[str]:
    """The worse of two severities (None: no finding)."""
    found = [level for level in (first, second) if level in SEVERITIES]
    return min(found, key=SEVERITIES.index) if found else None


def own_worst(report: Any) -> Optional[str]:
    """The worst severity among a rank report's own findings (its JSON), or None."""
    found = report.get("findings") if isinstance(report, dict) else None
    levels = [f.get("severity") for f in found if isinstance(f, dict)] if isinstance(found, list) else []
    worst_level = None
    for level in levels:
        worst_level = worse(worst_level, level if isinstance(level, str) else None)
    return worst_level


def _shown(value: Any) -> str:
    """A bad value as a message quotes it: short, whatever its type."""
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


COUNTED, UNCOUNTED, FOREIGN = "counted", "uncounted", "foreign"


def accepted(verdict: dict, nonce: str) -> str:
    """Whether a verdict (``verdict_of``) is this rank's: COUNTED (it echoes ``nonce``: rank 0 counted this
    rank's report), UNCOUNTED (null: rank 0 judged without it), FOREIGN (another nonce: not written for this
    rank's report, so refused: a stale or forged value)."""
    if verdict.get("nonce") is None:
        return UNCOUNTED
    return COUNTED if secrets.compare_digest(str(verdict["nonce"]), nonce) else FOREIGN
