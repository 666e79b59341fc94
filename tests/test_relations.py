"""Declared relations between checks: --select/--ignore give the right answer, and nothing else changes.

A check that stands down when another names the cause declares it (``superseded_by``, or
``defers_to`` for single findings); a finding is dropped only when a *selected* check that
supersedes it fired. Checks declare the optional facts they read (``needs``), and a run
takes the microkernels only when a selected check needs them.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from typer.testing import CliRunner

from helpers import fixture_path, load_fixture, snapshot_fixture_names
from mpdoctor.checks.registry import FACTS as FACTS_BY_NAME, FAMILIES, Registry, builtin_registry, defer
from mpdoctor.doctor.judge import run_checks
from mpdoctor.cli import app
from mpdoctor.doctor import gather as gather_module
from mpdoctor.doctor.gather import Options, gather
from mpdoctor.doctor.judge import judge
from mpdoctor.findings import error, warning
from mpdoctor.snapshot import KernelInfo, Snapshot
from mpdoctor.snapshot.kernels import DeviceKernels
from mpdoctor.snapshot.project import ProjectScan

runner = CliRunner()


def codes(findings) -> list[str]:
    return [f.code for f in findings]


# ---------------------------------------------------------------- the three reported cases


def test_driver_too_old_with_torch006_ignored_still_says_cuda_cannot_start():
    snap = load_fixture("h100-driver-too-old")
    assert codes(judge(snap)) == ["TORCH006"]  # TORCH006 names the cause; TORCH009 stands down
    (finding,) = judge(snap, ignore=["TORCH006"])
    assert finding.code == "TORCH009" and finding.severity == "error"
    assert "is_available() is False" in finding.title
    assert "supports CUDA 12.2" in finding.title and "needs CUDA 13.0" in finding.title
    assert "580" in finding.fix[0].text  # the driver to install, as TORCH006 would say
    # No build of torch 2.13.0 is for CUDA 12.2 or older: cu126 would run only under minor-version compatibility,
    # which TORCH006 flags in turn, so the fix says so instead of offering it (issue 17)
    assert not any("/whl/cu126" in (step.command or "") for step in finding.fix)
    assert any(step.text.startswith("No build of torch 2.13.0 fits this driver") for step in finding.fix)


def test_every_gpu_hidden_with_gpu005_ignored_still_says_cuda_has_no_gpu():
    snap = load_fixture("cuda-hidden-by-env")
    assert codes(judge(snap)) == ["GPU005"]
    (finding,) = judge(snap, ignore=["GPU005"])
    assert finding.code == "TORCH009" and finding.severity == "error"
    assert "CUDA_VISIBLE_DEVICES='' hides every GPU" in finding.title
    assert finding.fix[0].command == "unset CUDA_VISIBLE_DEVICES"
    assert not any("docker" in (step.command or "") for step in finding.fix)  # the cause is known


def test_missing_kernel_image_with_precision_ignored_is_still_an_error():
    snap = load_fixture("kernels-missing-arch")
    assert sorted(codes(judge(snap))) == ["PREC002", "PREC004"]  # measured: TORCH007 stands down
    (finding,) = judge(snap, ignore=["PREC"])
    assert finding.code == "TORCH007" and finding.severity == "error"
    assert "sm_120" in finding.title and "no kernel image" in finding.title
    assert finding.fix[0].command.endswith("/whl/cu129")


def test_a_minor_version_warning_does_not_hide_cuda_being_unavailable():
    """TORCH009 gives way to TORCH006 only for the cause TORCH006 names as an error (a driver major too old)."""
    snap = load_fixture("rtx4090-minor-newer")
    snap.torch.cuda_available = False  # for some other reason: CUDA 12.9 runs on a 12.4 driver
    found = {f.code: f for f in judge(snap)}
    assert set(found) == {"TORCH006", "TORCH009"}
    assert found["TORCH006"].severity == "warning" and found["TORCH009"].severity == "error"
    assert "driver supports" not in found["TORCH009"].title


@pytest.mark.parametrize(
    "fixture, ignore, code, words",
    [
        ("h100-driver-too-old", "TORCH006", "TORCH009", "needs CUDA 13.0"),
        ("cuda-hidden-by-env", "GPU005", "TORCH009", "hides every GPU"),
        ("kernels-missing-arch", "PREC", "TORCH007", "no kernel image"),
    ],
)
def test_the_cli_reports_the_error_and_exits_1(fixture, ignore, code, words):
    result = runner.invoke(
        app, ["check", "--snapshot", str(fixture_path(fixture)), "--ignore", ignore], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 1, result.output
    assert code in result.output and words in result.output
    assert "No problems found" not in result.output


# ---------------------------------------------------------------- every relation, both ways


def _oneflow_without_package(snap: Snapshot) -> None:
    snap.environment.oneflow.packages["oneflow"].origin = ""  # metadata and files, but nothing to import


def _torch_on_cuda_11(snap: Snapshot) -> None:
    snap.torch.cuda = "11.8"  # oneflow cu122 beside a cu118 torch


def _cpu_worker_could_not_start(snap: Snapshot) -> None:
    """The kernels' CPU worker died before its first step, as it does on a torch that is no torch."""
    device = DeviceKernels(device="cpu", status="error", detail="the worker exited with status 70 between steps")
    snap.kernels = KernelInfo(status="ok", mode="quick", devices=[device])


