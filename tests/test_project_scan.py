"""The scan of the working directory's code runs only when a selected check needs it (``needs=("project",)``).

Through the real CLI, in a directory whose code imports apex.amp, diagnosing a
throwaway venv with no apex: ``--select TORCH`` leaves the code unread and the
snapshot says so (``environment.project.skipped``), never "no apex use found";
``--select APEX`` reads it, and APEX006 reports the import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import dist_info
from mpdoctor.probes.environment import PROJECT_NOT_ASKED


def check(python: Path, cwd: Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([sys.executable, "-m", "mpdoctor", "check", "--python", str(python), "--format", "json",
                           "--timeout", "20", *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "train.py").write_text("import torch\nfrom apex import amp\n")
    return tmp_path


@pytest.fixture
def python(fake_venv) -> Path:
    venv = fake_venv("torch-no-apex", {"torch/__init__.py": "__version__ = '2.3.0'\n", **dist_info("torch", "2.3.0")})
    return fake_venv.python(venv)


def test_no_selected_check_needs_the_project_so_it_is_not_scanned(python, project):
    report = check(python, project, "--select", "TORCH")
    scan = report["snapshot"]["environment"]["project"]
    assert scan["skipped"] == PROJECT_NOT_ASKED
    assert scan["files_scanned"] == 0 and scan["apex_uses"] == [] and scan["error"] == ""
    assert report["snapshot"]["kernels"]["detail"] == "--no-kernels, or no selected check needs them"
    assert not [f for f in report["findings"] if f["code"].startswith("APEX")]


def test_a_selected_check_that_needs_the_project_gets_it_scanned(python, project):
    report = check(python, project, "--select", "APEX")
    scan = report["snapshot"]["environment"]["project"]
    assert scan["skipped"] == "" and scan["files_scanned"] == 1
    assert [(use["file"], use["module"], use["names"]) for use in scan["apex_uses"]] == [("train.py", "apex", ["amp"])]
    apex006 = [f for f in report["findings"] if f["code"] == "APEX006"]
    assert len(apex006) == 1 and "your code" in apex006[0]["title"]
