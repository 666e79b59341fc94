"""The odd module out: the submodules wholly in another floating dtype than the model they are in.

Tensor names are module paths (``unet.mask_embed.weight`` is tensor ``weight`` of
module ``unet.mask_embed``), so the names alone give the module tree. Each module
is judged against the dtype of the model it is in: the model's dtype, or, inside a
part that is itself in another dtype (an fp32 vision tower in a bf16 model), that
part's. A submodule whose floating tensors are all in another dtype is an odd
module out, named with its path, dtype, tensor count and bytes: "unet.mask_embed:
float32 (2 tensors, 64 B) in a float16 unet".

Which dtype a module is judged against is the model's, never a local majority
of elements: a GPT-2 ``mlp`` whose ``c_fc`` (more than half its elements) was cast
to float16 in a bfloat16 model is a bfloat16 ``mlp`` with one odd ``c_fc``, not a
float16 one whose ``c_proj`` is odd. A part mostly in another dtype is judged in
its own only where that names fewer odd modules, the part itself counted as one: a
vision tower in float32 with one bfloat16 norm is "mostly float32" with the norm
odd, not thirty float32 modules. The model's dtype is the one most of its elements
are in; a tie goes to the dtype its ``config.json`` names. Each component of a
diffusers folder is its own tree: an fp32 text encoder beside an fp16 UNet is two
models, not an outlier.

Some modules are kept in float32 on purpose, and those are told apart
(``kept_fp32.py``): the names the model's library keeps in float32 for its
architecture (transformers' ``_keep_in_fp32_modules``, diffusers'), read from the
live model or known for the class its ``config.json`` names. A module they do not
name is an accident, a norm too: Llama keeps no norm in float32. Only where the
architecture is unknown (a state dict, a module of your own) is a norm taken as
kept on purpose (by its class for a live module, else by its name), as
mixed-precision setups keep norms.

What they mean, AUDIT004 and AUDIT005 with their fixes, is in ``tree_findings.py``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from mpdoctor.checkpoint_audit.kept_fp32 import Architecture, from_config
from mpdoctor.portable import files as bounded
from mpdoctor.schema.serde import fact

# Floating dtypes and their bytes per element. A tie between references goes to the one most elements are in,
# not bytes: by bytes an fp32 norm would weigh twice its size.
ITEM_SIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e8m0fnu": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}
# Not here: float4_e2m1fn_x2 and safetensors' F6, packed sub-byte formats only quantized weights are stored in
# (quantized.py says so), and like int8 never a dtype a module is judged in.
FLOATING = tuple(ITEM_SIZE)
LOW_PRECISION = tuple(dtype for dtype, size in ITEM_SIZE.items() if size < 4)  # float16, bfloat16, the fp8s
MAX_CONFIG = 4 << 20  # a config.json bigger than this is not a model config: leave it unread
# A norm by its name: layernorm, input_layernorm, norm1, final_layer_norm, q_norm, ln_f, ln_1, bn1.
# Why a norm is taken as kept in float32 where nothing names the architecture: a guess, said as one.
NORM_REASON = "mixed-precision setups keep norms in float32 on purpose (its forward must cast its input)"
NORM_NAME = re.compile(r"norm|^ln(_[a-z0-9]+|\d*)$|^bn\d*$", re.IGNORECASE)


@dataclass
class OddModule:
    """A submodule whose floating tensors are all in another dtype than the model (or part) around it."""

    module: str = fact("The submodule (or a lone tensor of a module that has submodules), with its component")
    dtype: str = fact("The floating dtype all its tensors are in")
    tensors: int = fact("Its floating tensors", 0)
    bytes: int = fact("Their size in bytes", 0)
    within: str = fact("The module around it (a component's name for its whole tree); empty for the whole model", "")
    within_dtype: str = fact(
        "The dtype that module is judged in: the model's, or that of the part in another dtype it belongs to", ""
    )
    intended: str = fact(
        "Why it is in this dtype on purpose (a _keep_in_fp32_modules name of its architecture; a norm where the "
        "architecture is unknown); empty when nothing says it is",
        "",
    )


@dataclass
class Subtree:
    """A module subtree that holds more than one floating dtype."""

    module: str = fact("The module; empty for the whole model or component")
    dominant: str = fact(
        "The dtype it is judged in: the model's, or, for a part mostly in another dtype where that names fewer odd "
        "modules, that one"
    )
    dtypes: dict[str, int] = fact("Floating dtype -> tensors in the subtree", factory=dict)


@dataclass
class ModelFacts:
    """What is known of the model beyond its tensor names."""

    classes: dict[str, str] = field(default_factory=dict)  # module path -> class name (a live module)
    models: dict[str, Architecture] = field(default_factory=dict)  # component -> its architecture
    computed: frozenset[str] = frozenset()  # a live model's non-persistent buffers: made by its code, never saved


@dataclass
class Tree:
    """The analysis: the odd modules out, the mixed subtrees, and the differences no odd module names."""

    odd: list[OddModule] = field(default_factory=list)
    subtrees: list[Subtree] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    dtypes: dict[str, str] = field(default_factory=dict)  # component -> the dtype its model is judged in

    def close(self) -> None:
        """After every component: components in different dtypes are a difference no odd module names."""
        if len(set(self.dtypes.values())) > 1:
            self.unnamed.append("components: " + ", ".join(f"{c} {d}" for c, d in self.dtypes.items()))


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
    names at a tenth of the cost (``tests/test_audit_bulk.py`` holds them equal);
    both judge with :class:`Judge`.
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
    for component, root in sorted(roots.items()):
        Judge(_NodeTree(), component, facts, tree).run(root)
    tree.close()
    return tree


class _NodeTree:
    """:class:`Judge`'s view of ``analyse``'s nodes."""

    def totals(self, node: _Node, path: str) -> dict[str, list[int]]:
        return node.totals

    def own(self, node: _Node, path: str) -> list[tuple[str, str, int]]:
        return [(leaf, dtype, nbytes) for dtype, own in node.own.items() for leaf, nbytes in own]

    def has_children(self, node: _Node, path: str) -> bool:
        return bool(node.children)

    def children(self, node: _Node, path: str, dtype: str) -> list[tuple[str, _Node]]:
        """The submodules holding a tensor not in ``dtype``, in the order their first tensor comes."""
        return [
            (name, child) for name, child in node.children.items() if len(child.totals) > 1 or dtype not in child.totals
        ]

    def names(self, node: _Node, path: str) -> list[str]:
        found = [_join(path, leaf) for own in node.own.values() for leaf, _ in own]
        for name, child in node.children.items():
            found += self.names(child, _join(path, name))
        return found


def _label(component: str, path: str) -> str:
    return f"{component}/{path}" if component and path else component or path


class Judge:
    """Which dtype each module is judged in, and the odd modules out, over a backend's view of one component's tree.

    A backend answers, for a node and its path: ``totals`` (dtype -> [tensors, bytes,
    elements] of the subtree), ``own`` (its own tensors: leaf, dtype, bytes, in the
    file's order), ``has_children``, ``children(dtype)`` (the submodules holding a
    tensor not in that dtype, with their nodes, in the file's order: the rest are
    wholly in it, nothing to say) and ``names`` (every tensor name of the subtree).
    """

    def __init__(self, backend: Any, component: str, facts: ModelFacts, tree: Tree) -> None:
        self.backend, self.component, self.facts, self.tree = backend, component, facts, tree
        self.model = facts.models.get(component)
        self._best: dict[tuple[str, str], tuple[int, str]] = {}

    # The cost of a reference: how many statements describe the subtree against it, each odd module one, each own
    # tensor in another dtype one, each part judged in its own dtype one more.

    def _cost(self, node: Any, path: str, ref: str) -> int:
        totals = self.backend.totals(node, path)
        if len(totals) == 1:
            return 0 if ref in totals else 1
        return self.best(node, path, ref)[0]

    def _inside(self, node: Any, path: str, ref: str, limit: float = float("inf")) -> int:
        cost = sum(1 for _, dtype, _ in self.backend.own(node, path) if dtype != ref)
        for name, child in self.backend.children(node, path, ref):
            if cost >= limit:  # already no better than the best known: the exact figure does not matter
                break
            cost += self._cost(child, _join(path, name), ref)
        return cost

    def best(self, node: Any, path: str, ref: str) -> tuple[int, str]:
        """(cost, the dtype the mixed module ``path`` is judged in) when the module around it is judged in ``ref``.

        Only the dtype most of its elements are in can make it a part of its own, and only where that names fewer
        odd modules, the part counted as one.
        """
        key = (path, ref)
        if key not in self._best:
            totals = self.backend.totals(node, path)
            stay = self._inside(node, path, ref) if ref in totals else float("inf")
            found = (stay, ref)
            dtype = dominant(totals, ref)
            if dtype != ref:
                cost = 1 + self._inside(node, path, dtype, stay)
                # A tie stays in the dtype around it, unless staying means a submodule judged in that dtype: then
                # the part starts here, at the highest module it can.
                if cost < stay or (cost == stay and self._below(node, path, ref, dtype)):
                    found = (cost, dtype)
            self._best[key] = found  # type: ignore[assignment]
        return self._best[key]

    def _below(self, node: Any, path: str, ref: str, dtype: str) -> bool:
        """Whether, judged in ``ref``, a submodule of ``path`` is judged in ``dtype``."""
        for name, child in self.backend.children(node, path, ref):
            child_path = _join(path, name)
            if len(self.backend.totals(child, child_path)) > 1 and self.best(child, child_path, ref)[1] == dtype:
                return True
        return False

    def root_dtype(self, node: Any) -> str:
        """The model's dtype: the one most of its elements are in; in a tie, the one its config names."""
        return dominant(self.backend.totals(node, ""), self.model.dtype if self.model else "")

    def run(self, root: Any) -> None:
        dtype = self.root_dtype(root)
        self.tree.dtypes[self.component] = dtype
        self._walk(root, "", dtype)

    def _walk(self, node: Any, path: str, dom: str) -> None:
        totals = self.backend.totals(node, path)
        if len(totals) < 2:
            return
        here = _label(self.component, path)
        self.tree.subtrees.append(Subtree(here, dom, {d: counts[0] for d, counts in sorted(totals.items())}))

        def odd(name: str, dtype: str, count: int, nbytes: int, names: Callable[[], list[str]]) -> None:
            reason = _intended(self.component, name, dtype, dom, self.facts, names)
            self.tree.odd.append(OddModule(_label(self.component, name), dtype, count, nbytes, here, dom, reason))

        own = self.backend.own(node, path)
        own_dtypes = {dtype for _, dtype, _ in own}
        if self.backend.has_children(node, path) and len(own_dtypes) == 1 and dom not in own_dtypes:
            # The module's own tensors (a pos_embed beside its blocks) are uniform and odd: name each.
            for leaf, dtype, nbytes in own:
                tensor = _join(path, leaf)
                odd(tensor, dtype, 1, nbytes, lambda tensor=tensor: [tensor])
        for name, child in self.backend.children(node, path, dom):
            child_path = _join(path, name)
            child_totals = self.backend.totals(child, child_path)
            if len(child_totals) == 1:
                ((dtype, (count, nbytes, _)),) = child_totals.items()
                odd(child_path, dtype, count, nbytes, lambda c=child, p=child_path: self.backend.names(c, p))
                continue
            inner = self.best(child, child_path, dom)[1]
            if inner != dom:
                self.tree.unnamed.append(
                    f"{_label(self.component, child_path)}: mostly {inner} in a {dom} {here or 'model'}"
                )
            self._walk(child, child_path, inner)