def _labelled_placeholder_not_imported(snap: Snapshot) -> None:
    """A oneflow without its core whose files say cu122, beside a cu118 torch; importing it was not tried."""
    snap.environment.oneflow.build.version = "0.9.1.dev20240802+cu122"
    snap.environment.oneflow.runtime.status = "not-run"
    _torch_on_cuda_11(snap)


# (fixture, change to it, the superseded check, what to ignore, the code that supersedes it)
RELATIONS = [
    ("h100-driver-too-old", None, "TORCH009", ["TORCH006"], "TORCH006"),
    ("cuda-hidden-by-env", None, "TORCH009", ["GPU005"], "GPU005"),
    ("slurm-nodevfiles", None, "TORCH009", ["GPU005"], "GPU005"),
    ("visible-devices-unknown-uuid", None, "TORCH009", ["GPU005"], "GPU005"),
    ("kernels-missing-arch", None, "TORCH007", ["PREC002"], "PREC002"),
    ("kernels-missing-arch", None, "PREC009", ["PREC002", "TORCH007"], "PREC002"),
    ("torch-leftover-directory", _cpu_worker_could_not_start, "PREC009", ["TORCH011"], "TORCH011"),
    ("titan-1080ti-pci-order", None, "GPU003", ["GPU002"], "GPU002"),
    ("a100-t4-pci-order", None, "GPU003", ["GPU002"], "GPU002"),
    ("kernels-titan-1080ti", None, "GPU003", ["GPU002"], "GPU002"),
    ("apex-cuda11", None, "APEX003", ["APEX004"], "APEX004"),
    ("oneflow-pypi-placeholder", None, "ONEFLOW006", ["ONEFLOW001"], "ONEFLOW001"),
    ("oneflow-pypi-placeholder", _oneflow_without_package, "ONEFLOW002", ["ONEFLOW001"], "ONEFLOW001"),
    ("oneflow-import-fails", _torch_on_cuda_11, "ONEFLOW003", ["ONEFLOW006"], "ONEFLOW006"),
    ("oneflow-pypi-placeholder", _labelled_placeholder_not_imported, "ONEFLOW003", ["ONEFLOW001"], "ONEFLOW001"),
    ("kernels-t4", None, "PREC004", ["PREC005"], "PREC005"),
    ("kernels-titan-1080ti", None, "PREC004", ["PREC005"], "PREC005"),
    ("precision-stack-conflicts", None, "STACK001", ["STACK002"], "STACK002"),
]


