"""Fix commands are built from words and quoted for the shell (issue 33, item 6).

A value that comes from the machine (a CUDA_VISIBLE_DEVICES entry, a GPU UUID, the interpreter's path) can
hold ``;``, ``$(...)``, backticks, quotes, spaces or a newline. Pasted, the fix must run one command with that
value as one word: each command here goes through ``bash -n`` (it parses), ``shlex.split`` (the value is one
word), and, for the commands whose program is harmless to stand in for, a real ``bash -c`` with stand-in
programs that print what they were given, in a directory where a smuggled ``touch`` would leave a file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.base import with_env
from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.doctor.judge import judge
from mpdoctor.snapshot import Snapshot

# Each one would run `touch pwned` (or break the line into two commands) if pasted unquoted.
HOSTILE = [
    ";touch pwned;",
    "$(touch pwned)",
    "`touch pwned`",
    "a b' \"c;touch pwned",
    "x\ntouch pwned\ny",
    "&& touch pwned ||",
]


def commands(snap: Snapshot, code: str = "") -> list[str]:
    return [step.command for f in judge(snap) if f.code.startswith(code) for step in f.fix if step.command]


def parses(command: str) -> None:
    done = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"bash -n rejects {command!r}: {done.stderr}"


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """A PATH whose ``python`` and ``mpdoctor`` print their argv and CUDA_VISIBLE_DEVICES as JSON, and nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python", "mpdoctor"):
        program = bin_dir / name
        program.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            "print(json.dumps({'argv': sys.argv[1:], 'cvd': os.environ.get('CUDA_VISIBLE_DEVICES')}))\n"
        )
        program.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    return env


def run_pasted(command: str, tmp_path: Path) -> dict:
    """Run ``command`` as a user pasting it would, with stand-in programs; nothing else may run."""
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        ["bash", "-c", command], cwd=work, env=stand_ins(tmp_path), capture_output=True, text=True, timeout=30
    )
    assert not (work / "pwned").exists(), f"pasting {command!r} ran a smuggled command"
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, f"{command!r} ran {len(lines)} commands: {done.stdout!r}"
    return json.loads(lines[0])


def mig_pair(first: str) -> Snapshot:
    """GPU008's machine with no NVML list to match against, so every ``MIG-`` entry counts as a MIG device."""
    snap = load_fixture("h100-mig-two-selected")
    snap.machine.nvml.gpus = []
    return with_env(snap, CUDA_VISIBLE_DEVICES=f"{first},MIG-b")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_gpu008_keeps_a_hostile_mig_entry_in_one_word(hostile, tmp_path):
    entry = "MIG-a" + hostile
    [give_each] = [c for c in commands(mig_pair(entry), "GPU008") if "train.py" in c]
    parses(give_each)
    assert shlex.split(give_each) == [f"CUDA_VISIBLE_DEVICES={entry}", "python", "train.py"]
    assert run_pasted(give_each, tmp_path) == {"argv": ["train.py"], "cvd": entry}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_prec011_keeps_a_hostile_uuid_of_the_idle_gpu_in_one_word(hostile, tmp_path):
    snap = load_fixture("kernels-gpu-shared")
    uuid = "GPU-f5a6" + hostile
    snap.machine.nvml.gpus[1] = dataclasses.replace(snap.machine.nvml.gpus[1], uuid=uuid)
    [elsewhere] = [c for c in commands(snap, "PREC011") if c.startswith("CUDA_VISIBLE_DEVICES=")]
    parses(elsewhere)
    words = shlex.split(elsewhere)
    assert words[0] == f"CUDA_VISIBLE_DEVICES={uuid}" and words[1:3] == ["mpdoctor", "check"]
    ran = run_pasted(elsewhere, tmp_path)
    assert ran["cvd"] == uuid and ran["argv"] == words[2:]


def hostile_interpreter(snap: Snapshot, hostile: str) -> Snapshot:
    if snap.environment.python is not None:
        snap.environment.python = dataclasses.replace(snap.environment.python, executable=f"/v{hostile}/bin/python")
    snap.invocation = dataclasses.replace(snap.invocation, python=f"/v{hostile}/bin/python")
    return snap


@pytest.mark.parametrize("hostile", [HOSTILE[0], HOSTILE[4]])
def test_every_fix_of_every_fixture_parses_with_a_hostile_interpreter_path(hostile):
    """The interpreter's path is in every pip/python fix (and ``--python`` in every re-run): in all of them,
    over every fixture, the command parses and the path stays one word."""
    path = f"/v{hostile}/bin/python"
    seen = 0
    for name in snapshot_fixture_names():
        for command in commands(hostile_interpreter(load_fixture(name), hostile)):
            parses(command)
            words = shlex.split(command)
            if words[:1] == ["eval"]:  # eval "$(cmd)": the words of the command substituted
                words = shlex.split(command[command.index("$(") + 2 : command.rindex(")")])
            assert "pwned" not in words, f"{name}: {command!r} splits the path into words"
            if "touch pwned" in command:
                seen += 1
                assert path in words, f"{name}: {command!r} does not keep {path!r} whole"
    assert seen > 20  # the sweep really met the path in pip, python and mpdoctor --python fixes
