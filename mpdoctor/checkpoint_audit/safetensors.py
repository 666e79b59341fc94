"""Read a .safetensors file's header: every tensor's name, dtype and shape, without its data.

The format: 8 bytes little-endian header length N, N bytes of JSON, then the data.
Every claim the header makes is checked against the file before it is believed: a
truncated download or a header that lies about sizes is an error with the reason,
never a read past the end or a crash.
"""

from __future__ import annotations

import os
import stat
import struct
from itertools import repeat
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from mpdoctor.checkpoint_audit import header_bulk, sizes

from mpdoctor.portable import files

MAX_HEADER = 100 << 20  # the format's own limit is 100 MB of JSON
MAX_DEPTH = 8  # the header is {name: {dtype, shape: [...], data_offsets: [...]}}, plus __metadata__ {str: str}
# Bits per element of each dtype name the format defines: safetensors 0.8's list (its Rust ``Dtype``, which names
# every other one an unknown variant). The sub-byte ones pack their elements: F4 two to a byte (torch reads them as
# float4_e2m1fn_x2, the last dimension halved), F6 four to three bytes; a tensor's bytes are its elements times its
# bits over 8, and one whose bits end inside a byte (F4 [3]) is refused by safetensors, so by this reader too.
ITEM_BITS = {
    "F64": 64,
    "F32": 32,
    "F16": 16,
    "BF16": 16,
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "F4": 4,
    "C64": 64,
    "I64": 64,
    "I32": 32,
    "I16": 16,
    "I8": 8,
    "U64": 64,
    "U32": 32,
    "U16": 16,
    "U8": 8,
    "BOOL": 8,
}
# The names torch uses, so every format reads the same in a report. F6 has no torch dtype: the names of the OCP
# microscaling formats it stores (what ml_dtypes calls them).
TORCH_NAME = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F6_E2M3": "float6_e2m3fn",
    "F6_E3M2": "float6_e3m2fn",
    "F4": "float4_e2m1fn_x2",
    "C64": "complex64",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}


# AuditError.cause and WeightFile.cause: why a file was not read, when the fix is not "re-download it": a pickle
# weights_only refused, no torch to read a pickle with, no temporary directory for the loading child, an archive
# that inflates past every bound (a decompression bomb: zip_bound.py).
REFUSED, NO_TORCH, NO_TEMP, BOMB = "refused", "no-torch", "no-temp", "bomb"


class AuditError(ValueError):
    """A file that cannot be audited; the message says which and why, for the user.

    ``cause`` names a cause whose fix is not "re-download it" (``REFUSED``, ``NO_TORCH``, ``NO_TEMP``).
    """

    def __init__(self, message: str, cause: str = "") -> None:
        super().__init__(message)
        self.cause = cause


