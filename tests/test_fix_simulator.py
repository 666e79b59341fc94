"""Every fix proven: for every fixture and every finding, apply the fix to the snapshot, judge it again, and the
finding is gone with no new warning or error, unless the fix's own words announce it by its code (no fix leads to
another finding unless the fix says so).

Each way of a fix is applied alone (the first way, then each alternative: ``FixStep.role``).
A way the simulator cannot apply (a build from source, a reboot, pip choosing a release)
is listed with the reason; the coverage is printed (``pytest -s``) and held to a floor.
"""

from __future__ import annotations

import functools

import pytest

from fixtures.base import with_env, with_torch
from helpers import load_fixture, snapshot_fixture_names
import fix_simulator
from fix_simulator import CannotSimulate, apply, prove
from mpdoctor.checks import fixes
from mpdoctor.doctor.judge import judge
from mpdoctor.findings import Finding, FixStep
from mpdoctor.snapshot import Snapshot

# Findings (fixture, code) whose first way with a command is proven, as a share of all findings whose fix carries a
# command that changes something (35 of 56 when written; 44 of 56 with apex built from source, OneFlow's community
# builds, torch reinstalled in place, upgrades past an apex import, and mock-torch turned off; 46 of 59 with the real
# H200 capture, whose PREC011 "measure again" cannot be simulated). A floor against regressions: raise it as
# coverage grows.
COVERAGE_FLOOR = 0.77


def carries_command(finding: Finding) -> bool:
    return any((s.command and s.role != "inspect") or fix_simulator.DRIVER_UPGRADE.match(s.text) for s in finding.fix)


def first_fix(results):
    """The first way that does something (a first way that only looks, e.g. "check the interpreter", is skipped)."""
    return next((r for r in results if r.verdict != "no-command"), None)


@functools.lru_cache(maxsize=None)
def _outcomes() -> tuple:
    rows = []
    for name in snapshot_fixture_names():
        snap = load_fixture(name)
        for finding in judge(snap):
            rows.append((name, finding, tuple(prove(snap, finding, judge))))
    return tuple(rows)


def test_no_simulated_fix_fails_on_any_fixture():
    failed = [
        f"{name} {finding.code} way {r.way}: {r.why}"
        for name, finding, results in _outcomes()
        for r in results
        if r.verdict == "failed"
    ]
    assert failed == []


def test_no_fix_leads_to_a_finding_it_does_not_announce(capsys):
    """The count this proves, printed (``pytest -s``): every way applied, on every fixture, judged again."""
    rows = _outcomes()
    applied = [(name, f, r) for name, f, results in rows for r in results if r.verdict in ("proven", "failed")]
    unannounced = [f"{name} {f.code} way {r.way}: {r.why}" for name, f, r in applied if "not announce" in r.why]
    fixtures = {name for name, _, _ in applied}
    findings = {(name, f.code, f.title) for name, f, _ in applied}
    announcing = [(name, f.code, r.announced) for name, f, r in applied if r.announced]
    with capsys.disabled():
        print(
            f"\nfix simulator: {len(applied)} ways of {len(findings)} fixes applied over {len(fixtures)} fixtures "
            f"(of {len(snapshot_fixture_names())}); {len(unannounced)} led to an unannounced warning or error; "
            f"{len(announcing)} lead to findings they announce:"
        )
        for name, code, said in announcing:
            print(f"  {name:32} {code:10} announces {', '.join(said)}")
    assert unannounced == []
    assert len(applied) >= 50 and len(fixtures) >= 30


def test_a_fix_that_leads_to_a_warning_it_does_not_announce_is_caught():
    """GPU005's fix on a box of two different GPUs: CUDA then sees both, which GPU001 and GPU003 judge. Without its
    words saying so, the proof fails; with them (the real fix), it is proven and names what it announced."""
    snap = load_fixture("visible-devices-unknown-uuid")
    [finding] = [f for f in judge(snap) if f.code == "GPU005"]
    silent = Finding(
        finding.severity,
        finding.title,
        finding.evidence,
        [FixStep("Let CUDA see every GPU", "unset CUDA_VISIBLE_DEVICES")],
        finding.code,
        finding.name,
        finding.family,
    )
    [result] = prove(snap, silent, judge)
    assert result.verdict == "failed" and "new warning GPU001, which the fix does not announce" in result.why
    first = prove(snap, finding, judge)[0]
    assert (first.verdict, first.announced) == ("proven", ["GPU001", "GPU003"])


