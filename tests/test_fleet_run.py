"""`mpdoctor fleet` for real: three ranks started by torchrun (and by srun, where a Slurm cluster is up).

Per-rank differences come from tiny wrapper scripts that torchrun starts with
``--no-python``, as a job script would: an environment variable set for one rank; a
stand-in torch that hangs on import in one rank's probes (a sitecustomize that sleeps
when mpdoctor's probe imports torch, so the rank's store connection still works and its
heartbeat names the step); one rank's mpdoctor killed with SIGKILL mid-check (a
sitecustomize on that rank's PYTHONPATH only: ``DYING_RANK``), its worker then exiting 0 as
`mpdoctor fleet || true` in a job script would (a worker that exits 0 does not make
torchrun stop the others). Each rank's check runs with --no-kernels to keep
these tests to seconds on two cores.

Exit statuses: torchrun stops every worker once one exits non-zero, so its own exit
status is what carries the verdict there; srun runs every task to its end, so there each
rank's own status is checked.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from typer.testing import CliRunner

from mpdoctor.cli import app
from mpdoctor.fleet.model import SCHEMA_PATH

pytest.importorskip("torch.distributed.run")

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--no-kernels", "--timeout", "60", "-f", "json", "-o", "report.json"]

HANGING_TORCH = '''
"""Stand-in: `import torch` hangs in mpdoctor's probes of this rank's interpreter (not in its store child).

Finding torch works (the real spec); executing it sleeps, as a torch stuck in its import would.
"""
import importlib.machinery
import sys
import time


class Sleeper:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        time.sleep(3600)


class HangingTorch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "torch" or "_mpdoctor_remote" not in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = Sleeper(spec.loader)
        return spec


sys.meta_path.insert(0, HangingTorch())
'''


DYING_RANK = '''
"""Stand-in: this rank's mpdoctor dies by SIGKILL, as the OOM killer would kill it, once its store child connected.

