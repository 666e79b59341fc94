"""No garbage collection while a checkpoint's columns are built: they are many objects and none is garbage."""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Within it the collector does not run (a 100,000-tensor header makes half a million strings and tuples,
    and each collection would walk them all, for nothing); as it was, after."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
