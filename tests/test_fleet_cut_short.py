"""`mpdoctor fleet` for real when the run is cut short or ranks disagree on what they were launched as.

Real ``torchrun --standalone`` runs (gloo's CPU world, ``--no-kernels``), as in
``test_fleet_run.py``. Each worker ``exec``s mpdoctor, so torchrun's SIGTERM reaches
mpdoctor itself, as under ``torchrun -m mpdoctor fleet``:

* a rank that fails EARLY: torchrun then SIGTERMs rank 0 in the middle of its own
  check. Rank 0 must still print and write its report, name the rank that ended, not
  accuse the one still running, and exit 143 (128 + SIGTERM). One rank's mpdoctor is
  SIGKILLed once its store child has connected (the ``DYING_RANK`` stand-in), another
  rank's job script exits 3 once rank 0's heartbeat is in torchrun's store (read with
  a plain TCPStore client): both trigger on an event, not on a sleep;
* a rank that imports another copy of a package (a PYTHONPATH directory whose
  ``.dist-info`` shadows the venv's), and a rank launched with another ``WORLD_SIZE``:
  both must differ from the others;
* a ``--deadline`` shorter than rank 0's own check: said to be too short, no rank called stuck.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from test_fleet_run import DYING_RANK, report

pytest.importorskip("torch.distributed.run")

ROOT = Path(__file__).resolve().parent.parent

# Rank 1 waits until rank 0's heartbeat is in torchrun's agent store (rank 0 is then inside its fleet run), then
# exits 3 without ever joining the store: a job script that fails at once, as far as rank 0 can tell.
AFTER_RANK0 = """
import os, sys, time
from datetime import timedelta
from torch.distributed import TCPStore
store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False, timeout=timedelta(seconds=120))
key = "mpdoctor-fleet/%s.%s/hb/0" % (os.environ["TORCHELASTIC_RUN_ID"], os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
while not store.check([key]):
    time.sleep(0.1)
"""


def job(tmp_path: Path, body: str) -> Path:
    """A worker script: ``body`` sees $R (this rank); then it ``exec``s mpdoctor, which gets torchrun's signals."""
    script = tmp_path / "rank.sh"
    script.write_text(f'#!/bin/sh\nR=$RANK\n{body}\nexec {sys.executable} -m mpdoctor fleet "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def torchrun(tmp_path: Path, script: Path, *args: str, ranks: int = 2, env: dict = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MPDOCTOR_", "NVIDIA_TF32"))}
    base["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
    argv += ["--no-python", str(script), "--no-kernels", "--timeout", "60", "-f", "json", "-o", "report.json", *args]
    return subprocess.run(argv, cwd=tmp_path, env={**base, **(env or {})}, capture_output=True, text=True, timeout=240)


def by_code(data: dict, code: str) -> list[dict]:
    return [f for f in data["findings"] if f["code"] == code]


def rank0_status(result: subprocess.CompletedProcess) -> str:
    """Rank 0's exit status as torchrun's failure table records it."""
    table = result.stderr[result.stderr.rfind("Failures:") :]
    for block in table.split("[")[1:]:
        if "rank      : 0 " in block:
            return block.split("exitcode  :")[1].split()[0]
    return ""


def rank_1_missing_rank_0_not_accused(data: dict) -> bool:
    """Rank 1 sent nothing; rank 0 reported, or (its own check outlasting the SIGTERM's grace on a loaded machine)
    was cut short: never accused either way."""
    statuses = {s["rank"]: s for s in data["ranks"]}
    zero = statuses[0]
    return statuses[1]["status"] == "missing" and (
        zero["status"] == "reported" or zero["detail"].startswith("cut short by the launcher")
    )


def test_a_rank_killed_early_still_gets_rank_0s_report(tmp_path):
    dies = tmp_path / "dies"
    dies.mkdir()
    (dies / "sitecustomize.py").write_text(DYING_RANK)
    # Rank 1's mpdoctor is SIGKILLed once its store child connected, and its worker exits 137: torchrun then stops
    # rank 0 and rank 2 with SIGTERM, long before the 120 s deadline (rank 0 is still in its own check or just out).
    script = job(tmp_path, f'if [ "$R" = 1 ]; then export PYTHONPATH={dies}:$PYTHONPATH; fi')
    result = torchrun(tmp_path, script, "--deadline", "120", ranks=3)
    data = report(tmp_path, result)
    statuses = {s["rank"]: s for s in data["ranks"]}
    assert statuses[1]["status"] == "crashed", data["ranks"]
    cut = [f for f in by_code(data, "FLEET001") if "the launcher stopped the job (SIGTERM)" in f["title"]]
    assert len(cut) == 1, [f["title"] for f in data["findings"]]
    assert "after rank 1 exited" in cut[0]["title"]
    # Rank 2 was still running (or had reported): it is not accused of anything.
    assert not [f for f in by_code(data, "FLEET001") if f["title"].startswith("rank 2")]
    assert statuses[2]["status"] == "reported" or statuses[2]["detail"].startswith("cut short by the launcher")
    assert "mpdoctor fleet: rank 0: stopped by the launcher (SIGTERM)" in result.stderr
    assert rank0_status(result) in ("143", "-15"), result.stderr[-3000:]  # as the signal would have ended it


def rank_1_exiting_3_is_named(tmp_path: Path, body: str) -> list[str]:
    """Run two ranks whose job script is ``body``, in which rank 1 exits 3; check that rank 0's report names it as
    the rank the launcher stopped the job after, and exited 143; the FLEET001 titles."""
    result = torchrun(tmp_path, job(tmp_path, body), "--deadline", "120")
    data = report(tmp_path, result)
    assert rank_1_missing_rank_0_not_accused(data), data["ranks"]
    titles = [f["title"] for f in by_code(data, "FLEET001")]
    assert any(
        "the launcher stopped the job (SIGTERM)" in t and "most likely after rank 1 exited (it never reached" in t
        for t in titles
    ), titles
    assert "exitcode  : 3 " in result.stderr  # rank 1 did exit 3, the failure torchrun reacted to
    assert rank0_status(result) == "143", result.stderr[-3000:]
    return titles


def test_a_rank_that_exits_3_early_is_named_by_rank_0(tmp_path):
    waiter = tmp_path / "after_rank0.py"
    waiter.write_text(AFTER_RANK0)
    titles = rank_1_exiting_3_is_named(
        tmp_path, f'if [ "$R" = 1 ]; then {sys.executable} {waiter} || exit 9; exit 3; fi'
    )
    assert any(t.startswith("rank 1 sent no report; it never reached the store") for t in titles), titles


def test_a_rank_that_exits_3_at_once_is_still_named_by_rank_0(tmp_path):
    """The job script of rank 1 fails at once: torchrun's SIGTERM reaches rank 0 a tenth of a second in, before its
    fleet command has even been imported. The CLI holds it from its first lines (fleet/held_term.py), so rank 0
    still runs its own check, looks at the store and names rank 1."""
    rank_1_exiting_3_is_named(tmp_path, 'if [ "$R" = 1 ]; then exit 3; fi')


def test_a_rank_importing_a_shadowing_package_differs(tmp_path):
    # A PYTHONPATH directory with its own `iniconfig` (a small package the venv has, through pytest) and a
    # .dist-info of another version: rank 1 imports that one, so it must not agree with rank 0.
    from importlib.metadata import version

    real = version("iniconfig")
    odd = tmp_path / "site_odd"
    (odd / "iniconfig").mkdir(parents=True)
    (odd / "iniconfig" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    info = odd / "iniconfig-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: iniconfig\nVersion: 0.0.1\n")
    script = job(tmp_path, f'if [ "$R" = 1 ]; then export PYTHONPATH={odd}:$PYTHONPATH; fi')
    result = torchrun(tmp_path, script, "--deadline", "120", "--fail-on", "never")
    data = report(tmp_path, result)
    assert [g["ranks"] for g in data["groups"]] == [[0], [1]], data["groups"]
    # A package outside the torch stack and the precision packages: one FLEET002 info finding lists it.
    evidence = [line for f in by_code(data, "FLEET002") for line in f["evidence"]]
    assert any(line.startswith("package iniconfig = 0.0.1: rank 1") for line in evidence), evidence
    assert data["groups"][1]["fingerprint"]["packages"]["iniconfig"] == "0.0.1"
    assert data["groups"][0]["fingerprint"]["packages"]["iniconfig"] == real


def test_a_rank_launched_with_another_world_size_differs(tmp_path):
    script = job(tmp_path, 'if [ "$R" = 1 ]; then export WORLD_SIZE=3; fi')
    result = torchrun(tmp_path, script, "--deadline", "120", "--fail-on", "never")
    data = report(tmp_path, result)
    (finding,) = [f for f in by_code(data, "FLEET006") if "WORLD_SIZE" in f["title"]]
    assert finding["severity"] == "error"
    assert finding["title"].startswith("env WORLD_SIZE differs: 3 on rank 1 on ")
    assert [g["ranks"] for g in data["groups"]] == [[0], [1]]
    assert "most ranks" not in json.dumps(finding["fix"])  # one against one: no majority to speak of


def test_a_deadline_shorter_than_rank_0s_own_check_is_called_too_short(tmp_path):
    script = job(tmp_path, "")
    result = torchrun(tmp_path, script, "--deadline", "0.5")
    data = report(tmp_path, result)
    titles = [f["title"] for f in data["findings"]]
    assert any("the --deadline of 0.5 s is too short for this machine: rank 0's own check" in t for t in titles)
    assert not any("stuck" in t for t in titles), titles
    assert not any(t.startswith("rank 0") for t in titles), titles  # rank 0 never lists itself as missing