@pytest.mark.parametrize(
    "fixture, change, superseded, ignore, superseding", RELATIONS, ids=[f"{r[2]}-by-{r[4]}-{r[0]}" for r in RELATIONS]
)
def test_a_superseded_finding_stands_down_and_speaks_when_its_superseder_is_ignored(
    fixture, change, superseded, ignore, superseding
):
    snap = load_fixture(fixture)
    if change:
        change(snap)
    everything = judge(snap)
    alone = judge(snap, ignore=ignore)
    assert superseding in codes(everything)
    spoken = [f for f in alone if f not in everything]
    assert superseded in codes(spoken), codes(alone)
    for finding in spoken:  # whatever else speaks gives way to an ignored code too
        entry = builtin_registry().get(finding.code)
        assert set(ignore) & set(entry.superseded_by + entry.defers_to), finding.code
        assert finding.evidence and finding.fix and finding.title
    # Selecting both gives the same answer as selecting everything; selecting the superseded alone, it speaks.
    assert [f for f in judge(snap, select=[superseded, superseding]) if f.code == superseded] == [
        f for f in everything if f.code == superseded
    ]
    assert [f for f in judge(snap, select=[superseded]) if f not in everything]


def test_a_superseded_finding_is_not_a_duplicate_of_the_finding_it_gives_way_to():
    # PREC004 alone speaks of bf16 on the T4 in a finding of its own, beside its finding for the CPU.
    findings = judge(load_fixture("kernels-t4"), select=["PREC004"])
    titles = sorted(f.title for f in findings)
    assert len(titles) == 2 and any(t.startswith("bf16 runs") and "Tesla T4" in t for t in titles)
    assert len(titles) == len(set(titles))


def test_every_declared_relation_is_exercised_by_a_fixture():
    exercised = {(r[2], r[4]) for r in RELATIONS}
    declared = {
        (c.code, other) for c in builtin_registry().snapshot_checks() for other in c.superseded_by + c.defers_to
    }
    # PREC009's start failure gives way to TORCH007 as well (kernels-missing-arch, ignoring PREC002 only).
    assert judge(load_fixture("kernels-missing-arch"), select=["PREC009", "TORCH007"])[0].code == "TORCH007"
    exercised.add(("PREC009", "TORCH007"))
    assert declared == exercised


# ---------------------------------------------------------------- nothing selected: nothing changes


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_nothing_selected_is_everything_selected(name):
    snap = load_fixture(name)
    everything = judge(snap)
    assert judge(snap, select=list(FAMILIES.values())) == everything
    assert judge(snap, select=[c.code for c in builtin_registry().snapshot_checks()]) == everything


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_ignoring_a_check_removes_its_findings_and_lets_speak_only_what_it_supersedes(name):
    snap = load_fixture(name)
    everything = judge(snap)
    registry = builtin_registry()
    for code in sorted(set(codes(everything))):
        rest = judge(snap, ignore=[code])
        assert [f for f in everything if f.code != code and f not in rest] == []  # nothing else is lost
        for finding in (f for f in rest if f not in everything):
            if finding.code == "MPD002":  # the fact the ignored check reports itself is now reported by MPD002
                assert code in {fact.reported_by for fact in FACTS_BY_NAME.values()}, (name, code)
                continue
            entry = registry.get(finding.code)
            assert code in entry.superseded_by + entry.defers_to, (name, code, finding.code)


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_no_finding_stands_beside_a_check_that_supersedes_it(name):
    found = judge(load_fixture(name))
    fired = set(codes(found))
    for finding in found:
        assert not fired & set(builtin_registry().get(finding.code).superseded_by), (name, finding.code)


# ---------------------------------------------------------------- the semantics, on a registry of its own


def _registry(*checks):
    registry = Registry({"test": "TST"})
    for code, func, relations in checks:
        registry.add(code, f"test-{code.lower()}", "test", func, **relations)
    registry.validate()
    return registry


def _says(title):
    def func(snap):
        """Finds something."""
        yield warning(title, ["fact"])

    return func


def _silent(snap):
    """Finds nothing."""
    return []


def _raises(snap):
    """Crashes."""
    raise RuntimeError("boom")


