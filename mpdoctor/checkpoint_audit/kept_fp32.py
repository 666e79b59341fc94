"""Which modules a model's library keeps in float32 on purpose: the architecture's rule, not a guess from names.

transformers keeps the modules a model class lists in ``_keep_in_fp32_modules`` in
float32 when it loads the model in float16 (T5's ``wo``, which overflows in
float16), and those in ``_keep_in_fp32_modules_strict`` in float16 and bfloat16
loads; diffusers keeps its ``_keep_in_fp32_modules`` in float32 whatever the dtype.
A module those lists do not name is not kept in float32 by the loader: an fp32
norm in an fp16 Llama is an accident (Llama keeps nothing), not a policy.

The lists are read from the libraries' own classes: ``kept_fp32.json`` holds
them for every model class of the transformers and diffusers versions it names,
written by ``python -m mpdoctor.checkpoint_audit.kept_fp32`` from the installed
libraries (``tests/test_audit_architectures.py`` checks the table against them).
The architecture comes from the ``config.json`` beside the weights
(``architectures`` for transformers, ``_class_name`` for diffusers), or from a live
model, which carries its own lists (merged from its submodels by transformers).

How a name matches a tensor differs by library and version: transformers 5 (read
in 5.24.0) searches the tensor's full name for it, ``*`` standing for any text
(``core_model_loading.build_glob_alternation``: "wo" keeps a "wout" too);
transformers 4 searched for it between dots or the ends of the name, and diffusers
matches whole dotted parts (``"wo" in name.split(".")``). The version is the
``transformers_version`` the config was written by (5 when it names none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from packaging.version import InvalidVersion, Version

from mpdoctor.checkpoint_audit import kept_fp32_table as table

TRANSFORMERS = "transformers"
DIFFUSERS = "diffusers"
# transformers renamed from_pretrained's `torch_dtype` to `dtype` in 4.56.0 (the old name still works, with a
# deprecation warning); diffusers' from_pretrained takes `torch_dtype`.
DTYPE_KEYWORD_SINCE = Version("4.56.0")
DTYPES = ("float32", "float16", "bfloat16", "float64")


@dataclass
class Architecture:
    """What is known of a model's class: its library, and the modules that library keeps in float32."""

    name: str = ""  # T5ForConditionalGeneration, UNet2DConditionModel, a live model's class
    library: str = ""  # transformers, diffusers; empty when unknown
    keep: list[str] = field(default_factory=list)  # kept in float32 for float16 (transformers), always (diffusers)
    strict: list[str] = field(default_factory=list)  # kept in float32 for float16 and bfloat16 (transformers)
    source: str = ""  # where the lists come from, in words
    known: bool = False  # the library's lists are known: a module they do not name is not kept on purpose
    dtype: str = ""  # the dtype its config names (dtype / torch_dtype); empty when none
    version: str = ""  # the library version that wrote the config (transformers_version, _diffusers_version)
    listed_by: dict[str, str] = field(default_factory=dict)  # a name its config lists beyond the class's -> the config
    quantization: str = ""  # its quantization_config's quant_method (fp8, gptq, bitsandbytes...); empty when none

    def source_of(self, keep: str) -> str:
        """What keeps ``keep`` in float32: the class's rule, or the config that lists it."""
        return self.listed_by.get(keep, self.source)

    def kept(self, path: str, names: Iterable[str] = ()) -> str:
        """The list entry that keeps module ``path`` (whose tensors are ``names``) in float32; empty when none."""
        names = list(names)
        for keep in (*self.strict, *self.keep):
            if self.library == TRANSFORMERS and not self._old_matching():
                pattern = re.compile(re.escape(keep).replace(r"\*", ".*"))
            else:
                pattern = re.compile(rf"(^|\.){re.escape(keep)}($|\.)")
            # The loader matches each tensor's full name: the module's path matching means all of them do.
            if pattern.search(path) or (names and all(pattern.search(n) for n in names)):
                return keep
        return ""

    def _old_matching(self) -> bool:
        return bool(self.version) and _version(self.version) is not None and _version(self.version) < Version("5")

    def load_call(self, dtype: str) -> str:
        """Its loader's call for one dtype, in the words of the library version at hand (the config's writer's, or
        the live model's): transformers 4.56 renamed `from_pretrained`'s `torch_dtype` to `dtype`."""
        if self.library == TRANSFORMERS:
            version = _version(self.version) if self.version else None
            if version is None:
                return (
                    f"`from_pretrained(..., dtype=torch.{dtype})` (transformers 4.56 and later; `torch_dtype=` before)"
                )
            if version >= DTYPE_KEYWORD_SINCE:
                return f"`from_pretrained(..., dtype=torch.{dtype})` (transformers {version}'s name for it)"
            return f"`from_pretrained(..., torch_dtype=torch.{dtype})` (transformers {version}; `dtype=` from 4.56 on)"
        return f"`from_pretrained(..., torch_dtype=torch.{dtype})`"