def test_a_renumbered_finding_is_not_a_new_one():
    """GPU002's fix makes the TITAN RTX cuda:0: its bf16 findings move from cuda:1 to cuda:0, the same problems."""
    snap = load_fixture("kernels-titan-1080ti")
    [finding] = [f for f in judge(snap) if f.code == "GPU002"]
    [result] = [r for r in prove(snap, finding, judge) if r.way == 0]
    assert result.verdict == "proven" and result.announced == []


def test_a_cuda_build_installed_over_a_cpu_torch_brings_its_cudnn():
    """The PyTorch index's CUDA builds require their nvidia-cudnn wheel: installed with dependencies, cuDNN loads."""
    snap = load_fixture("titan-rtx-1080ti-cpu-torch")
    after = apply(snap, [fixes.reinstall_torch_step(snap, "12.6", "x")])
    assert after.torch.cudnn is not None and not [f for f in judge(after) if f.code == "TORCH008"]
    back = apply(after, [fixes.reinstall_torch_step(after, None, "x")])
    assert back.torch.cudnn is None  # a CPU build loads none


def test_coverage_of_fixes_with_a_command(capsys):
    with_command = [(name, f, first_fix(results)) for name, f, results in _outcomes() if carries_command(f)]
    proven = [(name, f) for name, f, first in with_command if first and first.verdict == "proven"]
    not_proven = [(name, f, first) for name, f, first in with_command if not first or first.verdict != "proven"]
    share = len(proven) / len(with_command)
    with capsys.disabled():
        print(
            f"\nfix simulator: {len(proven)} of {len(with_command)} findings with a command have a proven first "
            f"way ({share:.0%}); {len(not_proven)} could not be simulated:"
        )
        for name, f, first in not_proven:
            print(f"  {name:32} {f.code:10} {first.verdict if first else '-'}: {first.why if first else ''}")
    assert share >= COVERAGE_FLOOR


def test_every_alternative_that_can_be_simulated_is_proven():
    alternatives = [r for _, _, results in _outcomes() for r in results[1:] if r.verdict != "cannot-simulate"]
    assert alternatives, "no fixture offers an alternative the simulator can apply"
    assert all(r.verdict in ("proven", "no-command") for r in alternatives)


# ---------------------------------------------------------------- the simulator itself


