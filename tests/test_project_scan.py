"""The scan of the working directory's code runs only when a selected check needs it (``needs=("project",)``).

Through the real CLI, in a directory whose code imports apex.amp, diagnosing a
throwaway venv with no apex: ``--select TORCH`` leaves the code unread and the
snapshot says so (``environment.project.skipped``), never "no apex use found";
``--select APEX`` reads it, and APEX006 reports the import. A snapshot saved
without the scan and judged later with APEX checks says they could not judge
(MPD002).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import dist_info
from mpdoctor.snapshot.project import NOT_ASKED as PROJECT_NOT_ASKED


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


def test_a_snapshot_without_the_scan_judged_with_apex_checks_says_they_could_not_judge(python, project, tmp_path):
    """A snapshot saved by `--select TORCH` has no project scan: APEX checks judged on it later get MPD002, not an
    all-clear."""
    saved = tmp_path / "narrow.json"
    check(python, project, "--select", "TORCH", "--save-snapshot", str(saved))
    result = subprocess.run([sys.executable, "-m", "mpdoctor", "check", "--snapshot", str(saved), "--select",
                             "APEX,ONEFLOW005", "--format", "json", "--fail-on", "never"], capture_output=True,
                            text=True, timeout=120)
    report = json.loads(result.stdout)
    not_taken = [f for f in report["findings"] if f["code"] == "MPD002"]
    assert len(not_taken) == 1 and "no project" in not_taken[0]["title"]
    assert "APEX006" in not_taken[0]["evidence"][1] and "ONEFLOW005" in not_taken[0]["evidence"][1]
    # taken fresh with APEX selected, the same directory does report the apex use
    fresh = check(python, project, "--select", "APEX")
    assert [f for f in fresh["findings"] if f["code"] == "APEX006"]
    assert not [f for f in fresh["findings"] if f["code"] == "MPD002"]