def _intended(
    component: str, path: str, dtype: str, around: str, facts: ModelFacts, names: Callable[[], list[str]] = list
) -> str:
    """Why a module in float32 inside a lower-precision model is so on purpose; "" when nothing says."""
    if dtype != "float32" or around not in LOW_PRECISION:
        return ""
    model = facts.models.get(component)
    if model is not None and (model.keep or model.strict):
        keep = model.kept(path) or model.kept(path, names())
        if keep:
            listed = "_keep_in_fp32_modules_strict" if keep in model.strict else "_keep_in_fp32_modules"
            return f"kept in float32 by {model.source_of(keep)} ({listed} names {keep!r})"
    if model is not None and model.known and facts.computed and set(names() or [path]) <= facts.computed:
        # A rotary embedding's inv_freq: made in float32 by the model's code when it is built, never saved or loaded.
        return f"a buffer {model.name} computes itself in float32 and never saves (non-persistent)"
    if model is not None and model.known:
        return ""  # its library keeps nothing else in float32: a norm in float32 too is an accident
    cls = facts.classes.get(path, "")
    if "norm" in cls.lower():
        return f"a norm ({cls}), in a model of no known architecture: {NORM_REASON}"
    if not cls and NORM_NAME.search(path.rsplit(".", 1)[-1]):
        return f"a norm, by its name, in a model of no known architecture: {NORM_REASON}"
    return ""


def models_beside(files: Iterable[tuple[str, str]]) -> dict[str, Architecture]:
    """Component -> the architecture the ``config.json`` beside its ``(component, path)`` files names.

    The config is context, not a weight file: one that is missing, not a regular
    file (a FIFO would block the read), too big or not JSON says nothing.
    """
    found: dict[str, Architecture] = {}
    for component, path in files:
        config = Path(path).parent / "config.json"
        if component in found or not Path(path).is_file() or not config.is_file():
            continue
        try:
            data = bounded.read_json(str(config), MAX_CONFIG)
        except (bounded.Refused, OSError, ValueError):
            continue
        model = from_config(data, str(config)) if isinstance(data, dict) else None
        if model is not None:
            found[component] = model
    return found


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
