"""What a snapshot must pass before it is trusted: the bounded read, the schema version, the device numbers.

Every way it fails is a :class:`SnapshotError` of one line, for the user: a file that cannot be read or is
not JSON, a schema version this mpdoctor does not know, a device number no machine can have (a field of the
wrong type is the loader's, ``mpdoctor.snapshot.snapshot_from_data``, which runs these).

It imports nothing of its own package: ``mpdoctor.snapshot`` imports it (and re-exports ``SnapshotError``,
``MAX_SNAPSHOT_BYTES`` and ``read_json_document``), never the other way round.
"""

from __future__ import annotations

import json
import math
from typing import Optional

from mpdoctor.portable import files


class SnapshotError(ValueError):
    """A snapshot file that cannot be used; the message is meant for the user."""


def checked_version(data: dict, what: str, known: int) -> int:
    """``data``'s schema_version, refused unless it is ``known``, this mpdoctor's (what: "snapshot" or "report").

    An integral float (``1.0``) is the integer it equals, as in the JSON Schema.
    """
    version = data.get("schema_version")
    if isinstance(version, float) and math.isfinite(version) and version.is_integer():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise SnapshotError(f"not a {what}: no integer schema_version")
    if version > known:
        raise SnapshotError(
            f"{what} schema version {version} is newer than this mpdoctor understands "
            f"({known}); upgrade mpdoctor (pip install -U mpdoctor)"
        )
    if version < known:
        raise SnapshotError(f"unknown {what} schema version {version}")
    return version


# The most devices, and so the highest ordinal or index, a snapshot may name. A real node has a handful; a
# synthetic snapshot of a whole fleet may have tens of thousands. What matters is that -1e300 (which loads as a
# 301-digit integer) or -1 never reaches code that indexes a list with it.
MAX_DEVICE_NUMBER = (1 << 31) - 1


def check_device_numbers(snap) -> None:
    """Refuse a snapshot (a loaded ``Snapshot``) whose device ordinals, indices or counts no machine can have,
    naming the field.

    The types were checked by the loader; these are ranges. A hand-edited ``ordinal: -1e300`` once crashed
    every gpu check with IndexError; it is a fact about the file, said once, before any check runs.
    """
    torch = snap.torch
    numbers: list[tuple[str, Optional[int]]] = [
        ("$.torch.device_count", torch.device_count),
        ("$.torch.runtime_device_count", torch.runtime_device_count),
        ("$.environment.oneflow.runtime.device_count", snap.environment.oneflow.runtime.device_count),
    ]
    numbers += [(f"$.torch.devices[{i}].ordinal", dev.ordinal) for i, dev in enumerate(torch.devices)]
    for i, gpu in enumerate(snap.machine.nvml.gpus):
        numbers.append((f"$.machine.nvml.gpus[{i}].index", gpu.index))
        numbers += [
            (f"$.machine.nvml.gpus[{i}].mig_devices[{j}].index", m.index) for j, m in enumerate(gpu.mig_devices)
        ]
    for where, number in numbers:
        if number is not None and not 0 <= number <= MAX_DEVICE_NUMBER:
            raise SnapshotError(
                f"corrupt snapshot: {where}: expected a device number from 0 to {MAX_DEVICE_NUMBER}, "
                f"got {_shown_number(number)}"
            )


def _shown_number(number: int) -> str:
    """A number as an error quotes it: -1e300 loads as 301 digits, which say less than their count does."""
    if number.bit_length() <= 64:
        return str(number)
    return f"a {'negative ' if number < 0 else ''}{len(str(abs(number)))}-digit number"


MAX_SNAPSHOT_BYTES = 64 << 20  # a real snapshot is some 100 KB; /dev/zero or a 1 GB file is refused, not read


def read_json_document(path: str, cannot_read: str, not_json: str) -> object:
    """The JSON in file ``path``, through the one bounded reader (``mpdoctor.portable.files.read_json``).

    Every way it fails is a SnapshotError of one line: ``cannot_read`` leads when the file cannot be read (missing,
    a device, a FIFO, too large), ``not_json`` when what it holds is not JSON mpdoctor reads (not UTF-8 text,
    invalid, nested too deep, an integer too long).
    """
    try:
        return files.read_json(path, MAX_SNAPSHOT_BYTES)
    except files.Refused as exc:
        raise SnapshotError(f"{cannot_read}: it is {exc.why}") from None
    except OSError as exc:
        raise SnapshotError(f"{cannot_read}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SnapshotError(f"{not_json}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{not_json}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})") from None
    except ValueError as exc:
        raise SnapshotError(f"{not_json}: {exc}") from None
