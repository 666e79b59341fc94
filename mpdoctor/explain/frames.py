"""Which traceback frames a reader should see: their own code first, then the library that changes the meaning.

A traceback piped from `python train.py 2>&1` is mostly torch's plumbing (`_call_impl`,
`linear.py forward`) and the libraries between the user and torch. What a user can act on is
their own code (the `train.py` and `model.py` lines that made the call), and the one library
frame that changes what the error means (apex's fused norm, OneFlow, DeepSpeed, bitsandbytes).

Frames are anything with a ``file`` attribute (the matcher's ``Frame``), in traceback order,
outermost first; the order is kept within each group so the innermost comes last.
"""

from __future__ import annotations

import re
from typing import Sequence, TypeVar

F = TypeVar("F")

USER_FRAMES = 3  # the innermost of the user's own frames that are shown
LIBRARY_FRAMES = 2  # the innermost frames of a library that changes the meaning

# Installed code: a package directory, the interpreter's standard library, code compiled at run time.
INSTALLED = re.compile(
    r"/(?:site|dist)-packages/"
    r"|/lib/python\d(?:\.\d{1,3})?/"  # the standard library of a Unix or conda interpreter
    r"|/Lib/"  # the standard library on Windows (C:\Python310\Lib\...)
    r"|^<frozen |^<string>$|^<__array_function__"
    r"|/torch/(?:nn|autograd|_dynamo|_tensor|functional|utils|cuda|amp|_ops)"  # torch from a source checkout
)
# Libraries whose frame turns a generic message into their problem (see known/apex.py and oneflow.py).
MEANINGFUL = re.compile(r"/(?:apex|oneflow|onediff|onediffx|deepspeed|bitsandbytes)/")


def _path(frame) -> str:
    return frame.file.replace("\\", "/")


def is_user(frame) -> bool:
    """The user's own code: not an installed package, not the standard library, not torch."""
    return not INSTALLED.search(_path(frame))


def is_meaningful(frame) -> bool:
    """A frame of a library that changes what a message means."""
    return bool(MEANINGFUL.search(_path(frame)))


# An installed package a frame runs in: `.../site-packages/tensorrt/...`, `...\\dist-packages\\faster_whisper\\...`.
_PACKAGE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_][A-Za-z0-9_]{0,60})")
_PLUMBING = frozenset(("torch", "torchvision", "typing_extensions", "warnings", "threading", "concurrent"))


def library_of(frames: Sequence) -> str:
    """The innermost installed package the traceback runs in that is not torch's plumbing ("" when none): the
    library a general explanation names, and whose own fixes it ranks first."""
    for frame in reversed(frames):
        found = _PACKAGE.search(frame.file)
        if found and found.group(1) not in _PLUMBING:
            return found.group(1)
    return ""


def rank(frames: Sequence[F]) -> list[F]:
    """The user's innermost frames, then the innermost frames of a library that changes the meaning.

    With neither in the traceback, the innermost three frames, as before.
    """
    user = [f for f in frames if is_user(f)][-USER_FRAMES:]
    library = [f for f in frames if is_meaningful(f)][-LIBRARY_FRAMES:]
    return (user + library) or list(frames[-3:])


__all__ = ["is_meaningful", "is_user", "library_of", "rank"]
