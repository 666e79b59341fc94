"""The JSON contracts mpdoctor writes (check, explain, audit): one way to lay out and describe each.

Each report puts its version keys first and ships a JSON Schema generated from
its dataclasses. Regenerate all of them with ``python -m mpdoctor.schema``;
tests fail when a shipped file is out of date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpdoctor.schema.serde import fact, json_schema, to_data

SCHEMA_DIR = Path(__file__).parent  # the shipped .schema.json files live beside this module


def schema_path(name: str, version: int) -> Path:
    return SCHEMA_DIR / f"{name}-v{version}.schema.json"


def ordered_data(obj: Any, head: tuple[str, ...]) -> dict:
    """The dataclass as JSON data, with the ``head`` keys first: readers look for the version first."""
    data = to_data(obj)
    return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}


def version_fact(doc: str, version: int) -> Any:
    """The ``schema_version`` field of a contract: defaults to ``version`` in Python, but the JSON must carry it.

    It is how a reader recognises the document and its layout, so the schema requires
    it and pins it (``const``) to the version the schema file describes; the loader
    refuses data without it, or with another value.
    """
    return fact(doc, version, required=True, schema={"const": version})


EVOLUTION = (
    "Within schema version {version}, newer mpdoctor versions may add fields (every object allows "
    "properties it does not list; ignore them) and values to the vocabularies (a field whose description "
    "says so is one of its enum's values or any other string; treat one not listed as unknown). `required` "
    "lists the fields without a default, and schema_version, which every document carries and which is "
    "always {version} under this schema; a reader gives any other missing field its default. A field is "
    "removed, renamed or changes type only with a new schema version."
)


def schema_document(cls: type, name: str, version: int, title: str) -> dict:
    defs: dict = {}
    root = json_schema(cls, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://mpdoctor.dev/schema/{name}-v{version}.schema.json",
        "title": title,
        "description": EVOLUTION.format(version=version),
        **root,
        "$defs": defs,
    }
