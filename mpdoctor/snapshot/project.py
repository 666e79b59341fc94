"""Snapshot facts about the user's own code, read without running it.

Which directory is the user's project: ``--project DIR``, else the repository that
holds the working directory, else the working directory; other repositories below
it, environments and caches are never read (the rule: docs/check.md, "Your
project", and ``mpdoctor/probes/remote/project_root.py``).

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
class AmpSite:
    """One step of mixed precision in the project's code, with the function it is in and the branches above it."""

    kind: str = fact(
        "autocast (entered or named), grad_scaler (built), apex_amp (an apex.amp call), clip (gradients "
        "clipped), scale_backward (scaler.scale(loss).backward()), unscale (scaler.unscale_), step, backward "
        "(a plain .backward()), call (a call of a function of the same file that holds steps)",
        "",
    )
    what: str = fact(
        "The API as the file's imports resolve it, e.g. torch.cuda.amp.autocast, apex.amp.initialize; for a call, "
        "the function called (Class.method)",
        "",
    )
    file: str = fact("The file, relative to the project root", "")
    line: int = fact("Line number", 0)
    text: str = fact("The source line", "")
    scope: str = fact("The function it is in (Class.method, outer.inner); empty at module level", "")
    guards: list[str] = fact(
        "The branches above it in its function, outermost first, each LINE:if|else:CONDITION (if/else and "
        "conditional expressions)",
        factory=list,
    )
    enabled: str = fact("autocast/GradScaler's enabled: empty for True or absent, false, or the expression", "")
    dtype: str = fact("autocast's dtype: float16, bfloat16, empty when absent, or the expression", "")
    device: str = fact("autocast's device: cuda, cpu, empty when not a constant", "")
    receiver: str = fact("For scale_backward, unscale, step and backward: the object called, e.g. self.scaler", "")
    reference: bool = fact(
        "autocast or GradScaler named without a call (partial(torch.autocast, ...), scaler_type = GradScaler)", False
    )


@dataclass
class ProjectScan:
    """The user's code (the project's root, see the module), read for apex, torch AMP and OneFlow use."""

    root: str = fact("The directory scanned: the project's root", "")
    root_reason: str = fact(
        "Why that directory is the project: given with --project, the repository that holds the working "
        "directory, or the working directory (a project root, a folder of scripts, or no project)",
        "",
    )
    files_found: int = fact("Python files listed under the root (up to the scan's file budget)", 0)
    files_scanned: int = fact("Python files read", 0)
    truncated: bool = fact("The scan stopped at its time or file budget", False)
    other_repositories: list[str] = fact(
        "Directories below the root that are other repositories (or, under a root that is no project of its "
        "own, other projects), not scanned: relative to the root, at most 50",
        factory=list,
    )
    other_repositories_total: int = fact("How many such directories there were", 0)
    skipped: str = fact("Why the directory was not scanned, when it was not", "")
    apex_uses: list[ApexImport] = fact("Imports of apex in the project", factory=list)
    torch_amp_uses: list[CodeUse] = fact("Uses of torch autocast and GradScaler", factory=list)
    oneflow_uses: list[CodeUse] = fact("Imports of oneflow/onediff, oneflow_compile and oneflow.autocast", factory=list)
    amp_sites: list[AmpSite] = fact(
        "The steps of mixed precision in the code, by function and branch (the code paths the AMP checks read); "
        "at most 2000",
        factory=list,
    )
    error: str = fact("Why the scan failed, when it did", "")
    skipped_files: list[str] = fact(
        "Files left unread, each with why: not a regular file (a FIFO would block the "
        "scan, a device never ends), or nested too deeply to parse safely",
        factory=list,
    )

    def under_root(self, uses: list) -> list:
        """The ``uses`` whose file lies under the root: a path relative to it that does not leave it. The scan
        records no other; a snapshot edited or written by hand may, and no finding about your code cites it."""
        return [use for use in uses if use.file and not _leaves(use.file)]

    def where(self) -> str:
        """Which code "your code" means, for a finding's evidence: the root and why."""
        return f"your code: {self.root or 'the working directory'}" + (
            f" ({self.root_reason})" if self.root_reason else ""
        )

    def summary(self) -> str:
        """One line for a report: which root was read and why, how much of it, and which repositories below it
        were not; "" when there is nothing to say (the scan was not asked for, or a snapshot taken before the
        root was decided explicitly: it has no ``root_reason``)."""
        if self.skipped:
            return "" if self.skipped == NOT_ASKED else f"project: not scanned: {self.skipped}"
        if not self.root or not self.root_reason:
            return ""
        line = f"project: {self.root} ({self.root_reason})"
        read = plural(self.files_scanned, "Python file")
        if self.truncated and self.files_found:
            line += f"; {read} read of {self.files_found} listed: the scan stopped early (see ENV003)"
        elif self.truncated:
            line += f"; {read} read: the scan stopped early (see ENV003)"
        else:
            line += f"; {read} read"
        total = max(self.other_repositories_total, len(self.other_repositories))
        if total:
            names = ", ".join(self.other_repositories[:SHOWN_REPOSITORIES])
            more = ", ..." if total > min(len(self.other_repositories), SHOWN_REPOSITORIES) else ""
            which = "other repository" if total == 1 else "other repositories"
            line += f"; {total} {which} below not scanned: {names}{more}; use --project DIR to read one"
        return line


def _leaves(file: str) -> bool:
    """Whether ``file`` is absolute or climbs out of the directory it is relative to."""
    parts = file.replace("\\", "/").split("/")
    return file.startswith(("/", "\\")) or (len(file) > 1 and file[1] == ":") or ".." in parts


SHOWN_REPOSITORIES = 5  # named in the summary line; the JSON lists up to 50


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