def test_the_snapshot_given_is_never_changed():
    snap = load_fixture("titan-1080ti-fastest-first")
    before = repr(snap)
    apply(snap, [FixStep("x", fixes.export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"))])
    assert repr(snap) == before


def test_export_reorders_cuda_devices_by_the_rules():
    snap = load_fixture("titan-1080ti-fastest-first")
    after = apply(snap, [FixStep("x", fixes.export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"))])
    nvml_order = [g.uuid.removeprefix("GPU-") for g in snap.machine.nvml.gpus]
    assert [d.uuid for d in after.torch.devices] == nvml_order


def test_uninstall_removes_every_copy():
    snap = load_fixture("precision-stack-conflicts")
    after = apply(snap, [FixStep("x", fixes.pip(snap, "uninstall", "-y", "numpy"))])
    assert after.distribution("numpy") is None


def test_driver_upgrade_moves_the_cuda_the_driver_supports():
    snap = load_fixture("h100-driver-too-old")
    after = apply(snap, [fixes.driver_upgrade_step(snap, "13.0")])
    assert after.machine.nvml.driver_version == "580.65.06"
    assert after.machine.nvml.cuda_driver_version == "13.0"  # 13.1 needs 590.44.01


def test_a_wrong_fix_is_caught():
    """The proof is not vacuous: a fix that changes nothing that matters leaves the finding, and is reported."""
    snap = load_fixture("titan-1080ti-fastest-first")
    [finding] = [f for f in judge(snap) if f.code == "GPU001"]
    wrong = Finding(
        finding.severity,
        finding.title,
        finding.evidence,
        [FixStep("Keep CUDA's default order", fixes.export("CUDA_DEVICE_ORDER", "FASTEST_FIRST"))],
        finding.code,
        finding.name,
        finding.family,
    )
    [result] = prove(snap, wrong, judge)
    assert result.verdict == "failed" and "GPU001 is still there" in result.why


def test_a_fix_that_breaks_something_else_is_caught():
    """Uninstalling torch clears a torch finding but costs an error: not proven."""
    snap = load_fixture("v100-cu130")
    [finding] = [f for f in judge(snap) if f.code == "TORCH007"]
    bad = Finding(
        finding.severity,
        finding.title,
        finding.evidence,
        [FixStep("Remove torch", fixes.pip(snap, "uninstall", "-y", "torch"))],
        finding.code,
        finding.name,
        finding.family,
    )
    [result] = prove(snap, bad, judge)
    assert result.verdict == "failed" and "new error TORCH001" in result.why


def test_ways_split_at_alternatives_and_inspect_steps_are_skipped():
    steps = [
        fixes.inspect("look", "nvidia-smi"),
        FixStep("do", "unset X"),
        FixStep("then", "unset Y"),
        fixes.alternative("Or this", "unset Z"),
        FixStep("and", "unset W"),
    ]
    assert [[s.command for s in way] for way in fixes.ways(steps)] == [
        ["nvidia-smi", "unset X", "unset Y"],
        ["unset Z", "unset W"],
    ]
    snap = load_fixture("cpu-laptop")
    assert apply(snap, [fixes.inspect("look", "sudo reboot")]).environment.env == snap.environment.env


@pytest.mark.parametrize(
    "command, why",
    [
        ("git clone https://github.com/NVIDIA/apex && cd apex", "compound shell command"),
        ("sudo reboot", "not a command the simulator knows"),
        ("eval $(python -m oneflow.mock_torch disable)", "compound shell command"),
        ("mpdoctor check --timeout 300", "not a command the simulator knows"),
    ],
)
def test_what_cannot_be_simulated_says_why(command, why):
    with pytest.raises(CannotSimulate, match=why):
        apply(load_fixture("cpu-laptop"), [FixStep("x", command)])


def test_a_reinstall_from_a_cuda_index_builds_that_variant():
    snap = load_fixture("titan-rtx-1080ti-cpu-torch")
    after = apply(snap, [fixes.reinstall_torch_step(snap, "12.6", "x")])
    assert (after.torch.version, after.torch.cuda, after.torch.cuda_available) == ("2.13.0+cu126", "12.6", True)
    assert "sm_61" not in after.torch.arch_list and "sm_60" in after.torch.arch_list  # torch's own release table
    assert len(after.torch.devices) == 2


def test_kernels_measured_on_a_gpu_follow_it_to_its_new_ordinal():
    snap = load_fixture("kernels-titan-1080ti")  # cuda:0 is the GTX 1080 Ti, cuda:1 the TITAN RTX
    titan = next(g.uuid for g in snap.machine.nvml.gpus if "TITAN" in g.name)
    after = apply(snap, [FixStep("x", fixes.export("CUDA_VISIBLE_DEVICES", titan))])
    assert [(d.ordinal, d.name) for d in after.torch.devices] == [(0, "NVIDIA TITAN RTX")]
    gpus = {d.device: d.name for d in after.kernels.devices if d.device.startswith("cuda:")}
    assert gpus == {"cuda:0": "NVIDIA TITAN RTX"}


# ---------------------------------------------------------------- builds, repairs and upgrades


def _first_way(snap: Snapshot, code: str) -> list[FixStep]:
    finding = next(f for f in judge(snap) if f.code == code)
    return [s for s in fixes.ways(finding.fix)[0] if s.role != "inspect"]


def test_apex_built_from_source_loads_against_this_torch():
    """APEX003's fix: uninstall, then build with APEX_CPP_EXT/APEX_CUDA_EXT against the installed torch."""
    snap = load_fixture("apex-stale-torch")  # amp_C and fused_layer_norm_cuda: undefined symbol; torch 2.4.0+cu124
    steps = _first_way(snap, "APEX003")
    assert "cd apex" not in steps[-1].command and "git+https://github.com/NVIDIA/apex" in steps[-1].command
    after = apply(snap, steps)
    apex = after.environment.apex
    assert [(e.name, e.load_status) for e in apex.extensions] == [
        ("apex_C", "ok"),
        ("amp_C", "ok"),
        ("fused_layer_norm_cuda", "ok"),
    ]
    assert "libcudart.so.12" in apex.extensions[1].needed and "libcudart.so.12" not in apex.extensions[0].needed
    assert "amp" not in apex.subpackages  # apex's main branch has had no apex.amp since May 2025
    # the variables are the build's: the shell the user goes on in does not keep them
    assert "APEX_CPP_EXT" not in after.environment.env


def test_apex_without_the_cuda_flag_is_a_python_only_build_and_the_proof_says_so():
    snap = load_fixture("apex-stale-torch")
    uninstall, build = _first_way(snap, "APEX003")
    python_only = FixStep(build.text, build.command.replace("APEX_CUDA_EXT=1 ", ""))
    after = apply(snap, [uninstall, python_only])
    assert [e.name for e in after.environment.apex.extensions] == ["apex_C"]
    assert any(f.code == "APEX002" for f in judge(after))  # built without its CUDA extensions: APEX002 says so


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda s: with_torch(s, cuda=None, version="2.4.0+cpu"), "APEX_CUDA_EXT=1 with a torch that has no CUDA"),
        (lambda s: with_torch(s, status="import-error"), "building apex imports torch"),
    ],
)
def test_an_apex_build_that_would_stop_is_not_simulated(change, why):
    snap = change(load_fixture("apex-stale-torch"))
    with pytest.raises(CannotSimulate, match=why):
        apply(snap, _first_way(load_fixture("apex-stale-torch"), "APEX003"))


def test_an_apex_build_over_an_apex_still_there_is_not_simulated():
    snap = load_fixture("apex-stale-torch")
    build = _first_way(snap, "APEX003")[-1]
    with pytest.raises(CannotSimulate, match="another apex is still there"):
        apply(snap, [build])


def test_oneflow_from_the_community_index_is_a_real_build_for_that_cuda():
    snap = load_fixture("oneflow-cuda-mismatch")  # oneflow +cu118 beside torch +cu124
    after = apply(snap, _first_way(snap, "ONEFLOW003"))
    build = after.environment.oneflow.build
    assert build.version == "latest+cu122" and build.native_core  # the page's label; its newest release unnamed
    assert after.environment.oneflow.runtime.status == "not-run"  # how it imports is the probe's to measure
    assert after.distribution("oneflow").version == "latest+cu122"


def test_oneflow_upgraded_over_the_one_installed_is_not_simulated():
    snap = load_fixture("oneflow-cuda-mismatch")
    install = _first_way(snap, "ONEFLOW003")[-1]
    with pytest.raises(CannotSimulate, match="-U replaces the oneflow here only if"):
        apply(snap, [install])


def test_a_new_oneflow_where_a_real_build_failed_to_import_is_not_claimed():
    """ONEFLOW006: libnccl.so.2 was missing; a new build may miss it too, and the snapshot cannot say."""
    snap = load_fixture("oneflow-import-fails")
    [result] = prove(snap, next(f for f in judge(snap) if f.code == "ONEFLOW006"), judge)
    assert result.verdict == "cannot-simulate" and "libnccl.so.2" in result.why


def test_torch_reinstalled_in_place_replaces_another_builds_files():
    """TORCH002: a +cpu torch asking for libcudnn.so.9 has a CUDA build's files; the forced reinstall writes its own."""
    snap = load_fixture("torch-import-error")
    [reinstall] = _first_way(snap, "TORCH002")
    assert reinstall.command.endswith("torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu")
    after = apply(snap, [reinstall])
    assert (after.torch.status, after.torch.version, after.torch.cuda) == ("imported", "2.13.0+cpu", None)


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda s: with_env(s, LD_LIBRARY_PATH="/usr/local/cuda-11.8/lib64"), "LD_LIBRARY_PATH is set"),
        (
            lambda s: with_torch(s, error_type="ImportError", error_message="undefined symbol: _ZN5torch3jit"),
            "whether reinstalling torch 2.13.0\\+cpu without its dependencies removes the cause is not recorded",
        ),
        (lambda s: with_torch(s, status="import-crashed"), "whether a reinstall cures that"),
    ],
)
def test_a_reinstall_is_not_claimed_to_cure_what_the_snapshot_does_not_explain(change, why):
    snap = load_fixture("torch-import-error")
    with pytest.raises(CannotSimulate, match=why):
        apply(change(snap), _first_way(snap, "TORCH002"))


