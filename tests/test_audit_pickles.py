"""Pickled checkpoints are listed by one child with one torch import, and a bad file costs only itself.

Checkpoints are written by the real torch and read back by the real loader child
(``probes/remote/checkpoint_loader.py``) on this machine's CPU torch. The faults
are real processes failing: a ``sitecustomize.py`` put on ``PYTHONPATH`` (as in
``test_kernel_faults.py``; production code is untouched) makes the child's
``torch.load`` kill its own process with SIGSEGV, sleep for an hour, or kill the
loader process that forked it, for the files whose names ask for it; it also logs
each interpreter that starts, so the tests count torch imports. The pickle bomb
is a real hostile file, no sabotage needed.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from helpers import run_cli
from mpdoctor.checkpoint_audit.pickles import workers
from mpdoctor.checkpoint_audit.sources import WeightFile, read_all, weight_files
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.progress import ProgressBoard

# Without torch these tests skip: audit itself runs without it, these write checkpoints with it.
torch = pytest.importorskip("torch")

SITE = """\
import os, signal, sys, time
with open({log!r}, "a") as handle:  # one line per interpreter started: the torch imports of an audit
    handle.write("%d\\n" % os.getpid())
import torch

_real = torch.load


def load(path, *args, **kwargs):
    name = os.path.basename(str(path))
    if name.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if name.startswith("hang"):
        time.sleep(3600)
    if name.startswith("killloader"):  # the process that imported torch and forked this worker
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)
    return _real(path, *args, **kwargs)


