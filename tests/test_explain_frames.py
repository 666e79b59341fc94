"""Which frames and which causes `mpdoctor explain` puts in front of a reader.

A real run's traceback (a throwaway script mixing fp16 and fp32 on the CPU, piped into `mpdoctor
explain -`) must show the user's own frames, not torch's plumbing; a library that changes the
meaning (DeepSpeed, bitsandbytes, OneFlow, apex) comes right after them. Those libraries are not
installed here, so their frames are written out as their tracebacks show them. And when one message
has two causes, both are ranked, with what tells them apart (incident 1: a stray apex).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from helpers import run_cli
from mpdoctor.explain.explainer import explain
from mpdoctor.explain.frames import is_user, rank

INCIDENT_1 = "RuntimeError: expected scalar type Float but found Half"


@dataclass
class F:
    file: str


def test_a_real_runs_traceback_shows_the_users_frames(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Linear(4, 4).half()\n"
        "    def forward(self, x):\n"
        "        return self.proj(x)\n"
    )
    (tmp_path / "train.py").write_text("import torch\nfrom model import Net\nNet()(torch.randn(2, 4))\n")
    run = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "mat1 and mat2 must have the same dtype" in run.stderr
    assert "site-packages/torch" in run.stderr.replace("\\", "/")  # torch's own frames are in what was piped

    data = json.loads(run_cli("explain", "-", "--format", "json", input=run.stderr).stdout)
    (item,) = data["recognised"]
    assert item["id"] == "dtype-matmul-mismatch"
    files = [frame.split(":")[0] for frame in item["frames"]]
    assert [f.rsplit("/", 1)[-1] for f in files] == ["train.py", "model.py"]  # outermost first, innermost last
    assert not any("site-packages" in frame or "_call_impl" in frame for frame in item["frames"])


def test_the_library_that_changes_the_meaning_follows_the_users_frames():
    frames = [
        F("/home/u/proj/train.py"),
        F("/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py"),
        F("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py"),
        F("/opt/conda/lib/python3.10/site-packages/bitsandbytes/autograd/_functions.py"),
        F("/opt/conda/lib/python3.10/site-packages/torch/nn/functional.py"),
    ]
    assert [f.file.split("/")[-1] for f in rank(frames)] == ["train.py", "engine.py", "_functions.py"]


def test_what_counts_as_the_users_code():
    assert is_user(F("train.py")) and is_user(F("<ipython-input-15-84f31a44eed6>"))
    assert is_user(F("/tmp/ipykernel_74829/2987933151.py")) and is_user(F("D:\\proj\\lib\\model.py"))
    assert is_user(F("/home/u/project/lib/model.py"))  # a project's own lib/ is still the user's code
    for installed in (
        "C:\\Python310\\Lib\\site-packages\\torch\\nn\\modules\\module.py",
        "/usr/lib/python3.10/runpy.py",
        "C:\\Users\\u\\Python310\\Lib\\runpy.py",
        "<frozen importlib._bootstrap>",
        "/root/.local/lib/python3.9/site-packages/apex/__init__.py",
        "/src/pytorch/torch/nn/modules/module.py",
    ):
        assert not is_user(F(installed)), installed


def test_only_plumbing_falls_back_to_the_innermost_frames():
    frames = [F(f"/usr/lib/python3/dist-packages/torch/x{i}.py") for i in range(5)]
    assert rank(frames) == frames[-3:]


def test_the_incident_1_one_liner_ranks_a_stray_apex_beside_the_cast():
    (item,) = explain(INCIDENT_1, "argument").recognised
    assert item.id == "dtype-expected-scalar-type"
    (apex,) = item.alternatives
    assert "stray NVIDIA apex swapping in fused norms" in apex.cause
    assert "apex/normalization" in apex.tell and apex.checks[0] == "APEX005"
    assert "APEX005" in item.checks  # --check runs the check that tells the two apart

    text = run_cli("explain", INCIDENT_1).stdout
    assert "or (less likely): A stray NVIDIA apex swapping in fused norms" in text
    assert "check: mpdoctor check --select APEX005" in text and "pip uninstall -y apex" in text
    assert text.index("with mpdoctor.dtype_trace(model):") < text.index("or (less likely)")  # own cause first
    data = json.loads(run_cli("explain", INCIDENT_1, "--format", "json").stdout)
    assert data["recognised"][0]["alternatives"][0]["checks"][0] == "APEX005"


# Round 14's hqq thread (https://github.com/dropbox/hqq/issues/7) quotes its traceback without the head line, as
# issues often do: the frames just above the error still say where it happened.
HEADLESS = (
    '  File "../.venv/lib/python3.10/site-packages/hqq/core/quantize.py", line 217, in forward_pytorch\n'
    "    out   = torch.matmul(x, W_est.t())\n"
    "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Half"
)


def test_frames_of_a_traceback_pasted_without_its_head_are_read():
    (item,) = explain(HEADLESS, "issue").recognised
    assert item.id == "quantization-dequantized-weight-dtype"
    assert item.frames == ["../.venv/lib/python3.10/site-packages/hqq/core/quantize.py:217 in forward_pytorch"]
    # the same error with a line of prose between: no traceback's frames any more, a plain mismatch
    (plain,) = explain(HEADLESS.replace("RuntimeError", "and then I got:\nRuntimeError"), "issue").recognised
    assert plain.family == "dtype" and plain.frames == []
    # a frame further up than a few lines, behind a log's chatter, is not this error's
    far = HEADLESS.replace("RuntimeError", "    x\n" * 8 + "RuntimeError")
    assert explain(far, "issue").recognised[0].family == "dtype"


def test_looking_above_for_a_headless_traceback_reads_a_bounded_window(monkeypatch):
    """A log of lines far longer than a traceback's, each holding a failure's words: looking above each for the
    frames of a traceback pasted without its head must read at most a line's bound per line looked at, never the
    whole log above it (before: every line re-read everything above it, 15 s for 40 MB of such lines)."""
    from mpdoctor.explain import matcher

    sliced = []
    original = matcher.Text.slice

    def counting(self, start, end):
        sliced.append(end - start)
        return original(self, start, end)

    monkeypatch.setattr(matcher.Text, "slice", counting)
    lines = 300
    log = "\n".join(f"step {i}: {INCIDENT_1} " + "x " * 10_000 for i in range(lines))
    assert [item.id for item in explain(log, "log").recognised][:1] == ["dtype-expected-scalar-type"]
    # each line: its own bounded slice for the signatures, and at most HEADLESS_NEAR bounded looks above it
    assert sum(sliced) <= lines * (matcher.HEADLESS_NEAR + 4) * (matcher.MAX_LINE + 1024), sum(sliced)
