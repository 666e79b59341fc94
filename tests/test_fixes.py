"""The knowledge behind fix commands (CUDA variants, arch compatibility, versions), and fixes that are right:
never the build already installed, the user's own invocation, the step that really ran out of time."""

from __future__ import annotations

import pytest

from fixtures.base import CU12_ARCHS, cuda_torch, dist, laptop, with_nvml
from fix_simulator import apply
from fixtures.machines import RTX4090
from helpers import load_fixture
from mpdoctor.analysis.versions import cuda_of_driver, driver_for_cuda
from mpdoctor.checks import fixes
from mpdoctor.checks.torch_build import _runs_on
from mpdoctor.doctor.judge import judge
from mpdoctor.findings import Finding
from mpdoctor.snapshot import Invocation, Snapshot


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


# ---------------------------------------------------------------- issue 17: every fix right


def _only(snap: Snapshot, code: str) -> Finding:
    found = [f for f in judge(snap) if f.code == code]
    assert len(found) == 1, [f.title for f in judge(snap)]
    return found[0]


def _commands(finding: Finding) -> list[str]:
    return [s.command for s in finding.fix if s.command]


def _driver_550_cu126() -> Snapshot:
    """The issue's box (constructed): driver 550.127.05 (CUDA 12.4), torch 2.13.0+cu126 on an RTX 4090."""
    snap = with_nvml(laptop(), RTX4090, driver="550.127.05", cuda="12.4")
    return cuda_torch(snap, version="2.13.0+cu126", cuda="12.6", archs=CU12_ARCHS)


def test_torch006_never_recommends_the_build_installed():
    finding = _only(_driver_550_cu126(), "TORCH006")
    assert not any("cu126" in c for c in _commands(finding))
    assert not any("Or install the torch build for CUDA 12.6" in s.text for s in finding.fix)


def test_torch006_names_the_least_driver_of_torchs_own_cuda_version():
    finding = _only(_driver_550_cu126(), "TORCH006")
    assert finding.fix[0].text.startswith("Upgrade the NVIDIA driver to 560.28.03 or newer")  # not 525.60.13
    assert "550.127.05" in finding.fix[0].text  # and says what is there now
    assert (
        _only(load_fixture("h100-driver-too-old"), "TORCH006")
        .fix[0]
        .text.startswith("Upgrade the NVIDIA driver to 580.65.06 or newer")
    )


def test_torch006_says_when_no_build_of_this_torch_fits_the_driver():
    finding = _only(_driver_550_cu126(), "TORCH006")
    [other] = [s for s in finding.fix if s.role == "alternative"]
    assert other.command is None
    assert other.text.startswith("No build of torch 2.13.0 fits this driver")
    assert "CUDA 12.4" in other.text


def test_torch006_offers_a_build_the_driver_fully_supports_and_it_is_proven():
    snap = with_nvml(laptop(), RTX4090, driver="570.26", cuda="12.8")
    snap = cuda_torch(snap, version="2.13.0+cu129", cuda="12.9", archs=CU12_ARCHS + ["sm_100", "sm_120"])
    finding = _only(snap, "TORCH006")
    [other] = [s for s in finding.fix if s.role == "alternative"]
    assert other.command.endswith("--index-url https://download.pytorch.org/whl/cu126")
    after = apply(snap, [other])
    assert after.torch.version == "2.13.0+cu126" and not [f for f in judge(after) if f.code == "TORCH006"]


def test_driver_table_reads_both_ways():
    assert driver_for_cuda("12.6") == "560.28.03" and driver_for_cuda("13.0") == "580.65.06"
    assert driver_for_cuda("12.7") == ""  # no such release: no guess
    assert cuda_of_driver("550.127.05") == "12.4" and cuda_of_driver("560.28.03") == "12.6"
    assert cuda_of_driver("450.0") is None


def test_best_variant_never_returns_the_installed_build():
    snap = _driver_550_cu126()
    assert fixes.best_cuda_variant(snap, "12.4", [89]) == "12.9"  # minor-version compatibility: not cu126 again
    assert fixes.best_cuda_variant(snap, "12.4", [89], minor_compat=False) is None


# ---------------------------------------------------------------- fix commands rebuild the user's invocation


def _invoked(snap: Snapshot, **given) -> Snapshot:
    snap.invocation = Invocation(**given)
    return snap


def test_rerun_commands_keep_the_users_python_and_selection():
    snap = _invoked(load_fixture("kernels-skipped"), python="../hf/bin/python", no_kernels=True, select=["PREC"])
    [measure] = _commands(_only(snap, "PREC010"))
    assert measure == "mpdoctor check --python ../hf/bin/python --select PREC"  # measures: --no-kernels dropped
    snap = _invoked(load_fixture("torch-import-hang"), python="../hf/bin/python", no_kernels=True, timeout=200.0)
    assert (
        _commands(_only(snap, "TORCH004"))[-1] == "mpdoctor check --python ../hf/bin/python --timeout 600 --no-kernels"
    )


