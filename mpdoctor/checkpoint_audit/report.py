"""The audit of a checkpoint as data: its dtype mix, its modules, and the ones that mix dtypes.

Its JSON is a contract like the check report's: ``AUDIT_SCHEMA_VERSION`` changes
when a field is removed, renamed or changes type, and the shipped schema
(``python -m mpdoctor.schema``) is checked in a test.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq, itemgetter

from mpdoctor import __version__
from mpdoctor.schema.contract import ordered_data, schema_document, schema_path, version_fact
from mpdoctor.checkpoint_audit import gc_pause
from mpdoctor.checkpoint_audit.safetensors import TensorEntry, TensorTable
from mpdoctor.checkpoint_audit.sources import WeightFile, unread_steps
from mpdoctor.checkpoint_audit.tree import ModelFacts, OddModule, Subtree, describe, keep_fp32_beside
from mpdoctor.checkpoint_audit.tree import findings as tree_findings
from mpdoctor.checkpoint_audit.tree import size_text as _size
from mpdoctor.checkpoint_audit.tree_ranges import analyse_columns
from mpdoctor.checks.audit import CHECKPOINT_MIXES_DTYPES, MODULE_MIXES_DTYPES, UNREADABLE_WEIGHTS
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.portable.redact import redact_tree
from mpdoctor.schema.serde import fact, from_data, to_data
from mpdoctor.snapshot.vocab import WeightFormat

AUDIT_SCHEMA_VERSION = 1
SCHEMA_PATH = schema_path("audit", AUDIT_SCHEMA_VERSION)
FLOATING = frozenset(("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"))
MAX_LISTED = 20


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
    findings: list[Finding] = fact("What is wrong, errors first", factory=list)
    schema_version: int = version_fact("Version of this JSON layout", AUDIT_SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote it", __version__)

    def to_data(self) -> dict:
        """JSON-ready data, as `mpdoctor audit --format json` writes it."""
        return audit_data(self)

    def __str__(self) -> str:
        """A plain table: the dtype mix, then each module that mixes dtypes with its odd tensors."""
        return plain_text(self)


def _joined(components: list[str], parts: list[str]) -> list[str]:
    """``component/part`` for each pair, leaving out an empty side (most checkpoints have no components)."""
    if not any(components):
        return parts
    return ["/".join(p for p in pair if p) for pair in zip(components, parts)]


def audit_files(path: str, files: list[WeightFile], facts: ModelFacts | None = None) -> AuditReport:
    """The dtype mix of the files' tensors, module by module; ``facts`` tells what a live model knows.

    A column at a time (names, dtypes, sizes of every tensor), with counting and
    filtering that run in C: a 100,000-tensor checkpoint is a few passes over lists.
    """
    with gc_pause.paused():
        return _audit(path, files, facts)


def _audit(path: str, files: list[WeightFile], facts: ModelFacts | None) -> AuditReport:
    components, names, dtypes, shapes, sizes = [], [], [], [], []
    for file in files:
        if isinstance(file.tensors, TensorTable):  # the bulk header reader's columns, as they are
            columns = file.tensors.names, file.tensors.dtypes, file.tensors.shapes, file.tensors.nbytes, ()
        else:
            columns = tuple(zip(*file.tensors))
        if columns:
            components += repeat(file.component, len(columns[0]))
            names += columns[0]
            dtypes += columns[1]
            shapes += columns[2]
            sizes += columns[3]
    totals = {d: [n, sum(compress(sizes, map(eq, dtypes, repeat(d))))] for d, n in Counter(dtypes).items()}
    floating = list(map(FLOATING.__contains__, dtypes))
    float_components, float_dtypes = list(compress(components, floating)), list(compress(dtypes, floating))
    float_sizes = list(compress(sizes, floating))
    per_component: dict[str, dict[str, int]] = {}  # the report lists named components only (diffusers folders)
    pairs = list(zip(float_components, float_dtypes)) if any(float_components) else []
    for component, dtype in dict.fromkeys(pairs):  # the (component, dtype) pairs, in the order they first come
        per_component.setdefault(component, {})[dtype] = sum(
            compress(float_sizes, map(eq, pairs, repeat((component, dtype))))
        )
    groups: dict[str, dict[str, int]] = {}
    tops = _joined(components, list(map(itemgetter(0), map(str.partition, names, repeat(".")))))
    for (prefix, dtype), count in Counter(zip(tops, dtypes)).items():
        groups.setdefault(prefix, {})[dtype] = count
    modules = _joined(
        float_components, list(map(itemgetter(0), map(str.rpartition, compress(names, floating), repeat("."))))
    )
    report = AuditReport(
        path=path,
        files=[FileSummary(f.path, f.component, f.format, len(f.tensors), f.error) for f in files],
        dtypes=[DtypeTotal(d, n, b) for d, (n, b) in sorted(totals.items(), key=lambda kv: -kv[1][1])],
        components={c: dtypes for c, dtypes in per_component.items() if c},
        modules=len(set(modules)),
        groups=dict(sorted(groups.items())),
    )
    pairs = set(zip(modules, float_dtypes))
    mixed = set()
    if len(pairs) > report.modules:  # some module holds more than one floating dtype
        mixed = {module for module, kinds in Counter(map(itemgetter(0), pairs)).items() if kinds > 1}
    by_module: dict[str, list] = {}
    if mixed:
        tensors = map(TensorEntry, names, dtypes, shapes, sizes, repeat(""))
        for module, tensor in zip(
            compress(modules, map(mixed.__contains__, modules)),
            compress(compress(tensors, floating), map(mixed.__contains__, modules)),
        ):
            by_module.setdefault(module, []).append(tensor)
    for module, own in sorted(by_module.items()):
        kinds = Counter(t.dtype for t in own)
        weight = Counter()
        for t in own:
            weight[t.dtype] += t.nbytes
        majority = max(weight, key=lambda d: (weight[d], kinds[d]))
        odd = [OddTensor(t.name, t.dtype, list(t.shape)) for t in own if t.dtype != majority]
        report.mixed.append(MixedModule(module, majority, dict(kinds), odd))
    if facts is None:  # files: the config.json beside them may name the modules kept in float32
        facts = ModelFacts(keep_fp32=keep_fp32_beside((f.component, f.path) for f in files if f.format))
    tree = analyse_columns(float_components, list(compress(names, floating)), float_dtypes, float_sizes, facts)
    report.odd_modules, report.subtrees = tree.odd, tree.subtrees
    report.findings = findings(report, files, tree.unnamed) + tree_findings(tree)
    return report


def findings(report: AuditReport, files: list[WeightFile], unnamed: list[str]) -> list[Finding]:
    found = []
    broken = [f for f in files if f.error]
    if broken:
        found.append(
            UNREADABLE_WEIGHTS.stamp(
                error(
                    f"{len(broken)} weight file(s) could not be read",
                    [f.error for f in broken[:MAX_LISTED]],
                    unread_steps(broken, report.path),
                )
            )
        )
    if report.mixed:
        lines = [
            f"{m.module}: mostly {m.majority}; "
            + ", ".join(f"{o.name.rsplit('.', 1)[-1]} {o.dtype}" for o in m.odd[:6])
            for m in report.mixed[:MAX_LISTED]
        ]
        found.append(
            MODULE_MIXES_DTYPES.stamp(
                warning(
                    f"{len(report.mixed)} module(s) hold tensors in more than one floating dtype: under a `.half()` model "
                    "their inputs and weights disagree",
                    lines,
                    [
                        FixStep(
                            "Load the model in one dtype (`torch_dtype=torch.float16` or `.to(torch.bfloat16)` casts every "
                            "parameter), and run it under torch.autocast, which casts per op"
                        ),
                        FixStep(
                            "Where a module is kept in fp32 on purpose (norms, embeddings), make its forward cast its input: "
                            "`x.to(self.weight.dtype)`, or wrap it in `torch.autocast(..., enabled=False)` with `x.float()`"
                        ),
                    ],
                )
            )
        )
    floating = [d.dtype for d in report.dtypes if d.dtype in FLOATING]
    if unnamed:  # parts in different dtypes that no AUDIT004/AUDIT005 module names (AUDIT002 or not)
        per_component = [f"{c}: " + ", ".join(sorted(dtypes)) for c, dtypes in sorted(report.components.items())]
        found.append(
            CHECKPOINT_MIXES_DTYPES.stamp(
                info(
                    f"The checkpoint mixes {', '.join(floating)} across its parts",
                    per_component + [line for line in unnamed if not line.startswith("components: ")],
                    [FixStep("Fine under torch.autocast; a model converted by hand must cast between these parts")],
                )
            )
        )
    return found


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
    tensors = sum(d.tensors for d in report.dtypes)
    where = (
        "a state dict in memory"
        if [f.format for f in report.files] == ["memory"]
        else f"{len(report.files)} weight file(s)"
    )
    lines = [f"{where}, {tensors} tensors in {report.modules} modules"]
    lines += [f"{d.dtype}: {d.tensors} tensor{'' if d.tensors == 1 else 's'}, {_size(d.bytes)}" for d in report.dtypes]
    lines += [
        f"component {c}: " + ", ".join(f"{d} {_size(b)}" for d, b in sorted(dtypes.items()))
        for c, dtypes in sorted(report.components.items())
    ]
    if 1 < len(report.groups) and (show_all or len(report.groups) <= MAX_GROUPS):
        lines += [
            f"{prefix}: " + ", ".join(f"{n} {d}" for d, n in sorted(dtypes.items()))
            for prefix, dtypes in report.groups.items()
        ]
    return lines


def plain_text(report: AuditReport) -> str:
    """The report as plain lines (what `print(mpdoctor.audit(model))` shows)."""
    lines = [f"mpdoctor audit: {report.path}", *(f"  {line}" for line in overview(report))]
    for mixed in report.mixed:
        lines.append(
            f"  mixed: {mixed.module}: mostly {mixed.majority}; "
            + ", ".join(f"{o.name} {o.dtype} {list(o.shape)}" for o in mixed.odd)
        )
    lines += [f"  odd module out: {line}" for line in describe(report.odd_modules)]
    lines += [f"  {f.severity} {f.code}: {f.title}" for f in report.findings]
    return "\n".join(lines)
