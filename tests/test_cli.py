"""The command line: options, exit codes, formats, and a start-up that never imports torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from helpers import fixture_path, run_cli
from mpdoctor.cli import app
from mpdoctor.checks.registry import builtin_registry

runner = CliRunner()


def snap(name: str) -> str:
    return str(fixture_path(name))


@pytest.mark.parametrize("argv", [["--help"], ["rule", "TORCH005"], ["checks"], ["check", "--help"]])
def test_startup_does_not_import_torch(argv):
    code = (
        "import sys, runpy; sys.argv = ['mpdoctor', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('mpdoctor', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'pynvml' not in sys.modules, 'pynvml was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_python_dash_m_and_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("mpdoctor ")


def test_checks_lists_the_registry():
    result = runner.invoke(app, ["checks"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for entry in builtin_registry():
        assert entry.code in result.output and entry.name in result.output


def test_rule_prints_the_docstring_by_code_or_name():
    by_code = runner.invoke(app, ["rule", "torch005"])
    by_name = runner.invoke(app, ["rule", "cpu-only-torch-with-gpus"])
    assert by_code.exit_code == by_name.exit_code == 0
    assert "## Fix" in by_code.output and by_code.output == by_name.output


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rule", "NOPE999"], "no check 'NOPE999'"),
        (["check", "--select", "BOGUS"], "no check code starts with 'BOGUS'"),
        (["check", "--snapshot", "x.json", "--python", sys.executable], "exclude each other"),
        (["check", "--python", "/does/not/exist"], "no such interpreter"),
        (["check", "--python", "/tmp"], "not an executable file"),
        (["check", "--snapshot", "/does/not/exist.json"], "cannot read snapshot"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message):
    result = run_cli(*argv)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_option_values_exit_2():
    assert run_cli("check", "--format", "yaml").returncode == 2
    assert run_cli("check", "--timeout", "-1").returncode == 2


def _timeout_options():
    """Every --timeout option of every command: (the command's path, the click option)."""
    import typer

    def walk(command, path):
        for param in getattr(command, "params", []):
            if "--timeout" in getattr(param, "opts", ()):
                yield path, param
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, path + [name])

    return list(walk(typer.main.get_command(app), []))


def test_every_timeout_is_the_one_declaration_read_into_a_budget():
    """--timeout is declared once (cli/options.py's Timeout) and read into the run's Budget, defaults included."""
    from mpdoctor.probes.budget import AUDIT_TIMEOUT, DEFAULT_TIMEOUT, Budget

    found = {" ".join(path): param for path, param in _timeout_options()}
    assert set(found) == {"check", "explain", "audit", "fleet"}
    assert len({param.help for param in found.values()}) == 1  # the one declaration: one help, one reader
    assert len({param.type.func for param in found.values()}) == 1
    for path, param in found.items():
        assert param.default == (AUDIT_TIMEOUT if path == "audit" else DEFAULT_TIMEOUT), path
        assert param.type.convert(str(param.default), param, None) == Budget.from_timeout(param.default)


@pytest.mark.parametrize(
    "fixture, fail_on, code",
    [
        ("cpu-laptop", "error", 0),
        ("v100-cu130", "error", 1),
        ("v100-cu130", "never", 0),
        ("rtx4090-minor-newer", "error", 0),
        ("rtx4090-minor-newer", "warning", 1),
        ("rtx4090-minor-newer", "info", 1),
    ],
)
def test_exit_code_follows_fail_on(fixture, fail_on, code):
    result = runner.invoke(app, ["check", "--snapshot", snap(fixture), "--fail-on", fail_on])
    assert result.exit_code == code, result.output


def test_ignore_drops_findings_and_changes_the_exit_code():
    result = runner.invoke(app, ["check", "--snapshot", snap("v100-cu130"), "--ignore", "TORCH007"])
    assert result.exit_code == 0 and "TORCH007" not in result.output