class TensorEntry(NamedTuple):
    """One tensor of a checkpoint: where it is, its dtype (torch's name) and shape.

    A named tuple, not a dataclass: a big checkpoint has 100,000 of them, and a
    frozen dataclass's ``__init__`` cost more than reading the whole header.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str


class TensorTable(Sequence):
    """A file's tensors as columns, one list per field: a sequence of :class:`TensorEntry` made on demand.

    What the bulk header reader gives: the report reads the columns, and 100,000
    entries need never be made one by one.
    """

    def __init__(
        self, names: Sequence[str], dtypes: Sequence[str], shapes: Sequence[tuple], nbytes: Sequence[int], file: str
    ) -> None:
        self.names, self.dtypes, self.shapes, self.nbytes, self.file = names, dtypes, shapes, nbytes, file

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):  # an int, or a slice (a list then)
        if isinstance(index, slice):
            return list(self)[index]
        return TensorEntry(self.names[index], self.dtypes[index], self.shapes[index], self.nbytes[index], self.file)

    def __iter__(self) -> Iterator[TensorEntry]:
        return map(TensorEntry, self.names, self.dtypes, self.shapes, self.nbytes, repeat(self.file))

    def __repr__(self) -> str:
        return f"TensorTable({list(self)!r})"


def read_header(path: str) -> tuple[Sequence[TensorEntry], dict[str, str]]:
    """The tensors a .safetensors file holds, and its free-form __metadata__."""
    why = files.not_regular(path)
    if why:  # a FIFO would block the read, a device never end
        raise AuditError(f"{path}: it is {why}, not a regular file: not read")
    try:
        # O_NONBLOCK: a FIFO put here since the check above opens at once, and fstat refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as handle:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise AuditError(f"{path}: it is {files.kind(status.st_mode)}, not a regular file: not read")
            size = status.st_size  # a regular file's size, from the descriptor that is read
            head = handle.read(8)
            if len(head) < 8:
                raise AuditError(f"{path}: {size} bytes, too short for a safetensors header")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER:  # never printed: 8 bytes of some other file read as a number are its text
                raise AuditError(
                    f"{path}: the header claims more than the {MAX_HEADER >> 20} MB the format allows (its first "
                    "8 bytes are no header length): not a safetensors file"
                )
            if length > size - 8:
                raise AuditError(
                    f"{path}: the header claims {length} bytes but the file has {size - 8} after "
                    "its length field: truncated, or not a safetensors file"
                )
            raw = handle.read(length)
            if len(raw) < length:  # the file shrank since its size was taken
                raise AuditError(f"{path}: the header claims {length} bytes but only {len(raw)} could be read")
    except OSError as exc:
        raise AuditError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data_size = size - 8 - length
    bulk = header_bulk.entries(raw, data_size, ITEM_BITS)
    if bulk is not None:
        (names, dtypes, shapes, sizes), meta = bulk
        return TensorTable(names, list(map(TORCH_NAME.__getitem__, dtypes)), shapes, sizes, path), meta
    return parse_header(path, raw, data_size)  # not the usual layout, or something in it is wrong


def parse_header(path: str, raw: bytes, data_size: int) -> tuple[list[TensorEntry], dict[str, str]]:
    """The header's JSON ``raw`` read entry by entry, each claim checked against ``data_size``, saying what is wrong.

    The reference reader: ``header_bulk.entries`` gives the same result or none.
    """
    try:
        header = files.json_value(raw, max_depth=MAX_DEPTH)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise AuditError(f"{path}: the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise AuditError(f"{path}: the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    entries = [_entry(path, name, spec, data_size) for name, spec in header.items()]
    _no_overlap(path, header)
    meta = {str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {}
    return entries, meta


def _no_overlap(path: str, header: dict) -> None:
    """Refuse tensors whose data overlap: safetensors' own loader refuses such a file (InvalidOffset).

    Two names over the same bytes are a crafted or corrupt file, not an economy: loading
    it fails, and a report that counted both would describe weights that do not exist.
    """
    spans = sorted((spec["data_offsets"][0], spec["data_offsets"][1], name) for name, spec in header.items())
    end, owner = 0, ""
    for start, stop, name in spans:
        if start < end:
            raise AuditError(
                f"{path}: tensors {owner!r} and {name!r} overlap in the data (bytes {start} to "
                f"{min(stop, end)}): a corrupt or crafted file, which safetensors refuses to load"
            )
        if stop >= end:
            end, owner = stop, name


def _shown(value: object) -> str:
    """A header's value as a message quotes it: repr, cut short (a shape of 200,000 numbers is not repeated)."""
    text = repr(value) if not isinstance(value, list) or len(value) <= sizes.SHOWN_DIMS else f"a list of {len(value)}"
    return text if len(text) <= 200 else text[:200] + "..."


def _entry(path: str, name: str, spec: object, data_size: int) -> TensorEntry:
    where = f"{path}: tensor {name!r}"
    if not isinstance(spec, dict):
        raise AuditError(f"{where}: its entry is not an object")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if dtype not in ITEM_BITS:
        raise AuditError(f"{where}: unknown dtype {dtype!r} (safetensors 0.8 knows {', '.join(ITEM_BITS)})")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise AuditError(f"{where}: shape {_shown(shape)} is not a list of sizes")
    problem = sizes.shape_problem(shape)
    if problem:
        raise AuditError(f"{where}: shape {sizes.shape_text(shape)} {problem}")
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) for o in offsets)
        and 0 <= offsets[0] <= offsets[1] <= data_size
    ):
        raise AuditError(f"{where}: data offsets {_shown(offsets)} fall outside the {data_size} data bytes")
    span = offsets[1] - offsets[0]
    if sizes.ragged(shape, ITEM_BITS[dtype]):
        raise AuditError(
            f"{where}: {dtype} {sizes.shape_text(shape)} is {ITEM_BITS[dtype]}-bit elements that end inside a byte: "
            "safetensors refuses it (a sub-byte dtype's tensor must fill whole bytes)"
        )
    # Exact up to 2**64 bytes (the size a message can name), never an integer much longer than that.
    nbytes = sizes.nbytes(shape, ITEM_BITS[dtype], max(data_size, sizes.MAX_NAMED))
    if nbytes != span:
        needs = f"{nbytes} bytes" if nbytes is not None else f"more than {sizes.MAX_NAMED} bytes"
        raise AuditError(f"{where}: {dtype} {sizes.shape_text(shape)} needs {needs}, the header gives it {span}")
    return TensorEntry(name, TORCH_NAME[dtype], tuple(shape), nbytes, path)
