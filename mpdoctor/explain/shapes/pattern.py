"""``cue``: one compiled regex from alternatives, each in its own group, as every cue module writes them."""

from __future__ import annotations

import re


def cue(*alternatives: str) -> re.Pattern:
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


__all__ = ["cue"]