def test_which_cudnn_a_reinstall_brings_is_not_invented():
    snap = load_fixture("cuda-without-cudnn")
    [reinstall] = _first_way(snap, "TORCH008")
    assert "--index-url https://download.pytorch.org/whl/cu130" in reinstall.command  # PyPI has no +cu130
    with pytest.raises(CannotSimulate, match="nvidia-cudnn pin"):
        apply(snap, [reinstall])


def test_an_upgrade_past_a_release_table_drops_only_what_that_release_dropped():
    snap = load_fixture("apex-amp-removed")  # transformers 4.52.4: apex.amp at import, and the fused-norm swap
    after = apply(snap, [FixStep("x", fixes.pip(snap, "install", "-U", "transformers>=4.53.0"))])
    users = after.environment.apex.users
    assert all(u.lazy for u in users if u.module == "apex.amp" or "amp" in u.names)  # 4.53.0: only in functions
    assert any(u.module == "apex.normalization" for u in users)  # the swap goes only in 5.8.0
    later = apply(snap, [FixStep("x", fixes.pip(snap, "install", "transformers==5.8.0"))])
    assert not any(u.module == "apex.normalization" for u in later.environment.apex.users)


def test_an_upgrade_of_a_package_no_table_knows_is_not_simulated():
    snap = load_fixture("apex-amp-removed")
    for use in snap.environment.apex.users:
        use.distribution = "fairseq"
    with pytest.raises(CannotSimulate, match="another release of fairseq is other code"):
        apply(snap, [FixStep("x", fixes.pip(snap, "install", "fairseq==0.13.0"))])


