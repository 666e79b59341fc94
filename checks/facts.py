"""The facts a run takes only when a selected check needs them (``@check(..., needs=...)``).

Each says what it is, how a snapshot shows that it was never taken (so a check
that needs it could not judge: ``MPD002``), and which check reports that itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.project import NOT_ASKED as PROJECT_NOT_ASKED


@dataclass(frozen=True)
class Fact:
    """A fact a run takes only when a selected check needs it, and how a snapshot shows it was not taken."""

    doc: str
    not_taken: Callable[[Snapshot], str]  # why the snapshot lacks it because it was never taken; "" when taken
    reported_by: str = ""  # a check that says so itself when selected; MPD002 covers the others


FACTS = {
    "kernels": Fact(
        "the precision microkernels' measurements (snapshot.kernels); taken only when a selected check needs them",
        lambda snap: (snap.kernels.detail or "skipped") if snap.kernels.status == "skipped" else "",
        reported_by="PREC010",
    ),
    "project": Fact(
        "the scan of the working directory's code (snapshot.environment.project); taken only when a "
        "selected check needs it, else its `skipped` says it was not scanned",
        lambda snap: snap.environment.project.skipped if snap.environment.project.skipped == PROJECT_NOT_ASKED else "",
    ),
}
