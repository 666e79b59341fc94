"""Read ``CUDA_VISIBLE_DEVICES`` the way the CUDA runtime does, and say what it selects.

CUDA's documented rules (CUDA Programming Guide, "CUDA Environment Variables"):

* unset: every GPU is visible; set but empty: none is;
* a comma-separated list of integer indices, ``GPU-`` UUIDs or ``MIG-`` UUIDs,
  enumerated in the order given (``2,1`` makes physical 2 ``cuda:0``);
* a UUID may be abbreviated to any prefix that names exactly one GPU;
* the first invalid entry ends the list: ``0,2,-1,1`` makes 0 and 2 visible;
* integers are read like ``strtoul``: ``1gpu2`` is ``1``.

Facts that are not documented and that mpdoctor therefore reports rather than
guesses: what the runtime does with a repeated entry (PyTorch's own parser treats
any repeat as "no devices", so ``torch.cuda.device_count()`` says 0 before CUDA
initialises), and whether indices and UUIDs may be mixed (PyTorch stops at the
switch). Integer indices count in CUDA's enumeration order, which is nvidia-smi's
PCI order only under ``CUDA_DEVICE_ORDER=PCI_BUS_ID``.

This module is pure: it never raises on any string, and knows nothing of probes.
"""

from __future__ import annotations

import bisect
import itertools
import re
import sys
from dataclasses import dataclass, field
from typing import Optional, Sequence, TypeVar

from mpdoctor.portable.limits import VISIBLE_ENTRIES

_LEADING_INT = re.compile(r"[+-]?\d+")
EntryLike = TypeVar("EntryLike")  # anything with a ``kind``: Entry, or the report's VisibleEntry
SHOWN_CHARS = 60  # of an entry, in a problem's words
# Digits of the longest index read as a number: CUDA reads an index as an unsigned long (strtoul), so anything
# longer is out of range; reading thousands of digits with int() is refused by Python itself (4300 digits), and
# a malformed value deserves a finding about the value, not a crashed check.
MAX_INDEX_DIGITS = 20
HIDING_WORDS = {"NoDevFiles": "Slurm sets NoDevFiles when the job was given no GPU (no --gres=gpu)"}


@dataclass(frozen=True)
class Device:
    """A physical GPU or MIG device as NVML names it."""

    uuid: str  # GPU-... or MIG-...
    index: int  # NVML index of the GPU (the parent GPU for a MIG device)


@dataclass
class Entry:
    """One comma-separated entry of CUDA_VISIBLE_DEVICES and what became of it."""

    text: str
    kind: str  # index, gpu-uuid, mig-uuid or invalid
    device: Optional[Device] = None  # what it selects, when known
    problem: str = ""  # why it is invalid, ignored or suspicious
    number: Optional[int] = None  # the index an integer entry names, as CUDA reads it


def before_invalid(entries: Sequence[EntryLike]) -> list[EntryLike]:
    """The entries CUDA uses: those before the first invalid one."""
    return list(itertools.takewhile(lambda entry: entry.kind != "invalid", entries))


@dataclass
class Selection:
    """What CUDA_VISIBLE_DEVICES selects."""

    raw: Optional[str]
    entries: list[Entry] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # entries after the first invalid one
    problems: list[str] = field(default_factory=list)  # findings-worthy remarks, in words

    @property
    def is_set(self) -> bool:
        return self.raw is not None

    @property
    def valid(self) -> list[Entry]:
        """The entries CUDA enumerates, in order: cuda:0 first."""
        return before_invalid(self.entries)

    @property
    def hides_all(self) -> bool:
        return self.is_set and not self.valid

    @property
    def mig_selected(self) -> list[Entry]:
        return [e for e in self.valid if e.kind == "mig-uuid"]


