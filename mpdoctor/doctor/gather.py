"""Gather the facts for one run: load the snapshot the user gave, or probe for a fresh one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.checks.registry import builtin_registry
from mpdoctor.snapshot import Snapshot, load_snapshot


@dataclass
class Options:
    python: str
    timeout: float = 60.0
    kernels: str = "quick"  # microkernel sizes: quick or full; "off" skips them
    snapshot: Optional[str] = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)


def gather(options: Options) -> Snapshot:
    """Load the snapshot the user gave, or take a fresh one.

    The microkernels are the slow probe: they only run when a precision check
    is selected.
    """
    if options.snapshot:
        return load_snapshot(options.snapshot)
    from mpdoctor.probes.collect import take_snapshot

    checks = builtin_registry().select(options.select, options.ignore)
    wanted = any(entry.family == "precision" for entry in checks)
    return take_snapshot(options.python, options.timeout, options.kernels if wanted else "off")
