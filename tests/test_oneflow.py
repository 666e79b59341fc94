"""The oneflow family on real throwaway environments: the real probe through ``--python``, then the checks.

The PyPI placeholder is the real registry wheel; the working OneFlow is a stand-in
(tests/oneflow_envs.py) with a compiled core module. Incident 2 (an fp16 model under
torch.autocast through OneDiff) must end in ONEFLOW005 with the two fixes that
worked: drop torch.autocast, or use oneflow.autocast.
"""

from __future__ import annotations

import hashlib
import json
import os
import textwrap

import pytest

from apex_envs import compiler, make_env
from helpers import run_cli
from mpdoctor.snapshot import snapshot_from_data
from oneflow_envs import (
    PYPI_ONEFLOW_SHA256,
    PYPI_ONEFLOW_WHEEL,
    STANDIN_VERSION,
    install_onediff,
    install_pypi_oneflow,
    install_standin_oneflow,
    mock_torch_environment,
)

needs_cc = pytest.mark.skipif(compiler() is None, reason="needs a C compiler to build the stand-in's core module")

INCIDENT_2 = """\
import torch
from diffusers import StableDiffusionPipeline
from onediff.infer_compiler import oneflow_compile

pipe = StableDiffusionPipeline.from_pretrained("runwayml/stable-diffusion-v1-5", torch_dtype=torch.float16)
pipe.unet = oneflow_compile(pipe.unet)
with torch.autocast("cuda"):
    image = pipe("a photo of an astronaut").images[0]
"""


