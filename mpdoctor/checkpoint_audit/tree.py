"""The odd module out: in each module subtree, the submodules wholly in another floating dtype.

Tensor names are module paths (``unet.mask_embed.weight`` is tensor ``weight`` of
module ``unet.mask_embed``), so the names alone give the module tree. Every subtree
has a dominant floating dtype (most elements, then most tensors); a submodule whose
floating tensors are all in another dtype is an odd module out, named with its
path, dtype, tensor count and bytes: "unet.mask_embed: float32 (2 tensors, 64 B) in
a float16 unet". Inside a subtree that is itself uniform nothing more is looked
for; a mixed one is searched again against its own dominant dtype, so an outlier
is found at whatever depth it sits. Each component of a diffusers folder is its
own tree: an fp32 text encoder beside an fp16 UNet is two models, not an outlier.

Some modules are kept in float32 on purpose, and those are told apart: norms (by
class, for a live module, else by name), and the names a transformers or diffusers
model lists in ``_keep_in_fp32_modules`` (read from the ``config.json`` beside the
weights, or from the live model). The rest are accidents until shown otherwise.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from mpdoctor.checks.audit import MODULE_IN_ANOTHER_DTYPE, MODULE_KEPT_IN_FLOAT32
from mpdoctor.checks.fixes import alternative
from mpdoctor.findings import Finding, FixStep, info, warning
from mpdoctor.portable import files as bounded
from mpdoctor.schema.serde import fact

# Floating dtypes and their bytes per element. Dominance counts elements, not bytes: by bytes an fp32 norm
# would weigh twice its size, and a small model with fp32 norms would look like an fp32 model.
ITEM_SIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e8m0fnu": 1,
}
FLOATING = tuple(ITEM_SIZE)
LOW_PRECISION = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")
MAX_CONFIG = 4 << 20  # a config.json bigger than this is not a model config: leave it unread
# A norm by its name: layernorm, input_layernorm, norm1, final_layer_norm, q_norm, ln_f, ln_1, bn1.
NORM_NAME = re.compile(r"norm|^ln(_[a-z0-9]+|\d*)$|^bn\d*$", re.IGNORECASE)
KEEP_KEYS = ("_keep_in_fp32_modules", "_keep_in_fp32_modules_strict")


@dataclass
class OddModule:
    """A submodule whose floating tensors are all in another dtype than the subtree around it."""

    module: str = fact("The submodule (or a lone tensor of a module that has submodules), with its component")
    dtype: str = fact("The floating dtype all its tensors are in")
    tensors: int = fact("Its floating tensors", 0)
    bytes: int = fact("Their size in bytes", 0)
    within: str = fact("The module around it (a component's name for its whole tree); empty for the whole model", "")
    within_dtype: str = fact("The dominant floating dtype of that module's subtree", "")
    intended: str = fact(
        "Why it is in this dtype on purpose (a norm; a _keep_in_fp32_modules name); empty when nothing says it is", ""
    )


@dataclass
class Subtree:
    """A module subtree that holds more than one floating dtype."""

    module: str = fact("The module; empty for the whole model or component")
    dominant: str = fact("The dtype most of its elements are in")
    dtypes: dict[str, int] = fact("Floating dtype -> tensors in the subtree", factory=dict)


@dataclass
class ModelFacts:
    """What is known of the model beyond its tensor names."""

    classes: dict[str, str] = field(default_factory=dict)  # module path -> class name (a live module)
    keep_fp32: dict[str, tuple[list[str], str]] = field(default_factory=dict)  # component -> (names, source)


@dataclass
class Tree:
    """The analysis: the odd modules out, the mixed subtrees, and the differences no odd module names."""

    odd: list[OddModule] = field(default_factory=list)
    subtrees: list[Subtree] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)


class _Node:
    __slots__ = ("children", "own", "totals")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.own: dict[str, list] = defaultdict(list)  # dtype -> [(name, nbytes)]
        self.totals: dict[str, list[int]] = {}  # dtype -> [tensors, bytes, elements] of the whole subtree


def dominant(totals: dict[str, list[int]], around: str = "") -> str:
    """The dtype most elements are in, then most tensors; in a tie, the dtype ``around`` it."""
    return max(totals, key=lambda d: (totals[d][2], totals[d][0], d == around, d))


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def analyse(tensors: Iterable[tuple[str, str, str, int]], facts: Optional[ModelFacts] = None) -> Tree:
    """The tree of ``(component, name, dtype, nbytes)`` tensors; only floating ones count.

    The reference: a node per module, every tensor added to each module above it.
    The report uses ``tree_ranges.analyse``, which gives the same Tree from sorted
    names at a tenth of the cost (``tests/test_audit_bulk.py`` holds them equal).
    """
    facts = facts or ModelFacts()
    roots: dict[str, _Node] = {}
    for component, name, dtype, nbytes in tensors:
        if dtype not in FLOATING:
            continue
        node = roots.get(component) or roots.setdefault(component, _Node())
        *path, leaf = name.split(".")
        elements = nbytes // ITEM_SIZE[dtype]
        along = [node]
        for part in path:
            child = node.children.get(part)
            if child is None:  # not setdefault: a node made for every tensor would cost more than the rest
                child = node.children[part] = _Node()
            node = child
            along.append(node)
        node.own[dtype].append((leaf, nbytes))
        for node in along:  # every subtree it is in counts it (inline: this loop is most of the time)
            counts = node.totals.get(dtype)
            if counts is None:
                node.totals[dtype] = [1, nbytes, elements]
            else:
                counts[0] += 1
                counts[1] += nbytes
                counts[2] += elements
    tree = Tree()
    dominants = {}
    for component, root in sorted(roots.items()):
        dominants[component] = dominant(root.totals)
        _walk(root, component, "", tree, facts)
    if len(set(dominants.values())) > 1:
        tree.unnamed.append("components: " + ", ".join(f"{c} {d}" for c, d in dominants.items()))
    return tree


def _label(component: str, path: str) -> str:
    return f"{component}/{path}" if component and path else component or path


def _walk(node: _Node, component: str, path: str, tree: Tree, facts: ModelFacts, around: str = "") -> None:
    if len(node.totals) < 2:
        return
    dom = dominant(node.totals, around)
    here = _label(component, path)
    tree.subtrees.append(Subtree(here, dom, {d: counts[0] for d, counts in sorted(node.totals.items())}))

    def odd(name: str, dtype: str, count: int, nbytes: int) -> None:
        tree.odd.append(
            OddModule(
                _label(component, name), dtype, count, nbytes, here, dom, _intended(component, name, dtype, dom, facts)
            )
        )

    if node.children and len(node.own) == 1 and dom not in node.own:
        # The module's own tensors (a pos_embed beside its blocks) are uniform and odd: name each.
        ((dtype, own),) = node.own.items()
        for leaf, nbytes in own:
            odd(_join(path, leaf), dtype, 1, nbytes)
    for name, child in node.children.items():
        child_path = _join(path, name)
        if len(child.totals) == 1:
            ((dtype, (count, nbytes, _)),) = child.totals.items()
            if dtype != dom:
                odd(child_path, dtype, count, nbytes)
            continue
        if dominant(child.totals, dom) != dom:
            tree.unnamed.append(
                f"{_label(component, child_path)}: mostly {dominant(child.totals, dom)} in a {dom} {here or 'model'}"
            )
        _walk(child, component, child_path, tree, facts, dom)


def _intended(component: str, path: str, dtype: str, around: str, facts: ModelFacts) -> str:
    """Why a module in float32 inside a lower-precision model is so on purpose; "" when nothing says."""
    if dtype != "float32" or around not in LOW_PRECISION:
        return ""
    names, source = facts.keep_fp32.get(component, ([], ""))
    for keep in names:
        if re.search(rf"(^|\.){re.escape(keep)}($|\.)", path):
            return f"kept in float32 by {source} (_keep_in_fp32_modules names {keep!r})"
    cls = facts.classes.get(path, "")
    if "norm" in cls.lower():
        return f"a norm ({cls}): loaders and autocast keep norms in float32 on purpose"
    if not cls and NORM_NAME.search(path.rsplit(".", 1)[-1]):
        return "a norm, by its name: loaders and autocast keep norms in float32 on purpose"
    return ""


def keep_fp32_beside(files: Iterable[tuple[str, str]]) -> dict[str, tuple[list[str], str]]:
    """Component -> the ``_keep_in_fp32_modules`` names of the ``config.json`` beside its ``(component, path)`` files.

    The config is context, not a weight file: one that is missing, not a regular
    file (a FIFO would block the read), too big or not JSON leaves no names.
    """
    found: dict[str, tuple[list[str], str]] = {}
    for component, path in files:
        config = Path(path).parent / "config.json"
        if component in found or not Path(path).is_file() or not config.is_file():
            continue
        try:
            data = bounded.read_json(str(config), MAX_CONFIG)
        except (bounded.Refused, OSError, ValueError):
            continue
        names = keep_names(data)
        if names:
            found[component] = (names, str(config))
    return found


def keep_names(holder: object) -> list[str]:
    """The module names in a config dict's (or a live model's) ``_keep_in_fp32_modules`` lists."""
    names: list[str] = []
    for key in KEEP_KEYS:
        value = holder.get(key) if isinstance(holder, dict) else getattr(holder, key, None)
        if isinstance(value, (list, tuple, set)):
            names += [str(v) for v in value if isinstance(v, str) and v]
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------- reading them: grouped by pattern


def size_text(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def pattern(path: str) -> str:
    """``model.layers.17.input_layernorm`` -> ``model.layers.*.input_layernorm``: the repeated blocks as one."""
    return re.sub(r"(^|(?<=[./]))\d+(?=$|\.)", "*", path)


def describe(odd: list[OddModule], *, grouped: bool = True) -> list[str]:
    """One line per odd module, or per pattern of them (32 layers' norms as one line)."""
    groups: dict[tuple, list[OddModule]] = {}
    for item in odd:
        key = (
            (pattern(item.module), item.dtype, pattern(item.within), item.within_dtype, item.intended)
            if grouped
            else (item.module, item.dtype, item.within, item.within_dtype, item.intended)
        )
        groups.setdefault(key, []).append(item)
    lines = []
    for (module, dtype, within, within_dtype, intended), items in groups.items():
        if len(items) == 1:  # a pattern of one is just that module
            module, within = items[0].module, items[0].within
        tensors, nbytes = sum(i.tensors for i in items), sum(i.bytes for i in items)
        count = f"{len(items)} modules, " if len(items) > 1 else ""
        plural = "" if tensors == 1 else "s"
        each = ", each" if len(items) > 1 else ""
        line = (
            f"{module}: {dtype} ({count}{tensors} tensor{plural}, {size_text(nbytes)}){each} in a "
            f"{within_dtype} {within or 'model'}"
        )
        lines.append(f"{line}; {intended}" if intended else line)
    return lines


# ---------------------------------------------------------------- what they mean: AUDIT004, AUDIT005

MAX_EVIDENCE = 20  # lines of evidence per finding; the report's odd_modules lists them all


def findings(tree: Tree) -> list[Finding]:
    """AUDIT004 for the accidental odd modules out, AUDIT005 for those kept in float32 on purpose."""
    found = []
    accidental = [o for o in tree.odd if not o.intended]
    intended = [o for o in tree.odd if o.intended]
    if accidental:
        lines = describe(accidental)
        dtypes = ", ".join(dict.fromkeys(o.dtype for o in accidental))
        found.append(
            MODULE_IN_ANOTHER_DTYPE.stamp(
                warning(
                    f"{len(accidental)} module(s) are wholly in another dtype ({dtypes}) than the model around them: "
                    "loaded as saved, their inputs arrive in the model's dtype",
                    _capped(lines),
                    [
                        FixStep(
                            "Cast on load: load the model in one dtype (`torch_dtype=torch.float16`, or "
                            "`model.to(torch.float16)`), or run it under torch.autocast, which casts per op"
                        ),
                        alternative(
                            "Or keep the module in its dtype and cast the input in its forward: "
                            "`x = x.to(self.weight.dtype)`, then the output back to the model's dtype"
                        ),
                    ],
                )
            )
        )
    if intended:
        found.append(
            MODULE_KEPT_IN_FLOAT32.stamp(
                info(
                    f"{len(intended)} module(s) are kept in float32 on purpose inside a lower-precision model",
                    _capped(describe(intended)),
                    [
                        FixStep(
                            "Nothing to do under the library's loader (`torch_dtype=...`) or torch.autocast; code that "
                            "casts the model by hand (`.half()`) undoes it, and must cast these modules' inputs in their "
                            "forward"
                        )
                    ],
                )
            )
        )
    return found


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_EVIDENCE:
        return lines
    return lines[:MAX_EVIDENCE] + [f"... and {len(lines) - MAX_EVIDENCE} more (`mpdoctor audit --all`)"]
