"""CUDA_VISIBLE_DEVICES read with CUDA's rules: a table of cases, and it never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpdoctor.analysis.visible_devices import Device, read_visible_devices

A = Device("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", 0)
B = Device("GPU-8932aaaa-0000-4106-c12f-20bd9faed9f7", 1)
C = Device("GPU-1234bbbb-1111-2222-3333-444455556666", 2)
GPUS = [A, B, C]
MIG1 = Device("MIG-a65afc88-50b5-5ccf-b0a8-f93b3247ae9e", 0)
MIG2 = Device("MIG-b75afc88-50b5-5ccf-b0a8-f93b3247ae9f", 0)


def selected(raw, **kw):
    sel = read_visible_devices(raw, GPUS, [MIG1, MIG2], cuda_order=GPUS, **kw)
    return [e.device.index if e.device else None for e in sel.valid], sel


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2,1", [2, 1]),  # enumerated in the order given
        ("0,2,-1,1", [0, 2]),  # the documented truncation example
        ("1gpu2,2ampere", [1, 2]),  # strtoul-style integers
        (" 1, 2", [1, 2]),
        ("0,,1", [0]),  # an empty entry is invalid
        ("3,foo,1", []),  # 3 is out of range on 3 GPUs: nothing after it counts
        ("GPU-1234", [2]),  # unique prefix
        ("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", [0]),
        ("GPU-8932", []),  # ambiguous prefix is invalid
        ("GPU-ffff", []),  # no such UUID
        ("gpu-8932f937", []),  # case-sensitive
        ("-1", []),
        ("NoDevFiles", []),
        ("MIG-a65a", [0]),
        ("0,GPU-1234", [0, 2]),
    ],
)
def test_selection_table(raw, expected):
    assert selected(raw)[0] == expected


def test_unset_selects_everything_and_empty_hides_all():
    unset = read_visible_devices(None, GPUS)
    assert not unset.is_set and not unset.hides_all
    empty = read_visible_devices("", GPUS)
    assert empty.hides_all and "empty" in empty.problems[0]


@pytest.mark.parametrize(
    "raw, words",
    [
        ("0,2,-1,1", "ignored: 1"),
        ("0,GPU-1234", "mixes integer indices and UUIDs"),
    ],
)
def test_problems_are_named(raw, words):
    assert any(words in p for p in selected(raw)[1].problems)


def test_several_mig_devices_are_all_selected_for_the_check_to_judge():
    _, sel = selected("MIG-a65a,MIG-b75a")
    assert [e.device for e in sel.mig_selected] == [MIG1, MIG2] and not sel.problems


def test_duplicates_are_flagged():
    _, sel = selected("0,1,0")
    assert "repeats entry 0" in sel.valid[2].problem


def test_slurm_nodevfiles_is_explained():
    _, sel = selected("NoDevFiles")
    assert sel.hides_all and "Slurm" in sel.entries[0].problem


def test_without_nvml_entries_are_parsed_but_not_resolved():
    sel = read_visible_devices("7,GPU-abc", [])
    assert [e.kind for e in sel.valid] == ["index", "gpu-uuid"] and all(e.device is None for e in sel.valid)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), st.text(), st.text(alphabet="0123456789,-+ GPUMIG-abcdef/x", max_size=40)))
def test_never_raises_on_any_string(raw):
    sel = read_visible_devices(raw, GPUS, [MIG1, MIG2], cuda_order=GPUS)
    assert len(sel.valid) <= len(sel.entries)
    for entry in sel.valid:
        assert entry.kind in ("index", "gpu-uuid", "mig-uuid")


@settings(max_examples=300, deadline=None)
@given(
    uuids=st.lists(st.text(alphabet="ab\U0010ffff", min_size=1, max_size=4), min_size=1, max_size=8),
    prefix=st.text(alphabet="ab\U0010ffff", min_size=1, max_size=3),
)
def test_the_uuid_index_finds_exactly_what_a_scan_finds(uuids, prefix):
    """The bisected prefix search (issue 33: a scan per entry was quadratic) against the scan it replaced."""
    devices = [Device(f"GPU-{u}", i) for i, u in enumerate(uuids)]
    text = f"GPU-{prefix}"
    scanned = [d for d in devices if d.uuid.startswith(text)]
    (entry,) = read_visible_devices(text, devices).entries
    if len(scanned) == 1:
        assert entry.device == scanned[0]
    else:
        assert entry.kind == "invalid" and entry.device is None
        assert (f"of {len(scanned)} devices" in entry.problem) if scanned else ("no GPU has" in entry.problem)