torch.load = load
"""


@pytest.fixture
def sabotaged(tmp_path, monkeypatch):
    """PYTHONPATH for the loader child with the sabotaged torch.load; returns the file the child logs starts to."""
    site = tmp_path / "site"
    site.mkdir()
    log = tmp_path / "starts.log"
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITE.format(log=str(log))), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    return log


def starts(log) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def folder_of_pickles(root, names):
    root.mkdir()
    for i, name in enumerate(names):
        torch.save(
            {f"block{i}.weight": torch.zeros(4, 4, dtype=torch.float16), f"block{i}.bias": torch.zeros(4)}, root / name
        )
    return root


GOOD = [f"part-{i:02d}.pt" for i in range(6)]


def by_name(files):
    return {f.path.rsplit("/", 1)[-1]: f for f in files}


def test_every_pickle_of_a_call_is_read_by_one_child_with_one_torch_import(tmp_path, sabotaged):
    root = folder_of_pickles(tmp_path / "model", GOOD)
    files = read_all(weight_files(str(root)), sys.executable, Budget.from_timeout(60))
    assert [(f.error, len(f.tensors)) for f in files] == [("", 2)] * len(GOOD)
    assert {t.name: t.dtype for f in files for t in f.tensors}["block3.bias"] == "float32"
    assert starts(sabotaged) == 1


def test_a_crashing_pickle_costs_only_itself(tmp_path, sabotaged):
    root = folder_of_pickles(tmp_path / "model", ["crash.pt", *GOOD[:3], "crash-too.pt", *GOOD[3:]])
    files = by_name(read_all(weight_files(str(root)), sys.executable, Budget.from_timeout(60)))
    assert "crash.pt: torch.load was killed by SIGSEGV" in files["crash.pt"].error
    assert "crash-too.pt: torch.load was killed by SIGSEGV" in files["crash-too.pt"].error
    assert all(files[name].error == "" and len(files[name].tensors) == 2 for name in GOOD)
    assert starts(sabotaged) == 1  # a fresh fork of the loader went on after each: no second torch import


HANG_LIMIT = 12  # --timeout: each file's limit, and torch's import's (kept above a busy machine's import time)


def test_a_hanging_pickle_hits_its_limit_while_the_others_report(tmp_path, sabotaged):
    root = folder_of_pickles(tmp_path / "model", [*GOOD[:3], "hang.pt", *GOOD[3:]])
    files = by_name(read_all(weight_files(str(root)), sys.executable, Budget.from_timeout(HANG_LIMIT)))
    assert f"hang.pt: torch.load did not finish within {HANG_LIMIT} s and was killed" in files["hang.pt"].error
    assert all(files[name].error == "" and len(files[name].tensors) == 2 for name in GOOD)
    assert starts(sabotaged) == 1


def test_a_file_that_kills_the_loader_is_named_and_the_rest_are_read_in_a_fresh_child(tmp_path, sabotaged):
    root = folder_of_pickles(tmp_path / "model", [*GOOD[:2], "killloader.pt", *GOOD[2:]])
    files = by_name(read_all(weight_files(str(root)), sys.executable, Budget.from_timeout(30)))
    assert files["killloader.pt"].error.endswith(
        "killloader.pt: torch.load: the loading process was killed by SIGKILL while reading it"
    )
    assert all(files[name].error == "" and len(files[name].tensors) == 2 for name in GOOD)
    assert starts(sabotaged) >= 2


def test_the_cli_reports_the_good_files_and_names_the_bad_one(tmp_path, sabotaged):
    root = folder_of_pickles(tmp_path / "model", [*GOOD[:3], "crash.pt"])
    result = run_cli("audit", str(root), "--format", "json")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert [(f["path"].rsplit("/", 1)[-1], f["tensors"]) for f in report["files"]] == [
        ("crash.pt", 0),
        *((name, 2) for name in GOOD[:3]),
    ]
    (unread,) = [f for f in report["findings"] if f["code"] == "AUDIT001"]
    # each file is a checkpoint of its own: the finding names the one that could not be read
    assert unread["title"].startswith("[crash.pt] 1 weight file(s)")
    assert "crash.pt: torch.load was killed by SIGSEGV" in " ".join(unread["evidence"])
    assert {d["dtype"]: d["tensors"] for d in report["dtypes"]} == {"float16": 3, "float32": 3}


def test_a_pickle_bomb_is_an_error_not_a_hang(tmp_path):
    """One list referenced 100 times at each of 12 levels: 4 KB on disk, 10**24 paths to walk."""
    nested = [torch.zeros(1)]
    for _ in range(12):
        nested = [nested] * 100
    path = tmp_path / "bomb.pt"
    torch.save({"w": nested}, path)
    (file,) = read_all([WeightFile(str(path))], sys.executable, Budget.from_timeout(600))
    assert "bomb.pt: read, but not listed: more than" in file.error and "not a state dict" in file.error


class Recording(ProgressBoard):
    """A board that keeps every update too."""

    def __init__(self):
        super().__init__()
        self.updates = []

    def update(self, name, text=None, completed=None, total=None, unit=None):
        self.updates.append((name, text, completed))
        super().update(name, text, completed, total, unit)


def test_progress_counts_the_files_as_they_are_read(tmp_path):
    root = folder_of_pickles(tmp_path / "model", GOOD)
    board = Recording()
    read_all(weight_files(str(root)), sys.executable, Budget.from_timeout(60), board)
    (task,) = board.tasks()
    assert (task.name, task.unit, task.completed, task.total, task.finished) == ("audit", "files", 6, 6, True)
    counts = [completed for _, _, completed in board.updates if completed is not None]
    assert counts == sorted(counts) and counts[-1] == 6
    assert {text for _, text, _ in board.updates if text} <= set(GOOD)


def test_the_workers_are_bounded_by_the_cores_and_the_files(tmp_path):
    root = folder_of_pickles(tmp_path / "model", GOOD[:1])
    assert workers([str(root / GOOD[0])]) == 1
    assert 1 <= workers([str(root / GOOD[0])] * 50) <= 4


def test_a_long_file_name_is_shortened_in_the_middle_for_the_progress_line():
    from mpdoctor.checkpoint_audit.progress_text import short

    name = "model-00001-of-00042-" + "x" * 60 + ".safetensors"
    shown = short(name)
    assert len(shown) == 40 and shown.startswith("model-00001-of-") and shown.endswith(".safetensors")
    assert "…" in shown and short("model.pt") == "model.pt"
