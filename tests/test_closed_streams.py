"""A reader that went away, a closed stdout or stdin, a COLUMNS of 0: a quiet exit with the status the report deserves.

`mpdoctor check | head -1` is normal use, as with git or grep: the reader had what it wanted.
So is a job started with stdout closed (`>&-`). Neither may print a traceback, exit 3, or turn a
clean report's 0 into a 1. Real processes: a pipe whose reader has already closed it (what `head`
leaves behind, without the race of waiting for it), and a real shell's `>&-` / `<&-`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import pytest

from helpers import fixture_path

CLEAN = "cpu-laptop"  # a recorded snapshot whose report has nothing at or above --fail-on error: exit 0


def mpdoctor(*args, **kwargs):
    return [sys.executable, "-m", "mpdoctor", *args]


def real_torch_error() -> str:
    """A failure explain recognises (exit 0), raised by the torch installed here."""
    import torch

    try:
        torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.half)
    except RuntimeError:
        return traceback.format_exc()
    pytest.fail("torch multiplied fp32 by fp16 without complaint: pick another failure")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A real .safetensors file whose audit is clean (all fp32): exit 0."""
    import torch

    from test_audit import write_safetensors

    return str(write_safetensors(tmp_path_factory.mktemp("ckpt") / "m.safetensors", {"w": torch.ones(4, 4)}))


def cases(checkpoint: str) -> dict:
    """name: (argv, stdin text); every one deserves exit 0 (check --fail-on never: any snapshot is fine)."""
    return {
        "version": (["--version"], None),
        "check": (["check", "--snapshot", str(fixture_path(CLEAN))], None),
        "check-json": (["check", "--snapshot", str(fixture_path(CLEAN)), "-f", "json"], None),
        "explain-stdin": (["explain", "-"], real_torch_error()),
        "explain-json": (["explain", "-f", "json", "-"], real_torch_error()),
        "explain-list": (["explain", "--list"], None),
        "checks": (["checks"], None),
        "rule": (["rule", "TORCH001"], None),
        "audit": (["audit", checkpoint], None),
        "fleet-rules": (["fleet", "rules"], None),
        "help": (["check", "--help"], None),
    }


NAMES = [
    "version",
    "help",
    "check",
    "check-json",
    "explain-stdin",
    "explain-json",
    "explain-list",
    "checks",
    "rule",
    "audit",
]


def test_the_cases_deserve_exit_0(checkpoint):
    """The premise: with an open stdout each case exits 0 and writes its report."""
    for name, (argv, stdin) in cases(checkpoint).items():
        result = subprocess.run(mpdoctor(*argv), input=stdin, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and result.stdout, (name, result.returncode, result.stderr)


@pytest.mark.parametrize("name", NAMES + ["fleet-rules"])
def test_a_reader_that_went_away_is_quiet_and_keeps_the_status(name, checkpoint):
    argv, stdin = cases(checkpoint)[name]
    read, write = os.pipe()
    os.close(read)  # `| head -1` after its line: every write now fails with EPIPE
    try:
        result = subprocess.run(
            mpdoctor(*argv), input=stdin, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (0, ""), name


def test_a_finding_still_exits_1_through_a_closed_pipe():
    """The status is the report's, not the pipe's: a report with an error finding still exits 1."""
    from helpers import snapshot_fixture_names

    failing = next(n for n in snapshot_fixture_names() if n == "titan-rtx-1080ti-cpu-torch")
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            mpdoctor("check", "--snapshot", str(fixture_path(failing))),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")
    never = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "_", *mpdoctor("check", "--snapshot", str(fixture_path(failing)))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (never.returncode, never.stderr) == (1, "")


@pytest.mark.parametrize("name", NAMES)
def test_a_closed_stdout_is_quiet_and_keeps_the_status(name, checkpoint):
    argv, stdin = cases(checkpoint)[name]
    result = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "_", *mpdoctor(*argv)], input=stdin, capture_output=True, text=True, timeout=120
    )
    assert (result.returncode, result.stderr) == (0, ""), name


def test_a_closed_stdin_reads_as_empty():
    """`explain - <&-` is `explain - </dev/null`: nothing recognised in 0 lines, exit 1, never 3."""
    empty = subprocess.run(mpdoctor("explain", "-"), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    closed = subprocess.run(
        ["bash", "-c", 'exec "$@" <&-', "_", *mpdoctor("explain", "-")], capture_output=True, text=True, timeout=120
    )
    assert (closed.returncode, closed.stderr, closed.stdout) == (empty.returncode, "", empty.stdout)
    assert closed.returncode == 1 and "0 lines" in closed.stdout


@pytest.mark.parametrize("name", ["check", "explain-stdin", "audit"])
def test_a_columns_of_0_is_ignored(name, checkpoint):
    """COLUMNS=0 made every text report empty (exit 0); other values no terminal has: test_sane_columns_..."""
    columns = "0"
    argv, stdin = cases(checkpoint)[name]
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    unset = subprocess.run(mpdoctor(*argv), input=stdin, capture_output=True, text=True, env=env, timeout=120)
    odd = subprocess.run(
        mpdoctor(*argv), input=stdin, capture_output=True, text=True, env={**env, "COLUMNS": columns}, timeout=120
    )
    assert odd.returncode == unset.returncode == 0, odd.stderr
    assert odd.stderr == "" and odd.stdout.strip(), odd.stdout
    assert odd.stdout.split() == unset.stdout.split()  # the same report (80 columns off a terminal)


def test_sane_columns_keeps_a_real_width():
    from mpdoctor.render.console import sane_columns

    for value, kept in [("80", True), ("20", True), ("19", False), ("0", False), ("x", False), (" 100 ", True)]:
        env = {"COLUMNS": value}
        sane_columns(env)
        assert ("COLUMNS" in env) is kept, value