def test_text_output_is_a_triaged_fix_list():
    result = run_cli("check", "--snapshot", snap("precision-stack-conflicts"), "--fail-on", "never")
    out = result.stdout
    assert "\x1b[" not in out  # piped: no colour codes
    positions = [out.index(code) for code in ("STACK001", "ENV002", "STACK003")]
    assert positions == sorted(positions)  # errors before warnings
    assert "$ " in out and "1 error, 3 warnings, 0 info" in out.splitlines()[-1]


def test_colour_on_a_terminal_and_none_with_no_color():
    red = "\x1b[1;31m"
    args = ("check", "--snapshot", snap("v100-cu130"))
    coloured = run_cli(*args, env={**os.environ, "FORCE_COLOR": "1"})  # as on a terminal
    plain = run_cli(*args, env={**os.environ, "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert red in coloured.stdout
    assert red not in plain.stdout and "TORCH007" in plain.stdout


def test_output_file_and_markdown_ticket(tmp_path):
    out = tmp_path / "ticket.md"
    result = run_cli(
        "check", "--snapshot", snap("titan-rtx-1080ti-cpu-torch"), "--format", "markdown", "--output", str(out)
    )
    assert result.returncode == 1 and result.stdout == ""
    text = out.read_text()
    assert text.startswith("## mpdoctor report")
    assert "### ERROR `TORCH005`" in text and "```sh" in text
    assert (
        "| - | 1 | NVIDIA TITAN RTX | 0000:81:00.0 | 7.5 | 24 GiB | TC | emul | - | - | not visible: torch is a "
        "CPU-only build |" in text
    )
    # The snapshot is not embedded (issue 21: a ticket that fits) but written beside it, and named.
    assert "<details>" not in text and "mpdoctor check --snapshot ticket.snapshot.json" in text
    body = (tmp_path / "ticket.snapshot.json").read_text()
    assert json.loads(body)["machine"]["nvml"]["gpus"][1]["name"] == "NVIDIA TITAN RTX"
    assert not list(tmp_path.glob(".mpdoctor-*"))  # no temporary left behind


def test_save_snapshot_then_rejudge_it(tmp_path):
    saved = tmp_path / "snap.json"
    first = run_cli("check", "--format", "json", "--save-snapshot", str(saved), "--fail-on", "never")
    again = run_cli("check", "--format", "json", "--snapshot", str(saved), "--fail-on", "never")
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert json.loads(first.stdout)["snapshot"] == json.loads(again.stdout)["snapshot"]


def test_python_option_diagnoses_another_interpreter():
    result = run_cli("check", "--python", sys.executable, "--format", "json", "--fail-on", "never")
    assert json.loads(result.stdout)["snapshot"]["environment"]["python"]["executable"] == sys.executable


def test_rule_documents_the_internal_crash_code():
    result = runner.invoke(app, ["rule", "MPD001"])
    assert result.exit_code == 0 and "check-crashed" in result.output and "## Fix" in result.output


# ---------------------------------------------------------------- MPD002: which option took the fact away (issue 30)


def _skipped_kernels(**given):
    from helpers import load_fixture

    snap = load_fixture("kernels-skipped")
    for name, value in given.items():
        setattr(snap.invocation, name, value)
    return snap


def _fact_not_taken(snap, select):
    from mpdoctor.doctor.judge import judge

    [finding] = [f for f in judge(snap, select) if f.code == "MPD002"]
    return finding


def test_mpd002_names_no_kernels_when_it_took_the_kernels_away():
    """`--select PREC004 --no-kernels`: the fix says to drop --no-kernels, and its command does."""
    finding = _fact_not_taken(_skipped_kernels(no_kernels=True, select=["PREC004"]), ["PREC004"])
    assert "skipped: --no-kernels was given" in finding.title
    [step] = finding.fix
    assert "without --no-kernels" in step.text
    assert step.command == "mpdoctor check --select PREC004 --save-snapshot snapshot.json"


def test_mpd002_names_the_selection_when_no_selected_check_needed_them():
    finding = _fact_not_taken(_skipped_kernels(select=["TORCH"]), ["PREC004"])
    assert "the run's selection (--select TORCH) needed none of them" in finding.title
    assert "--no-kernels" not in finding.title
    [step] = finding.fix
    assert "--no-kernels" not in step.text and "with these checks selected" in step.text