def _version(text: str) -> Optional[Version]:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def from_config(config: Mapping[str, Any], source: str) -> Optional[Architecture]:
    """The architecture a ``config.json`` names, with its library's keep lists; None when it names none.

    Names listed in the config itself (``_keep_in_fp32_modules``, as some exports write) count too.
    """
    dtype = config.get("dtype") or config.get("torch_dtype")
    dtype = dtype if isinstance(dtype, str) and dtype in DTYPES else ""
    quantization = _quant_method(config.get("quantization_config"))
    listed = _names(config.get("_keep_in_fp32_modules")) + _names(config.get("_keep_in_fp32_modules_strict"))
    architectures = config.get("architectures")
    name = architectures[0] if isinstance(architectures, list) and architectures else ""
    name = name if isinstance(name, str) else ""
    diffusers_name = config.get("_class_name") if isinstance(config.get("_class_name"), str) else ""
    remote = isinstance(config.get("auto_map"), dict) and bool(config.get("auto_map"))
    if diffusers_name:
        found = Architecture(diffusers_name, DIFFUSERS, version=str(config.get("_diffusers_version") or ""))
        rules = table.DIFFUSERS.get(diffusers_name)
        found.keep = list(rules or [])
        found.known = rules is not None or diffusers_name in table.DIFFUSERS_CLASSES
        found.source = f"diffusers {table.DIFFUSERS_VERSION}'s {diffusers_name}"
    elif name:
        found = Architecture(name, TRANSFORMERS, version=str(config.get("transformers_version") or ""))
        keep, strict = table.TRANSFORMERS.get(name, ([], []))
        found.keep, found.strict = list(keep), list(strict)
        # Remote code (auto_map) is its own class, whatever its name: its lists are unknown.
        found.known = not remote and name in table.TRANSFORMERS_CLASSES
        found.source = f"transformers {table.TRANSFORMERS_VERSION}'s {name}"
    elif listed:
        found = Architecture(source=source)
    else:
        return Architecture(dtype=dtype, source=source, quantization=quantization) if dtype or quantization else None
    for keep in listed:  # the config's own lists: what this checkpoint's loader was told
        if keep not in found.keep and keep not in found.strict:
            found.keep.append(keep)
            found.listed_by[keep] = source
    found.dtype, found.quantization = dtype, quantization
    return found


def _quant_method(config: object) -> str:
    """A quantization_config's method in words: its quant_method (bitsandbytes says 4-bit or 8-bit); "" for none."""
    if not isinstance(config, dict):
        return ""
    method = str(config.get("quant_method") or "quantized")[:60]
    if method == "bitsandbytes":
        bits = "4-bit" if config.get("load_in_4bit") else "8-bit" if config.get("load_in_8bit") else ""
        return f"bitsandbytes {bits}".strip()
    return method


def from_live(model: Any) -> Optional[Architecture]:
    """A live model's architecture: a transformers or diffusers model carries its own lists (transformers merges its
    submodels' into them); another module only what it lists itself, and None when it lists nothing.

    Its config's dtype is left out: a model cast by hand (``.half()``) keeps the config it was built with.
    """
    library = next(
        (
            cls.__module__.split(".")[0]
            for cls in type(model).__mro__
            if cls.__name__ in ("PreTrainedModel", "ModelMixin")
            and cls.__module__.split(".")[0] in (TRANSFORMERS, DIFFUSERS)
        ),
        "",
    )
    keep = _names(getattr(model, "_keep_in_fp32_modules", None))
    strict = _names(getattr(model, "_keep_in_fp32_modules_strict", None))
    label = f"{type(model).__name__}._keep_in_fp32_modules"
    if not library:
        return Architecture(type(model).__name__, keep=keep, strict=strict, source=label) if keep or strict else None
    version = str(getattr(__import__(library), "__version__", ""))
    return Architecture(type(model).__name__, library, keep, strict, label, known=True, version=version)


def _names(value: object) -> list[str]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return sorted(str(v) for v in value if isinstance(v, str) and v)
    return []


# ---------------------------------------------------------------- the table, from the installed libraries


def read_libraries() -> dict:
    """Every model class of the installed transformers and diffusers, with its keep lists (imports each model file)."""
    import importlib
    import inspect
    import logging
    import warnings

    import diffusers
    import transformers
    from diffusers import ModelMixin
    from transformers import PreTrainedModel

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    found: dict = {"transformers": {}, "diffusers": {}, "unreadable": []}
    # transformers' model files (models/<name>/modeling_<name>.py) and diffusers' (diffusers.models.*)
    for package, base in ((transformers, PreTrainedModel), (diffusers.models, ModelMixin)):
        library = package.__name__.split(".")[0]
        modules = sorted(
            m for m in set(package._class_to_module.values()) if library == "diffusers" or ".modeling_" in m
        )
        for name in modules:
            try:
                module = importlib.import_module(f"{package.__name__}.{name}")
            except Exception as exc:  # a model file that needs a package not installed (torchaudio, ...)
                found["unreadable"].append(f"{package.__name__}.{name}: {type(exc).__name__}")
                continue
            for cls_name, cls in vars(module).items():
                if not (inspect.isclass(cls) and issubclass(cls, base) and cls is not base):
                    continue
                if not cls.__module__.startswith(f"{library}.models."):
                    continue
                keep = _names(getattr(cls, "_keep_in_fp32_modules", None))
                strict = _names(getattr(cls, "_keep_in_fp32_modules_strict", None))
                found[library][cls_name] = (keep, strict)
    found["versions"] = {"transformers": transformers.__version__, "diffusers": diffusers.__version__}
    return found


def write_table(path: str) -> None:
    """Write what the installed libraries keep in float32 to ``path`` (``kept_fp32.json``, read by kept_fp32_table)."""
    import json

    found = read_libraries()
    data = {
        "about": "The modules transformers and diffusers keep in float32, per model class. Written by "
        "`python -m mpdoctor.checkpoint_audit.kept_fp32` from the installed libraries; do not edit.",
        "versions": found["versions"],
        "transformers": {k: [v[0], v[1]] for k, v in sorted(found["transformers"].items()) if v[0] or v[1]},
        "diffusers": {k: v[0] for k, v in sorted(found["diffusers"].items()) if v[0]},
        "transformers_classes": sorted(found["transformers"]),
        "diffusers_classes": sorted(found["diffusers"]),
    }
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=0) + "\n")
    if found["unreadable"]:
        print("not read (a package they need is missing):", ", ".join(found["unreadable"]))


if __name__ == "__main__":
    import os

    write_table(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kept_fp32.json"))
