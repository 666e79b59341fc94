"""The audit report as data, and its own words: the dataclasses, their JSON and schema, the plain summary.

A folder is judged checkpoint by checkpoint (``layout.py`` says which files make
which): each has its own entry in ``checkpoints``, with its own findings. The
top-level fields are what schema version 1 always had, now summing the checkpoints
up, so that a reader of older reports still reads a folder's report: every file,
the dtype totals, every checkpoint's findings (its name first when there are
several) and the folder's own; module names start ``checkpoint/`` when there are
several, as a diffusers component's always did.

Its JSON is a contract like the check report's: ``AUDIT_SCHEMA_VERSION`` changes
when a field is removed, renamed or changes type, and the shipped schema
(``python -m mpdoctor.schema``) is checked in a test.

``report.py`` builds these from the files read; ``overview`` and ``sections`` are
the words the renderers (``mpdoctor.render.audit``) build on, and ``plain_text`` is
what ``print(report)`` shows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mpdoctor import __version__
from mpdoctor.checkpoint_audit.tree import OddModule, Subtree, describe
from mpdoctor.checkpoint_audit.tree import size_text as _size
from mpdoctor.findings import Finding
from mpdoctor.portable.redact import redact_tree
from mpdoctor.schema.contract import ordered_data, schema_document, schema_path, version_fact
from mpdoctor.schema.serde import fact, from_data, to_data
from mpdoctor.snapshot.vocab import WeightFormat

AUDIT_SCHEMA_VERSION = 1
SCHEMA_PATH = schema_path("audit", AUDIT_SCHEMA_VERSION)


@dataclass
class FileSummary:
    path: str = fact("The weight file")
    component: str = fact("Its diffusers component (unet, text_encoder, ...); empty otherwise", "")
    format: WeightFormat = fact(
        "safetensors (header read), pickle (torch.load weights_only in a child), memory (a "
        "state dict audited in memory); empty when the file is missing or not a weight file",
        "",
    )
    tensors: int = fact("Tensors in it", 0)
    error: str = fact("Why it could not be read, when it could not", "")
    checkpoint: str = fact("The checkpoint it is part of (its name in checkpoints)", "")


@dataclass
class UnreadFile:
    """A file in the folder that no checkpoint reads, and why."""

    path: str = fact("The file")
    why: str = fact("Why it was not read")


@dataclass
class DtypeTotal:
    dtype: str = fact("torch's name of the dtype, e.g. float16")
    tensors: int = fact("How many tensors have it", 0)
    bytes: int = fact("Their size in bytes", 0)


@dataclass
class OddTensor:
    name: str = fact("The tensor's full name")
    dtype: str = fact("Its dtype")
    shape: list[int] = fact("Its shape", factory=list)


@dataclass
class MixedModule:
    """A module whose own tensors are in more than one floating dtype."""

    module: str = fact("The module (the tensors' common name prefix, with its component)")
    majority: str = fact("The dtype most of its bytes are in")
    dtypes: dict[str, int] = fact("Floating dtype -> tensors of the module in it", factory=dict)
    odd: list[OddTensor] = fact("Its tensors in another floating dtype", factory=list)


@dataclass
class CheckpointReport:
    """One checkpoint of the PATH, judged on its own."""

    name: str = fact(
        "The checkpoint: a file's name, an index's, a shard pattern (model-*-of-00003.safetensors), or a "
        "diffusers component (with its file's name when the component has several), relative to PATH"
    )
    files: list[str] = fact("The files that make it, in order", factory=list)
    how: str = fact(
        "What says these files are one checkpoint: file (a file on its own), index (an index's weight_map), "
        "shard-names (the -00001-of-0000N names of its files), memory (a model or state dict in memory), files "
        "(files the Python API was given as one checkpoint), entry (one model copy of a training checkpoint: the "
        "model, or an EMA copy, beside its optimizer state)",
        "file",
    )
    entry: str = fact(
        "The training checkpoint's top-level entry holding this model copy (model, state_dict, module, ema, "
        "state_dict_ema...), its tensors named within it; empty for a file that is a state dict",
        "",
    )
    role: str = fact("What that entry is: model, EMA copy, another model (a name not known); empty otherwise", "")
    source: str = fact("The index that lists its files; empty otherwise", "")
    component: str = fact("Its diffusers component (unet, text_encoder, ...); empty otherwise", "")
    variant: str = fact(
        "Its variant (fp16 of diffusion_pytorch_model.fp16.safetensors): an alternative to the other "
        "checkpoints of the same component or folder, loaded instead of them, not a shard; empty otherwise",
        "",
    )
    dtypes: list[DtypeTotal] = fact("Tensors and bytes per dtype, largest first", factory=list)
    modules: int = fact("Modules (tensor name prefixes) seen", 0)
    groups: dict[str, dict[str, int]] = fact("Top-level module prefix -> dtype -> tensors", factory=dict)
    mixed: list[MixedModule] = fact("Modules whose own tensors mix floating dtypes", factory=list)
    odd_modules: list[OddModule] = fact(
        "Submodules whose tensors are all in another floating dtype than the subtree around them", factory=list
    )
    subtrees: list[Subtree] = fact("Module subtrees holding more than one floating dtype", factory=list)
    findings: list[Finding] = fact("What is wrong with this checkpoint, errors first", factory=list)


@dataclass
class AuditReport:
    """What `mpdoctor audit PATH` found."""

    path: str = fact("What was audited")
    files: list[FileSummary] = fact("Every weight file read", factory=list)
    dtypes: list[DtypeTotal] = fact("Tensors and bytes per dtype, largest first", factory=list)
    components: dict[str, dict[str, int]] = fact(
        "Component -> floating dtype -> bytes (diffusers folders)", factory=dict
    )
    modules: int = fact("Modules (tensor name prefixes) seen", 0)
    groups: dict[str, dict[str, int]] = fact(
        "Top-level module prefix (with its component) -> dtype -> tensors", factory=dict
    )
    mixed: list[MixedModule] = fact("Modules whose own tensors mix floating dtypes", factory=list)
    odd_modules: list[OddModule] = fact(
        "Submodules whose tensors are all in another floating dtype than the "
        "subtree around them (the odd modules out), at every level",
        factory=list,
    )
    subtrees: list[Subtree] = fact(
        "Module subtrees holding more than one floating dtype, with the dominant one", factory=list
    )
    findings: list[Finding] = fact(
        "What is wrong, errors first: every checkpoint's findings (titles start with the checkpoint's name "
        "when there are several) and the folder's own",
        factory=list,
    )
    checkpoints: list[CheckpointReport] = fact(
        "Each checkpoint PATH holds, judged on its own; the fields above sum them up", factory=list
    )
    unread: list[UnreadFile] = fact("Files in the folder that no checkpoint reads, and why", factory=list)
    schema_version: int = version_fact("Version of this JSON layout", AUDIT_SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote it", __version__)

    def to_data(self) -> dict:
        """JSON-ready data, as `mpdoctor audit --format json` writes it."""
        return audit_data(self)

    def __str__(self) -> str:
        """A plain table: the dtype mix, then each module that mixes dtypes with its odd tensors."""
        return plain_text(self)


def redacted(report: AuditReport) -> AuditReport:
    """A copy with secret-looking text masked (paths and error messages can carry tokens)."""
    return from_data(AuditReport, redact_tree(to_data(report)))


def audit_data(report: AuditReport) -> dict:
    return ordered_data(report, ("schema_version", "mpdoctor_version"))


def audit_schema() -> dict:
    return schema_document(AuditReport, "audit", AUDIT_SCHEMA_VERSION, "mpdoctor audit report")


# The report's own plain summary (print(report)); the renderers build on `overview`.
MAX_GROUPS = 16  # top-level module prefixes listed in the overview; a bigger model shows its totals only


def overview(report: AuditReport, show_all: bool = False) -> list[str]:
    """The lines under the report's title: its totals; for one checkpoint, what it holds."""
    tensors = sum(d.tensors for d in report.dtypes)
    if len(report.checkpoints) > 1:
        files = len(dict.fromkeys(f.path for f in report.files))  # a training checkpoint's copies share their file
        lines = [f"{len(report.checkpoints)} checkpoints, {files} weight file(s), {tensors} tensors"]
        return lines + _dtype_lines(report.dtypes)
    where = (
        "a state dict in memory"
        if [f.format for f in report.files] == ["memory"]
        else f"{len(report.files)} weight file(s)"
    )
    lines = [f"{where}, {tensors} tensors in {report.modules} modules"]
    if report.checkpoints and report.checkpoints[0].how not in ("file", "memory"):
        lines.append(f"one checkpoint: {how_text(report.checkpoints[0])}")
    lines += _dtype_lines(report.dtypes)
    lines += [
        f"component {c}: " + ", ".join(f"{d} {_size(b)}" for d, b in sorted(dtypes.items()))
        for c, dtypes in sorted(report.components.items())
    ]
    return lines + _group_lines(report.groups, show_all)


