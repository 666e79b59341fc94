"""The JSON contracts mpdoctor writes (check, explain, audit): one way to lay out and describe each.

Each report puts its version keys first and ships a JSON Schema generated from
its dataclasses. Regenerate all of them with ``python -m mpdoctor.schema``;
tests fail when a shipped file is out of date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpdoctor.schema.serde import json_schema, to_data

SCHEMA_DIR = Path(__file__).parent  # the shipped .schema.json files live beside this module


def schema_path(name: str, version: int) -> Path:
    return SCHEMA_DIR / f"{name}-v{version}.schema.json"


def ordered_data(obj: Any, head: tuple[str, ...]) -> dict:
    """The dataclass as JSON data, with the ``head`` keys first: readers look for the version first."""
    data = to_data(obj)
    return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}


def schema_document(cls: type, name: str, version: int, title: str) -> dict:
    defs: dict = {}
    root = json_schema(cls, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://mpdoctor.dev/schema/{name}-v{version}.schema.json",
            "title": title, **root, "$defs": defs}