def test_mock_torch_disable_takes_its_directory_off_pythonpath():
    snap = load_fixture("oneflow-mock-torch")
    mock_dir = snap.environment.oneflow.build.directory + "/mock_torch"
    after = apply(with_env(snap, PYTHONPATH=f"/home/me/lib:{mock_dir}"), _first_way(snap, "ONEFLOW004"))
    assert after.environment.env["PYTHONPATH"] == "/home/me/lib"
    assert after.environment.oneflow.mock.torch.kind == "torch" and after.torch.status == "unknown"


def test_mock_torch_kept_on_by_a_pth_line_stays_on_and_the_proof_fails():
    from mpdoctor.snapshot.apex import PthLine

    snap = load_fixture("oneflow-mock-torch")
    mock_dir = snap.environment.oneflow.build.directory + "/mock_torch"
    snap.environment.oneflow.mock.pth_lines = [
        PthLine(file="/opt/conda/lib/python3.10/site-packages/of.pth", line=mock_dir)
    ]
    finding = next(f for f in judge(snap) if f.code == "ONEFLOW004")
    only_eval = Finding(
        finding.severity,
        finding.title,
        finding.evidence,
        _first_way(snap, "ONEFLOW004"),
        finding.code,
        finding.name,
        finding.family,
    )
    [result] = prove(snap, only_eval, judge)
    assert result.verdict == "failed" and "ONEFLOW004 is still there" in result.why


def test_torch_index_names_the_index_of_a_local_version():
    assert fixes.torch_index("2.13.0+cu130") == ["--index-url", "https://download.pytorch.org/whl/cu130"]
    assert fixes.torch_index("2.13.0+cpu") == ["--index-url", "https://download.pytorch.org/whl/cpu"]
    assert fixes.torch_index("2.13.0") == []
