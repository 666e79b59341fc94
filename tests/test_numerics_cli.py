"""`mpdoctor numerics` runs unchanged training scripts (real torch, CPU) under the watch, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent

# A T5-like feed-forward trained in fp16 whose `wo` overflows; nothing in it knows about mpdoctor.
T5_SCRIPT = """
import sys
import torch
from torch import nn


class DenseReluDense(nn.Module):
    def __init__(self):
        super().__init__()
        self.wi = nn.Linear(16, 64, bias=False)
        self.wo = nn.Linear(64, 16, bias=False)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.wo(self.dropout(torch.relu(self.wi(x)))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 16)
        self.ff = DenseReluDense()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.ff(self.embed(x)))


steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 3
torch.manual_seed(0)
model = Model()
if "--healthy" not in sys.argv:
    with torch.no_grad():
        model.ff.wo.weight.mul_(3e5)
model = model.half()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(steps):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 16, dtype=torch.half)).float().pow(2).sum()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", loss.item())
if "--raise" in sys.argv:
    raise ValueError("the script's own bug")
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("numerics-cli")
    (where / "train.py").write_text(textwrap.dedent(T5_SCRIPT), encoding="utf-8")
    package = where / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "main.py").write_text(textwrap.dedent(T5_SCRIPT), encoding="utf-8")
    return where


def numerics(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPDOCTOR_")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", "numerics", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_an_unchanged_script_gets_the_module_live_and_at_the_end(project):
    result = numerics("train.py", "--steps", "2", cwd=project)
    assert result.returncode == 1, result.stderr
    # Live, on stderr, before the script's own second step printed (flushed at the end of the first backward).
    live = result.stderr.splitlines()[0]
    assert live.startswith("mpdoctor numerics: overflow in forward, step 0: ff.wo (Linear)"), result.stderr
    assert "step 0 loss" in result.stdout and "step 2 loss" not in result.stdout  # its own --steps 2, unchanged
    assert "numerics: first overflow in the forward, step 0: ff.wo (Linear)" in result.stdout
    assert '"wo"' in result.stdout and "_keep_in_fp32_modules" in result.stdout
    # The script owns its steps: the fix cannot be tried by re-running one, and the verdict does not pretend it was.
    assert "  not verified (the script's step cannot be re-run)\n" in result.stdout
    assert "script: train.py finished" in result.stdout


def test_json_and_a_module_run_with_its_arguments(project):
    result = numerics("--format", "json", "-m", "trainer.main", "--steps", "1", cwd=project)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)  # the script's prints went to stderr: stdout is the JSON alone
    assert "step 0 loss" in result.stderr
    first = report["watch"]["first"]
    assert (first["module"], first["kind"], first["phase"], first["dtype"]) == (
        "ff.wo",
        "overflow",
        "forward",
        "float16",
    )
    assert first["verification"] == {
        "status": "not verified",
        "text": "not verified (the script's step cannot be re-run)",
    }
    assert report["script"] == {"target": "trainer.main", "status": "ok", "exit_code": 0, "error": None}


def test_a_healthy_script_exits_0_and_the_scripts_own_failure_is_reported_as_such(project):
    healthy = numerics("--steps", "2", "train.py", "--healthy", cwd=project)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "numerics: no overflow, NaN or underflow in 2 step(s)" in healthy.stdout
    assert healthy.stdout.count(" loss ") == 3  # the script ran all 3 of its steps; the first 2 were watched

    failed = numerics("train.py", "--healthy", "--raise", cwd=project)
    assert failed.returncode == 1 and "ValueError: the script's own bug" in failed.stderr  # its traceback, as Python
    assert "script: train.py failed: ValueError: the script's own bug" in failed.stdout
    assert "no overflow" in failed.stdout


def test_usage_errors_and_help_stay_torch_free(project):
    missing = numerics("nope.py", cwd=project)
    assert missing.returncode == 2 and missing.stderr.startswith("mpdoctor: error: no such script: nope.py")
    code = (
        "import sys, runpy; sys.argv = ['mpdoctor', 'numerics', '--help']\n"
        "try:\n    runpy.run_module('mpdoctor', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Stop watching after N optimizer steps" in result.stdout


def test_the_scripts_own_exit_status_comes_back_when_nothing_was_found(tmp_path, monkeypatch):
    """In-process (torch is already here): the runner records sys.exit(3), the CLI exits with it."""
    monkeypatch.setattr(sys, "path", sys.path[:])  # the runner puts the script's folder first, as python does
    from mpdoctor.cli.numerics import _status, _text
    from mpdoctor.numerics import runner

    script = tmp_path / "exits.py"
    script.write_text(
        "import sys, torch\nmodel = torch.nn.Linear(4, 4).half()\nmodel(torch.ones(2, 4).half()).sum()\nsys.exit(3)\n",
        encoding="utf-8",
    )
    result = tmp_path / "result.json"
    argv = sys.argv[:]
    try:
        assert runner.main(["--result", str(result), "--", str(script)]) == 0
    finally:
        sys.argv = argv
    report = json.loads(result.read_text(encoding="utf-8"))
    assert report["script"]["status"] == "exit" and report["script"]["exit_code"] == 3
    assert report["watch"]["events"] == [] and report["watch"]["ops"] > 0
    assert _status(report) == 3 and "exited with status 3" in _text(report)