class _Prefixes:
    """Devices sorted by UUID, so that a prefix finds its devices by bisection rather than by a scan of all.

    A node, or a snapshot, may list thousands of GPUs and CUDA_VISIBLE_DEVICES as many entries: one scan
    per entry made reading it quadratic (issue 33).
    """

    def __init__(self, devices: Sequence[Device]) -> None:
        self.devices = sorted(devices, key=lambda d: d.uuid)
        self.keys = [d.uuid for d in self.devices]

    def starting_with(self, text: str) -> list[Device]:
        """Every device whose UUID starts with ``text`` (they sit together in UUID order)."""
        low = bisect.bisect_left(self.keys, text)
        high = low
        if text and ord(text[-1]) < sys.maxunicode:  # the first string past every one that starts with text
            high = bisect.bisect_left(self.keys, text[:-1] + chr(ord(text[-1]) + 1), low)
        else:
            while high < len(self.keys) and self.keys[high].startswith(text):
                high += 1
        return self.devices[low:high]

    def match(self, text: str) -> tuple[Optional[Device], str]:
        """Prefix match as CUDA does: exactly one device must start with ``text``."""
        hits = self.starting_with(text)
        if len(hits) == 1:
            return hits[0], ""
        if not hits:
            return None, f"no GPU has a UUID starting with {shown(text)}"
        return None, f"{shown(text)} is ambiguous: it starts the UUIDs of {len(hits)} devices"


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """An entry as a problem quotes it: a hostile 5000-character entry is not repeated whole in every finding."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


# A whole CUDA_VISIBLE_DEVICES as findings quote it: a list of 20 MIG UUIDs (about 900 characters) whole, a
# hostile 5000-digit value cut.
SHOWN_VALUE_CHARS = 1024


def shown_value(text: str) -> str:
    """A whole ``CUDA_VISIBLE_DEVICES`` value as a finding quotes it (see ``SHOWN_VALUE_CHARS``)."""
    return shown(text, SHOWN_VALUE_CHARS)


def read_visible_devices(
    raw: Optional[str],
    gpus: Sequence[Device],
    migs: Sequence[Device] = (),
    cuda_order: Optional[Sequence[Device]] = None,
) -> Selection:
    """What ``CUDA_VISIBLE_DEVICES=raw`` selects among ``gpus`` (and their ``migs``).

    ``cuda_order`` is the GPUs in CUDA's enumeration order when known (PCI order
    under CUDA_DEVICE_ORDER=PCI_BUS_ID); integer entries resolve through it, and
    are left unresolved (device None) when it is unknown. With no ``gpus`` at all
    (NVML unavailable) nothing can be resolved or range-checked, only parsed.
    """
    selection = Selection(raw=raw)
    if raw is None:
        return selection
    if raw.strip() == "":
        selection.problems.append("CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU")
        return selection
    count = len(gpus)
    gpus, migs = _Prefixes(gpus), _Prefixes(migs)
    seen: dict[str, int] = {}
    kinds = set()
    stopped = False
    pieces, unread = _pieces(raw)
    if unread:  # judged by what is read; the rest is one remark, not 80,000 entries (or findings) of its own
        selection.problems.append(
            f"CUDA_VISIBLE_DEVICES has {VISIBLE_ENTRIES + unread} entries: only the first {VISIBLE_ENTRIES} are "
            "read (no node has that many devices)"
        )
    for position, piece in enumerate(pieces):
        text = piece.strip()
        if stopped:
            selection.ignored.append(text)
            continue
        entry = _read_entry(text, gpus, migs, cuda_order, count)
        selection.entries.append(entry)
        if entry.kind == "invalid":
            stopped = True
            continue
        kinds.add("index" if entry.kind == "index" else "uuid")
        key = entry.device.uuid if entry.device else f"index {entry.text}"
        if key in seen:
            entry.problem = f"repeats entry {seen[key]}; PyTorch then counts no devices before CUDA starts"
        seen.setdefault(key, position)
    if selection.ignored:
        selection.problems.append(
            f"entries after the invalid {shown(selection.entries[-1].text)!r} are ignored: "
            f"{shown(', '.join(selection.ignored))}"
        )
    if len(kinds) > 1:
        selection.problems.append("mixes integer indices and UUIDs; PyTorch's device count stops at the switch")
    return selection


def _pieces(raw: str) -> tuple[list[str], int]:
    """The first VISIBLE_ENTRIES comma-separated entries of ``raw``, and how many more it has (unsplit)."""
    pieces = raw.split(",", VISIBLE_ENTRIES)
    if len(pieces) <= VISIBLE_ENTRIES:
        return pieces, 0
    return pieces[:VISIBLE_ENTRIES], pieces[VISIBLE_ENTRIES].count(",") + 1


def read_each_entry(
    raw: str, gpus: Sequence[Device], migs: Sequence[Device] = (), cuda_order: Optional[Sequence[Device]] = None
) -> list[Entry]:
    """Every non-empty comma-separated entry of ``raw`` read on its own, as if it were the whole variable.

    For rewriting a value entry by entry (CUDA's stop at the first invalid entry does not apply): the devices
    are indexed once for all entries.
    """
    gpu_index, mig_index = _Prefixes(gpus), _Prefixes(migs)
    texts = (piece.strip() for piece in _pieces(raw)[0])
    return [_read_entry(text, gpu_index, mig_index, cuda_order, len(gpus)) for text in texts if text]


def _read_entry(
    text: str, gpus: _Prefixes, migs: _Prefixes, cuda_order: Optional[Sequence[Device]], count: int
) -> Entry:
    if text in HIDING_WORDS:
        return Entry(text, "invalid", problem=HIDING_WORDS[text])
    if not gpus.devices and text.startswith(("GPU-", "MIG-")):
        return Entry(text, "gpu-uuid" if text.startswith("GPU-") else "mig-uuid")
    if text.startswith("GPU-"):
        device, problem = gpus.match(text)
        return Entry(text, "gpu-uuid", device) if device else Entry(text, "invalid", problem=problem)
    if text.startswith("MIG-"):
        device, problem = migs.match(text)
        return Entry(text, "mig-uuid", device) if device else Entry(text, "invalid", problem=problem)
    match = _LEADING_INT.match(text)
    if not match:
        return Entry(text, "invalid", problem=f"{shown(text)!r} is neither an index nor a GPU-/MIG- UUID")
    digits = match.group().lstrip("+-").lstrip("0")
    if len(digits) > MAX_INDEX_DIGITS:
        sign = "negative" if match.group().startswith("-") else "too large to be a device index"
        return Entry(
            text,
            "invalid",
            problem=f"{shown(match.group())} ({len(digits)} digits) is {sign}: CUDA stops reading here",
        )
    number = -int(digits or "0") if match.group().startswith("-") else int(digits or "0")  # leading zeros count too
    if number < 0:
        return Entry(text, "invalid", problem=f"{number} is negative: CUDA stops reading here", number=number)
    if gpus.devices and number >= count:
        return Entry(text, "invalid", problem=f"index {number} is out of range: there are {count} GPUs", number=number)
    device = cuda_order[number] if cuda_order and number < len(cuda_order) else None
    entry = Entry(text, "index", device, number=number)
    if match.group() != text:
        entry.problem = f"{shown(text)!r} is read as {number}"
    return entry
