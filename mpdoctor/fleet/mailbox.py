"""The files a rank and its store child talk through: one directory, each message a file written atomically.

Files, not pipes, as for every mpdoctor child (``mpdoctor.probes.child.run_child``
sends a child's output to files): the child is started and reaped by ``run_child``,
and neither side can block on the other. A message is written to a temporary name
and renamed, so a reader sees all of it or nothing.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from mpdoctor.portable import files

# From the rank (mpdoctor's own process) to its store child:
STEP, REPORT, FAIL, VERDICT, EXIT = "step", "report.json", "fail", "verdict.json", "exit"
HURRY = "hurry"  # rank 0 was stopped by its launcher (SIGTERM): gather what the store holds now, not at the deadline
# From the store child to the rank:
CONNECTED, ERROR, GATHERED, HEARD, DONE = "connected", "error", "gathered.json", "heard.json", "done"


def put(directory: str, name: str, value: Any) -> None:
    """Write ``value`` (JSON) as the message ``name``, atomically."""
    path = os.path.join(directory, name)
    with open(path + ".part", "w", encoding="utf-8") as handle:
        json.dump(value, handle, separators=(",", ":"))
    os.replace(path + ".part", path)


def has(directory: str, name: str) -> bool:
    return os.path.exists(os.path.join(directory, name))


MAX_MESSAGE = 1 << 30  # bytes: ``gathered`` holds every rank's report, each read from the store to its own bound
MAX_DEPTH = 128  # a report from the store (protocol.MAX_DEPTH) inside ``gathered``


def take(directory: str, name: str) -> Optional[Any]:
    """The message ``name`` (its JSON), or None when it has not been written.

    Read like every file mpdoctor reads (``portable.files``): a regular file, to a bound, parsed to a depth.
    """
    try:
        return files.read_json(os.path.join(directory, name), MAX_MESSAGE, max_depth=MAX_DEPTH)
    except FileNotFoundError:
        return None
