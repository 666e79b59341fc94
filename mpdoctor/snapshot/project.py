"""Snapshot facts about the user's own code: the working directory, read without running it.

Part of the snapshot (``mpdoctor.snapshot``). The apex and OneFlow families read
it: who imports apex, where torch's AMP is used, where OneFlow is.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpdoctor.schema.serde import fact
from mpdoctor.snapshot.apex import ApexImport


NOT_ASKED = "not scanned: no selected check needs the project's code"  # ProjectScan.skipped when not taken


@dataclass
class CodeUse:
    """One use of torch's AMP or of OneFlow/OneDiff in the project's code, read without running it."""

    what: str = fact(
        "What was found, e.g. torch.cuda.amp.GradScaler, import onediff.infer_compiler, "
        "oneflow_compile, oneflow.autocast",
        "",
    )
    file: str = fact("The file, relative to the project root", "")
    line: int = fact("Line number", 0)
    text: str = fact("The source line", "")


@dataclass
class ProjectScan:
    """The user's code (the working directory), read for apex, torch AMP and OneFlow use."""

    root: str = fact("The directory scanned", "")
    files_scanned: int = fact("Python files read", 0)
    truncated: bool = fact("The scan stopped at its time or file budget", False)
    skipped: str = fact("Why the directory was not scanned, when it was not", "")
    apex_uses: list[ApexImport] = fact("Imports of apex in the project", factory=list)
    torch_amp_uses: list[CodeUse] = fact("Uses of torch autocast and GradScaler", factory=list)
    oneflow_uses: list[CodeUse] = fact("Imports of oneflow/onediff, oneflow_compile and oneflow.autocast", factory=list)
    error: str = fact("Why the scan failed, when it did", "")
    skipped_files: list[str] = fact(
        "Files left unread, each with why: not a regular file (a FIFO would block the "
        "scan, a device never ends), or nested too deeply to parse safely",
        factory=list,
    )
