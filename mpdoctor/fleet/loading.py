"""Decode many snapshots whose sections repeat: each distinct section is validated and decoded once.

``from_data`` checks every field's type, some 5 ms for a snapshot with a few hundred
installed distributions; the ranks of one job carry the same environment, the
same torch and, per node, the same machine, so a thousand snapshot files hold a
handful of distinct sections. A decoded section is shared by the snapshots that
carry it: they are read, never changed (checks are pure; fleet code replaces). The
values that name the rank (``judging.identity``: probe seconds, the launcher's
rank variables) are left out of the key and decoded for each snapshot on its own.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any, get_type_hints

from mpdoctor.findings import Finding
from mpdoctor.fleet.judging import Identity, identity
from mpdoctor.schema.serde import DataError, from_data
from mpdoctor.snapshot import Snapshot, SnapshotError, snapshot_from_data

SECTIONS = tuple(f.name for f in dataclasses.fields(Snapshot) if dataclasses.is_dataclass(f.default_factory))


class SectionCache:
    """Decodes snapshots (and reports' finding lists), each distinct section text once."""

    def __init__(self) -> None:
        self.hints = get_type_hints(Snapshot)
        self.decoded: dict[tuple[str, str], Any] = {}

    def _section(self, name: str, value: Any, ident: Identity) -> Any:
        """The section decoded once per key; then this snapshot's own values where the key had them normalised."""
        key = ident.section_key(name)
        found = self.decoded.get(key)
        if found is None:
            found = self.decoded[key] = from_data(self.hints[name], value, f"$.{name}")
        for path in ident.normalised.get(name, ()):
            found = _patched(found, path, _at(value, path), f"$.{name}")
        return found

    def snapshot(self, data: Any) -> tuple[Snapshot, Identity]:
        """As ``snapshot_from_data(data)`` (a snapshot or a whole report; SnapshotError with the same messages),
        and the snapshot's identity (``judging.identity``), which keys its sections."""
        if isinstance(data, dict) and "snapshot" in data and "findings" in data:
            inner = data["snapshot"]
            # The versions and shape, checked by snapshot_from_data itself, on the data without its sections.
            snapshot_from_data({**data, "snapshot": _top(inner) if isinstance(inner, dict) else inner})
            data = inner
        top = snapshot_from_data(_top(data))
        ident = identity(data)
        try:
            return dataclasses.replace(
                top, **{name: self._section(name, data[name], ident) for name in SECTIONS if name in data}
            ), ident
        except DataError as exc:
            raise SnapshotError(f"corrupt snapshot: {exc}") from None

    def findings(self, value: Any) -> list[Finding]:
        """A report's findings (``$.findings``), decoded once per distinct list; raises DataError or TypeError."""
        key = ("findings", json.dumps(value, separators=(",", ":")))
        found = self.decoded.get(key)
        if found is None:
            if not isinstance(value, list):
                raise DataError(f"$.findings: expected a list, got {type(value).__name__}")
            found = self.decoded[key] = [from_data(Finding, item) for item in value]
        return list(found)


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _patched(obj: Any, path: tuple[str, ...], raw: Any, where: str) -> Any:
    """A copy of ``obj`` with the field at ``path`` decoded from ``raw`` (copies along the path; ``obj`` unchanged)."""
    where = f"{where}.{path[0]}"
    if len(path) == 1:
        return dataclasses.replace(obj, **{path[0]: from_data(_hints(type(obj))[path[0]], raw, where)})
    return dataclasses.replace(obj, **{path[0]: _patched(getattr(obj, path[0]), path[1:], raw, where)})


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _top(data: Any) -> Any:
    """``data`` without its sections: what is left is cheap to validate as a whole snapshot."""
    return {k: v for k, v in data.items() if k not in SECTIONS} if isinstance(data, dict) else data
