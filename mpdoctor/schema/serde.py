"""Dataclasses to JSON-ready dicts and back, with validation, plus their JSON Schema.

The snapshot and the report are plain dataclasses whose fields carry their user
documentation in ``metadata["doc"]`` (see :func:`fact`). This module is the only
place that knows how those classes map to JSON, so the loader, the writer and the
shipped JSON Schema cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from typing import Any, Union


class DataError(ValueError):
    """Data that does not fit the declared shape; the message names the field."""


def fact(doc: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field with its documentation (shown in the JSON Schema)."""
    return dataclasses.field(default=default, default_factory=factory, metadata={"doc": doc})


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def to_data(obj: Any) -> Any:
    """A dataclass tree as JSON-ready data (dicts, lists, scalars)."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def from_data(cls: Any, data: Any, where: str = "$") -> Any:
    """Build ``cls`` from JSON data, checking every type; unknown keys are ignored.

    Missing keys take the field's default, so a snapshot written by an older
    mpdoctor of the same schema version still loads.
    """
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
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
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DataError(f"{where}: missing required field {f.name!r}")
        return cls(**values)
    if cls is Any:
        return data
    if cls is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if cls is float and isinstance(data, float) and not math.isfinite(data):
        raise DataError(f"{where}: expected a finite number, got {data}")  # JSON has no NaN or Infinity
    if cls in (str, int, float, bool):
        if isinstance(data, cls) and not (cls is int and isinstance(data, bool)):
            return data
        raise DataError(f"{where}: expected {cls.__name__}, got {_type_name(data)}")
    raise TypeError(f"unsupported field type {cls!r} at {where}")


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(cls: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of ``cls``; dataclasses are collected into ``defs``."""
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
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
                prop = json_schema(hints[f.name], defs)
                if f.metadata.get("doc"):
                    prop = {"description": f.metadata["doc"], **prop}
                properties[f.name] = prop
            defs[name] = {
                "type": "object",
                "description": (cls.__doc__ or "").strip().splitlines()[0],
                "properties": properties,
                "required": [f.name for f in dataclasses.fields(cls)],
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"unsupported field type {cls!r}")
