"""The fast paths of `mpdoctor audit` agree with the readers they stand in for, on every input.

``header_bulk.entries`` reads a safetensors header with one regular expression and
whole-column checks; ``safetensors.parse_header`` reads it entry by entry and says
what is wrong. The bulk reader must give exactly the same tensors and metadata, or
give up (None) and leave the header to the other: it must never accept a header
the reference refuses, nor read one differently. The same for the odd-module-out
analysis: ``tree_ranges.analyse`` (sorted names, running sums) against
``tree.analyse`` (a node per module). Headers and trees are written here, by hand
and at random (seeded), including every kind of lie ``tests/test_audit.py`` and
``tests/adversarial/test_audit_inputs.py`` prove is refused.
"""

from __future__ import annotations

import json
import random

import pytest

from mpdoctor.checkpoint_audit import header_bulk, tree, tree_ranges
from mpdoctor.checkpoint_audit.safetensors import ITEM_BITS, TORCH_NAME, AuditError, TensorTable, parse_header
from mpdoctor.checkpoint_audit.kept_fp32 import Architecture


def header(entries: dict, metadata=None, where="last", **dumps) -> bytes:
    """A header's JSON: ``{name: (dtype, shape)}`` laid out one after the other, metadata placed ``where``."""
    members, offset = [], 0
    for name, (dtype, shape) in entries.items():
        size = ITEM_BITS.get(dtype, 8)
        for dim in shape:
            size *= dim
        size //= 8
        members.append((name, {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}))
        offset += size
    if metadata is not None:
        members.insert(
            {"first": 0, "middle": len(members) // 2, "last": len(members)}[where], ("__metadata__", metadata)
        )
    return json.dumps(dict(members), **dumps).encode()


def outcomes(raw: bytes, data_size: int = 10**6):
    """(bulk result as (entries, meta), or None) and (reference result, or the AuditError's message)."""
    bulk = header_bulk.entries(raw, data_size, ITEM_BITS)
    if bulk is not None:
        (names, dtypes, shapes, sizes), meta = bulk
        bulk = (list(TensorTable(names, [TORCH_NAME[d] for d in dtypes], shapes, sizes, "f")), meta)
    try:
        reference = parse_header("f", raw, data_size)
    except AuditError as exc:
        reference = str(exc)
    return bulk, reference


def assert_agree(raw: bytes, data_size: int = 10**6, *, bulk_reads_it: bool | None = None) -> None:
    bulk, reference = outcomes(raw, data_size)
    if bulk is not None:
        assert not isinstance(reference, str), f"bulk accepted what the reference refuses: {reference}"
        assert bulk == (list(reference[0]), reference[1])
    if bulk_reads_it is not None:
        assert (bulk is not None) == bulk_reads_it


MODEL = {"a.weight": ("F16", (4, 4)), "a.bias": ("F32", (4,)), "b.scale": ("BF16", ()), "ids": ("I64", (3,))}


@pytest.mark.parametrize("dumps", [{}, {"separators": (",", ":")}])
@pytest.mark.parametrize("where", ["first", "middle", "last", None])
def test_the_usual_layouts_are_read_in_bulk_and_read_the_same(dumps, where):
    raw = header(MODEL, {"format": "pt", "note": 'a "quoted" \\ value'} if where else None, where or "last", **dumps)
    assert_agree(raw, bulk_reads_it=True)
    assert_agree(raw + b"    ", bulk_reads_it=True)  # the writers' padding to 8 bytes
    assert_agree(raw + b" \n" * 100, bulk_reads_it=True)  # whitespace, however much, ends JSON text


@pytest.mark.parametrize(
    "names,ascii",
    [
        (["caf\u00e9.weight", "\u4e2d.bias"], False),  # UTF-8 as it is
        (["caf\u00e9.weight", "\u4e2d.bias"], True),  # \u escapes
        (['quote".weight', "back\\slash.w", "tab\t.w", "nl\n.w", "slash/.w"], False),  # escaped by json.dumps
        (["\ud800.w"], True),  # a lone surrogate, as json.loads reads "\ud800"
    ],
)
def test_names_with_escapes_read_as_json_reads_them(names, ascii):
    assert_agree(header({n: ("F16", (2,)) for n in names}, ensure_ascii=ascii), bulk_reads_it=True)


LIES = {
    "offsets past the end": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4000001]}}',
    "size lies": b'{"a":{"dtype":"F16","shape":[400],"data_offsets":[0,4]}}',
    "unknown dtype": b'{"a":{"dtype":"F17","shape":[2],"data_offsets":[0,4]}}',
    "negative size": b'{"a":{"dtype":"F16","shape":[-1],"data_offsets":[0,4]}}',
    "float size": b'{"a":{"dtype":"F16","shape":[2.0],"data_offsets":[0,4]}}',
    "bool size": b'{"a":{"dtype":"F16","shape":[true],"data_offsets":[0,4]}}',
    "leading zero": b'{"a":{"dtype":"F16","shape":[02],"data_offsets":[0,4]}}',
    "41 digits": b'{"a":{"dtype":"F16","shape":[0],"data_offsets":[0,' + b"1" * 41 + b"]}}",
    "overlap": b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],'
    b'"data_offsets":[4,12]}}',
    "trailing comma": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},}',
    "missing comma": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}"b":{"dtype":"F16","shape":[2],'
    b'"data_offsets":[4,8]}}',
    "missing brace": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}',
    "junk after": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}} x',
    "not an object": b"[]",
    "a bare string member": b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":1}',
    "control character in a name": b'{"a\x01":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',
    "bad escape": b'{"a\\x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',
    "not UTF-8": b'{"a\xff":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',
    "deep": b'{"w": ' + b"[" * 500 + b"]" * 500 + b"}",
    "NaN metadata": b'{"__metadata__":{"x":NaN},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',
}


