"""Where a failure's message is in the input's last lines: failure blocks, each a line that states a failure and the
lines that continue its message, with tracebacks' frames, code lines and carets (Python's and IPython's) left out.
``reader.py`` decides a block's family; this module only finds the blocks and their text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpdoctor.explain.matcher import INFORMATIONAL
from mpdoctor.explain.shapes import cues
from mpdoctor.portable import limits

BLOCKS = 6  # failure blocks read upwards from the end before giving up
BLOCK_LINES = 8  # lines of one failure block: its failure line and what continues its message
CONTEXT_LINES = 12  # lines above a failure block read for where it ran

# A traceback's frame line and the code line under it, and the carets under that code: not the message.
_FRAME = re.compile(r'^\s{0,16}(?:\[(?:default)?rank\d{1,6}\]:\s{0,16})?File "[^"\n]{1,1000}", line \d')
_CARETS = re.compile(r"^[\s^~]*$")
# IPython's traceback: a frame names its file and function, then numbered lines of code around the failing one,
# which is kept (`---> 82   raise RuntimeError("Invoked 'with amp.scale_loss`, but ...`: a cut paste's message).
_NOTEBOOK_FRAME = re.compile(r"^\S[^\n]{0,1000}\.py in [\w<>]{1,100}\(")
_NOTEBOOK_CODE = re.compile(r"^\s*\d{1,6}(?:\s|$)")
# A line that states a failure (or a warning about a precision): where a message starts.
_FAILURE = re.compile(
    r"error|exception|assert|fail|fatal|abort|warn|not supported|unsupported|not implemented|invalid|mismatch"
    r"|incompatible|not compatible|cannot|can't|only supports?|requires? |missing \w{1,30} (?:op|kernel)s?\b",
)


# Where a message starts in its line: after the last `...Error: `, `...Warning: `, `...Exception: `.
_MESSAGE_START = re.compile(r"(?:error|warning|exception|failure)\)?: ", re.IGNORECASE)


def message_of(line: str) -> tuple[str, str]:
    """(what precedes the message in the line, the message from its exception's name on)."""
    marker = None
    for marker in _MESSAGE_START.finditer(line):
        pass
    if marker is None:
        return "", line.strip()
    start = line.rfind(" ", 0, marker.start()) + 1  # the exception's name stays with its message
    return line[:start], line[start:].strip()


def is_failure(lower: str) -> bool:
    return bool(_FAILURE.search(lower) or cues.REFUSAL.search(lower))


@dataclass
class Block:
    """One failure block's words: the message as written (from its exception's name on, up to limits.FAILURE_TEXT),
    lower-cased, its lines, and the lines just above it (with what preceded the message in its first line)."""

    lines: list[tuple[int, str]]  # (0-based index in the lines read, the line)
    written: str
    text: str
    parts: list[str]  # the message's lines, lower-cased
    above: str

    @property
    def first(self) -> int:
        return self.lines[0][0]


def block_of(lines: list[str], found: list[tuple[int, str]]) -> Block:
    """The words of one failure block ``found`` among ``lines``."""
    # the message starts after its exception's name: a log's own prefix ("fp16 run, model.half():") before it
    # is the log's words, not the failure's; it only says where the run was, as the lines above do
    head, message = message_of(found[0][1])
    written = " ".join([message] + [line.strip() for _, line in found[1:]])[: limits.FAILURE_TEXT]
    first = found[0][0]
    above = " ".join([*lines[max(0, first - CONTEXT_LINES) : first], head]).lower()
    parts = [message.lower()] + [line.strip().lower() for _, line in found[1:]]
    return Block(found, written, written.lower(), parts, above)


_WARNING_AT = re.compile(r":\d{1,7}: [A-Za-z_]{0,40}Warning: ")


def failure_blocks(lines: list[str]) -> list[list[tuple[int, str]]]:
    """The input's failure blocks, the last first: a failure line and the message lines that continue it.
    Without any failure line, the input's last lines are one block (a message pasted without its name)."""
    message: list[tuple[int, str]] = []
    after_frame = in_notebook_frame = False
    for index, line in enumerate(lines):
        if INFORMATIONAL.search(line):
            continue  # a log channel that reports without failing, as the matcher skips it
        if _FRAME.match(line):
            after_frame = True
            continue
        if after_frame and line.startswith((" ", "\t")) or _CARETS.match(line):
            after_frame = False  # the code line a frame shows, or the carets under it
            continue
        # Python's warnings print the warning's location, then its source line, indented: that code is the
        # library's, not a word of the message (`state1 = self.get_state_buffer(p, dtype=torch.uint8)` under
        # "Paged optimizers are not supported on CPU" names no dtype refused)
        after_frame = bool(_WARNING_AT.search(line))
        if after_frame:
            message.append((index, line))
            continue
        if _NOTEBOOK_FRAME.match(line):
            in_notebook_frame = True  # IPython's frame: `.../compressed.py in toarray(self, order, out)`
            continue
        if in_notebook_frame and _NOTEBOOK_CODE.match(line):
            continue  # the numbered code lines around the failing one (`    946   y = out.T`)
        in_notebook_frame = False
        message.append((index, line))
    blocks: list[list[tuple[int, str]]] = []
    for index, line in message:
        if is_failure(line.lower()) or not blocks:
            blocks.append([(index, line)])
        elif len(blocks[-1]) < BLOCK_LINES:
            blocks[-1].append((index, line))
    if blocks and not is_failure(blocks[0][0][1].lower()) and len(blocks) > 1:
        blocks = blocks[1:]  # lines above the first failure are a log's chatter, not a message
    return list(reversed(blocks))


__all__ = ["BLOCKS", "CONTEXT_LINES", "Block", "block_of", "failure_blocks", "is_failure", "message_of"]
