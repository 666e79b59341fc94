"""How a weight file is named on a progress line: short enough to leave room for the counts."""

from __future__ import annotations

WIDTH = 40


def short(name: str, width: int = WIDTH) -> str:
    """``name`` as it is, or with its middle elided past ``width`` characters (both ends tell shards apart)."""
    if len(name) <= width:
        return name
    keep = (width - 1) // 2
    return f"{name[:keep]}…{name[-(width - 1 - keep) :]}"
