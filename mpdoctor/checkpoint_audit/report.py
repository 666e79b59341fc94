"""The audit of a checkpoint as data: its dtype mix, its modules, and the ones that mix dtypes.

Its JSON is a contract like the check report's: ``AUDIT_SCHEMA_VERSION`` changes
when a field is removed, renamed or changes type, and the shipped schema
(``python -m mpdoctor.schema``) is checked in a test.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from mpdoctor import __version__
from mpdoctor.schema.contract import ordered_data, schema_document, schema_path, version_fact
from mpdoctor.checkpoint_audit.sources import WeightFile, unread_steps
from mpdoctor.checkpoint_audit.tree import ModelFacts, OddModule, Subtree, analyse, describe, keep_fp32_beside
from mpdoctor.checkpoint_audit.tree import findings as tree_findings
from mpdoctor.checkpoint_audit.tree import size_text as _size
from mpdoctor.checks.audit import CHECKPOINT_MIXES_DTYPES, MODULE_MIXES_DTYPES, UNREADABLE_WEIGHTS
from mpdoctor.findings import Finding, Step, error, info, warning
from mpdoctor.probes.remote.redact import redact_tree
from mpdoctor.schema.serde import fact, from_data, to_data
from mpdoctor.snapshot.vocab import WeightFormat

AUDIT_SCHEMA_VERSION = 1
SCHEMA_PATH = schema_path("audit", AUDIT_SCHEMA_VERSION)
FLOATING = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")
MAX_LISTED = 20


@dataclass
class FileSummary:
    path: str = fact("The weight file")
    component: str = fact("Its diffusers component (unet, text_encoder, ...); empty otherwise", "")
    format: WeightFormat = fact("safetensors (header read), pickle (torch.load weights_only in a child), memory (a "
                                "state dict audited in memory); empty when the file is missing or not a weight file", "")
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
    components: dict[str, dict[str, int]] = fact("Component -> floating dtype -> bytes (diffusers folders)",
                                                 factory=dict)
    modules: int = fact("Modules (tensor name prefixes) seen", 0)
    groups: dict[str, dict[str, int]] = fact("Top-level module prefix (with its component) -> dtype -> tensors",
                                             factory=dict)
    mixed: list[MixedModule] = fact("Modules whose own tensors mix floating dtypes", factory=list)
    odd_modules: list[OddModule] = fact("Submodules whose tensors are all in another floating dtype than the "
                                        "subtree around them (the odd modules out), at every level", factory=list)
    subtrees: list[Subtree] = fact("Module subtrees holding more than one floating dtype, with the dominant one",
                                   factory=list)
    findings: list[Finding] = fact("What is wrong, errors first", factory=list)
    schema_version: int = version_fact("Version of this JSON layout", AUDIT_SCHEMA_VERSION)
    mpdoctor_version: str = fact("mpdoctor version that wrote it", __version__)

    def to_data(self) -> dict:
        """JSON-ready data, as `mpdoctor audit --format json` writes it."""
        return audit_data(self)

    def __str__(self) -> str:
        """A plain table: the dtype mix, then each module that mixes dtypes with its odd tensors."""
        return plain_text(self)


def _module(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def audit_files(path: str, files: list[WeightFile], facts: ModelFacts | None = None) -> AuditReport:
    """The dtype mix of the files' tensors, module by module; ``facts`` tells what a live model knows."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    components: dict[str, Counter] = defaultdict(Counter)
    modules: dict[str, list] = defaultdict(list)
    groups: dict[str, Counter] = defaultdict(Counter)
    for file in files:
        for tensor in file.tensors:
            groups["/".join(part for part in (file.component, tensor.name.split(".", 1)[0]) if part)][tensor.dtype] += 1
            totals[tensor.dtype][0] += 1
            totals[tensor.dtype][1] += tensor.nbytes
            if tensor.dtype in FLOATING:
                components[file.component][tensor.dtype] += tensor.nbytes
                key = "/".join(part for part in (file.component, _module(tensor.name)) if part)
                modules[key].append(tensor)
    report = AuditReport(
        path=path,
        files=[FileSummary(f.path, f.component, f.format, len(f.tensors), f.error) for f in files],
        dtypes=[DtypeTotal(d, n, b) for d, (n, b) in sorted(totals.items(), key=lambda kv: -kv[1][1])],
        components={c: dict(counter) for c, counter in components.items() if c},
        modules=len(modules),
        groups={prefix: dict(counter) for prefix, counter in sorted(groups.items())},
    )
    for module, tensors in sorted(modules.items()):
        kinds = Counter(t.dtype for t in tensors)
        if len(kinds) < 2:
            continue
        weight = Counter()
        for t in tensors:
            weight[t.dtype] += t.nbytes
        majority = max(weight, key=lambda d: (weight[d], kinds[d]))
        odd = [OddTensor(t.name, t.dtype, list(t.shape)) for t in tensors if t.dtype != majority]
        report.mixed.append(MixedModule(module, majority, dict(kinds), odd))
    if facts is None:  # files: the config.json beside them may name the modules kept in float32
        facts = ModelFacts(keep_fp32=keep_fp32_beside((f.component, f.path) for f in files if f.format))
    tree = analyse(((f.component, t.name, t.dtype, t.nbytes) for f in files for t in f.tensors), facts)
    report.odd_modules, report.subtrees = tree.odd, tree.subtrees
    report.findings = findings(report, files, tree.unnamed) + tree_findings(tree)
    return report