def _dtype_lines(dtypes: list[DtypeTotal]) -> list[str]:
    return [f"{d.dtype}: {d.tensors} tensor{'' if d.tensors == 1 else 's'}, {_size(d.bytes)}" for d in dtypes]


def _group_lines(groups: dict[str, dict[str, int]], show_all: bool) -> list[str]:
    if 1 < len(groups) and (show_all or len(groups) <= MAX_GROUPS):
        return [
            f"{prefix}: " + ", ".join(f"{n} {d}" for d, n in sorted(dtypes.items()))
            for prefix, dtypes in groups.items()
        ]
    return []


def how_text(checkpoint: CheckpointReport) -> str:
    """Why its files are one checkpoint, in words: what the report says under its name."""
    count = len(checkpoint.files)
    how = {
        "index": f"{count} file(s) listed by {os.path.basename(checkpoint.source)}",
        "shard-names": f"{count} shards, as their -0000N-of-0000M names say",
        "memory": "a state dict in memory",
        "files": f"{count} files given as one",
        "entry": f"the {checkpoint.entry!r} entry of a training checkpoint: {checkpoint.role or 'model'}, its "
        "tensors named within it",
    }.get(checkpoint.how, "1 file" if count == 1 else f"{count} files")
    if checkpoint.variant:
        owner = f"the {checkpoint.component}" if checkpoint.component else "the folder"
        how += f"; variant {checkpoint.variant}: an alternative to {owner}'s other weights, not a shard"
    return how


