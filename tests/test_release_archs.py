"""torch.cuda.PYTORCH_RELEASES_CODE_CC is read whatever shape a torch 2.4-2.13 ships it in.

The per-host shape is this machine's CPU torch 2.13's own table, read live; the flat
shape is the one torch 2.11 shipped (its reading failed on a real H200 with
"AttributeError: 'set' object has no attribute 'items'").
"""

from __future__ import annotations

import types

import pytest

from mpdoctor.checks import fixes
from mpdoctor.probes.remote.target import release_archs, torch_build_facts
from helpers import load_fixture


def test_the_installed_torchs_own_table_is_read():
    torch = pytest.importorskip("torch")
    table = getattr(torch.cuda, "PYTORCH_RELEASES_CODE_CC", None)
    if table is None:
        pytest.skip(f"torch {torch.__version__} ships no PYTORCH_RELEASES_CODE_CC")
    read = release_archs(table)
    assert read and all(isinstance(cc, int) for by_host in read.values() for ccs in by_host.values() for cc in ccs)


def test_a_table_of_one_set_per_cuda_version_is_read_for_every_host():
    flat = {"12.6": {50, 60, 70, 75, 80, 86, 90}, "13.0": {75, 80, 86, 90, 100, 120}}
    assert release_archs(flat) == {
        "12.6": {"any": [50, 60, 70, 75, 80, 86, 90]},
        "13.0": {"any": [75, 80, 86, 90, 100, 120]},
    }
    snap = load_fixture("cpu-laptop")
    snap.torch.release_archs = release_archs(flat)
    assert fixes.torch_variants(snap)["13.0"] == {75, 80, 86, 90, 100, 120}


def test_a_per_host_table_keeps_its_hosts():
    table = {"12.9": {"x86_64": {75, 80, 90}, "aarch64": {80, 90}}}
    assert release_archs(table) == {"12.9": {"x86_64": [75, 80, 90], "aarch64": [80, 90]}}


@pytest.mark.parametrize("table", [[1, 2], {"12.6": "sm_80"}, {"12.6": {"x86_64": 80}}])
def test_an_unknown_shape_is_a_fact_error_not_a_crash(table):
    torch = types.SimpleNamespace(
        __version__="9.9",
        version=types.SimpleNamespace(cuda="12.6"),
        cuda=types.SimpleNamespace(PYTORCH_RELEASES_CODE_CC=table),
    )
    facts = torch_build_facts(torch)
    assert "release_archs" not in facts and facts["errors"]["release_archs"].startswith("TypeError: ")
    assert facts["version"] == "9.9"  # the other build facts stand