def test_superseded_only_by_a_selected_check_that_fired():
    cause, effect = ("TST001", _says("the cause"), {}), ("TST002", _says("the effect"), {"superseded_by": ["TST001"]})
    registry = _registry(cause, effect)
    assert codes(run_checks(Snapshot(), registry.select())) == ["TST001"]
    assert codes(run_checks(Snapshot(), registry.select(ignore=["TST001"]))) == ["TST002"]
    assert codes(run_checks(Snapshot(), registry.select(select=["TST002"]))) == ["TST002"]
    quiet = _registry(("TST001", _silent, {}), effect)
    assert codes(run_checks(Snapshot(), quiet.select())) == ["TST002"]  # selected, but it did not fire
    crashed = _registry(("TST001", _raises, {}), effect)
    assert sorted(codes(run_checks(Snapshot(), crashed.select()))) == ["MPD001", "TST002"]  # a crash is no verdict


def test_the_order_checks_run_in_does_not_matter():
    registry = _registry(
        ("TST001", _says("the effect"), {"superseded_by": ["TST002"]}), ("TST002", _says("the cause"), {})
    )
    assert codes(run_checks(Snapshot(), registry.select())) == ["TST002"]
    assert codes(run_checks(Snapshot(), list(reversed(registry.select())))) == ["TST002"]


def test_a_deferred_finding_stands_down_alone():
    def two(snap):
        """Two findings, one of them the other check's business."""
        yield error("mine", ["fact"])
        yield defer(error("theirs too", ["fact"]), "TST002")

    registry = _registry(("TST001", two, {"defers_to": ["TST002"]}), ("TST002", _says("theirs"), {}))
    assert [f.title for f in run_checks(Snapshot(), registry.select())] == ["mine", "theirs"]
    assert [f.title for f in run_checks(Snapshot(), registry.select(ignore=["TST002"]))] == ["mine", "theirs too"]


def test_deferring_to_an_undeclared_code_is_a_crash_of_that_check():
    def sneaky(snap):
        """Defers to what it did not declare."""
        yield defer(error("hidden", ["fact"]), "TST002")

    registry = _registry(("TST001", sneaky, {}), ("TST002", _says("other"), {}))
    (crash, other) = sorted(run_checks(Snapshot(), registry.select()), key=lambda f: f.code)
    assert crash.code == "MPD001" and "does not declare" in crash.title and other.code == "TST002"


# ---------------------------------------------------------------- needs: the facts a run takes


@pytest.fixture
def taken(monkeypatch):
    """What gather asked the probes for: the kernel mode of each take_snapshot call (``.project``: the scan's)."""
    calls = TakenCalls()

    def fake_take_snapshot(python, timeout, kernels="quick", project=True, progress=None, project_dir=""):
        calls.append(kernels)
        calls.project.append(project)
        return Snapshot()

    monkeypatch.setattr("mpdoctor.probes.collect.take_snapshot", fake_take_snapshot)
    return calls


class TakenCalls(list):
    """The kernel mode of each call; ``project`` holds whether each call asked for the project scan."""

    def __init__(self) -> None:
        super().__init__()
        self.project: list[bool] = []


@pytest.mark.parametrize(
    "select, ignore, mode, expected",
    [
        ([], [], "quick", "quick"),
        ([], [], "full", "full"),
        ([], [], "off", "off"),  # --no-kernels
        (["TORCH"], [], "quick", "off"),
        (["TORCH007"], [], "quick", "off"),  # predicts from the arch list; PREC002 is not selected to supersede it
        (["GPU", "APEX", "ONEFLOW"], [], "quick", "off"),
        ([], ["PREC"], "quick", "off"),
        (["PREC002"], [], "quick", "quick"),
        (["TORCH", "PREC010"], [], "full", "full"),
        (["PREC"], ["PREC00"], "quick", "quick"),  # PREC010 is left, and needs them
        (["PREC"], ["PREC00", "PREC01"], "quick", "off"),
    ],
)
def test_gather_takes_the_kernels_only_when_a_selected_check_needs_them(taken, select, ignore, mode, expected):
    gather(Options(python=sys.executable, kernels=mode, select=select, ignore=ignore))
    assert taken == [expected]