def test_retaking_a_fact_keeps_the_interpreter_and_measures():
    snap = _invoked(load_fixture("kernels-skipped"), python="../hf/bin/python", no_kernels=True)
    [missing] = [f for f in judge(snap, ["PREC001"]) if f.code == "MPD002"]
    assert _commands(missing) == [
        "mpdoctor check --python ../hf/bin/python --select PREC001 --save-snapshot snapshot.json"
    ]


def test_a_crashed_check_asks_for_a_report_of_the_same_run():
    from mpdoctor.checks.registry import Registry
    from mpdoctor.doctor.judge import run_checks

    registry = Registry({"test": "TST"})

    def explodes(snap):
        """Raises."""
        raise KeyError("gone")

    registry.add("TST001", "test-explodes", "test", explodes)
    (crash,) = run_checks(_invoked(Snapshot(), python="../hf/bin/python", select=["TST"]), registry.select())
    assert _commands(crash) == [
        "mpdoctor check --python ../hf/bin/python --select TST --format markdown --output mpdoctor-report.md"
    ]


def test_rerun_commands_without_options_stay_plain():
    assert _commands(_only(load_fixture("kernels-skipped"), "PREC010")) == ["mpdoctor check"]
    assert fixes.mpdoctor_check(Snapshot(), timeout=300) == "mpdoctor check --timeout 300"
    assert (
        fixes.mpdoctor_check(_invoked(Snapshot(), python="/my env/python", timeout=1.5))
        == "mpdoctor check --python '/my env/python' --timeout 1.5"
    )
    assert (
        fixes.mpdoctor_check(_invoked(Snapshot(), kernels="quick"), select="PREC", extra=("--kernels", "full"))
        == "mpdoctor check --select PREC --kernels full"
    )


# ---------------------------------------------------------------- timeouts blamed on what was running


def _slow_cpu_torch(step: str) -> Snapshot:
    """torch 2.13.0+cpu imported, but the torch probe was killed (constructed from the CPU capture)."""
    snap = load_fixture("cpu-laptop")
    probe = snap.torch.probe
    probe.status, probe.step, probe.detail, probe.exit_code = (
        "timeout",
        step,
        "did not finish within 0.9 s and was killed",
        None,
    )
    return snap


@pytest.mark.parametrize("step", ["", "build", "cuda"])
def test_a_cpu_only_build_never_gets_a_cuda_diagnosis(step):
    findings = judge(_slow_cpu_torch(step))
    assert not [f for f in findings if f.code == "TORCH010"]
    [slow] = [f for f in findings if f.code == "TORCH004"]
    assert slow.severity == "warning"
    assert (f"during step '{step}'" if step else "after the last step it finished") in slow.title
    assert "after `import torch` succeeded" in slow.title
    assert not any("nvidia-smi" in c or "dmesg" in c for c in _commands(slow))


def test_a_cuda_build_that_hangs_starting_cuda_still_gets_torch010():
    finding = _only(load_fixture("cuda-init-hangs"), "TORCH010")
    assert "during step 'cuda'" in finding.title


@pytest.mark.parametrize(
    "name, code, hangs",
    [
        ("torch-import-hang", "TORCH004", "import torch"),
        ("torch-import-crash", "TORCH003", "import torch"),
        ("cuda-init-hangs", "TORCH010", "nvidia-smi"),
        ("nvml-timeout", "DRV001", "nvidia-smi"),
    ],
)
def test_commands_that_can_hang_are_wrapped_in_timeout(name, code, hangs):
    """What hung for mpdoctor hangs for the user too: the diagnostic command ends by itself."""
    hanging = [c for c in _commands(_only(load_fixture(name), code)) if hangs in c]
    assert hanging and all(c.startswith("timeout ") for c in hanging)


def test_a_limit_under_a_second_is_written_as_given():
    from mpdoctor.probes.remote.supervise import seconds_text

    assert seconds_text(0.5) == "0.5" and seconds_text(1.2) == "1.2"


# ---------------------------------------------------------------- issue 22's item: a version that is not one


def _stray_torch_metadata() -> Snapshot:
    """The CPU capture, plus a stray torch dist-info first on sys.path whose Version is junk, and a transformers that
    requires a torch nobody has (constructed)."""
    snap = load_fixture("cpu-laptop")
    stray = dist("torch", "not.a.version!!", path="/opt/venv/lib/python3.11/site-packages/torch-junk.dist-info")
    snap.environment.distributions.insert(0, stray)
    snap.environment.distributions.append(dist("transformers", "4.44.2", ["torch>=99"]))
    return snap


