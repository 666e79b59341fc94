"""The modules transformers and diffusers keep in float32, per model class: ``kept_fp32.json``, read once.

The data is written by ``python -m mpdoctor.checkpoint_audit.kept_fp32`` from the installed libraries (the
versions it was read from are in the file); ``tests/test_audit_architectures.py`` checks it against them.
"""

from __future__ import annotations

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kept_fp32.json"), encoding="utf-8") as _file:
    _DATA = json.load(_file)

TRANSFORMERS_VERSION: str = _DATA["versions"]["transformers"]
DIFFUSERS_VERSION: str = _DATA["versions"]["diffusers"]
# class -> (_keep_in_fp32_modules, _keep_in_fp32_modules_strict), for the classes that list any
TRANSFORMERS: dict[str, tuple[list[str], list[str]]] = {k: (v[0], v[1]) for k, v in _DATA["transformers"].items()}
# class -> _keep_in_fp32_modules, for the classes that list any
DIFFUSERS: dict[str, list[str]] = dict(_DATA["diffusers"])
# Every model class: one not listed above keeps nothing in float32
TRANSFORMERS_CLASSES = frozenset(_DATA["transformers_classes"])
DIFFUSERS_CLASSES = frozenset(_DATA["diffusers_classes"])
del _DATA