def check(env, project, extra_env=None, timeout="30"):
    """`mpdoctor check --python ENV` from ``project``; (findings by code, snapshot, report)."""
    environ = {**os.environ, **(extra_env or {})}
    result = run_cli(
        "check",
        "--python",
        str(env.python),
        "--format",
        "json",
        "--fail-on",
        "never",
        "--timeout",
        timeout,
        "--no-kernels",
        cwd=str(project),
        env=environ,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    codes: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        codes.setdefault(finding["code"], []).append(finding)
    return codes, snapshot_from_data(report["snapshot"]), report


def oneflow_codes(codes):
    return sorted(code for code in codes if code.startswith("ONEFLOW"))


def commands(finding):
    return [step["command"] for step in finding["fix"] if step.get("command")]


def stand_in_beside_this_torch(this_machine, codes) -> list[str]:
    """ONEFLOW003 when this machine's torch is a CUDA build of another major than the stand-in's CUDA 11.8.

    The environments see the test interpreter's torch: a CPU build in CI, where a cu118 OneFlow is no mismatch;
    a CUDA 12 or 13 build on a GPU machine, where two CUDA majors in one process are, and ONEFLOW003 says so
    beside the verdict under test. Returns the code to expect, having checked the finding when it is expected.
    """
    torch_cuda = this_machine.torch["cuda"]
    if not torch_cuda or torch_cuda.split(".")[0] == "11":
        return []
    (finding,) = codes["ONEFLOW003"]
    assert finding["severity"] == "warning"
    assert finding["title"] == (
        f"oneflow is built for CUDA 11.8 and torch for CUDA {torch_cuda}: two CUDA majors in one process"
    )
    return ["ONEFLOW003"]


@pytest.fixture
def project(tmp_path):
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def test_vendored_wheel_is_the_registry_file():
    assert hashlib.sha256(PYPI_ONEFLOW_WHEEL.read_bytes()).hexdigest() == PYPI_ONEFLOW_SHA256


def test_pypi_placeholder_is_found_statically_and_confirmed_in_a_child(tmp_path, project, this_machine):
    env = make_env(tmp_path / "env", torch=True)
    install_pypi_oneflow(env)
    install_onediff(env)
    codes, snap, _ = check(env, project)
    oneflow = snap.environment.oneflow
    assert oneflow.build.native_core == ""
    assert oneflow.build.placeholder_message.startswith("This package is a placeholder")
    assert oneflow.build.wheel_tags == ["py3-none-any"] and oneflow.build.purelib
    # the child really imported it: RuntimeError, not ImportError, and torch was not needed for that
    assert oneflow.runtime.status == "import-error"
    assert oneflow.runtime.error_type == "RuntimeError"
    assert oneflow.runtime.torch_status == "not-tried"
    assert oneflow_codes(codes) == ["ONEFLOW001"]
    finding = codes["ONEFLOW001"][0]
    assert finding["severity"] == "error"  # onediff is installed: its oneflow backend fails on this
    assert "placeholder" in finding["title"]
    assert any("RuntimeError: This package is a placeholder" in line for line in finding["evidence"])
    fix = commands(finding)
    assert fix[0] == f"{env.python} -m pip uninstall -y oneflow"
    # The fix installs the community OneFlow for this torch's CUDA, where one exists; for a CPU torch (CI) or a
    # CUDA no community build has (13.x), it says so instead of guessing.
    torch_cuda = this_machine.torch["cuda"]
    assert (snap.torch.cuda or "") == torch_cuda
    if torch_cuda.split(".")[0] in ("11", "12"):
        assert finding["fix"][1]["text"].startswith("Install the OneFlow build for CUDA 1")
    else:
        why = f"torch here is built for CUDA {torch_cuda}" if torch_cuda else "torch here has no CUDA build"
        assert f"community builds exist for CUDA 11.8, 12.1, 12.2 only, and {why}" in finding["fix"][1]["text"]
    # the placeholder's own requirements are not worth installing
    assert not [f for f in codes.get("STACK001", []) if f["title"].startswith("oneflow ")]


def test_placeholder_without_onediff_is_a_warning(tmp_path, project):
    env = make_env(tmp_path / "env")
    install_pypi_oneflow(env)
    codes, _, _ = check(env, project)
    assert oneflow_codes(codes) == ["ONEFLOW001"]
    assert codes["ONEFLOW001"][0]["severity"] == "warning"


def test_onediff_without_oneflow(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    install_onediff(env)
    (project / "run.py").write_text(INCIDENT_2)
    codes, snap, _ = check(env, project)
    assert snap.environment.oneflow.packages["onediff"].origin.endswith("onediff/__init__.py")
    assert snap.environment.oneflow.packages["oneflow"].origin == ""
    assert snap.environment.oneflow.runtime.status == "not-run"
    assert oneflow_codes(codes) == ["ONEFLOW002"]
    finding = codes["ONEFLOW002"][0]
    assert finding["severity"] == "error"  # the project calls oneflow_compile
    assert "No module named 'oneflow'" in finding["title"]
    assert any("run.py:6: pipe.unet = oneflow_compile(pipe.unet)" in line for line in finding["evidence"])


@needs_cc
def test_incident_2_torch_autocast_over_onediff(tmp_path, project, this_machine):
    """The incident: a fp16 pipeline compiled with oneflow_compile, run inside torch.autocast("cuda")."""
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env)
    install_onediff(env)
    (project / "run.py").write_text(INCIDENT_2)
    codes, snap, _ = check(env, project)
    runtime = snap.environment.oneflow.runtime
    assert runtime.status == "imported" and runtime.version == STANDIN_VERSION
    assert runtime.torch_status == "imported" and runtime.torch_imported_as == "torch"
    assert runtime.with_cuda is True and runtime.cuda_version == "11080"
    cases = {case.name: case for case in runtime.coexist}
    assert runtime.coexist_device == "cpu"
    assert cases["fp16 input"].status == "ok" and cases["fp16 input"].output_dtype == "float16"
    torch_case = cases["torch.autocast"]
    assert torch_case.oneflow_autocast is False  # OneFlow never saw torch's autocast
    assert torch_case.torch_output_dtype == "float16"  # torch itself cast the fp32 input
    assert torch_case.status == "error" and "InferDataType Failed" in torch_case.detail
    # OneFlow's autocast disables itself on the CPU, and says so
    assert any("CPU autocast is not supported" in w for w in cases["oneflow.autocast"].warnings)
    assert oneflow_codes(codes) == sorted(["ONEFLOW005", *stand_in_beside_this_torch(this_machine, codes)])
    finding = codes["ONEFLOW005"][0]
    assert finding["severity"] == "error"  # measured, not only read from the code
    assert "InferDataType Failed. Expected kFloat, but got kFloat16" in finding["title"]
    assert any('run.py:7: with torch.autocast("cuda"):' in line for line in finding["evidence"])
    steps = " ".join(step["text"] for step in finding["fix"])
    assert 'remove the `with torch.autocast("cuda")`' in steps and 'oneflow.autocast("cuda")' in steps


@needs_cc
def test_both_installed_without_project_evidence_is_info(tmp_path, project, this_machine):
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env)
    codes, _, _ = check(env, project)
    assert oneflow_codes(codes) == sorted(["ONEFLOW005", *stand_in_beside_this_torch(this_machine, codes)])
    assert codes["ONEFLOW005"][0]["severity"] == "info"


