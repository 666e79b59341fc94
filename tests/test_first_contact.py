"""First contact: mpdoctor in an environment of its own (pipx, a fresh venv) finds no torch there (issue 30).

TORCH001 must then lead with what to do, `mpdoctor check --python /path/to/your/venv/bin/python`,
and list the environments it can see (the active conda env, `./.venv`, `$VIRTUAL_ENV`), only those
that exist and are not the one it just diagnosed, quoted for the shell. A real venv made by
`python -m venv` (without torch) is diagnosed from a working directory with a `.venv` of its own.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

LEAD = "mpdoctor check --python /path/to/your/venv/bin/python"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A real, fresh venv: no torch, no pip (fast)."""
    venv = tmp_path_factory.mktemp("first") / "fresh venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


def env_layout(root, name: str):
    """An environment's directory layout: ``bin/python``, a link to a real interpreter."""
    (root / name / "bin").mkdir(parents=True)
    (root / name / "bin" / "python").symlink_to(sys.executable)
    return root / name


def first_contact(fresh_venv, tmp_path, **env):
    work = tmp_path / "project"
    work.mkdir()
    env_layout(work, ".venv")
    result = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "check", "--python", str(fresh_venv / "bin" / "python")]
        + ["--no-kernels", "--format", "json", "--timeout", "30"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k not in ("CONDA_PREFIX", "VIRTUAL_ENV")}, **env},
    )
    assert result.returncode == 1, result.stderr
    [finding] = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TORCH001"]
    return finding


def test_a_fresh_venv_leads_with_the_python_option_and_lists_what_is_seen(fresh_venv, tmp_path):
    conda = env_layout(tmp_path / "conda envs", "train env")  # spaces: the command must quote them
    finding = first_contact(fresh_venv, tmp_path, CONDA_PREFIX=str(conda), VIRTUAL_ENV=str(fresh_venv))
    commands = [step["command"] for step in finding["fix"]]
    assert commands[0] == LEAD
    listed = commands[1:-1]
    assert listed == [
        "mpdoctor check --python " + shlex.quote(str(conda / "bin" / "python")),
        "mpdoctor check --python ./.venv/bin/python",
    ]  # VIRTUAL_ENV is the venv just diagnosed: not offered again
    assert shlex.split(listed[0])[-1] == str(conda / "bin" / "python")  # one word for the shell
    assert "install" in commands[-1] and "torch" in commands[-1]  # installing torch there stays an option
    assert "conda" in finding["fix"][1]["text"] and "./.venv" in finding["fix"][2]["text"]


def test_an_environment_that_does_not_exist_is_not_offered(fresh_venv, tmp_path):
    finding = first_contact(fresh_venv, tmp_path, CONDA_PREFIX=str(tmp_path / "gone"), VIRTUAL_ENV="/nonexistent/venv")
    commands = [step["command"] for step in finding["fix"]]
    assert commands[0] == LEAD
    assert commands[1:-1] == ["mpdoctor check --python ./.venv/bin/python"]


def test_a_snapshot_from_another_machine_lists_only_the_lead():
    """A saved snapshot's interpreter is not on this machine: its directories are not looked for here."""
    from helpers import load_fixture
    from mpdoctor.doctor.judge import judge

    snap = load_fixture("torch-missing")
    snap.environment.env["VIRTUAL_ENV"] = sys.prefix  # exists here, but the snapshot is not from here
    [finding] = [f for f in judge(snap) if f.code == "TORCH001"]
    assert finding.fix[0].command == LEAD
    assert len(finding.fix) == 2 and "install" in finding.fix[1].command
