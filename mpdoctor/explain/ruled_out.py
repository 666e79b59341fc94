"""A line whose writer ruled the precision out: the failure persists without the low precision, or they turned it off.

Both readers skip such a line, the signatures (``matcher.find``) and the general reader (``shapes.reader``): a
precision named in it is named in passing, whatever else it says.
"""

from __future__ import annotations

import re

# The writer already ran without the low precision and it still failed ("it doesn't support fp16, so I switched to
# fp32, but the loss is NaN now", "the NaNs happen even with fp32"): the failure is not the precision's. A switch
# that "resolves" or "fixes" it says the opposite, and is no such line.
_FULL = r"(?:fp32|float32|full[ -]precision|single[ -]precision)"
_STILL_FAILS = re.compile(
    r"\b(?:switch|chang|mov|revert|went back|go back|fall back|fell back)\w{0,3} (?:back )?to "
    + _FULL
    + r"\b(?P<gap>[^.\n]{0,60}?)\b(?:but|still)\b"
    r"|\beven (?:in|with|using|on) " + _FULL + r"\b"
    r"|\b(?:also|still) (?:happens|occurs|fails|failing|gets?|nan)\w{0,2} (?:in|with|using|on) " + _FULL + r"\b"
)
_RESOLVED = re.compile(r"resolv|solv|fix|works?\b|worked|help|fine|\bok\b")
# The writer turned the precision off, saying why ("these devices don't support bf16 and tf32, so I set these two
# params as False"): the refusal they quote is their reason, not the failure; the error after it is read on its own
# line.
_TURNED_OFF = re.compile(
    r"\b(?:so|therefore|thus|hence) (?:i|we) (?:set|turn(?:ed)?|disabl\w*|switch\w*|chang\w*)\b[^.\n]{0,40}?"
    r"\b(?:false|off|disabled|fp32|float32)\b"
)


def precision_ruled_out(text: str) -> bool:
    """Whether the (lower-cased) text says the failure persists without the low precision, or that the writer
    turned it off."""
    if _TURNED_OFF.search(text):
        return True
    return any(not _RESOLVED.search(hit.group("gap") or "") for hit in _STILL_FAILS.finditer(text))


__all__ = ["precision_ruled_out"]
