"""Where data holds a vocabulary value its dataclass does not declare: the tests hold mpdoctor's own output to them.

The loader (``mpdoctor.schema.serde.from_data``) keeps such a value, for readers to
treat as unknown; the tests require that this version writes only values it declares.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Union

from mpdoctor.schema.serde import _hints, _literal_values


def undeclared_values(cls: Any, data: Any, where: str = "$") -> list[str]:
    """``where: value`` for every ``Literal`` field in ``data`` whose value ``cls`` does not declare.

    Loading accepts such values (see ``from_data``); this says where they are.
    Data that does not fit ``cls`` otherwise is skipped here: ``from_data`` reports it.
    """
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
    if origin is Literal:
        return [f"{where}: {data!r}"] if isinstance(data, str) and data not in _literal_values(args) else []
    if origin is Union:
        return [] if data is None else undeclared_values([a for a in args if a is not type(None)][0], data, where)
    if origin is list and isinstance(data, list):
        return [found for i, item in enumerate(data) for found in undeclared_values(args[0], item, f"{where}[{i}]")]
    if origin is dict and isinstance(data, dict):
        return [found for k, v in data.items() for found in undeclared_values(args[1], v, f"{where}.{k}")]
    if dataclasses.is_dataclass(cls) and isinstance(data, dict):
        hints = _hints(cls)
        return [
            found
            for f in dataclasses.fields(cls)
            if f.name in data
            for found in undeclared_values(hints[f.name], data[f.name], f"{where}.{f.name}")
        ]
    return []
