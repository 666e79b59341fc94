"""Read a .safetensors file's header: every tensor's name, dtype and shape, without its data.

The format: 8 bytes little-endian header length N, N bytes of JSON, then the data.
Every claim the header makes is checked against the file before it is believed: a
truncated download or a header that lies about sizes is an error with the reason,
never a read past the end or a crash.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass

MAX_HEADER = 100 << 20  # the format's own limit is 100 MB of JSON
# Bytes per element of each dtype name the format defines.
ITEM_SIZE = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}
# The names torch uses, so every format reads the same in a report.
TORCH_NAME = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "I64": "int64", "I32": "int32", "I16": "int16",
    "I8": "int8", "U64": "uint64", "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
}


class AuditError(ValueError):
    """A file that cannot be audited; the message says which and why, for the user."""


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a checkpoint: where it is, its dtype (torch's name) and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str


def read_header(path: str) -> tuple[list[TensorEntry], dict[str, str]]:
    """The tensors a .safetensors file holds, and its free-form __metadata__."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise AuditError(f"{path}: {size} bytes, too short for a safetensors header")
            (length,) = struct.unpack("<Q", head)
            if length > min(MAX_HEADER, size - 8):
                raise AuditError(f"{path}: the header claims {length} bytes but the file has {size - 8} after "
                                 "its length field: truncated, or not a safetensors file")
            raw = handle.read(length)
    except OSError as exc:
        raise AuditError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise AuditError(f"{path}: the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise AuditError(f"{path}: the header is not a JSON object")
    data_size = size - 8 - length
    metadata = header.pop("__metadata__", None)
    entries = [_entry(path, name, spec, data_size) for name, spec in header.items()]
    meta = {str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {}
    return entries, meta


def _entry(path: str, name: str, spec: object, data_size: int) -> TensorEntry:
    where = f"{path}: tensor {name!r}"
    if not isinstance(spec, dict):
        raise AuditError(f"{where}: its entry is not an object")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if dtype not in ITEM_SIZE:
        raise AuditError(f"{where}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise AuditError(f"{where}: shape {shape!r} is not a list of sizes")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_size):
        raise AuditError(f"{where}: data offsets {offsets!r} fall outside the {data_size} data bytes")
    nbytes = math.prod(shape) * ITEM_SIZE[dtype]
    if offsets[1] - offsets[0] != nbytes:
        raise AuditError(f"{where}: {dtype} {shape} needs {nbytes} bytes, the header gives it "
                         f"{offsets[1] - offsets[0]}")
    return TensorEntry(name, TORCH_NAME[dtype], tuple(shape), nbytes, path)