@pytest.mark.parametrize(
    "select, ignore, expected",
    [
        ([], [], True),
        (["TORCH"], [], False),
        (["GPU", "PREC", "STACK"], [], False),
        (["APEX"], [], True),
        (["APEX002"], [], False),  # reads installed code's apex imports, not the project's
        (["APEX006"], [], True),
        (["ONEFLOW005"], [], True),
        (["ONEFLOW003"], [], False),
        ([], ["APEX", "ONEFLOW"], True),  # ENV003 reports on the scan itself
        ([], ["APEX", "ONEFLOW", "AMP", "ENV003"], False),
        (["AMP001"], [], True),
        (["TORCH", "ONEFLOW001"], [], True),
    ],
)
def test_gather_scans_the_project_only_when_a_selected_check_needs_it(taken, select, ignore, expected):
    gather(Options(python=sys.executable, select=select, ignore=ignore))
    assert taken.project == [expected]


def test_needs_are_asked_of_the_selected_checks():
    assert gather_module.needed_facts(Options(python="python", select=["TORCH"])) == frozenset()
    assert gather_module.needed_facts(Options(python="python", select=["PREC001"])) == {"kernels"}
    assert "project" in gather_module.needed_facts(Options(python="python", select=["APEX006"]))
    assert gather_module.needed_facts(Options(python="python")) == {"kernels", "project"}


def test_a_saved_snapshot_is_never_probed(taken):
    gather(Options(python=sys.executable, snapshot=str(fixture_path("kernels-t4"))))
    assert taken == []


def _without(snap: Snapshot, fact: str) -> Snapshot:
    snap = dataclasses.replace(snap)
    if fact == "kernels":
        snap.kernels = KernelInfo()
    else:
        snap.environment = dataclasses.replace(snap.environment, project=ProjectScan())
    return snap


@pytest.mark.parametrize("fact", ["kernels", "project"])
def test_a_check_that_does_not_declare_a_fact_does_not_read_it(fact):
    """Mechanically: without the fact, every check that does not need it says exactly the same."""
    checks = [c for c in builtin_registry().snapshot_checks() if fact not in c.needs]
    needing = [c for c in builtin_registry().snapshot_checks() if fact in c.needs]
    assert needing  # the declaration is in use
    for name in snapshot_fixture_names():
        snap = load_fixture(name)
        for entry in checks:
            assert entry.run(snap) == entry.run(_without(snap, fact)), (name, entry.code)


def test_every_check_that_needs_the_kernels_reads_them():
    """The reverse, for the expensive fact: each declared need changes some fixture's verdict when it is gone."""
    needing = [c for c in builtin_registry().snapshot_checks() if "kernels" in c.needs]
    unread = {c.code for c in needing}
    for name in snapshot_fixture_names():
        snap = load_fixture(name)
        unread -= {c.code for c in needing if c.code in unread and c.run(snap) != c.run(_without(snap, "kernels"))}
    assert unread == set()
    assert {c.code for c in needing} == {
        c.code for c in builtin_registry().snapshot_checks() if c.family == "precision"
    }


# ---------------------------------------------------------------- a fact the snapshot never took


def test_a_selected_check_whose_fact_was_never_taken_gets_mpd002_not_silence():
    snap = load_fixture("kernels-skipped")  # taken with --no-kernels
    alone = judge(snap, select=["PREC001"])
    assert [f.code for f in alone] == ["MPD002"] and "no kernels" in alone[0].title
    assert "PREC001" in alone[0].evidence[1]
    # PREC010 says it itself when it is selected: no second finding for the same missing fact
    both = judge(snap, select=["PREC001", "PREC010"])
    assert [f.code for f in both] == ["PREC010"]


def test_a_fact_that_was_taken_gives_no_mpd002():
    for name in snapshot_fixture_names():
        assert not [f for f in judge(load_fixture(name), select=["APEX", "ONEFLOW"]) if f.code == "MPD002"], name
