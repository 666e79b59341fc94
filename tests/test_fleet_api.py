"""`mpdoctor.fleet_check()` inside a real process group (gloo, one rank, in a child process of its own).

The script is what a training script does before its first step: init_process_group,
then fleet_check(), which uses the group's own store under mpdoctor's key prefix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import free_port

pytest.importorskip("torch.distributed")

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json
import torch.distributed as dist
import mpdoctor

dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d", rank=0, world_size=1)
try:
    mpdoctor.fleet_check(fail_on="info", deadline=120)
    out = {"raised": ""}
except mpdoctor.fleet.api.FleetCheckFailed as exc:
    report = exc.report
    out = {"raised": str(exc), "world_size": report.world_size, "statuses": [s.status for s in report.ranks],
           "codes": [s.finding.code for s in report.rank_findings]}
dist.destroy_process_group()
print(json.dumps(out))
"""


def test_fleet_check_after_init_process_group(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT % free_port()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # fail_on="info": the rank's own findings (there is always one: PREC010, the kernels were off) stop the job,
    # on every rank, before its first step; rank 0's exception carries the report.
    assert out["raised"].startswith("mpdoctor fleet_check: 1 rank;")
    assert out["world_size"] == 1 and out["statuses"] == ["reported"]
    assert "PREC010" in out["codes"]


def test_fleet_check_needs_a_process_group():
    import mpdoctor

    with pytest.raises(RuntimeError, match="init_process_group"):
        mpdoctor.fleet_check()
