"""Version strings as comparable tuples, tolerant of local tags and junk."""

from __future__ import annotations


def version_tuple(text: str) -> tuple[int, ...]:
    """``"12.8"`` -> ``(12, 8)``; junk parts count as 0 so comparisons never raise."""
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)
