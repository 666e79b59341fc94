"""The oneflow family on a real OneFlow (0.9.0 from PyPI), in each install state a user meets.

The environment is built once from the package index and cached (tests/real_oneflow.py);
every test here skips, saying why, when it cannot be built. Each state is judged by
``mpdoctor check --python <that venv's python>``, as a user runs it, and the messages
the checks and ``explain`` recognise are the ones this real package printed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest

import real_oneflow
from helpers import run_cli
from mpdoctor.explain.explainer import explain

INCIDENT = """\
import torch
from onediff.infer_compiler import oneflow_compile

model = torch.nn.Linear(16, 16).half()
compiled = oneflow_compile(model)
with torch.autocast("cuda"):
    compiled(torch.randn(4, 16))
"""


@pytest.fixture(scope="session")
def real_env():
    try:
        return real_oneflow.environment()
    except real_oneflow.Unavailable as exc:
        pytest.skip(f"no real OneFlow environment: {exc}")


def check(real_env, state, project, extra_env=None):
    """`mpdoctor check --python` on one state, from ``project``: (findings by code, report)."""
    result = run_cli(
        "check",
        "--python",
        real_oneflow.python(real_env, state),
        "--format",
        "json",
        "--fail-on",
        "never",
        "--timeout",
        "60",
        "--no-kernels",
        cwd=str(project),
        env={**os.environ, **(extra_env or {})},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    codes: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        codes.setdefault(finding["code"], []).append(finding)
    return codes, report


def oneflow_codes(codes):
    return sorted(code for code in codes if code.startswith("ONEFLOW"))


def commands(finding):
    return [step["command"] for step in finding["fix"] if step.get("command")]


def import_oneflow(real_env, state, code="import oneflow", extra_env=None):
    """What the real package prints, run as a user would."""
    return subprocess.run(
        [real_oneflow.python(real_env, state), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(extra_env or {})},
    )


def recognised(printed: str) -> list[str]:
    """The signatures `mpdoctor explain` finds in what the real package printed."""
    return [match.id for match in explain(printed, "stderr").recognised]


def test_missing_cudnn_is_the_import_error_with_the_nvidia_wheels_as_fix(real_env, tmp_path):
    printed = import_oneflow(real_env, "no-cudnn")
    assert printed.returncode != 0
    error = next(line for line in printed.stderr.splitlines() if line.startswith("ImportError"))
    assert "libcudnn" in error and "cannot open shared object file" in error
    codes, _ = check(real_env, "no-cudnn", tmp_path)
    assert oneflow_codes(codes) == ["ONEFLOW006"]  # ONEFLOW002 waits for a OneFlow that imports
    finding = codes["ONEFLOW006"][0]
    assert error.split(": ", 1)[1] in " ".join(finding["evidence"])
    assert "missing" in finding["title"]
    assert shlex.split(commands(finding)[0])[-3:] == ["install", "nvidia-cudnn-cu11==8.*", "nvidia-cublas-cu11"]
    # explain knows the message as the real package printed it (the traceback names oneflow's frame)
    assert recognised(printed.stderr) == ["oneflow-missing-cuda-library"]


def test_numpy2_is_oneflows_numpy_message_with_numpy_below_2_as_fix(real_env, tmp_path):
    printed = import_oneflow(real_env, "numpy2")
    assert printed.returncode != 0
    assert "Unable to import Numpy array, try to upgrade Numpy version!" in printed.stderr
    codes, _ = check(real_env, "numpy2", tmp_path)
    finding = codes["ONEFLOW006"][0]
    assert "numpy 2." in finding["title"]
    assert any("Unable to import Numpy array" in line for line in finding["evidence"])
    assert shlex.split(commands(finding)[0])[-3:] == ["pip", "install", "numpy<2"]
    assert recognised(printed.stderr) == ["oneflow-numpy-2"]


def test_cpu_machine_imports_with_the_driver_warning_and_no_cuda(real_env, tmp_path):
    printed = import_oneflow(
        real_env,
        "full",
        "import oneflow as f, oneflow.sysconfig as s; print(f.__version__, f.cuda.is_available(), s.with_cuda())",
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.split() == ["0.9.0", "False", "True"]
    assert "CUDA driver version is insufficient for CUDA runtime version" in printed.stderr
    codes, report = check(real_env, "full", tmp_path)
    runtime = report["snapshot"]["environment"]["oneflow"]["runtime"]
    assert runtime["status"] == "imported" and runtime["cuda_available"] is False
    # oneflow.sysconfig is a submodule `import oneflow` does not load: the probe imports it to read the build
    assert runtime["with_cuda"] is True and runtime["cuda_version"] == "11070"
    # the healthy pairing as PyPI has it: it works, and only OneDiff's wish for a newer OneFlow is left
    assert oneflow_codes(codes) == ["ONEFLOW002"]
    assert "0.9.0 is older than 0.9.1" in codes["ONEFLOW002"][0]["title"]


def test_no_fp16_linear_on_the_cpu_is_its_own_fact(real_env):
    """The real CPU build has no fp16 matmul kernel: the probe measures it without torch."""
    printed = import_oneflow(real_env, "full", "import oneflow as f\nf.nn.Linear(16, 16).half()(f.randn(4, 16).half())")
    assert printed.returncode != 0
    assert "RuntimeError: Cannot find the kernel matching Current OperatorConf" in printed.stderr
    # the driver warning OneFlow prints on a CPU machine is recognised too, after the error that ended the run
    assert recognised(printed.stderr) == ["oneflow-no-kernel", "driver-insufficient-for-runtime"]


def test_incident_autocast_over_oneflow_compile(real_env, tmp_path):
    (tmp_path / "run.py").write_text(INCIDENT)
    codes, report = check(real_env, "full", tmp_path)
    assert oneflow_codes(codes) == ["ONEFLOW002", "ONEFLOW005"]
    finding = codes["ONEFLOW005"][0]
    evidence = " | ".join(finding["evidence"])
    assert "torch.autocast: run.py:6" in evidence and "OneFlow: run.py:5" in evidence
    # what was measured is said as what it is: the build lacks the kernel; nothing here is about autocast
    assert "no fp16 Linear kernel in this OneFlow on the cpu" in evidence
    assert "not evidence about autocast" in evidence
    assert "did not run even on fp16 input" not in evidence
    assert finding["severity"] == "warning"  # not "reproduced": the failure was the missing kernel
    titles = [step["text"] for step in finding["fix"]]  # the two fixes that worked
    assert "remove the `with torch.autocast" in titles[0] and "oneflow.autocast" in titles[1]
    cases = report["snapshot"]["environment"]["oneflow"]["runtime"]["coexist"]
    assert [(c["name"], c["device"], c["status"]) for c in cases] == [("fp16 input", "cpu", "error")]


def test_mock_torch_active(real_env, tmp_path):
    exports = import_oneflow(
        real_env, "full", "import runpy; runpy.run_module('oneflow.mock_torch', run_name='__main__')"
    )
    assert exports.returncode == 0, exports.stderr
    environ = {}
    # `export PYTHONPATH=<oneflow>/mock_torch:$PYTHONPATH`, as the shell's eval would expand it
    for word in shlex.split(exports.stdout.replace("$PYTHONPATH", os.environ.get("PYTHONPATH", ""))):
        if "=" in word and word.split("=", 1)[0].isupper():
            name, value = word.split("=", 1)
            environ[name] = value
    assert environ["PYTHONPATH"].split(os.pathsep)[0].endswith(os.path.join("oneflow", "mock_torch"))
    mocked = import_oneflow(real_env, "full", "import torch; print(torch.__name__, torch.__file__)", environ)
    assert mocked.returncode == 0, mocked.stderr
    codes, _ = check(real_env, "full", tmp_path, environ)
    assert "ONEFLOW004" in codes
    finding = codes["ONEFLOW004"][0]
    assert any("oneflow.mock_torch disable" in command for command in commands(finding))


def test_scan_stopped_early_keeps_the_oneflow_finding(real_env, tmp_path):
    """A project too big for the scan (ENV003) still gets the OneFlow install findings, which need no code."""
    (tmp_path / "run.py").write_text(INCIDENT)
    generated = tmp_path / "generated"
    generated.mkdir()
    for number in range(3001):
        (generated / f"m{number}.py").write_text(textwrap.dedent(f"x = {number}\n"))
    codes, _ = check(real_env, "no-cudnn", tmp_path)
    assert "ENV003" in codes and "ONEFLOW006" in codes


# The recorded capture: `mpdoctor check --save-snapshot` of the "full" state from a project holding INCIDENT,
# paths renamed to /home/user/... (oneflow 0.9.0, onediff 1.2.0, no torch, a CPU machine). It needs no build.
RECORDED = Path(__file__).parent / "fixtures" / "oneflow-pypi-cpu.json"


def test_recorded_capture_is_judged_as_the_live_environment_was():
    result = run_cli("check", "--snapshot", str(RECORDED), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    codes: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        codes.setdefault(finding["code"], []).append(finding)
    assert oneflow_codes(codes) == ["ONEFLOW002", "ONEFLOW005"]
    evidence = " | ".join(codes["ONEFLOW005"][0]["evidence"])
    assert "no fp16 Linear kernel in this OneFlow on the cpu" in evidence and "Cannot find the kernel" in evidence
    assert codes["ONEFLOW005"][0]["severity"] == "warning"
    # what the real package's snapshot holds, in its own words
    runtime = json.loads(RECORDED.read_text())["environment"]["oneflow"]["runtime"]
    assert (runtime["version"], runtime["with_cuda"], runtime["cuda_available"]) == ("0.9.0", True, False)