MAX_FILES = 8  # files named under a checkpoint's heading; the JSON lists them all


def sections(report: AuditReport, show_all: bool = False) -> list[tuple[str, list[str]]]:
    """(heading, lines) per checkpoint when there are several, then the files no checkpoint read."""
    found = []
    for checkpoint in report.checkpoints if len(report.checkpoints) > 1 else ():
        tensors = sum(d.tensors for d in checkpoint.dtypes)
        lines = [f"{tensors} tensors in {checkpoint.modules} modules"]
        if len(checkpoint.files) > 1:
            names = [os.path.basename(f) for f in checkpoint.files]
            more = f" and {len(names) - MAX_FILES} more" if len(names) > MAX_FILES and not show_all else ""
            lines.append("files " + ", ".join(names if show_all else names[:MAX_FILES]) + more)
        lines += _dtype_lines(checkpoint.dtypes) + _group_lines(checkpoint.groups, show_all)
        worst = [f"{f.severity} {f.code}" for f in checkpoint.findings]
        lines.append("findings " + ", ".join(worst) if worst else "no finding")
        found.append((f"checkpoint {checkpoint.name} ({how_text(checkpoint)})", lines))
    if report.unread:
        found.append(("Not read", [f"{u.path} ({u.why})" for u in report.unread]))
    return found


def plain_text(report: AuditReport) -> str:
    """The report as plain lines (what `print(mpdoctor.audit(model))` shows)."""
    lines = [f"mpdoctor audit: {report.path}", *(f"  {line}" for line in overview(report))]
    for heading, body in sections(report):
        lines += [f"  {heading}", *(f"    {line}" for line in body)]
    for mixed in report.mixed:
        lines.append(
            f"  mixed: {mixed.module}: mostly {mixed.majority}; "
            + ", ".join(f"{o.name} {o.dtype} {list(o.shape)}" for o in mixed.odd)
        )
    lines += [f"  odd module out: {line}" for line in describe(report.odd_modules)]
    lines += [f"  {f.severity} {f.code}: {f.title}" for f in report.findings]
    return "\n".join(lines)
