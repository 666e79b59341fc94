"""Which of a module's children's outputs it combined itself, and which it only chained.

``decoder.attn`` runs ``q_proj``, ``k_proj`` and ``v_proj`` and feeds their outputs
together to SDPA: it combines them, and if they differ in dtype that is where the
dtypes meet, though the module has no parameters of its own. A ``Sequential`` hands
each child's output to the next: a chain, where a dtype change is no meeting. The
trace tells them apart by identity: an output that a later sibling takes as its
very input is chained. Outputs are held by weak reference, so no tensor is kept
alive, and a bounded number per call.
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import Any, Optional, Sequence

from mpdoctor.trace.records import TensorInfo


def offer(offered: deque, name: str, full: str, outputs: Sequence[TensorInfo], objects: Sequence[Any]) -> None:
    """Note child ``name``'s (``full``, its qualified name) floating outputs in its parent's ``offered``, weakly."""
    for info, tensor in zip(outputs, objects):
        try:
            ref = weakref.ref(tensor)
        except TypeError:  # a tensor type without weak references: it cannot be matched, so it counts as combined
            ref = _gone
        offered.append([name, info.dtype, ref, False, full])


def take(offered: deque, objects: Sequence[Any]) -> dict[int, str]:
    """Mark the earlier children's outputs that this child takes as its input: chained, not combined.

    Returns which child made which input: position in ``objects`` -> the child's qualified name.
    """
    sources: dict[int, str] = {}
    for entry in offered:
        target = entry[2]()
        if target is None:
            continue
        for position, candidate in enumerate(objects):
            if target is candidate:
                entry[3] = True
                sources[position] = entry[4]
    return sources


def combined(offered: Optional[deque]) -> tuple[tuple[str, str], ...]:
    """(child, dtype) of the children's outputs the module combined itself, when they differ in dtype."""
    if not offered:
        return ()
    left = [(entry[0], entry[1]) for entry in offered if not entry[3]]
    if len({dtype for _, dtype in left}) < 2:
        return ()
    return tuple(dict.fromkeys(left))


def _gone() -> None:
    return None
