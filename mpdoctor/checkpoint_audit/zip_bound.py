"""What a zip checkpoint inflates to, checked before torch.load is let near it.

``torch.save`` writes a zip archive: ``<name>/data.pkl`` (the pickle), and one
entry per storage (``<name>/data/0``, ...), every entry stored uncompressed so
that ``torch.load(mmap=True)`` can map the storages rather than read them. Only
the pickle is read into memory whole. A crafted archive turns that around: a
3 MB file whose deflated ``data.pkl`` inflates to a 3 GB string took the loading
worker to 6.3 GB over 23.6 s before it was refused (issue 33), and the memory
budget of the workers followed the file's 3 MB.

So the archive's central directory is read first (stdlib ``zipfile``, no
torch): the pickle may claim at most ``MAX_PICKLE`` bytes, the compressed
entries at most ``MAX_INFLATED`` in all, and the directory at most
``MAX_ENTRIES`` entries. A header can lie, so every compressed entry is then
inflated once, streamed in chunks and never kept, and refused as soon as it
yields more than it claimed (or its CRC disagrees): what is bounded is what the
data inflates to, not what the directory says.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import NamedTuple

from mpdoctor.checkpoint_audit.safetensors import BOMB, AuditError

# A state dict's pickle holds names, dtypes and shapes: some 150 bytes a tensor, so 30 MB for 200,000 tensors.
MAX_PICKLE = 256 << 20
# torch writes nothing compressed; an archive re-zipped with deflate must be inflated into memory to be read.
MAX_INFLATED = 1 << 30
MAX_ENTRIES = 1_000_000  # the directory is read into memory too: some 500 bytes an entry
CHUNK = 1 << 20
ZIP_MAGIC = b"PK\x03\x04"  # what torch itself looks for to take a file as a zip checkpoint


class Inflated(NamedTuple):
    """What a zip checkpoint will cost its reader in memory beyond mapped storages, in bytes."""

    pickle: int  # the largest pickle entry, held whole by torch.load
    compressed: int  # all compressed entries, inflated


def is_zip(path: str) -> bool:
    """Whether torch.load will read ``path`` as a zip archive (an unreadable file is left to torch.load to name)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ZIP_MAGIC
    except OSError:
        return False


def memory(need: Inflated) -> int:
    """Bytes a worker may hold for the file: the pickle twice (its bytes, then what it unpickles to), the rest once."""
    return 2 * need.pickle + need.compressed


def check(path: str) -> Inflated:
    """The memory the zip checkpoint ``path`` needs, once its entries are proven to inflate no further.

    Raises ``AuditError`` (cause ``BOMB``: the file is not truncated, it is built to exhaust its reader) for
    an archive over a bound, or one whose entries inflate past what its directory says.
    """
    try:
        with open(path, "rb") as handle:
            _entry_count(path, handle)
            with zipfile.ZipFile(handle) as archive:
                infos = archive.infolist()
                need = _claimed(path, infos)
                for info in infos:
                    if info.compress_type != zipfile.ZIP_STORED:
                        _inflate(path, archive, info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as exc:
        raise AuditError(f"{path}: not a readable zip archive ({exc}): not read") from None
    except OSError as exc:
        raise AuditError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return need


def _entry_count(path: str, handle) -> None:
    """Refuse a directory of millions of entries before zipfile makes an object of each."""
    end = zipfile._EndRecData(handle)  # the end record: the count zipfile will trust
    if end and end[zipfile._ECD_ENTRIES_TOTAL] > MAX_ENTRIES:
        raise AuditError(
            f"{path}: its zip directory lists {end[zipfile._ECD_ENTRIES_TOTAL]} entries, more than the "
            f"{MAX_ENTRIES} mpdoctor reads: not a checkpoint torch.save wrote; not read",
            BOMB,
        )
    handle.seek(0)


def _claimed(path: str, infos: list) -> Inflated:
    pickle = max((i.file_size for i in infos if i.filename.endswith(".pkl")), default=0)
    if pickle > MAX_PICKLE:
        raise AuditError(
            f"{path}: its pickle inflates to {pickle} bytes, more than the {MAX_PICKLE} mpdoctor lets torch.load "
            "read into memory (a state dict's pickle holds only names and shapes): a decompression bomb or "
            "not a state dict; not read",
            BOMB,
        )
    compressed = sum(i.file_size for i in infos if i.compress_type != zipfile.ZIP_STORED)
    if compressed > MAX_INFLATED:
        raise AuditError(
            f"{path}: its compressed entries inflate to {compressed} bytes, more than the {MAX_INFLATED} "
            "mpdoctor lets torch.load inflate into memory (torch.save compresses nothing): a decompression "
            "bomb, or an archive re-zipped with compression; not read",
            BOMB,
        )
    return Inflated(pickle, compressed)


def _inflate(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Inflate one entry, streamed and capped at what its header claims: a lying header is caught, not believed.

    zipfile stops at the claimed size and then checks the CRC (BadZipFile on a mismatch); the count here
    holds the cap whatever zipfile does.
    """
    seen = 0
    with archive.open(info) as entry:
        while True:
            try:
                chunk = entry.read(CHUNK)
            except zipfile.BadZipFile as exc:  # the CRC of the claimed bytes: the stream goes on, or is corrupt
                raise AuditError(
                    f"{path}: entry {info.filename!r} does not inflate to the {info.file_size} bytes its zip header "
                    f"claims ({exc}): a decompression bomb or a corrupt archive; not read"
                ) from None
            if not chunk:
                return
            seen += len(chunk)
            if seen > info.file_size:
                raise AuditError(
                    f"{path}: entry {info.filename!r} inflates to more than the {info.file_size} bytes its zip "
                    "header claims: a decompression bomb or a corrupt archive; not read",
                    BOMB,
                )
