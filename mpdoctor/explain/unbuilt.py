"""xFormers refusing every kernel only because none was built: an install fault, answered as a notice.

Under ``No operator found for `memory_efficient_attention_forward` with inputs:`` xFormers lists each kernel it
tried and why that kernel refused. When every reason is the build's ("xFormers wasn't build with CUDA support",
"operator wasn't built"), no dtype and no GPU would have been accepted: an xFormers built for the installed torch
and CUDA is the fix, whatever the precision. A listing that also refuses the dtype (``dtype=torch.float32
(supported: ...)``) or the GPU (``(too old)``) stays an attention failure, and so does a paste without its listing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from mpdoctor.explain.matcher import Match
from mpdoctor.explain.signature import Signature

LISTED = ("attention-xformers-no-operator", "attention-xformers-kernel-refused")  # failures that list reasons
NOTICE = "attention-xformers-not-built"
LISTING_CHARS = 8192  # what is read after the failure's line: a listing of every kernel is a few KB
LISTING_LINES = 80

# The build's reasons; `attn_bias type is <class 'NoneType'>` is listed beside them for a kernel that needs a bias.
_BUILD = re.compile(r"(?:wasn't|was not) buil[dt] with cuda support|operator wasn't built|^attn_bias type is")
_INPUT = re.compile(r"^(?:query|key|value|attn_bias|p)\s*:")
_KERNEL = re.compile(r"` is not supported (?:because|due to)|no operator found for")
# What ends the listing: another traceback, or another failure's own line.
_END = re.compile(r"^(?:traceback|file \"|during handling|the above exception)|\b\w*(?:error|exception):")


def build_only(listing: str) -> bool:
    """Whether the lines of a kernel listing (from the failure's line on) give only the build's reasons."""
    reasons = []
    for line in listing.lower().splitlines()[:LISTING_LINES]:
        line = line.strip()
        if not line or _INPUT.match(line) or _KERNEL.search(line):
            continue
        if _END.search(line):
            break
        reasons.append(line)
    return bool(reasons) and all(_BUILD.search(reason) for reason in reasons)


def unbuilt_as_notice(data: bytes | bytearray | str, matches: list[Match], notice: Signature) -> list[Match]:
    """``matches``, with xFormers' listed refusals made one ``notice`` (the ``NOTICE`` signature) when the listing
    under the first of them gives only the build's reasons."""
    listed = [match for match in matches if match.signature.id in LISTED]
    if not listed:
        return matches
    first = min(listed, key=lambda match: match.lines[0][0])
    listing = _text_from(data, first.lines[0][1])
    if listing is None or not build_only(listing):
        return matches
    # its lines: the failure's, and the reasons that say it (the build's, matched by the notice itself)
    reasons = [match for match in matches if match.signature.id == NOTICE]
    lines = sorted({line for match in [*listed, *reasons] for line in match.lines})
    kept = [match for match in matches if match.signature.id not in LISTED and match.signature.id != NOTICE]
    return [*kept, replace(first, signature=notice, lines=lines)]


def _text_from(data: bytes | bytearray | str, line: str) -> str | None:
    """The input from the first place ``line`` (as the matcher read it) stands, LISTING_CHARS of it; None when it
    is not there as written (the matcher cleaned it)."""
    needle = line.strip()
    if not needle:
        return None
    if isinstance(data, str):
        at = data.find(needle)
        return None if at < 0 else data[at : at + LISTING_CHARS]
    encoded = needle.encode("utf-8", errors="replace")
    at = data.find(encoded)
    return None if at < 0 else bytes(data[at : at + LISTING_CHARS]).decode("utf-8", errors="replace")
