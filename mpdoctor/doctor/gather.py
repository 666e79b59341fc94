"""Gather the facts for one run: load the snapshot the user gave, or probe for a fresh one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.checks.registry import builtin_registry
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.snapshot import Invocation, Snapshot, load_snapshot


@dataclass
class Options:
    python: str
    budget: Budget = field(default_factory=Budget.default)  # the run's, from --timeout (the CLI always gives it)
    kernels: str = "quick"  # microkernel sizes: quick or full; "off" skips them
    snapshot: Optional[str] = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    invocation: Invocation = field(default_factory=Invocation)  # the options as the user gave them
    progress: ProgressBoard = SILENT  # where the probes post what they are doing (a display may show it)
    project: str = ""  # --project DIR, absolute; "": the project the working directory is in


def needed_facts(options: Options) -> frozenset[str]:
    """The optional facts (``mpdoctor.checks.facts.FACTS``) that the selected checks declare they need."""
    return builtin_registry().needs(options.select, options.ignore)


def gather(options: Options) -> Snapshot:
    """Load the snapshot the user gave, or take a fresh one.

    The optional facts are taken only when a selected check needs them: the
    microkernels, the slow probe (``needs=("kernels",)``, and not with
    ``--no-kernels``), and the scan of the working directory's code
    (``needs=("project",)``; skipped, the snapshot says it was not scanned). A fresh
    snapshot records the options as the user gave them, for fix commands that rerun mpdoctor.
    A snapshot that ``mpdoctor.prescan`` started before the CLI loaded is used when it
    is exactly the one these options ask for (``probes.early``); otherwise it is given up.
    """
    from mpdoctor.probes import early

    if options.snapshot:
        early.discard()
        return load_snapshot(options.snapshot)
    needed = needed_facts(options)
    kernels = options.kernels if "kernels" in needed else "off"
    request = early.Request(
        options.python, options.budget, kernels, "project" in needed, options.project if "project" in needed else ""
    )
    started = early.claim(request)
    if started is not None:
        snapshot = started.result()
    else:
        from mpdoctor.probes.collect import take_snapshot

        snapshot = take_snapshot(
            request.python,
            request.budget,
            request.kernels,
            request.project,
            progress=options.progress,
            project_dir=request.project_dir,
        )
    snapshot.invocation = options.invocation
    if kernels == "off" and snapshot.kernels.status == "skipped":
        # The probe knows only that it was told "off"; which of the two reasons applied is known here.
        snapshot.kernels.detail = (
            "--no-kernels was given" if options.kernels == "off" else "no selected check needs them"
        )
    return snapshot