@pytest.mark.parametrize("case", sorted(LIES))
def test_headers_that_lie_are_left_to_the_reference_which_says_why(case):
    bulk, reference = outcomes(LIES[case], data_size=4000000)
    assert bulk is None and isinstance(reference, str)


@pytest.mark.parametrize(
    "raw",
    [
        # json.loads keeps the last of two equal names, and a second __metadata__: the reference decides
        b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"a":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}}',
        b'{"__metadata__":{"x":"1"},"__metadata__":{"x":"2"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',
        b'{"__metadata__":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',  # a tensor named like the metadata
        b'{"__metadata__":{"x":1},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}',  # metadata not all strings
        b'{\n  "a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}\n}',  # indented
        b'{"a":{"shape":[2],"dtype":"F16","data_offsets":[0,4]}}',  # another key order
        b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4],"extra":[1]}}',  # a key more
        b"{}",
        b"{ }",
        b'{"__metadata__":{}}',
        b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}}',
        b'{"a":{"dtype":"F16","shape":[2],"data_offsets":[4,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}}',
        b'{"z":{"dtype":"F16","shape":[0],"data_offsets":[4,4]},"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},'
        b'"x":{"dtype":"F16","shape":[0],"data_offsets":[4,4]}}',  # out of order, empty tensors at one offset
    ],
)
def test_unusual_but_valid_headers_read_the_same_either_way(raw):
    assert_agree(raw)


def test_random_corruptions_never_make_the_two_readers_disagree():
    rng = random.Random(23)
    base = header(MODEL, {"format": "pt"}, "middle", separators=(",", ":"))
    alphabet = b'{}[]",:0123456789 \\aFIU_-.'
    for _ in range(1500):
        raw = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(raw))
            edit = rng.choice(("replace", "insert", "delete"))
            if edit == "replace":
                raw[at] = rng.choice(alphabet)
            elif edit == "insert":
                raw.insert(at, rng.choice(alphabet))
            else:
                del raw[at]
        assert_agree(bytes(raw), data_size=rng.choice((22, 10**6)))


# ---------------------------------------------------------------- the odd-module-out analysis

PARTS = ["model", "layers", "0", "1", "10", "2", "mlp", "norm", "experts", "a", "b", "weight", "bias"]
FLOAT = ["float16", "float32", "bfloat16"]


def random_tensors(rng: random.Random, components=("",)) -> list[tuple[str, str, str, int]]:
    tensors = []
    mostly = rng.choice(FLOAT)
    for _ in range(rng.randint(1, 60)):
        name = ".".join(rng.choice(PARTS) for _ in range(rng.randint(1, 5)))
        dtype = mostly if rng.random() < 0.7 else rng.choice(FLOAT + ["int64"])
        tensors.append((rng.choice(components), name, dtype, rng.choice((2, 4, 8, 64, 256))))
    return tensors


@pytest.mark.parametrize("seed", range(300))
def test_the_sorted_analysis_gives_the_reference_tree(seed):
    rng = random.Random(seed)
    tensors = random_tensors(rng, ("",) if seed % 3 else ("unet", "text_encoder", ""))
    known = Architecture("AModel", "transformers", keep=["norm"], source="config.json", known=True)
    facts = tree.ModelFacts(models={"": known}) if seed % 5 == 0 else None
    assert tree_ranges.analyse(tensors, facts) == tree.analyse(tensors, facts)


@pytest.mark.parametrize("names", [["a..b", "a.c"], [".a", "a"], ["a.", "a.b"], ["", "a.b"]])
def test_names_with_empty_parts_go_to_the_reference(names):
    tensors = [("", n, dtype, 4) for n, dtype in zip(names, ("float16", "float32"))]
    assert tree_ranges.analyse(tensors) == tree.analyse(tensors)