def test_a_junk_version_does_not_hide_an_unmet_requirement():
    conflicts = [f for f in judge(_stray_torch_metadata()) if f.code == "STACK001"]
    assert [f.title for f in conflicts] == ["transformers 4.44.2 requires torch>=99, but torch 2.13.0+cpu is installed"]


def test_a_junk_version_is_never_pinned():
    commands = [c for f in judge(_stray_torch_metadata()) for c in _commands(f)]
    assert not any("not.a.version" in c for c in commands)
    assert any("torch==2.13.0+cpu" in c for c in commands)


def test_the_cli_records_the_options_given_and_fixes_rebuild_them():
    """A real `mpdoctor check --python X --no-kernels --select PREC010`: PREC010's fix reruns it on X, measuring."""
    import json
    import sys

    from helpers import run_cli

    result = run_cli(
        "check",
        "--python",
        sys.executable,
        "--no-kernels",
        "--select",
        "PREC010",
        "--format",
        "json",
        "--fail-on",
        "never",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["snapshot"]["invocation"] == {
        "python": sys.executable,
        "timeout": None,
        "kernels": "",
        "no_kernels": True,
        "select": ["PREC010"],
        "ignore": [],
        "project": "",
    }
    [finding] = [f for f in report["findings"] if f["code"] == "PREC010"]
    assert finding["fix"][0]["command"] == f"mpdoctor check --python {sys.executable} --select PREC010"


def _with_colons(name: str):
    """Constructed: a PCI bus id 0000:ab:00.0 (`:ab:` is rich's code for an emoji) or a path with `:thumbs_up:`."""
    snap = load_fixture(name)
    for gpu in snap.machine.nvml.gpus:
        gpu.pci_bus_id = gpu.pci_bus_id.replace("0000:02:", "0000:ab:")
    for dist_ in snap.environment.distributions:
        dist_.location = dist_.location.replace("/opt/venv/", "/home/u/:thumbs_up:/")
    return snap


@pytest.mark.parametrize(
    "name, shown",
    [
        ("slurm-nodevfiles", "(0000:ab:00.0) not visible to CUDA"),
        ("precision-stack-conflicts", "at /home/u/:thumbs_up:/lib"),
    ],
)
def test_text_output_keeps_colons_in_user_data(tmp_path, name, shown):
    """rich turns `:ab:` into an emoji: the text report must print 0000:ab:00.0, not 0000🆎00.0
    (real CLI, constructed snapshot)."""
    import io

    from rich.console import Console

    from fixtures import catalogue
    from helpers import run_cli
    from mpdoctor.doctor.report import Report
    from mpdoctor.analysis.gpu_map import device_table
    from mpdoctor.render.text import render_text

    snap = _with_colons(name)
    emojis = ("\N{NEGATIVE SQUARED AB}", "\N{THUMBS UP SIGN}")
    buffer = io.StringIO()  # the risk is real: a console that reads emoji codes mangles this text...
    Console(file=buffer, width=100, highlight=False).print(shown)
    assert any(e in buffer.getvalue() for e in emojis)
    buffer = io.StringIO()  # ...and the renderer prints facts as text, never as markup, even on such a console
    render_text(
        Report(created="", findings=judge(snap), snapshot=snap, gpus=device_table(snap)),
        Console(file=buffer, width=100, highlight=False),
    )
    assert shown in buffer.getvalue() and not any(e in buffer.getvalue() for e in emojis)
    path = tmp_path / "snap.json"
    path.write_text(catalogue.snapshot_text(snap), encoding="utf-8")
    result = run_cli("check", "--snapshot", str(path), "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert not any(e in result.stdout for e in emojis)
    assert shown in result.stdout


# ---------------------------------------------------------------- explain --check: a check that could not run


def test_explain_check_without_torch_says_unknown_not_fine(tmp_path):
    """`explain --check` against an interpreter with no torch (this one, without site-packages: a real process)."""
    import json
    import sys

    from helpers import run_cli

    python = tmp_path / "python-without-torch"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    message = "RuntimeError: expected scalar type Float but found Half"
    text = run_cli("explain", message, "--check", "--python", str(python))
    assert text.returncode == 0, text.stderr
    assert "found nothing" not in text.stdout and "not the environment" not in text.stdout
    assert "unknown: those checks could not judge it" in text.stdout
    assert "TORCH001: torch is not installed" in text.stdout
    data = json.loads(run_cli("explain", message, "--check", "--python", str(python), "--format", "json").stdout)
    assert all(item["unknown"] and not item["findings"] for item in data["recognised"])
