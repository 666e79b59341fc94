"""What the odd modules out mean: AUDIT004 (wholly in another dtype by accident), AUDIT005 (kept in float32).

``tree.py`` finds the odd modules out and words them (``describe``); this turns
them into findings with their fixes in the model's library's words
(``load_in_one_dtype``), and finds the modules the architecture keeps in float32
that a cast by hand left in the model's lower precision (``unkept``).
"""

from __future__ import annotations

from typing import Optional

from mpdoctor.checks.audit import MODULE_IN_ANOTHER_DTYPE, MODULE_KEPT_IN_FLOAT32
from mpdoctor.checks.fixes import alternative
from mpdoctor.checkpoint_audit.kept_fp32 import Architecture
from mpdoctor.checkpoint_audit.tree import ModelFacts, Tree, _label, describe, pattern
from mpdoctor.findings import Finding, FixStep, info, warning

MAX_EVIDENCE = 20  # lines of evidence per finding; the report's odd_modules lists them all


def findings(tree: Tree, facts: Optional[ModelFacts] = None, unkept: Optional[list[str]] = None) -> list[Finding]:
    """AUDIT004 for the accidental odd modules out, AUDIT005 for those kept in float32 on purpose, and for the
    modules the architecture keeps in float32 that ``unkept`` found in the model's lower precision."""
    facts = facts or ModelFacts()
    found = []
    accidental = [o for o in tree.odd if not o.intended]
    intended = [o for o in tree.odd if o.intended]
    if accidental:
        lines = describe(accidental)
        dtypes = ", ".join(dict.fromkeys(o.dtype for o in accidental))
        # The fix speaks the model's dtype and its loader's words: dtype= in transformers 4.56 and later.
        model_dtype = max(
            (o.within_dtype for o in accidental), key=[o.within_dtype for o in accidental].count, default=""
        )
        load = load_in_one_dtype(facts.models.get(_component(accidental[0].module)), model_dtype)
        found.append(
            MODULE_IN_ANOTHER_DTYPE.stamp(
                warning(
                    f"{len(accidental)} module(s) are wholly in another dtype ({dtypes}) than the model around them: "
                    "loaded as saved, their inputs arrive in the model's dtype",
                    _capped(lines),
                    [
                        FixStep(
                            f"Cast on load, the whole model in its dtype: {load}; or run it under torch.autocast, "
                            "which casts per op"
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
                            "Nothing to do under the library's loader (`dtype=...`, `torch_dtype=...`) or "
                            "torch.autocast; code that casts the model by hand (`.half()`) undoes it, and must cast "
                            "these modules' inputs in their forward"
                        )
                    ],
                )
            )
        )
    if unkept:
        found.append(
            MODULE_KEPT_IN_FLOAT32.stamp(
                info(
                    "Modules this architecture keeps in float32 are in the model's lower precision here, as a cast "
                    "by hand (`.half()`) leaves them: keep them in float32",
                    _capped(unkept),
                    [
                        FixStep(
                            "Load it with the library's loader and its dtype argument, which keeps them in float32 "
                            "(transformers: `from_pretrained(..., dtype=torch.float16)`, `torch_dtype=` before 4.56); "
                            "or after a cast by hand, cast these modules back: `module.float()`, whose forward casts "
                            "its input"
                        )
                    ],
                )
            )
        )
    return found


def load_in_one_dtype(model: Optional[Architecture], dtype: str) -> str:
    """How to put the model in its one dtype, in its library's words and version (transformers 4.56 renamed
    `from_pretrained`'s `torch_dtype` to `dtype`; diffusers kept `torch_dtype`)."""
    model = model or Architecture()
    if model.library:
        return f"{model.load_call(dtype)}, or `model.to(torch.{dtype})`"
    return (
        f"`model.to(torch.{dtype})`, or with its loader (transformers' `from_pretrained(..., dtype=torch.{dtype})` "
        "from 4.56 on, `torch_dtype=` before, as diffusers' takes it)"
    )


def _component(label: str) -> str:
    return label.split("/", 1)[0] if "/" in label else ""


def unkept(components: list[str], names: list[str], dtypes: list[str], tree: Tree, facts: ModelFacts) -> list[str]:
    """The modules the architecture keeps in float32 that are in the model's lower precision: T5's ``wo`` after
    ``.half()`` (it overflows in float16). One line per pattern of modules, with its dtype and its rule."""
    found: dict[tuple[str, str], list[str]] = {}
    for component, model in facts.models.items():
        low = tree.dtypes.get(component, "")
        lists = [*model.strict] if low == "bfloat16" else [*model.strict, *model.keep] if low == "float16" else []
        if not lists:
            continue
        rule = Architecture(model.name, model.library, keep=lists, version=model.version)
        for name, dtype, where in zip(names, dtypes, components):
            if where == component and dtype == low:
                keep = rule.kept(name)
                if keep:
                    module = name.rsplit(".", 1)[0] if "." in name else name
                    found.setdefault((pattern(_label(component, module)), keep), []).append(module)
    lines = []
    for (module, keep), modules in found.items():
        count = len(dict.fromkeys(modules))
        model = facts.models[_component(module)]
        lines.append(
            f"{module}: {tree.dtypes[_component(module)]} ({count} module{'' if count == 1 else 's'}); "
            f"{model.source_of(keep)} keeps {keep!r} in float32"
        )
    return lines


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_EVIDENCE:
        return lines
    return lines[:MAX_EVIDENCE] + [f"... and {len(lines) - MAX_EVIDENCE} more (`mpdoctor audit --all`)"]
