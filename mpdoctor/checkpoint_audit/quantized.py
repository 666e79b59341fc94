"""Quantized modules: weights stored in fp8, fp4 or packed integers, with the scales that read them beside them.

A quantized checkpoint mixes dtypes by design: DeepSeek-V3 and Qwen FP8 store each
``*_proj.weight`` in float8_e4m3fn with a float32 ``weight_scale_inv`` beside it,
and keep norms, embeddings and ``lm_head`` in bfloat16; compressed-tensors and FBGEMM
fp8 write ``weight_scale`` and ``input_scale``; bitsandbytes 4-bit a uint8 ``weight``
with ``weight.absmax``, ``weight.quant_map`` and ``weight.quant_state.*``, its 8-bit
an int8 ``weight`` with ``SCB``; GPTQ and AWQ an int32 ``qweight`` and ``qzeros`` with
float16 ``scales``; NVFP4 and MXFP4 packed uint8 weights (``*_blocks``) with fp8 or
E8M0 scales. Judged as a plain model, every such module "mixes dtypes" and the rest
is "in another dtype than the float8 model", and the fix offered, ``model.to(torch.
float8_e4m3fn)``, would destroy it.

So a module is quantized when it holds a scale or zero-point beside its weight (the
names above: ``*_scale``, ``*_scale_inv``, ``scales``, ``qzeros``, ``absmax``,
``quant_map``, ``SCB``...) and either the ``config.json`` beside it has a
``quantization_config`` or the module stores a weight in a quantized dtype (fp8, fp4,
fp6, int8, uint8, int32). A float32 ``logit_scale`` beside float16 weights is no
quantization. Quantized modules are left out of the dtype judgement (AUDIT002,
AUDIT004): the model's dtype is that of the rest (in a tie, the config's ``dtype``),
and they are reported once, as info, with the method (the config's ``quant_method``,
or the one their tensor names are written by).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from mpdoctor.checks.audit import QUANTIZED_MODULES
from mpdoctor.checkpoint_audit.tree import ModelFacts, pattern
from mpdoctor.findings import Finding, FixStep, info

MAX_EVIDENCE = 20
# Dtypes a quantized weight is stored in. Only where one of these is in the checkpoint, or a config says it is
# quantized, are its names looked at: a plain bf16 checkpoint of 100,000 tensors costs nothing more.
STORAGE = frozenset(
    (
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn_x2",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "int8",
        "uint8",
        "int32",
        "uint32",
        "int16",
        "uint16",
    )
)
# bitsandbytes 4-bit keeps its quant state under the weight's name: q_proj.weight.absmax is q_proj's.
NESTED = re.compile(r"(?P<owner>.+)\.weight\.(?:absmax|quant_map|nested_absmax|nested_quant_map|quant_state\b.*)\Z")
# A scale, zero point or packed part beside a module's weight, as the quantizers name them (the last name part).
AUX = re.compile(
    r"(?:weight_scale(?:_inv|_2)?|input_scale(?:_ub)?|output_scale|[kvq]_scale|weight_global_scale|"
    r"input_global_scale|weight_zero_point|input_zero_point|weight_packed|weight_shape|scales?|scale_inv|qzeros|"
    r"zeros|g_idx|qweight|SCB|weight_format|zero_point|.+_(?:scale|scale_inv|scales|zero_point|blocks))\Z"
)
# How the tensor names tell the method, where no config names it: the first family whose name is found.
FAMILIES = (
    ("bitsandbytes 4-bit", re.compile(r"\.weight\.(?:absmax|quant_map|quant_state)")),
    ("bitsandbytes 8-bit", re.compile(r"\.SCB\Z")),
    ("GPTQ/AWQ (int32-packed qweight, qzeros, scales)", re.compile(r"\.q(?:weight|zeros)\Z")),
    ("compressed-tensors packed weights", re.compile(r"\.weight_packed\Z")),
    ("MXFP4 (packed *_blocks with *_scales)", re.compile(r"_blocks\Z")),
    ("fp8 with block scales (weight_scale_inv)", re.compile(r"\.weight_scale_inv\Z")),
)


@dataclass
class Quantized:
    """The quantized modules of a checkpoint: which tensors are theirs, and what to say of them."""

    mask: list[bool] = field(default_factory=list)  # per tensor: a quantized module's, left out of the judgement
    modules: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)  # (component, module) ->
    # [(tensor name within it, dtype)]
    methods: dict[str, str] = field(default_factory=dict)  # component -> the method, in words


def owner(name: str) -> str:
    """The module a tensor belongs to, bitsandbytes' nested quant state counted as its module's own."""
    nested = NESTED.match(name)
    return nested.group("owner") if nested else name.rpartition(".")[0]


def find(components: list[str], names: list[str], dtypes: list[str], facts: ModelFacts) -> Optional[Quantized]:
    """The quantized modules of these tensors (columns, one entry per tensor); None when there are none."""
    configured = {c: m.quantization for c, m in facts.models.items() if getattr(m, "quantization", "")}
    if not configured and STORAGE.isdisjoint(dtypes):
        return None
    held: dict[tuple[str, str], list[int]] = {}  # (component, module) -> its tensors' positions
    aux: set[tuple[str, str]] = set()
    for i, (component, name) in enumerate(zip(components, names)):
        key = (component, owner(name))
        held.setdefault(key, []).append(i)
        if NESTED.match(name) or AUX.match(name.rpartition(".")[2]):
            aux.add(key)
    found = Quantized(mask=[False] * len(names))
    for key in [k for k in held if k in aux]:  # in the file's order: the report reads the same every run
        positions = held[key]
        if key[0] in configured or any(dtypes[i] in STORAGE for i in positions):
            prefix = len(key[1]) + 1 if key[1] else 0
            found.modules[key] = [(names[i][prefix:], dtypes[i]) for i in positions]
            for i in positions:
                found.mask[i] = True
    if not found.modules:
        return None
    for component in dict.fromkeys(c for c, _ in found.modules):
        mine = [f"{m}.{leaf}" for (c, m), tensors in found.modules.items() if c == component for leaf, _ in tensors]
        named = next((words for words, rule in FAMILIES if any(map(rule.search, mine))), "")
        if component in configured:
            named = f"{configured[component]}, as config.json's quantization_config says"
        stored = [d for (c, _), tensors in found.modules.items() if c == component for _, d in tensors if d in STORAGE]
        found.methods[component] = named or f"{', '.join(dict.fromkeys(stored))} weights with scales beside them"
    return found


def findings(found: Optional[Quantized], model_dtypes: dict[str, str]) -> list[Finding]:
    """AUDIT007 (info): the quantized modules, by pattern, with the method and what not to do to them."""
    if found is None:
        return []
    groups: dict[tuple, int] = {}
    for (component, module), tensors in found.modules.items():
        where = f"{component}/{module}" if component else module
        layout = ", ".join(f"{leaf} {dtype}" for leaf, dtype in sorted(tensors))
        key = (pattern(where), layout)
        groups[key] = groups.get(key, 0) + 1
    lines = [
        f"{where}: {layout}" + (f" ({count} modules)" if count > 1 else "") for (where, layout), count in groups.items()
    ]
    if len(lines) > MAX_EVIDENCE:
        lines = lines[:MAX_EVIDENCE] + [f"... and {len(lines) - MAX_EVIDENCE} more"]
    methods = "; ".join(dict.fromkeys(found.methods.values()))
    rest = ", ".join(dict.fromkeys(d for d in model_dtypes.values() if d))
    title = (
        f"{len(found.modules)} module(s) are stored quantized ({methods}): their mix of dtypes is the method's "
        "layout, not an accident, and they are left out of the dtype judgement"
        + (f"; the rest of the model is {rest}" if rest else "")
    )
    fix = FixStep(
        "Nothing to do: load it with its quantization support (transformers reads config.json's "
        "quantization_config in `from_pretrained`; bitsandbytes, GPTQ and AWQ need their kernels installed). "
        "Never cast it with `model.to(dtype)` or `.half()`: that reinterprets or destroys the quantized weights "
        "and their scales"
    )
    return [QUANTIZED_MODULES.stamp(info(title, [*lines], [fix]))]
