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
    taken_away_by: Callable[[Snapshot], str] = lambda snap: ""  # the option given that skipped it ("--no-kernels")


def kernels_not_taken(snap: Snapshot) -> str:
    """Why the microkernels were skipped, in words, from the options the run was given (``snap.invocation``):
    ``--no-kernels``, or a selection none of whose checks needed them. "" when they were taken.

    The probe records one detail for both ("--no-kernels, or no selected check needs them"); the invocation
    tells which applied. A snapshot with neither (saved before invocations were kept) keeps that detail.
    """
    if snap.kernels.status != "skipped":
        return ""
    given = snap.invocation
    if given.no_kernels:
        return "skipped: --no-kernels was given"
    if given.select or given.ignore:
        chosen = " ".join([*(f"--select {c}" for c in given.select), *(f"--ignore {c}" for c in given.ignore)])
        return f"skipped: the run's selection ({chosen}) needed none of them"
    return f"skipped ({snap.kernels.detail})" if snap.kernels.detail else "skipped"


FACTS = {
    "kernels": Fact(
        "the precision microkernels' measurements (snapshot.kernels); taken only when a selected check needs them",
        kernels_not_taken,
        reported_by="PREC010",
        taken_away_by=lambda snap: "--no-kernels" if kernels_not_taken(snap) and snap.invocation.no_kernels else "",
    ),
    "project": Fact(
        "the scan of the working directory's code (snapshot.environment.project); taken only when a "
        "selected check needs it, else its `skipped` says it was not scanned",
        lambda snap: snap.environment.project.skipped if snap.environment.project.skipped == PROJECT_NOT_ASKED else "",
    ),
}
