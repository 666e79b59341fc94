"""A plain `mpdoctor check` starts its probes before the CLI loads; anything else starts nothing early.

The argument pre-scan (``mpdoctor.probes.prescan``) and the early snapshot (``mpdoctor.probes.early``), with real
processes: a fake interpreter that leaves a mark when it is run shows whether any probe child started.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mpdoctor.cli.options import CheckFormat, FailOn, KernelMode
from mpdoctor.doctor.gather import Options, gather
from mpdoctor.probes import early
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.prescan import FAIL_ON, FORMATS, KERNEL_MODES
from mpdoctor.probes.prescan import check_request as request_of
from mpdoctor.render.output import target_problem
from mpdoctor.probes.child import live_children
from mpdoctor.probes.progress import ProgressBoard

REPO = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def marking_python(tmp_path: Path) -> tuple[Path, Path]:
    """An interpreter (this one, behind a shell script) that creates a mark file each time it is run."""
    mark = tmp_path / "ran"
    script = tmp_path / "bin" / "python"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\ntouch "{mark}"\nexec "{sys.executable}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, mark


def mpdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_a_plain_check_is_recognised_with_its_options(tmp_path):
    assert check_request(["check"]) == early.Request(sys.executable, Budget.default(), "quick", True)
    request = check_request(
        [
            "check",
            "-f",
            "json",
            "--fail-on=never",
            "--timeout",
            "7.5",
            "--kernels",
            "full",
            "-o",
            str(tmp_path / "report.json"),
            "-q",
        ]
    )
    assert request == early.Request(sys.executable, Budget.from_timeout(7.5), "full", True)
    assert check_request(["check", "--no-kernels", "--timeout=3", "--timeout", "4"]).kernels == "off"
    assert check_request(["check", "--timeout=3", "--timeout", "4"]).budget.timeout == 4.0  # the last one counts


def test_the_early_start_reads_timeout_as_the_cli_does():
    """One declaration: the pre-scan's Budget is the one typer builds from the same --timeout (and its default)."""
    import typer

    from mpdoctor.cli import app

    command = typer.main.get_command(app)
    for given in (["--timeout", "7.5"], ["--timeout=1e2"], []):
        with command.make_context("mpdoctor", ["check", *given]) as ctx:
            check = command.get_command(ctx, "check")
            with check.make_context("check", list(given), parent=ctx) as sub:
                assert check_request(["check", *given]).budget == sub.params["budget"]


def test_the_early_start_resolves_python_as_the_cli_does(tmp_path):
    """One resolution for both: a `..` in --python must not make gather give up the early snapshot."""
    from mpdoctor.cli.options import resolve_python

    python, _ = marking_python(tmp_path)
    (tmp_path / "project").mkdir()
    given = str(tmp_path / "project" / ".." / "bin" / "python")
    assert check_request(["check", "--python", given]).python == resolve_python(given) == str(python)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["checks"],
        ["explain", "check"],
        ["--version", "check"],
        ["check", "--help"],
        ["check", "-h"],
        ["check", "--fail-on", "bogus"],
        ["check", "--format", "yaml"],
        ["check", "--kernels"],
        ["check", "--timeout", "nan"],
        ["check", "--timeout", "inf"],
        ["check", "--timeout", "0"],
        ["check", "--timeout", "soon"],
        ["check", "--select", "TORCH"],
        ["check", "--ignore=PREC"],
        ["check", "--snapshot", "s.json"],
        ["check", "--python", ""],
        ["check", "--python", "/no/such/python"],
        ["check", "--output", "/no/such/directory/report.json"],
        ["check", "--no-kernels=yes"],
        ["check", "extra"],
        ["check", "-fjson"],
        ["check", "--", "--no-kernels"],
        ["check", "--output", os.devnull],
    ],
    ids=lambda argv: " ".join(argv) or "nothing",
)
def test_anything_unusual_starts_nothing_early(argv):
    assert check_request(argv) is None


def test_every_value_the_prescan_accepts_the_cli_accepts_too():
    """A value missing here only costs the early start; one the CLI refused would start probes for nothing."""
    assert FORMATS <= {f.value for f in CheckFormat}
    assert FAIL_ON <= {f.value for f in FailOn}
    assert KERNEL_MODES <= {k.value for k in KernelMode}


@pytest.mark.parametrize(
    "args",
    [["--fail-on", "bogus"], ["--help"], ["--timeout", "nan"], ["--output", "/no/such/directory/r.json"]],
    ids=" ".join,
)
def test_help_and_bad_options_start_no_probe_child(tmp_path, args):
    python, mark = marking_python(tmp_path)
    proc = mpdoctor("check", "--python", str(python), "--no-kernels", *args, cwd=tmp_path)
    assert proc.returncode == (0 if args == ["--help"] else 2), proc.stderr
    if args != ["--help"]:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # typer's one-line usage error, as before
    assert not mark.exists(), "a probe child was started for a command that probes nothing"


def test_a_plain_check_probes_the_interpreter_it_names(tmp_path):
    """The positive control for the test above: the same fake interpreter, a valid command, a mark."""
    python, mark = marking_python(tmp_path)
    proc = mpdoctor(
        "check", "--python", str(python), "--no-kernels", "--format", "json", "--fail-on", "never", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert mark.exists()
    assert '"torch"' in proc.stdout


def check_request(argv: list[str]):
    return request_of(argv, target_problem)  # what the entry points pass


def _options(python: str, **kw) -> Options:
    return Options(python=python, kernels="off", progress=ProgressBoard(), **kw)


def test_gather_uses_the_early_snapshot_when_the_options_match(tmp_path):
    python, _ = marking_python(tmp_path)
    started = early.start(check_request(["check", "--python", str(python), "--no-kernels"]))
    options = _options(str(python))
    snapshot = gather(options)
    assert snapshot.torch.status == "imported" and snapshot.environment.probe.status == "ok"
    names = {task.name for task in started.board.tasks() if task.finished}
    assert {"torch", "inventory", "nvml"} <= names  # the early snapshot's probes did the work...
    assert options.progress.tasks() == []  # ...and no second snapshot was taken
    assert early.pending_board() is None and live_children() == []


def test_an_early_snapshot_for_other_options_is_given_up(tmp_path):
    python, _ = marking_python(tmp_path)
    started = early.start(check_request(["check", "--python", str(python), "--no-kernels", "--timeout", "30"]))
    options = _options(str(python), budget=Budget.default())
    snapshot = gather(options)
    assert snapshot.torch.status == "imported"
    assert {task.name for task in options.progress.tasks() if task.finished} >= {"torch", "inventory"}
    assert not started.running and live_children() == []


def test_discarding_an_early_snapshot_kills_its_children_and_starts_no_more(tmp_path, fake_venv):
    """A torch that hangs on import: giving the snapshot up ends it at once, not at the 60 s timeout."""
    venv = fake_venv("prescan-torch-hangs", {"torch/__init__.py": "import time\ntime.sleep(600)\n"})
    started = early.start(early.Request(str(fake_venv.python(venv)), Budget.default(), "off", True))
    board = started.board
    for _ in range(400):  # until the torch child is running (it posts its step), at most ~20 s
        if any(task.name == "torch" and task.text == "importing torch" for task in board.tasks()):
            break
        started.join(0.05)
    assert live_children()
    early.discard()
    assert not started.running and live_children() == []
    with pytest.raises(Exception) as raised:
        started.result()
    assert type(raised.value).__name__ == "Cancelled"
