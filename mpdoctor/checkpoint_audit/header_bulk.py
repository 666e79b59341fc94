"""A safetensors header read in bulk: one regular expression over the text, then whole-column checks.

The header of a 100,000-tensor file is 12 MB of JSON or more; parsing it into a
dict per tensor, walking it for its depth and checking each entry in Python took
about a second on a busy 2-core machine (this: about 0.15 s). The writers all
write the same layout, one
entry per tensor, ``"name":{"dtype":"F16","shape":[4096,4096],"data_offsets":[a,b]}``
(serde's compact form, or Python's ``json.dumps`` with its spaces), so
:func:`entries` reads that layout with one ``re.findall`` and checks every claim a
column at a time (sizes against offsets, offsets against the file, overlaps) with
loops that run in C.

It proves as much as the entry-by-entry reader in ``safetensors.py`` or gives up:
the matches must cover the whole object, ``{`` to ``}``, with nothing between
them but the separators, so the text is a valid JSON object of exactly these
entries; names are unique and none is ``__metadata__``; integers have at most 40
digits. Anything else, and every header with something wrong in it, returns None,
and the entry-by-entry reader reads it again and says exactly what is wrong.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from operator import lt, sub
from typing import Optional

from mpdoctor.checkpoint_audit import gc_pause, sizes
from mpdoctor.portable import files

# A JSON string as json.loads accepts it; the loop unrolled (a run of plain characters, then escapes each followed by
# such a run), which the regex engine runs about twice as fast as an alternation tried at every character.
_STRING = r'"([^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*)"'
_PLAIN = _STRING.replace("(", "(?:", 1)  # the same, not captured
_INT = r"(?:0|[1-9][0-9]{0,39})"  # what files.json_value accepts: no sign, no leading zero, at most 40 digits


def _pattern(dtypes: list[str]) -> re.Pattern:
    dtype = "|".join(sorted(dtypes, key=len, reverse=True))
    # The dtype and the shape as one group (``F16","shape":[4096,4096``): a checkpoint has a few dozen of these
    # at most, each read once, and one string a tensor fewer is made.
    tensor = (
        rf'{_STRING}: ?\{{"dtype": ?"((?:{dtype})", ?"shape": ?\[(?:{_INT}(?:, ?{_INT})*)?)\], ?'
        rf'"data_offsets": ?\[({_INT}), ?({_INT})\]\}}'
    )
    metadata = rf'"__metadata__": ?(\{{(?:{_PLAIN}: ?{_PLAIN}(?:, ?{_PLAIN}: ?{_PLAIN})*)?\}})'
    # A member ends with a comma only where another member (a string) follows; the last is followed by the brace.
    # Where no member starts, the last group takes the rest of the text: one match, however much junk follows.
    return re.compile(rf'(?:{tensor}|{metadata})(?:, ?(?=")|(?=\}}))|(.+)', re.DOTALL)


_MATCHERS: dict[tuple, re.Pattern] = {}


def entries(raw: bytes, data_size: int, item_bits: dict[str, int]) -> Optional[tuple[tuple, dict]]:
    """``((names, dtypes, shapes, nbytes), metadata)`` of a well-formed header, a sequence each (a shape is a tuple
    of ints, a dtype the format's name); None to read it entry by entry.

    ``item_bits`` maps the format's dtype names to bits per element; the
    tensors' data must lie within ``data_size`` bytes and not overlap.
    """
    with gc_pause.paused():
        return _entries(raw, data_size, item_bits)


def _entries(raw: bytes, data_size: int, item_bits: dict[str, int]) -> Optional[tuple[tuple, dict]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # Writers pad the header with spaces to align the data: the members end before them. Found in the last few
    # characters, not by a copy of the whole text without them (rstrip), unless the padding is that long.
    tail = text[-64:]
    end = len(text) - len(tail) + len(tail.rstrip(" \t\n\r")) if tail.strip(" \t\n\r") else len(text.rstrip(" \t\n\r"))
    if not (text.startswith("{") and end and text[end - 1] == "}"):
        return None
    key = tuple(item_bits)
    matcher = _MATCHERS.get(key) or _MATCHERS.setdefault(key, _pattern(list(item_bits)))
    found = matcher.findall(text, 1, end)
    if found[-1][-1] != "}" or len(found) < 2:  # the closing brace must be all that follows the members
        return (((), (), (), ()), {}) if text[1 : end - 1].strip(" \t\n\r") == "" else None
    found.pop()
    names, kinds, starts, ends, metadata, _ = zip(*found)
    meta: dict = {}
    if "" in kinds:  # the __metadata__ member
        if kinds.count("") > 1:
            return None
        at = kinds.index("")
        try:
            meta = files.json_value(metadata[at])
        except ValueError:
            return None
        names, kinds, starts, ends = (c[:at] + c[at + 1 :] for c in (names, kinds, starts, ends))
    if "\\" in text:  # escapes in a name: decoded as json.loads decodes them
        names = tuple(json.loads(f'"{name}"') if "\\" in name else name for name in names)
    if len(set(names)) != len(names) or "__metadata__" in names:  # json.loads would keep the last of each
        return None
    dtype_of, shape_of, size_of = {}, {}, {}
    for kind in set(kinds):  # 'F16","shape":[4096,4096' -> F16, (4096, 4096), bytes
        dims = kind[kind.index("[") + 1 :]
        dtype_of[kind] = kind[: kind.index('"')]
        shape_of[kind] = shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        # bounded before it is multiplied: a lying shape would make an integer of thousands of digits
        bits = item_bits[dtype_of[kind]]
        bad = sizes.shape_problem(shape) or sizes.ragged(shape, bits)  # a sub-byte tensor must fill whole bytes
        size = None if bad else sizes.nbytes(shape, bits, data_size)
        if size is None:
            return None  # the entry-by-entry reader names what is wrong
        size_of[kind] = size
    nbytes = list(map(size_of.__getitem__, kinds))
    if starts and starts[0] == "0" and ends[:-1] == starts[1:]:
        # The usual layout: each tensor's data where the one before it ends, from the first byte (the numbers are
        # canonical, so equal text is an equal number). Such data cannot overlap, and every size holds exactly
        # when each end is the running sum of the sizes.
        if list(map(int, ends)) != list(accumulate(nbytes)) or int(ends[-1]) > data_size:
            return None  # a size or an offset that lies: the entry-by-entry reader names it
    elif not _spans_hold(list(map(int, starts)), list(map(int, ends)), nbytes, data_size):
        return None
    return (
        (names, list(map(dtype_of.__getitem__, kinds)), list(map(shape_of.__getitem__, kinds)), nbytes),
        {str(k): str(v) for k, v in meta.items()},
    )


def _spans_hold(starts: list[int], ends: list[int], nbytes: list[int], data_size: int) -> bool:
    """Every tensor's offsets give it its size, within the data, and no two overlap (any order of the data)."""
    if list(map(sub, ends, starts)) != nbytes or (ends and max(ends) > data_size):
        return False  # a size or an offset that lies
    if not all(map(lt, starts, starts[1:])):  # not in order (or two start together): order them by (start, end)
        spans = sorted(zip(starts, ends))
        starts, ends = [s for s, _ in spans], [e for _, e in spans]
    return not any(map(lt, starts[1:], accumulate(ends, max)))  # overlapping tensors
