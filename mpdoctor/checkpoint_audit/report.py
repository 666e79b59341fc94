"""Building the audit of a checkpoint: its dtype mix, its modules, the ones that mix dtypes, and its findings.

``audit_files`` judges files as one checkpoint; ``audit_layout`` judges each
checkpoint of a folder (``layout.py`` says which files make which) on its own and
sums them up. A column at a time, with counting and filtering that run in C. The
report's dataclasses, JSON, schema and plain words are in ``report_data.py``, and
importable from here as they always were.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from itertools import compress, repeat
from operator import eq, itemgetter

from mpdoctor.checkpoint_audit import containers, gc_pause, quantized
from mpdoctor.checkpoint_audit.safetensors import TensorEntry, TensorTable
from mpdoctor.checkpoint_audit.sources import WeightFile, unread_steps
from mpdoctor.checkpoint_audit.tree import (
    ModelFacts,
    Tree,
    models_beside,
)
from mpdoctor.checkpoint_audit.tree_findings import findings as tree_findings
from mpdoctor.checkpoint_audit.tree_findings import load_in_one_dtype, unkept
from mpdoctor.checkpoint_audit.tree_ranges import analyse_columns
from mpdoctor.checkpoint_audit.layout import Checkpoint, Layout
from mpdoctor.checkpoint_audit.report_data import (  # noqa: F401  (the report's data and words; still importable here)
    AUDIT_SCHEMA_VERSION,
    MAX_FILES,
    MAX_GROUPS,
    SCHEMA_PATH,
    AuditReport,
    CheckpointReport,
    DtypeTotal,
    FileSummary,
    MixedModule,
    OddTensor,
    UnreadFile,
    audit_data,
    audit_schema,
    how_text,
    overview,
    plain_text,
    redacted,
    sections,
)
from mpdoctor.checkpoint_audit.tree import ITEM_SIZE
from mpdoctor.checks.audit import (
    CHECKPOINT_MIXES_DTYPES,
    MODULE_MIXES_DTYPES,
    UNREADABLE_WEIGHTS,
    WEIGHTS_OUTSIDE_THE_LAYOUT,
)
from mpdoctor.findings import Finding, FixStep, error, info, warning

FLOATING = frozenset(ITEM_SIZE)  # the tree's: what is judged is what it can weigh
MAX_LISTED = 20


def _joined(components: list[str], parts: list[str]) -> list[str]:
    """``component/part`` for each pair, leaving out an empty side (most checkpoints have no components)."""
    if not any(components):
        return parts
    return ["/".join(p for p in pair if p) for pair in zip(components, parts)]


def audit_files(path: str, files: list[WeightFile], facts: ModelFacts | None = None) -> AuditReport:
    """The files as one checkpoint (a file, one sharded set, a state dict in memory); ``facts``: what a live model knows.

    A column at a time (names, dtypes, sizes of every tensor), with counting and
    filtering that run in C: a 100,000-tensor checkpoint is a few passes over lists.
    """
    with gc_pause.paused():
        report = _audit(path, files, facts)
    how = "memory" if [f.format for f in files] == ["memory"] else "file" if len(files) == 1 else "files"
    name = path if how == "memory" else os.path.basename(path.rstrip("/")) or path
    report.checkpoints = [_summary(Checkpoint(name, files, how), report)]
    for file in report.files:
        file.checkpoint = name
    return report


def audit_layout(path: str, layout: Layout) -> AuditReport:
    """Each checkpoint of the layout judged on its own, and the report that sums them up (see the module).

    A training checkpoint's model copies are checkpoints of their own, its optimizer state unread (``containers``).
    """
    layout = containers.split(layout)
    with gc_pause.paused():
        parts = [
            (checkpoint, _audit(_command_path(path, checkpoint), [dataclasses.replace(f, component="") for f in checkpoint.files], None))
            for checkpoint in layout.checkpoints
        ]  # fmt: skip
    several = len(parts) > 1
    report = AuditReport(path=path, checkpoints=[_summary(c, r) for c, r in parts])
    report.unread = [UnreadFile(u.path, u.why) for u in layout.unread]
    totals: dict[str, list[int]] = {}
    for checkpoint, part in parts:
        report.files += [
            dataclasses.replace(f, component=checkpoint.component, checkpoint=checkpoint.name) for f in part.files
        ]
        for total in part.dtypes:
            counts = totals.setdefault(total.dtype, [0, 0])
            counts[0] += total.tensors
            counts[1] += total.bytes
        if checkpoint.component:
            report.components[checkpoint.name] = {d.dtype: d.bytes for d in part.dtypes if d.dtype in FLOATING}
        report.modules += part.modules
        where = checkpoint.name if several or checkpoint.component else ""
        report.groups.update({_qualified(where, prefix): dtypes for prefix, dtypes in part.groups.items()})
        report.mixed += [dataclasses.replace(m, module=_qualified(where, m.module)) for m in part.mixed]
        report.odd_modules += [
            dataclasses.replace(o, module=_qualified(where, o.module), within=_qualified(where, o.within))
            for o in part.odd_modules
        ]
        report.subtrees += [dataclasses.replace(t, module=_qualified(where, t.module)) for t in part.subtrees]
        report.findings += [
            dataclasses.replace(f, title=f"[{checkpoint.name}] {f.title}") if several else f for f in part.findings
        ]
    report.dtypes = [DtypeTotal(d, n, b) for d, (n, b) in sorted(totals.items(), key=lambda kv: -kv[1][1])]
    report.groups = dict(sorted(report.groups.items()))
    found = report.findings + _pipeline_findings(layout, parts)
    report.findings = sorted(found, key=lambda f: f.severity != "error")  # errors first, the rest in their order
    return report


def _command_path(path: str, checkpoint: Checkpoint) -> str:
    """What `mpdoctor audit` takes to read this checkpoint alone (for the fix commands)."""
    if checkpoint.source:
        return checkpoint.source
    return checkpoint.files[0].path if len(checkpoint.files) == 1 else path


def _qualified(where: str, module: str) -> str:
    if not where:
        return module
    return f"{where}/{module}" if module else where


def _summary(checkpoint: Checkpoint, part: AuditReport) -> CheckpointReport:
    return CheckpointReport(
        name=checkpoint.name,
        files=[f.path for f in checkpoint.files],
        how=checkpoint.how,
        source=checkpoint.source,
        component=checkpoint.component,
        variant=checkpoint.variant,
        entry=checkpoint.entry,
        role=checkpoint.role,
        dtypes=part.dtypes,
        modules=part.modules,
        groups=part.groups,
        mixed=part.mixed,
        odd_modules=part.odd_modules,
        subtrees=part.subtrees,
        findings=part.findings,
    )


def dominant_dtype(dtypes: list[DtypeTotal]) -> str:
    """The floating dtype most elements are in; empty when none is floating."""
    floating = [d for d in dtypes if d.dtype in ITEM_SIZE]
    return max(floating, key=lambda d: d.bytes // ITEM_SIZE[d.dtype]).dtype if floating else ""


def _pipeline_findings(layout: Layout, parts: list[tuple[Checkpoint, AuditReport]]) -> list[Finding]:
    """What a diffusers folder says as a whole: components in different dtypes, weights in no component."""
    found = []
    by_variant: dict[str, dict[str, str]] = {}
    for checkpoint, part in parts:
        if checkpoint.component and dominant_dtype(part.dtypes):
            by_variant.setdefault(checkpoint.variant, {}).setdefault(checkpoint.component, dominant_dtype(part.dtypes))
    for variant, dominants in sorted(by_variant.items()):
        if len(set(dominants.values())) > 1:
            which = f" (variant {variant})" if variant else ""
            found.append(
                CHECKPOINT_MIXES_DTYPES.stamp(
                    info(
                        f"The pipeline's components{which} are in different floating dtypes: "
                        + ", ".join(sorted(set(dominants.values()))),
                        [f"{component}: mostly {dtype}" for component, dtype in dominants.items()],
                        [
                            FixStep(
                                "Fine under torch.autocast, and for diffusers' loaders (torch_dtype casts every "
                                "component); code that feeds one component's output to another by hand must cast it"
                            )
                        ],
                    )
                )
            )
    if layout.pipeline and layout.outside:
        components = sorted({c.component for c, _ in parts if c.component})
        count = len(layout.outside)
        title = (
            f"model_index.json names no component with weights, yet the folder holds {count} checkpoint(s): each "
            "is judged on its own, and diffusers would load none of them"
            if not components
            else f"{count} checkpoint(s) in the folder belong to no component model_index.json names: each is "
            "judged on its own, and diffusers would not load it"
        )
        evidence = [
            f"{layout.pipeline} names the components "
            + (", ".join(layout.listed) if layout.listed else "(none with a subfolder)"),
            *(f"not in a named component: {name}" for name in layout.outside[:MAX_LISTED]),
        ]
        fix = [
            FixStep(
                "If they are the pipeline's, put each component's weights in the subfolder of its name and name it "
                'in model_index.json (`"unet": ["diffusers", "UNet2DConditionModel"]`), as '
                "`pipeline.save_pretrained()` writes them; otherwise keep them out of the pipeline's folder"
            )
        ]
        found.append(WEIGHTS_OUTSIDE_THE_LAYOUT.stamp(warning(title, evidence, fix)))
    return found


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
    if facts is None:  # files: the config.json beside them names the architecture, its dtype, what it keeps in fp32
        facts = ModelFacts(models=models_beside((f.component, f.path) for f in files if f.format))
    # What is judged: floating tensors that hold something (an empty one has no dtype to disagree in), outside the
    # quantized modules, whose mix of dtypes is their method's layout (quantized.py).
    quant = quantized.find(components, names, dtypes, facts)
    if quant is not None or 0 in float_sizes:
        outside = quant.mask if quant is not None else repeat(False)
        floating = [f and n > 0 and not q for f, n, q in zip(floating, sizes, outside)]
        float_components, float_dtypes = list(compress(components, floating)), list(compress(dtypes, floating))
        float_sizes = list(compress(sizes, floating))
        modules = _joined(
            float_components, list(map(itemgetter(0), map(str.rpartition, compress(names, floating), repeat("."))))
        )
    pairs = set(zip(modules, float_dtypes))
    mixed = set()
    if len(pairs) > len(set(modules)):  # some module holds more than one floating dtype
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
    float_names = list(compress(names, floating))
    tree = analyse_columns(float_components, float_names, float_dtypes, float_sizes, facts)
    report.odd_modules, report.subtrees = tree.odd, tree.subtrees
    not_kept = unkept(float_components, float_names, float_dtypes, tree, facts) if facts.models else []
    report.findings = (
        findings(report, files, tree.unnamed, tree, facts)
        + tree_findings(tree, facts, not_kept)
        + quantized.findings(quant, tree.dtypes)
    )
    return report


def findings(
    report: AuditReport, files: list[WeightFile], unnamed: list[str], tree: Tree, facts: ModelFacts
) -> list[Finding]:
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
        component = report.mixed[0].module.split("/", 1)[0] if "/" in report.mixed[0].module else ""
        load = load_in_one_dtype(facts.models.get(component), tree.dtypes.get(component) or report.mixed[0].majority)
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
                            f"Load the model in one dtype, which casts every parameter: {load}; and run it under "
                            "torch.autocast, which casts per op"
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
