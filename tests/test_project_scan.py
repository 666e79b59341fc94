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
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpdoctor",
            "check",
            "--python",
            str(python),
            "--format",
            "json",
            "--timeout",
            "20",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
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
    assert (
        report["snapshot"]["kernels"]["detail"] == "no selected check needs them"
    )  # --select TORCH, without --no-kernels
    assert not [f for f in report["findings"] if f["code"].startswith("APEX")]


def test_a_selected_check_that_needs_the_project_gets_it_scanned(python, project):
    report = check(python, project, "--select", "APEX")
    scan = report["snapshot"]["environment"]["project"]
    assert scan["skipped"] == "" and scan["files_scanned"] == 1 and scan["files_found"] == 1
    # the project is the working directory, which holds the script; the report says so
    assert (
        scan["root"] == str(project)
        and scan["root_reason"] == "the working directory: it holds Python files (train.py)"
    )
    assert [(use["file"], use["module"], use["names"]) for use in scan["apex_uses"]] == [("train.py", "apex", ["amp"])]
    apex006 = [f for f in report["findings"] if f["code"] == "APEX006"]
    assert len(apex006) == 1 and "your code" in apex006[0]["title"]


def test_a_snapshot_without_the_scan_judged_with_apex_checks_says_they_could_not_judge(python, project, tmp_path):
    """A snapshot saved by `--select TORCH` has no project scan: APEX checks judged on it later get MPD002, not an
    all-clear."""
    saved = tmp_path / "narrow.json"
    check(python, project, "--select", "TORCH", "--save-snapshot", str(saved))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpdoctor",
            "check",
            "--snapshot",
            str(saved),
            "--select",
            "APEX,ONEFLOW005",
            "--format",
            "json",
            "--fail-on",
            "never",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(result.stdout)
    not_taken = [f for f in report["findings"] if f["code"] == "MPD002"]
    assert len(not_taken) == 1 and "no project" in not_taken[0]["title"]
    assert "APEX006" in not_taken[0]["evidence"][1] and "ONEFLOW005" in not_taken[0]["evidence"][1]
    # taken fresh with APEX selected, the same directory does report the apex use
    fresh = check(python, project, "--select", "APEX")
    assert [f for f in fresh["findings"] if f["code"] == "APEX006"]
    assert not [f for f in fresh["findings"] if f["code"] == "MPD002"]


# ---------------------------------------------------------------- the scan's time budget (issue 23)


def test_a_scan_out_of_time_names_the_files_it_did_not_read(tmp_path):
    from mpdoctor.probes.remote import scan

    for n in range(3):
        (tmp_path / f"m{n}.py").write_text("from apex import amp\n")
    facts = scan.project_uses(str(tmp_path), 0.0)
    assert facts["truncated"] and facts["files_scanned"] == 0 and facts["apex_uses"] == []
    assert facts["skipped_files"] == [f"m{n}.py: not read, the scan ran out of its 0.0 s budget" for n in range(3)]


def test_the_files_left_unread_are_named_up_to_the_note_limit_then_counted(tmp_path):
    from mpdoctor.probes.remote import scan

    for n in range(120):
        (tmp_path / f"m{n:03}.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "late.py").write_text("from apex import amp\n")
    facts = scan.project_uses(str(tmp_path), 0.0)
    notes = facts["skipped_files"]
    assert len(notes) == scan.MAX_SKIPPED and notes[0] == "m000.py: not read, the scan ran out of its 0.0 s budget"
    assert notes[-2] == "72 more files: not read, the scan ran out of its 0.0 s budget"
    assert notes[-1] == "sub and the directories after it: not listed, the scan ran out of time"


def test_env003_names_the_unread_files(tmp_path):
    from mpdoctor.doctor.judge import judge
    from mpdoctor.probes.remote import scan
    from mpdoctor.snapshot.project import ProjectScan
    from fixtures.base import laptop, with_environment

    for n in range(3):
        (tmp_path / f"m{n}.py").write_text("x = 1\n")
    facts = scan.project_uses(str(tmp_path), 0.0)
    snap = with_environment(laptop(), project=ProjectScan(**{k: v for k, v in facts.items() if k != "apex_uses"}))
    env003 = [f for f in judge(snap, select=["ENV003"]) if f.code == "ENV003"]
    assert len(env003) == 1 and "stopped early" in env003[0].title
    assert "skipped m0.py: not read, the scan ran out of its 0.0 s budget" in env003[0].evidence
