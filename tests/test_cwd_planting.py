"""No child of mpdoctor runs code from the working directory.

A job is launched from a directory mpdoctor does not choose: a project checkout, a
shared scratch directory. A ``shutil.py``, ``json.py`` or ``torch/`` there must not
run inside any process mpdoctor starts (the store child of ``fleet`` once did: it
was started with ``python -m``, which puts the working directory first on
sys.path). Each stand-in here writes a marker file when imported; the real CLI runs
with that directory as its working directory, and no marker may appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from mpdoctor.probes.child import child_env, run_child
from conftest import free_port

STAND_INS = {
    "shutil.py": "shutil",
    "json.py": "json",
    "sitecustomize.py": "sitecustomize",
    os.path.join("torch", "__init__.py"): "torch",
}
MARKER = """\
import os, sys
with open(os.path.join({where!r}, "MARKER-{name}-%d" % os.getpid()), "w") as _f:
    _f.write(" ".join(sys.argv)[:2000])
raise ImportError("a stand-in {name} from the working directory was imported")
"""


@pytest.fixture()
def planted(tmp_path: Path) -> Path:
    """A working directory holding stand-ins that leave a marker when imported."""
    here = tmp_path / "job"
    for path, name in STAND_INS.items():
        (here / path).parent.mkdir(parents=True, exist_ok=True)
        (here / path).write_text(MARKER.format(where=str(here), name=name))
    return here


def markers(directory: Path) -> list[str]:
    return sorted(p.name + ": " + p.read_text() for p in directory.iterdir() if p.name.startswith("MARKER-"))


def cli() -> list[str]:
    """mpdoctor as a user runs it: its console script, whose own directory (not the working one) is on sys.path."""
    script = Path(sys.executable).with_name("mpdoctor")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; del sys.path[0]; from mpdoctor.__main__ import run; sys.exit(run())"]


def clean_env(**extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "OMPI_", "PMI_", "TORCHELASTIC_")) and k not in ("RANK", "WORLD_SIZE")
    }
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def run(planted: Path, *args: str, env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [*cli(), *args], cwd=planted, env=env, input=stdin, capture_output=True, text=True, timeout=240
    )


def test_check_runs_nothing_from_the_working_directory(planted):
    result = run(planted, "check", "--no-kernels", env=clean_env())
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert markers(planted) == []


def test_fleet_runs_nothing_from_the_working_directory(planted, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = clean_env(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), TMPDIR=str(temp))
    result = run(planted, "fleet", "--no-kernels", "--fail-on", "never", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert markers(planted) == []  # the store child was once `python -m`: shutil.py and json.py ran in it
    assert [p.name for p in temp.iterdir() if p.name.startswith("mpdoctor-fleet-")] == []


def test_audit_runs_nothing_from_the_working_directory(planted, tmp_path):
    torch = pytest.importorskip("torch")
    checkpoint = tmp_path / "weights" / "model.pt"
    checkpoint.parent.mkdir()
    torch.save({"w": torch.zeros(4)}, checkpoint)
    result = run(planted, "audit", str(checkpoint), env=clean_env())
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert "model.pt" in result.stdout
    assert markers(planted) == []


def test_explain_runs_nothing_from_the_working_directory(planted):
    torch = pytest.importorskip("torch")
    try:  # a real error from real torch, as a user pastes it
        torch.zeros(2, dtype=torch.float16).to("cuda")
    except (AssertionError, RuntimeError):
        pasted = traceback.format_exc()
    else:
        pytest.skip("this torch has CUDA")
    result = run(planted, "explain", "-", env=clean_env(), stdin=pasted)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert markers(planted) == []


def test_a_pythonpath_entry_naming_the_working_directory_is_left_out_and_others_kept(planted, tmp_path):
    """PYTHONPATH=. (or the directory's own path) would put its files ahead of the standard library in a child,
    before any of mpdoctor's code runs (sitecustomize at startup). Other entries are how some clusters find
    torch (or OneFlow's mock_torch in a ./.venv is found), and must keep working."""
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    (elsewhere / "found_elsewhere.py").write_text("VALUE = 42\n")
    (planted / "src").mkdir()
    (planted / "src" / "found_below.py").write_text("VALUE = 7\n")
    env = clean_env(PYTHONPATH=os.pathsep.join([".", str(planted), "", str(elsewhere), "./", "src"]))
    code = (  # as mpdoctor's own bootstraps begin: `-c` put "" first, and they take it out
        "import sys; del sys.path[0]; import json, shutil, found_elsewhere, found_below, os; "
        "print(found_elsewhere.VALUE, found_below.VALUE, os.environ['PYTHONPATH'])"
    )
    result = run_child([sys.executable, "-c", code], 60, env=env, cwd=str(planted))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["42", "7", os.pathsep.join([str(elsewhere), "src"])]  # a subdirectory stays
    assert markers(planted) == []
    # what the target probe's bootstrap puts back, so the environment it reports is the user's
    assert child_env(env, str(planted))["MPDOCTOR_PYTHONPATH"] == env["PYTHONPATH"]
    assert child_env(clean_env(PYTHONPATH=str(elsewhere)), str(planted))["PYTHONPATH"] == str(elsewhere)
