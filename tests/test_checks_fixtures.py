"""Every check against the fixtures it declares: ``fires_on`` (must report) and ``quiet_on`` (near misses: must not).

Both are judged with the check selected alone, so a near miss is a fixture that looks like the check's problem but
where the check itself finds nothing. A fixture on which the check would fire but stands down for a superseding
check is not a near miss: that is a relation, pinned by tests/test_relations.py (RELATIONS).

The declarations live on the checks (``@check(..., fires_on=..., quiet_on=...)``); these tests are generic, so
adding a check touches its family module and its fixtures, nothing here.
"""

from __future__ import annotations

import pytest

from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.doctor.judge import judge
from mpdoctor.checks.registry import DOC_SECTIONS, FAMILIES, builtin_registry

CHECKS = builtin_registry().snapshot_checks()
FIRES = [(c.code, name) for c in CHECKS for name in c.fires_on]
QUIET = [(c.code, name) for c in CHECKS for name in c.quiet_on]


INTERNAL = {e.code for e in builtin_registry() if e.subject == "internal"}  # about mpdoctor's run: tested on their own


def codes(name: str) -> set[str]:
    return {f.code for f in judge(load_fixture(name))} - INTERNAL


def declared(name: str) -> set[str]:
    """The codes whose checks declare ``name`` in ``fires_on``: exactly what judging it must report."""
    return {c.code for c in CHECKS if name in c.fires_on}


def test_every_snapshot_check_declares_fixtures_it_fires_on_and_near_misses():
    for entry in CHECKS:
        assert entry.fires_on, f"{entry.code} declares no fixture it fires on (fires_on)"
        assert entry.quiet_on, f"{entry.code} declares no near miss (quiet_on)"
        assert not set(entry.fires_on) & set(entry.quiet_on), entry.code


def test_checkpoint_and_internal_rules_declare_no_fixtures():
    """AUDIT001-003 are judged by tests/test_audit.py and tests/test_registry.py, MPD001 by tests/test_registry.py."""
    for entry in builtin_registry():
        if not entry.runs_on_snapshot:
            assert not entry.fires_on and not entry.quiet_on, entry.code


def test_every_declared_fixture_is_in_the_catalogue():
    catalogue = set(snapshot_fixture_names())
    for entry in CHECKS:
        unknown = [name for name in entry.fires_on + entry.quiet_on if name not in catalogue]
        assert not unknown, f"{entry.code} names fixtures not in tests/fixtures/catalogue.py: {unknown}"


def test_every_fixture_is_named_by_some_check():
    """A fixture no check names pins nothing: declare it in a check's fires_on or quiet_on."""
    named = {name for entry in CHECKS for name in entry.fires_on + entry.quiet_on}
    assert set(snapshot_fixture_names()) - named == set()


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_fixture_triggers_exactly_the_codes_that_declare_it(name):
    """Exact sets: a code must not fire on a fixture it does not declare, and a fixture no check declares (a healthy
    node) must report nothing."""
    assert codes(name) == declared(name)


@pytest.mark.parametrize("code, name", QUIET, ids=[f"{code}-{name}" for code, name in QUIET])
def test_near_miss_does_not_trigger_the_code(code, name):
    """Quiet even alone: no other check's finding, superseding or not, is what keeps it quiet."""
    assert code not in {f.code for f in judge(load_fixture(name), select=[code])}


@pytest.mark.parametrize("code, name", FIRES, ids=[f"{code}-{name}" for code, name in FIRES])
def test_check_fires_on_its_fixtures_when_selected_alone(code, name):
    """Its finding is its own: it does not depend on another check's finding, or on another check running."""
    assert {f.code for f in judge(load_fixture(name), select=[code])} - INTERNAL == {code}


def test_registry_metadata():
    checks = list(builtin_registry())
    assert len({c.code for c in checks}) == len(checks)
    for entry in checks:
        assert entry.summary, entry.code
        for section in DOC_SECTIONS:
            assert section in entry.doc, f"{entry.code} docstring lacks {section}"
        assert entry.code.startswith(FAMILIES[entry.family])  # the declared prefixes: tests/test_registry.py


def test_findings_carry_evidence_and_fix():
    for name in snapshot_fixture_names():
        for finding in judge(load_fixture(name)):
            assert finding.evidence and finding.fix, (name, finding.code)
            assert finding.name and finding.family


def test_incident4_box_gets_a_cuda_build_that_runs_both_cards():
    (finding,) = judge(load_fixture("titan-rtx-1080ti-cpu-torch"), select=["TORCH"])
    command = finding.fix[0].command
    # cu126 is the newest build with sm_60 code (GTX 1080 Ti is 6.1) that a 12.2 driver runs.
    assert "--index-url https://download.pytorch.org/whl/cu126" in command
    assert "torch==2.13.0" in command and "--force-reinstall" in command


def test_volta_on_cu130_is_sent_back_to_cu126():
    (finding,) = judge(load_fixture("v100-cu130"))
    assert "sm_70" in finding.title and "no kernel image" in finding.title
    assert finding.fix[0].command.endswith("/whl/cu126")


def test_driver_too_old_is_an_error_and_hides_cuda_unavailable():
    (finding,) = judge(load_fixture("h100-driver-too-old"))
    assert finding.severity == "error" and "CUDA 13.0" in finding.title and "12.2" in finding.title
    assert "580" in finding.fix[0].text


def test_minor_version_newer_runtime_is_only_a_warning():
    (finding,) = judge(load_fixture("rtx4090-minor-newer"))
    assert finding.severity == "warning" and "minor-version" in finding.title


def test_stack_conflict_keeps_torch_pinned():
    findings = [f for f in judge(load_fixture("precision-stack-conflicts")) if f.code == "STACK001"]
    (tv,) = [f for f in findings if f.title.startswith("torchvision")]
    assert tv.severity == "error"
    assert "torch==2.13.0+cpu" in tv.fix[0].command and "--upgrade torchvision" in tv.fix[0].command


def test_duplicate_and_broken_metadata_name_the_directories():
    findings = {f.code: f for f in judge(load_fixture("precision-stack-conflicts"))}
    assert any("/home/user/.local" in line for line in findings["STACK003"].evidence)
    assert "~orch-2.4.0.dist-info" in findings["ENV002"].evidence[0]


def test_findings_are_triaged_errors_first():
    severities = [f.severity for f in judge(load_fixture("precision-stack-conflicts"))]
    order = {"error": 0, "warning": 1, "info": 2}
    assert severities == sorted(severities, key=order.get)


def test_select_and_ignore_by_prefix():
    snap = load_fixture("precision-stack-conflicts")
    assert {f.code for f in judge(snap, select=["STACK00"])} == {"STACK001", "STACK002", "STACK003"}
    assert {f.code for f in judge(snap, ignore=["STACK"])} == {"ENV002"}
