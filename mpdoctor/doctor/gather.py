"""Gather the facts for one run: load the snapshot the user gave, or probe for a fresh one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.checks.registry import builtin_registry
from mpdoctor.snapshot import Invocation, Snapshot, load_snapshot


@dataclass
class Options:
    python: str
    timeout: float = 60.0
    kernels: str = "quick"  # microkernel sizes: quick or full; "off" skips them
    snapshot: Optional[str] = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    invocation: Invocation = field(default_factory=Invocation)  # the options as the user gave them


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
    """
    if options.snapshot:
        return load_snapshot(options.snapshot)
    from mpdoctor.probes.collect import take_snapshot

    needed = needed_facts(options)
    kernels = options.kernels if "kernels" in needed else "off"
    snapshot = take_snapshot(options.python, options.timeout, kernels, project="project" in needed)
    snapshot.invocation = options.invocation
    return snapshot
