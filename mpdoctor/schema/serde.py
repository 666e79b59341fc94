"""Dataclasses to JSON-ready dicts and back, with validation, plus their JSON Schema.

The snapshot and the report are plain dataclasses whose fields carry their user
documentation in ``metadata["doc"]`` (see :func:`fact`). This module is the only
place that knows how those classes map to JSON, so the loader, the writer and the
shipped JSON Schema cannot drift apart.

Evolution within a schema version, as the loader and the schema both state it:

* fields may be added: the loader ignores keys it does not know, and the schema
  allows extra properties on every object;
* a field with a default may be missing: the loader gives it its default, and the
  schema's ``required`` lists only the fields without one, plus those whose
  :func:`fact` says ``required=True`` (``schema_version``: how a document is
  recognised, so no reader may assume it);
* a field's :func:`fact` may carry further JSON Schema keywords (``schema=``), e.g.
  ``{"const": 1}`` to pin ``schema_version`` to the version the schema describes;
  the loader enforces ``const`` too;
* a ``Literal`` field (a vocabulary: ``mpdoctor.snapshot.vocab``) may carry a value
  this version does not know: the loader keeps the string, for readers to treat as
  unknown, and the schema says so (``anyOf`` this version's ``enum``, or any string);
* a value of the wrong type is refused by both. An integral number written as a
  float (``2.0``) is an integer to both, as JSON Schema says; the loader returns it
  as an ``int``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from typing import Any, Literal, Union


class DataError(ValueError):
    """Data that does not fit the declared shape; the message names the field."""


def fact(
    doc: str,
    default: Any = dataclasses.MISSING,
    factory: Any = dataclasses.MISSING,
    *,
    required: bool = False,
    schema: dict[str, Any] | None = None,
) -> Any:
    """A dataclass field with its documentation (shown in the JSON Schema).

    ``required=True`` makes the field required in the JSON even though Python code
    may leave it to its default (the loader refuses data without it, and the schema
    lists it in ``required``). ``schema`` adds JSON Schema keywords to the field's
    schema; of those, the loader enforces ``const``.
    """
    metadata: dict[str, Any] = {"doc": doc}
    if required:
        metadata["required"] = True
    if schema:
        if not set(schema) <= _FIELD_KEYWORDS:
            raise TypeError(f"fact(schema=...) supports only {sorted(_FIELD_KEYWORDS)}, not {sorted(schema)}")
        metadata["schema"] = dict(schema)
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


# The keywords fact(schema=...) may add: each is one the loader enforces as well, so the two cannot disagree.
_FIELD_KEYWORDS = frozenset({"const"})


def _required(f: dataclasses.Field) -> bool:
    """Whether the JSON must carry the field: it has no default, or its fact says so."""
    return not _has_default(f) or bool(f.metadata.get("required"))


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def to_data(obj: Any) -> Any:
    """A dataclass tree as JSON-ready data (dicts, lists, scalars)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _literal_values(args: tuple) -> tuple[str, ...]:
    if not args or not all(isinstance(a, str) for a in args):
        raise TypeError(f"only Literals of strings are supported, not {args!r}")
    return args


