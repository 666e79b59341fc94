"""Every check against recorded topologies: each code has a fixture that triggers it and ones that do not."""

from __future__ import annotations

import pytest

from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.doctor.judge import judge
from mpdoctor.checks.registry import DOC_SECTIONS, FAMILIES, builtin_registry

EXPECTED = {
    "cpu-laptop": set(),
    "h100-node-healthy": set(),
    "laptop-rtx3060": set(),
    "h100-mig-one-selected": set(),
    "titan-rtx-1080ti-cpu-torch": {"TORCH005", "GPU001"},
    "h100-driver-too-old": {"TORCH006"},
    "rtx4090-minor-newer": {"TORCH006"},
    "v100-cu130": {"TORCH007"},
    "cuda-without-cudnn": {"TORCH008"},
    "cuda-hidden-by-env": {"GPU005"},
    "cuda-unknown-error": {"TORCH009"},
    "cuda-init-hangs": {"TORCH010"},
    "nvml-rm-mismatch": {"DRV001"},
    "nvml-library-not-found": {"DRV001"},
    "nvml-no-permission": {"DRV001"},
    "nvml-timeout": {"DRV001"},
    "nvml-driver-not-loaded": {"DRV001"},
    "torch-missing": {"TORCH001", "GPU001"},
    "torch-import-error": {"TORCH002"},
    "torch-import-crash": {"TORCH003"},
    "torch-import-hang": {"TORCH004"},
    "torch-leftover-directory": {"TORCH011"},
    "environment-probe-failed": {"ENV001"},
    "precision-stack-conflicts": {"STACK001", "STACK002", "STACK003", "ENV002"},
    # Incident 4's box (TITAN RTX + GTX 1080 Ti) in both orders, and as reported.
    "titan-1080ti-fastest-first": {"GPU001", "GPU003"},
    "titan-1080ti-pci-order": {"GPU002"},
    "titan-1080ti-visible-devices-1": {"GPU001"},
    "a100-t4-pci-order": {"GPU002"},
    "a100-t4-fastest-first": {"GPU001", "GPU003"},
    "h100-mig-two-selected": {"GPU008"},
    "visible-devices-out-of-range": {"GPU004"},
    "visible-devices-duplicate": {"GPU004", "TORCH001"},
    "visible-devices-unknown-uuid": {"GPU005"},
    "slurm-nodevfiles": {"GPU005"},
    "device-order-typo": {"GPU006"},
    "gpus-missing-from-cuda": {"GPU007"},
    "pynvml-legacy-shadows": {"GPU009"},
    "pynvml-deprecated-shim": {"GPU009"},
    # Measured precision. The CPU device is a real capture of an AVX2 machine (fp16/bf16 ~100x slower: PREC004
    # info); the GPU devices are constructed (tests/fixtures/kernels.py).
    "cpu-kernels": {"PREC004"},
    "kernels-h100": {"PREC004"},
    "kernels-a100": {"PREC004"},
    "kernels-t4": {"PREC004", "PREC005", "PREC006"},
    "kernels-titan-1080ti": {"GPU002", "PREC004", "PREC005", "PREC006"},
    "kernels-missing-arch": {"PREC002", "PREC004"},
    "kernels-cpu-old-torch": {"PREC001", "PREC004", "PREC007"},
    "kernels-faulty-gpu": {"PREC003", "PREC004", "PREC008", "PREC009"},
    "kernels-skipped": {"PREC010"},
    # Incident 1 (xDiT) and the other apex install states.
    "apex-incident1": {"APEX005", "APEX008"},
    "apex-amp-removed": {"APEX005", "APEX006"},
    "apex-python-only": {"APEX002", "APEX005"},
    "apex-stale-torch": {"APEX003"},
    "apex-cuda11": {"APEX004"},
    "apex-pypi-impostor": {"APEX001"},
    "apex-amp-mixed": {"APEX007", "APEX008"},
    "apex-checkout-in-cwd": {"APEX009"},
    # Incident 2 (OneDiff under torch.autocast) and the other OneFlow states.
    "oneflow-incident2": {"ONEFLOW005"},
    "oneflow-pypi-placeholder": {"ONEFLOW001"},
    "onediff-without-oneflow": {"ONEFLOW002"},
    "oneflow-cuda-mismatch": {"ONEFLOW003"},
    "oneflow-driver-too-old": {"ONEFLOW003"},
    "oneflow-mock-torch": {"ONEFLOW004"},
    "oneflow-import-fails": {"ONEFLOW006"},
}


def codes(name: str) -> set[str]:
    return {f.code for f in judge(load_fixture(name))}


def test_every_fixture_has_an_expectation():
    assert set(snapshot_fixture_names()) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_triggers_exactly_its_codes(name):
    assert codes(name) == EXPECTED[name]


def test_every_code_is_triggered_by_some_fixture():
    """Every snapshot check; the checkpoint and internal codes are triggered in tests/test_registry.py."""
    triggered = set().union(*EXPECTED.values())
    assert {c.code for c in builtin_registry().snapshot_checks()} == triggered


def test_registry_metadata():
    checks = list(builtin_registry())
    assert len({c.code for c in checks}) == len(checks)
    for entry in checks:
        assert entry.summary, entry.code
        for section in DOC_SECTIONS:
            assert section in entry.doc, f"{entry.code} docstring lacks {section}"
        assert entry.code.startswith(FAMILIES[entry.family])  # the declared prefixes: tests/test_registry.py


def test_findings_carry_evidence_and_fix():
    for name, expected in EXPECTED.items():
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
    assert any("/root/.local" in line for line in findings["STACK003"].evidence)
    assert "~orch-2.4.0.dist-info" in findings["ENV002"].evidence[0]


def test_findings_are_triaged_errors_first():
    severities = [f.severity for f in judge(load_fixture("precision-stack-conflicts"))]
    order = {"error": 0, "warning": 1, "info": 2}
    assert severities == sorted(severities, key=order.get)


def test_select_and_ignore_by_prefix():
    snap = load_fixture("precision-stack-conflicts")
    assert {f.code for f in judge(snap, select=["STACK00"])} == {"STACK001", "STACK002", "STACK003"}
    assert {f.code for f in judge(snap, ignore=["STACK"])} == {"ENV002"}