@needs_cc
def test_old_oneflow_under_onediff(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env, version="0.8.0+cu118")
    install_onediff(env)
    codes, _, _ = check(env, project)
    assert "ONEFLOW002" in codes
    assert "older than 0.9.1" in codes["ONEFLOW002"][0]["title"]


@needs_cc
def test_a_build_that_kills_the_interpreter_on_import(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env)
    install_onediff(env)
    env.write("oneflow/__init__.py", "import ctypes\nctypes.string_at(0)  # a segfault, as a bad native build does\n")
    codes, snap, _ = check(env, project)
    runtime = snap.environment.oneflow.runtime
    assert runtime.status == "import-crashed" and runtime.probe.step == "oneflow_import"
    assert "SIGSEGV" in runtime.error_message
    assert snap.torch.status == "imported"  # the crash cost only the oneflow part
    assert oneflow_codes(codes) == ["ONEFLOW006"]
    finding = codes["ONEFLOW006"][0]
    assert finding["severity"] == "error" and "kills the interpreter" in finding["title"]


@needs_cc
def test_mock_torch_from_the_cli_exports(tmp_path, project):
    """`eval $(python -m oneflow.mock_torch)`: PYTHONPATH makes every `import torch` OneFlow."""
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env)
    exports = mock_torch_environment(env)
    codes, snap, report = check(env, project, extra_env=exports)
    assert snap.torch.status == "mocked" and snap.torch.imported_as == "oneflow"
    assert snap.environment.oneflow.mock.torch.kind == "oneflow-mock-torch"
    assert snap.environment.oneflow.mock.path_entries == [exports["PYTHONPATH"]]
    finding = codes["ONEFLOW004"][0]
    assert finding["severity"] == "error"
    assert any("(from PYTHONPATH)" in line for line in finding["evidence"])
    assert any(line.startswith("ONEFLOW_MOCK_TORCH_LAZY=") for line in finding["evidence"])
    assert commands(finding)[0] == f"eval $({env.python} -m oneflow.mock_torch disable)"
    # torch checks stand down rather than judge OneFlow as torch; the clash check too
    assert not [code for code in codes if code.startswith("TORCH")]
    assert "ONEFLOW005" not in codes
    # and the top line of the text report says it
    text = run_cli(
        "check",
        "--python",
        str(env.python),
        "--no-kernels",
        "--fail-on",
        "never",
        cwd=str(project),
        env={**os.environ, **exports},
    )
    assert "`import torch` gives oneflow (mock-torch is on" in text.stdout.splitlines()[0]


@needs_cc
def test_mock_torch_keeps_the_kernels_off_oneflow(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    install_standin_oneflow(env)
    environ = {**os.environ, **mock_torch_environment(env)}
    result = run_cli(
        "check",
        "--python",
        str(env.python),
        "--format",
        "json",
        "--fail-on",
        "never",
        "--select",
        "PREC",
        cwd=str(project),
        env=environ,
    )
    kernels = json.loads(result.stdout)["snapshot"]["kernels"]
    assert kernels["status"] == "not-run"
    assert kernels["detail"] == "`import torch` gives oneflow (mock-torch), not torch"


def test_mock_torch_in_a_pth_file(tmp_path, project):
    """A .pth line that puts oneflow's mock_torch directory on every interpreter's path."""
    env = make_env(tmp_path / "env")
    mock_dir = env.site / "oneflow" / "mock_torch"
    env.write("oneflow/__init__.py", "__version__ = '0.9.1'\n")
    env.write(
        "oneflow/mock_torch/torch/__init__.py",
        "import oneflow\n\n\ndef __getattr__(name):\n    return getattr(oneflow, name)\n",
    )
    env.write("zz_mock_torch.pth", f"{mock_dir}\n")
    codes, snap, _ = check(env, project)
    assert snap.environment.oneflow.mock.torch.kind == "oneflow-mock-torch"
    finding = codes["ONEFLOW004"][0]
    assert f"Remove this line from {env.site / 'zz_mock_torch.pth'}: {mock_dir}" in [s["text"] for s in finding["fix"]]


def test_no_oneflow_no_findings_and_no_oneflow_process(tmp_path, project):
    env = make_env(tmp_path / "env")
    (project / "train.py").write_text(
        textwrap.dedent("""\
        import torch
        with torch.autocast("cuda"):
            pass
    """)
    )
    codes, snap, _ = check(env, project)
    assert oneflow_codes(codes) == []
    runtime = snap.environment.oneflow.runtime
    assert runtime.status == "not-run" and runtime.probe.status == "not-run"  # no oneflow: the part never started