def from_data(cls: Any, data: Any, where: str = "$") -> Any:
    """Build ``cls`` from JSON data, checking every type; unknown keys are ignored.

    Missing keys take the field's default, so a snapshot written by an older
    mpdoctor of the same schema version still loads. A ``Literal`` field takes
    any string: a value it does not declare (from a newer mpdoctor of the same
    schema version) is kept as it is, for readers to treat as unknown.
    """
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
    if origin is Literal:
        _literal_values(args)
        if isinstance(data, str):
            return data
        raise DataError(f"{where}: expected str, got {_type_name(data)}")
    if origin is Union:
        if data is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return from_data(inner[0], data, where)
    if origin is list:
        if not isinstance(data, list):
            raise DataError(f"{where}: expected a list, got {_type_name(data)}")
        return [from_data(args[0], item, f"{where}[{i}]") for i, item in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_type_name(data)}")
        return {str(k): from_data(args[1], v, f"{where}.{k}") for k, v in data.items()}
    if dataclasses.is_dataclass(cls):
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_type_name(data)}")
        hints = _hints(cls)
        values = {}
        for f in dataclasses.fields(cls):
            if f.name in data:
                values[f.name] = from_data(hints[f.name], data[f.name], f"{where}.{f.name}")
                keywords = f.metadata.get("schema", {})
                if "const" in keywords and not _same(values[f.name], keywords["const"]):
                    raise DataError(f"{where}.{f.name}: expected {keywords['const']!r}, got {values[f.name]!r}")
            elif _required(f):
                raise DataError(f"{where}: missing required field {f.name!r}")
        return cls(**values)
    if cls is Any:
        return data
    if cls is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if cls is float and isinstance(data, float) and not math.isfinite(data):
        raise DataError(f"{where}: expected a finite number, got {data}")  # JSON has no NaN or Infinity
    if cls is int and isinstance(data, float) and math.isfinite(data) and data.is_integer():
        return int(data)  # JSON Schema's "integer" is any number with no fractional part: 2.0 is 2
    if cls in (str, int, float, bool):
        if isinstance(data, cls) and not (cls is int and isinstance(data, bool)):
            return data
        raise DataError(f"{where}: expected {cls.__name__}, got {_type_name(data)}")
    raise TypeError(f"unsupported field type {cls!r} at {where}")


def _same(value: Any, const: Any) -> bool:
    """JSON equality, as the schema's ``const`` compares: ``True`` is not ``1``, ``1.0`` is."""
    if isinstance(value, bool) or isinstance(const, bool):
        return isinstance(value, bool) and isinstance(const, bool) and value == const
    return bool(value == const)


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}
OPEN_VOCABULARY = (
    "One of the values listed in the enum; a newer mpdoctor of this schema version may write another, "
    "which readers should treat as unknown."
)


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _class_doc(cls: type) -> str:
    """The first line of the class's docstring; none for the signature dataclass() writes when there is none."""
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(f"{cls.__name__}("):
        return ""
    return doc.splitlines()[0]


def json_schema(cls: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of ``cls``; dataclasses are collected into ``defs``.

    Objects allow properties they do not list and require only the fields
    without a default and those whose :func:`fact` says ``required=True``; a
    field's ``schema=`` keywords are added to its schema; a ``Literal`` is its
    ``enum`` or any other string (see the module's docstring).
    """
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
    if origin is Literal:
        return {"anyOf": [{"enum": list(_literal_values(args))}, {"type": "string"}]}
    if origin is Union:
        inner = [a for a in args if a is not type(None)]
        return {"anyOf": [json_schema(inner[0], defs), {"type": "null"}]}
    if origin is list:
        return {"type": "array", "items": json_schema(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": json_schema(args[1], defs)}
    if cls in _SCALARS:
        return {"type": _SCALARS[cls]}
    if cls is Any:
        return {}
    if dataclasses.is_dataclass(cls):
        name = cls.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: allows recursive types
            hints = _hints(cls)
            properties = {}
            for f in dataclasses.fields(cls):
                prop = {**json_schema(hints[f.name], defs), **f.metadata.get("schema", {})}
                doc = _sentences(f.metadata.get("doc", ""), _vocabulary_note(hints[f.name]))
                if doc:
                    prop = {"description": doc, **prop}
                properties[f.name] = prop
            described = {"description": _class_doc(cls)} if _class_doc(cls) else {}
            defs[name] = {
                "type": "object",
                **described,
                "properties": properties,
                "required": [f.name for f in dataclasses.fields(cls) if _required(f)],
            }
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"unsupported field type {cls!r}")


def _vocabulary_note(cls: Any) -> str:
    """OPEN_VOCABULARY for a field that holds a Literal (alone, optional, or in a list or dict); else ""."""
    if typing.get_origin(cls) is Literal:
        return OPEN_VOCABULARY
    return next((OPEN_VOCABULARY for a in typing.get_args(cls) if _vocabulary_note(a)), "")


def _sentences(*parts: str) -> str:
    """The non-empty parts as one text, each ending in a full stop when followed by another."""
    parts = tuple(p for p in parts if p)
    return " ".join(p if i == len(parts) - 1 or p.endswith((".", "!", "?")) else f"{p}." for i, p in enumerate(parts))
