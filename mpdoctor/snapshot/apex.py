"""Snapshot facts about NVIDIA apex: where it is, what installed it, who imports it.

Part of the snapshot (``mpdoctor.snapshot``); kept in its own module because
apex has many facts and no other family reads them. Same rules: plain data, one
docstring per field, new fields may appear within a schema version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mpdoctor.schema.serde import fact
from mpdoctor.snapshot.vocab import ApexLocationKind, ApexResolution, ApexSearchSource, LoadStatus


@dataclass
class ApexLocation:
    """One place on the module search path that provides a top-level ``apex``."""

    path: str = fact("The apex/ directory or apex module file", "")
    kind: ApexLocationKind = fact("package (has __init__.py), namespace (a bare directory) or module", "")
    entry: str = fact("The search path entry it sits in", "")
    source: ApexSearchSource = fact("sys.path, or cwd: only scripts run from the working directory see it", "sys.path")


@dataclass
class ApexDistribution:
    """An installed distribution named apex or nvidia-apex."""

    name: str = fact("Project name as written in its metadata", "")
    version: str = fact("Installed version", "")
    location: str = fact("Directory it is installed into", "")
    top_level: list[str] = fact("Top-level files and directories it installed (from RECORD)", factory=list)


@dataclass
class PthLine:
    """A line of a .pth file that mentions apex (editable installs, added paths)."""

    file: str = fact("The .pth file", "")
    line: str = fact("The line", "")


@dataclass
class ApexExtension:
    """One of apex's compiled modules (apex_C, amp_C, fused_layer_norm_cuda, ...)."""

    name: str = fact("Module name; they install at the top level of site-packages", "")
    origin: str = fact("The file it loads from", "")
    needed: Optional[list[str]] = fact(
        "Shared libraries it links (ELF DT_NEEDED), e.g. libcudart.so.12; null when not an ELF file", None
    )
    load_status: LoadStatus = fact(
        "ok, error, crashed, timeout or not-tried: importing it after `import torch`, in a forked child", "not-tried"
    )
    load_detail: str = fact("The import error (e.g. undefined symbol ...), or why it was not tried", "")


@dataclass
class ApexImport:
    """One import of apex (or an apex submodule) found in source code, read without running it."""

    module: str = fact("The module imported, e.g. apex.normalization", "")
    names: list[str] = fact("For `from X import a, b`: a and b", factory=list)
    file: str = fact("The file, relative to its distribution's location or the project root", "")
    line: int = fact("Line number", 0)
    text: str = fact("The import statement", "")
    guarded: bool = fact("Inside a try block: the code falls back when apex does not import", False)
    handlers: list[str] = fact(
        'The except clauses of the innermost try around the import: each the exception it names ("" for a bare '
        'except), with ":raise" when the clause raises again (no fallback)',
        factory=list,
    )
    handlers_read: bool = fact("The scan recorded handlers (snapshots before it did say only guarded)", False)
    lazy: bool = fact("Inside a function: runs when called, not when the module imports", False)
    conditional: bool = fact("Inside an if block (e.g. `if is_apex_available():`)", False)
    runs_only_with: list[str] = fact(
        "The apex modules the code tests for before it reaches the import (`if is_apex_available():`, `if amp is "
        "not None:`, `if not _APEX_AVAILABLE: raise ...` before it, a class whose __init__ raises without apex): "
        "apex, or a part such as apex.amp; empty when it tests for none. The import never runs without them",
        factory=list,
    )
    distribution: str = fact("The installed distribution the file belongs to; empty for project code", "")
    version: str = fact("That distribution's version", "")


@dataclass
class ApexInfo:
    """Which apex is installed, whether its compiled parts load, and who imports it."""

    error: str = fact("Why the apex probe failed, when it did", "")
    resolution: ApexResolution = fact(
        "What `import apex` would load: package, namespace, module, none or error", "none"
    )
    origin: str = fact("The file `import apex` would run (its __init__.py), found without running it", "")
    search_locations: list[str] = fact("Directories the apex package spans (several for a namespace)", factory=list)
    resolution_error: str = fact("Why finding apex raised, when it did", "")
    locations: list[ApexLocation] = fact("Every apex on the search path, in search order", factory=list)
    distributions: list[ApexDistribution] = fact("Installed apex and nvidia-apex distributions", factory=list)
    conda_packages: list[str] = fact("conda-meta records of apex packages (nvidia-apex-...)", factory=list)
    pth_lines: list[PthLine] = fact("Lines of .pth files that mention apex", factory=list)
    subpackages: list[str] = fact("Subpackages and modules of the apex package (amp, optimizers, ...)", factory=list)
    entries: list[str] = fact("What the apex directory holds (a sample), to tell a source checkout", factory=list)
    init_imports: Optional[list[str]] = fact("Modules apex/__init__.py imports, in order, read with ast", None)
    init_error: str = fact("Why apex/__init__.py could not be read or parsed", "")
    extensions: list[ApexExtension] = fact("apex's compiled modules that are importable", factory=list)
    loads_error: str = fact("Why loading the extensions failed as a whole, when it did", "")
    users_scanned: bool = fact("Installed distributions were read for apex imports (only when apex is present)", False)
    users: list[ApexImport] = fact("Imports of apex in installed distributions", factory=list)
    distributions_scanned: int = fact("How many distributions were read", 0)
    unscanned: list[str] = fact("Distributions left unread when the scan ran out of time", factory=list)
    users_error: str = fact("Why the scan of installed code failed, when it did", "")