Then the heartbeat has a step to tell. It wraps mpdoctor.fleet.mailbox.has as that module is imported: only the
rank's own process asks whether its store child has connected, so the store child and the probes live on.
"""
import importlib.machinery
import os
import signal
import sys


class Dying:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        real = module.has

        def has(directory, name):
            found = real(directory, name)
            if found and name == module.CONNECTED:
                os.kill(os.getpid(), signal.SIGKILL)
            return found

        module.has = has


class DyingRank:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "mpdoctor.fleet.mailbox":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = Dying(spec.loader)
        return spec


sys.meta_path.insert(0, DyingRank())
'''


def wrapper(tmp_path: Path, body: str, rank_var: str = "RANK") -> Path:
    """A per-rank job script: ``body`` sees $R (this rank); it ends by running mpdoctor fleet, recording its status."""
    script = tmp_path / "rank.sh"
    script.write_text(
        f'#!/bin/sh\nR=${rank_var}\n{body}\n{sys.executable} -m mpdoctor fleet "$@"\n'
        "rc=$?\necho $rc > rc.$R\nexit $rc\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def torchrun(tmp_path: Path, script: Path, *args: str, ranks: int = 3) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPDOCTOR_", "NVIDIA_TF32"))}
    env["PYTHONPATH"] = str(ROOT)
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(ranks),
        "--no-python",
        str(script),
        *FAST,
        *args,
    ]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def report(tmp_path: Path, result: subprocess.CompletedProcess) -> dict:
    path = tmp_path / "report.json"
    assert path.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    return data


def by_code(data: dict, code: str) -> list[dict]:
    return [f for f in data["findings"] if f["code"] == code]


def test_torchrun_names_the_rank_that_differs_and_the_rank_that_crashed(tmp_path):
    dies = tmp_path / "dies"
    dies.mkdir()
    (dies / "sitecustomize.py").write_text(DYING_RANK)
    script = wrapper(
        tmp_path,
        'if [ "$R" = 2 ]; then export NVIDIA_TF32_OVERRIDE=0; fi\n'
        'if [ "$R" = 1 ]; then\n'
        f'  PYTHONPATH={dies}:$PYTHONPATH {sys.executable} -m mpdoctor fleet "$@"\n'
        "  exit 0\nfi",
    )  # as `mpdoctor fleet || true` in a job script: torchrun goes on
    result = torchrun(tmp_path, script, "--deadline", "120", "--fail-on", "never", "--save-snapshots", ".")
    data = report(tmp_path, result)
    assert [s["status"] for s in data["ranks"]] == ["reported", "crashed", "reported"]
    (differs,) = by_code(data, "FLEET006")
    assert differs["title"].startswith("env NVIDIA_TF32_OVERRIDE differs: 0 on rank 2 on ")
    assert data["groups"][0]["ranks"] == [0] and data["groups"][1]["ranks"] == [2]
    (crashed,) = by_code(data, "FLEET001")
    assert crashed["severity"] == "error"
    assert crashed["title"].startswith("rank 1 on ") and "(local rank 1) crashed; last step: " in crashed["title"]
    # The crashed rank's heartbeat said so: rank 0 did not wait out the 120 s deadline for it. --fail-on never:
    # every rank exits 0 although the report holds an error.
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(tmp_path / f"rc.{rank}").read_text().strip() for rank in (0, 2)] == ["0", "0"]
    # Its own words around rank 0's numbers (never text from the store: tests/test_fleet_forgery.py).
    assert (
        "mpdoctor fleet: rank 2: 3 ranks; 1 is the reference; 1 differs; 1 missing or crashed; worst finding: error"
        " (report on rank 0)" in result.stderr
    )
    # --save-snapshots: rank 0 saved the snapshots of the ranks that reported; compared offline, the same finding.
    assert sorted(p.name for p in tmp_path.glob("rank-*.json")) == ["rank-0.json", "rank-2.json"]
    offline = CliRunner().invoke(
        app,
        [
            "fleet",
            "compare",
            str(tmp_path / "rank-0.json"),
            str(tmp_path / "rank-2.json"),
            "-f",
            "json",
            "--fail-on",
            "never",
        ],
    )
    assert [f["code"] for f in json.loads(offline.output)["findings"]] == ["FLEET006"]


def test_torchrun_finishes_at_the_deadline_when_a_rank_hangs(tmp_path):
    hang = tmp_path / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(HANGING_TORCH)
    script = wrapper(tmp_path, f'if [ "$R" = 1 ]; then export PYTHONPATH={hang}:$PYTHONPATH; fi')
    result = torchrun(tmp_path, script, "--deadline", "15", ranks=2)  # two ranks: rank 0's check is done by then
    data = report(tmp_path, result)
    assert [s["status"] for s in data["ranks"]] == ["reported", "missing"]
    (finding,) = by_code(data, "FLEET001")
    # Its heartbeat said what its check was doing: the probes' step, read from their step files.
    assert "rank 1 on " in finding["title"] and "sent no report: stuck importing torch for" in finding["title"]
    assert data["ranks"][1]["last_step"] == "importing torch"
    assert result.returncode == 1  # the missing rank is an error at the default --fail-on error
    # The hung rank heard that rank 0 judged without it (its store child did: a verdict for it without its
    # nonce), and said so before exiting; no verdict counts a rank whose report is not in.
    assert "mpdoctor fleet: rank 1: rank 0 judged the fleet without this rank's report" in result.stderr


# ---------------------------------------------------------------- Slurm, where a cluster is up


def slurm_is_up() -> bool:
    if not shutil.which("srun") or not shutil.which("sinfo"):
        return False
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=3).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(state.strip() in ("idle", "mix") for state in states.splitlines())


@pytest.mark.skipif(
    not slurm_is_up(), reason="no Slurm cluster here (test_fleet_launcher.py checks recorded Slurm variables instead)"
)
def test_srun_three_tasks_each_exit_with_the_verdict(tmp_path):
    script = wrapper(tmp_path, 'if [ "$R" = 0 ]; then export NCCL_ALGO=Tree; fi', rank_var="SLURM_PROCID")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPDOCTOR_", "NCCL_"))}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        ["srun", "-n", "3", "-O", str(script), *FAST, "--deadline", "120", "--fail-on", "warning"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    data = report(tmp_path, result)
    assert data["launcher"] == "slurm"
    (finding,) = by_code(data, "FLEET006")
    assert finding["title"].startswith("env NCCL_ALGO differs: Tree on rank 0 on ")
    # srun lets every task finish: each exits 1, the verdict (a warning) at --fail-on warning.
    assert [(tmp_path / f"rc.{rank}").read_text().strip() for rank in range(3)] == ["1", "1", "1"]
    assert result.returncode == 1