def findings(report: AuditReport, files: list[WeightFile], unnamed: list[str]) -> list[Finding]:
    found = []
    broken = [f for f in files if f.error]
    if broken:
        found.append(UNREADABLE_WEIGHTS.stamp(error(
            f"{len(broken)} weight file(s) could not be read", [f.error for f in broken[:MAX_LISTED]],
            unread_steps(broken, report.path))))
    if report.mixed:
        lines = [f"{m.module}: mostly {m.majority}; " + ", ".join(f"{o.name.rsplit('.', 1)[-1]} {o.dtype}"
                                                               for o in m.odd[:6]) for m in report.mixed[:MAX_LISTED]]
        found.append(MODULE_MIXES_DTYPES.stamp(warning(
            f"{len(report.mixed)} module(s) hold tensors in more than one floating dtype: under a `.half()` model "
            "their inputs and weights disagree", lines,
            [Step("Load the model in one dtype (`torch_dtype=torch.float16` or `.to(torch.bfloat16)` casts every "
                  "parameter), and run it under torch.autocast, which casts per op"),
             Step("Where a module is kept in fp32 on purpose (norms, embeddings), make its forward cast its input: "
                  "`x.to(self.weight.dtype)`, or wrap it in `torch.autocast(..., enabled=False)` with `x.float()`")])))
    floating = [d.dtype for d in report.dtypes if d.dtype in FLOATING]
    if unnamed:  # parts in different dtypes that no AUDIT004/AUDIT005 module names (AUDIT002 or not)
        per_component = [f"{c}: " + ", ".join(sorted(dtypes)) for c, dtypes in sorted(report.components.items())]
        found.append(CHECKPOINT_MIXES_DTYPES.stamp(info(
            f"The checkpoint mixes {', '.join(floating)} across its parts",
            per_component + [line for line in unnamed if not line.startswith("components: ")],
            [Step("Fine under torch.autocast; a model converted by hand must cast between these parts")])))
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
    where = "a state dict in memory" if [f.format for f in report.files] == ["memory"] else \
        f"{len(report.files)} weight file(s)"
    lines = [f"{where}, {tensors} tensors in {report.modules} modules"]
    lines += [f"{d.dtype}: {d.tensors} tensor{'' if d.tensors == 1 else 's'}, {_size(d.bytes)}"
              for d in report.dtypes]
    lines += [f"component {c}: " + ", ".join(f"{d} {_size(b)}" for d, b in sorted(dtypes.items()))
              for c, dtypes in sorted(report.components.items())]
    if 1 < len(report.groups) and (show_all or len(report.groups) <= MAX_GROUPS):
        lines += [f"{prefix}: " + ", ".join(f"{n} {d}" for d, n in sorted(dtypes.items()))
                  for prefix, dtypes in report.groups.items()]
    return lines


def plain_text(report: AuditReport) -> str:
    """The report as plain lines (what `print(mpdoctor.audit(model))` shows)."""
    lines = [f"mpdoctor audit: {report.path}", *(f"  {line}" for line in overview(report))]
    for mixed in report.mixed:
        lines.append(f"  mixed: {mixed.module}: mostly {mixed.majority}; "
                     + ", ".join(f"{o.name} {o.dtype} {list(o.shape)}" for o in mixed.odd))
    lines += [f"  odd module out: {line}" for line in describe(report.odd_modules)]
    lines += [f"  {f.severity} {f.code}: {f.title}" for f in report.findings]
    return "\n".join(lines)
