"""The knowledge behind fix commands: CUDA variants, arch compatibility, versions."""

from __future__ import annotations

from mpdoctor.checks import fixes
from mpdoctor.checks.torch_build import _runs_on
from mpdoctor.snapshot import Snapshot


def test_cubin_compatibility_is_same_major_and_newer_minor():
    assert fixes.compatible(86, 80)
    assert fixes.compatible(61, 60)
    assert not fixes.compatible(90, 80)
    assert not fixes.compatible(75, 80)


def test_ptx_runs_on_any_newer_capability():
    assert _runs_on(["sm_80", "compute_80"], 90)
    assert not _runs_on(["sm_80", "sm_86"], 90)
    assert _runs_on(["sm_75", "sm_120"], 120)
    assert not _runs_on(["sm_75", "sm_80"], 70)


def test_best_variant_prefers_newest_that_the_driver_runs():
    snap = Snapshot()  # no table from torch: the built-in latest table is used
    assert fixes.best_cuda_variant(snap, "13.0", [90]) == "13.0"
    assert fixes.best_cuda_variant(snap, "13.4", [90]) == "13.2"
    assert fixes.best_cuda_variant(snap, "13.0", [70]) == "12.6"  # Volta: only cu126 has sm_70
    # No exact fit: the closest newer minor of the driver's major (minor-version compatibility).
    assert fixes.best_cuda_variant(snap, "12.2", [90]) == "12.6"
    assert fixes.best_cuda_variant(snap, "11.8", [90]) is None


def test_version_tuple_never_raises():
    assert fixes.version_tuple("2.13.0+cu130") == (2, 13, 0)
    assert fixes.version_tuple("12.8") == (12, 8)
    assert fixes.version_tuple("junk") == (0,)
    assert fixes.cuda_tag("12.8") == "cu128"


def test_commands_name_the_target_interpreter_and_quote():
    snap = Snapshot()
    snap.environment.python = None
    assert fixes.pip(snap, "install", "numpy<2") == "python -m pip install 'numpy<2'"
