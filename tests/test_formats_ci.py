"""The CI formats: `--format github` (workflow commands), `--format junit` (a JUnit XML file), and action.yml.

The GitHub lines are held to the documented workflow-command syntax, the JUnit file to the Jenkins xUnit
plugin's JUnit schema (tests/fixtures/junit-10.xsd, vendored with its source and licence), and the action's
scripts are run for real against this machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer.main
import xmlschema

from adversarial.running import mpdoctor

# leaky_env and project are pytest fixtures (a venv whose torch leaks secrets, a project full of them), used by name
from adversarial.test_secrets import assert_no_canary, leaky_env, planted_environment, project  # noqa: F401
from helpers import fixture_path, load_fixture, run_cli, snapshot_fixture_names
from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.checks.registry import builtin_registry
from mpdoctor.cli import app
from mpdoctor.doctor.judge import judge
from mpdoctor.doctor.report import Report, redacted
from mpdoctor.findings import Finding, Severity, FixStep, exit_code
from mpdoctor.render.github import annotation, escape_data, escape_property, message, render_github
from mpdoctor.render.junit import render_junit

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "fixtures" / "junit-10.xsd"))

# The workflow-command syntax, as documented at
# https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
#   ::error file={name},line={line},endLine={endLine},title={title}::{message}
# (also ::warning and ::notice, with col and endColumn): properties are comma-separated key=value pairs whose
# values escape `%`, `\r`, `\n`, `:` and `,`; the message escapes `%`, `\r` and `\n` (actions/toolkit's
# escapeProperty and escapeData, packages/core/src/command.ts).
PROPERTY = r"(?:file|line|endLine|col|endColumn|title)=[^,:\r\n]*"
WORKFLOW_COMMAND = re.compile(rf"^::(error|warning|notice)(?: ({PROPERTY}(?:,{PROPERTY})*))?::([^\r\n]*)$")
ESCAPE = re.compile(r"%(?!25|0D|0A|3A|2C)")  # a % that starts no escape sequence
SUMMARY = re.compile(r"^mpdoctor: \d+ errors?, \d+ warnings?, \d+ info; (fails|passes|never fails)\b")


def report_of(name: str, snap=None) -> Report:
    snap = snap or load_fixture(name)
    return redacted(
        Report(created="2026-11-23T00:00:00+00:00", findings=judge(snap), snapshot=snap, gpus=device_table(snap))
    )


def unescape(text: str) -> str:
    """What the runner does to a value (actions/runner ActionCommand.Unescape): %25 last."""
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def parse(line: str) -> tuple[str, dict, str]:
    match = WORKFLOW_COMMAND.match(line)
    assert match, f"not a workflow command: {line[:300]}"
    properties = dict(p.split("=", 1) for p in match.group(2).split(",")) if match.group(2) else {}
    assert not ESCAPE.search(match.group(3)) and not any(ESCAPE.search(v) for v in properties.values()), line
    return match.group(1), properties, match.group(3)


# ---------------------------------------------------------------- --format github


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_every_github_line_is_a_workflow_command_or_the_summary(name):
    report = report_of(name)
    lines = render_github(report, "warning").splitlines()
    assert len(lines) == len(report.findings) + 1 and SUMMARY.match(lines[-1]) and not lines[-1].startswith("::")
    for finding, line in zip(report.findings, lines):
        command, properties, text = parse(line)
        assert command == {"error": "error", "warning": "warning", "info": "notice"}[finding.severity]
        assert unescape(properties["title"]) == f"{finding.code} {finding.name}"
        assert unescape(text) == message(finding)


def test_escapes_round_trip_and_nothing_can_start_a_command():
    hostile = "50% done,\r\n::error::pwned: a, b %0A %25 ::stop-commands::x"
    finding = Finding(
        "error",
        hostile,
        [hostile, "C:\\path,with:colons"],
        [FixStep(hostile, "echo '%,:\n'")],
        code="TORCH005",
        name=hostile,
    )
    line = annotation(finding, [])
    assert "\n" not in line and "\r" not in line
    command, properties, text = parse(line)
    assert command == "error" and set(properties) == {"title"}
    # The title's newline is shown (issue 33: one-line fields show their controls), never a line break.
    assert unescape(properties["title"]) == "TORCH005 " + hostile.replace("\r\n", "\\r\\n")
    assert unescape(text) == message(finding)
    assert message(finding).count("\n") == len(message(finding).split("\n")) - 1
    assert "\\r" in message(finding).split("\n")[0]  # the title's carriage return, visible in the message
    assert escape_property(":,") == "%3A%2C" and escape_data(":,%\r\n") == ":,%25%0D%0A"


def test_a_finding_on_a_line_of_the_project_points_there():
    report = report_of("apex-amp-mixed")
    lines = render_github(report, "warning").splitlines()
    located = [parse(line)[1] for line in lines[:-1]]
    # APEX007 at the apex.amp call on the path it judges, APEX008 at the import
    assert [(p.get("file"), p.get("line")) for p in located] == [("train.py", "30"), ("train.py", "3")]
    elsewhere = [parse(line)[1] for line in render_github(report_of("v100-cu130"), "error").splitlines()[:-1]]
    assert elsewhere and not any("file" in p or "line" in p for p in elsewhere)  # no file: no file=


@pytest.mark.parametrize("fmt", ["github", "junit"])
def test_exit_status_is_as_for_the_other_formats(fmt, tmp_path):
    snapshot = str(fixture_path("v100-cu130"))
    for fail_on in ("error", "never"):
        expected = run_cli("check", "--snapshot", snapshot, "-f", "json", "--fail-on", fail_on).returncode
        shown = run_cli("check", "--snapshot", snapshot, "-f", fmt, "--fail-on", fail_on)
        written = run_cli(
            "check", "--snapshot", snapshot, "-f", fmt, "--fail-on", fail_on, "-o", str(tmp_path / f"out.{fmt}")
        )
        assert shown.returncode == written.returncode == expected, shown.stderr
    assert expected == 0 and shown.stdout and written.stdout == ""


# ---------------------------------------------------------------- --format junit


def cases(xml: str) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in ET.fromstring(xml.encode("utf-8")).iter("testcase")}


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_junit_is_valid_and_fails_exactly_the_checks_at_or_above_fail_on(name):
    report = report_of(name)
    for fail_on in ("error", "info"):
        xml = render_junit(report, fail_on)
        SCHEMA.validate(xml)
        found = cases(xml)
        failing = {f"{f.code} {f.name}" for f in report.findings if f.level.rank >= Severity(fail_on).rank}
        assert {n for n, case in found.items() if case.find("failure") is not None} == failing
        assert bool(failing) == bool(exit_code(report.findings, fail_on))
        suite = ET.fromstring(xml.encode("utf-8")).find("testsuite")
        assert int(suite.get("tests")) == len(found) >= len(builtin_registry().snapshot_checks())
        assert int(suite.get("failures")) == len(failing)


def test_findings_below_fail_on_pass_with_their_text_and_unselected_checks_are_skipped():
    report = report_of("apex-amp-mixed")
    found = cases(render_junit(report, "warning", select=["APEX"]))
    passed = found["APEX008 apex-amp-deprecated"]  # an info finding
    assert passed.find("failure") is None and "apex.amp" in passed.find("system-out").text
    assert found["APEX007 apex-amp-and-torch-amp"].find("failure").get("type") == "warning"
    skipped = found["TORCH005 cpu-only-torch-with-gpus"].find("skipped")
    assert skipped is not None and "not selected" in skipped.get("message")


def test_a_check_that_could_not_judge_is_skipped_and_one_that_crashed_is_an_error():
    snap = load_fixture("cpu-laptop")
    snap.kernels.status, snap.kernels.detail = "skipped", "--no-kernels"
    crash = dataclasses.replace(builtin_registry().get("TORCH005"), func=lambda snap: 1 / 0).verdicts(snap)
    report = report_of("", snap)
    report.findings += [v.finding for v in crash]  # the real MPD001 finding of a check that raised
    xml = render_junit(report, "error")
    SCHEMA.validate(xml)
    found = cases(xml)
    needing = [
        c
        for c in builtin_registry().snapshot_checks()
        if "kernels" in c.needs and not any(f.code == c.code for f in report.findings)
    ]
    assert needing and all(
        "could not judge: this snapshot has no kernels" in found[f"{c.code} {c.name}"].find("skipped").get("message")
        for c in needing
    )
    error = found["TORCH005 cpu-only-torch-with-gpus"].find("error")
    assert error is not None and "ZeroDivisionError" in error.get("message")
    assert ET.fromstring(xml.encode("utf-8")).find("testsuite").get("errors") == "1"


def test_junit_escapes_everything_and_strips_what_xml_forbids():
    nasty = "bad \x00\x1b[31m \ud800 \ufffe \x7f ]]> <&>\"' tab\there\nline two"
    finding = Finding(
        "error",
        nasty,
        [nasty, "]]>"],
        [FixStep(nasty, f"echo '{nasty}'")],
        code="TORCH005",
        name="cpu-only-torch-with-gpus",
        family="torch",
    )
    report = Report(created="now <&>", findings=[finding], snapshot=load_fixture("cpu-laptop"))
    data = render_junit(report, "error").encode("utf-8")  # strict: no lone surrogate is left to encode
    SCHEMA.validate(data.decode("utf-8"))
    failure = cases(data.decode("utf-8"))["TORCH005 cpu-only-torch-with-gpus"].find("failure")
    # DEL too is shown (render/sanitise.py's block: XML allows it, a screen should not get it raw)
    shown = "bad \\x00\\x1b[31m \\ud800 \\ufffe \\x7f ]]> <&>\"' tab\there\nline two"
    assert failure.get("message") == shown  # attributes keep their tab and newline (character references)
    assert failure.text.count(shown) == 4 and "]]>" in failure.text  # title, evidence, step and command


# ---------------------------------------------------------------- canaries (tests/adversarial/test_secrets.py)


@pytest.mark.parametrize("fmt", ["github", "junit", "markdown"])
def test_no_canary_in_the_ci_formats_or_the_snapshot_beside_the_ticket(fmt, leaky_env, project, tmp_path):  # noqa: F811
    out = tmp_path / f"report.{fmt}"
    result = mpdoctor(
        "check",
        "--python",
        str(leaky_env / "bin" / "python"),
        "--format",
        fmt,
        "--no-kernels",
        "--fail-on",
        "never",
        "--output",
        str(out),
        cwd=project,
        env=planted_environment(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    written = {"report": out.read_text(encoding="utf-8"), "stdout": result.stdout, "stderr": result.stderr}
    if fmt == "markdown":  # no --save-snapshot: the snapshot goes beside the ticket
        written["snapshot beside it"] = (tmp_path / "report.snapshot.json").read_text(encoding="utf-8")
        assert "<redacted>" in written["snapshot beside it"]
    for where, text in written.items():
        assert_no_canary(f"check --format {fmt}: {where}", text)
    assert ("&lt;redacted&gt;" if fmt == "junit" else "<redacted>") in written["report"]  # it was there to leak
    if fmt == "junit":
        SCHEMA.validate(written["report"])
    if fmt == "github":
        for line in written["report"].splitlines()[:-1]:
            parse(line)


# ---------------------------------------------------------------- action.yml


ACTION = (ROOT / "action.yml").read_text(encoding="utf-8")


def steps() -> list[dict]:
    """The steps of runs.steps, read from the text: name, id, uses, env (a dict) and run (dedented)."""
    body = ACTION.split("\n  steps:\n", 1)[1]
    found = []
    for chunk in re.split(r"^    - ", body, flags=re.M)[1:]:
        lines = ("    - " + chunk).splitlines()
        step: dict = {"env": {}, "run": ""}
        key = None
        for line in lines:
            top = re.match(r"^    [- ] (\w[\w-]*):\s*(.*)$", line)
            if top:
                key, value = top.groups()
                if key not in ("env", "run", "with"):
                    step[key] = value
                continue
            if key == "env" and re.match(r"^        \w+: ", line):
                name, value = line.strip().split(": ", 1)
                step["env"][name] = value
            elif key == "run" and (line.startswith("        ") or not line.strip()):
                step["run"] += line[8:] + "\n"
        step["run"] = step["run"].rstrip("\n") + "\n" if step["run"].strip() else ""  # YAML's `|` keeps one
        found.append(step)
    return found


def step(name: str) -> dict:
    return next(s for s in steps() if s["name"] == name)


def test_action_declares_a_composite_action_with_its_inputs():
    top = re.findall(r"^(\w[\w-]*):", ACTION, re.M)
    assert top == ["name", "description", "author", "branding", "inputs", "outputs", "runs"]
    inputs = re.findall(r"^  ([\w-]+):$", ACTION.split("\ninputs:\n")[1].split("\noutputs:\n")[0], re.M)
    assert inputs == ["python", "fail-on", "select", "ignore", "kernels", "args", "json", "artifact-name"]
    assert "\nruns:\n  using: composite\n" in ACTION
    assert [s["name"] for s in steps()] == [
        "Install mpdoctor",
        "mpdoctor check",
        "Upload the JSON report",
        "Set the exit status",
    ]
    for used in re.findall(r"\$\{\{\s*inputs\.([\w-]+)", ACTION):
        assert used in inputs
    ids = {s.get("id") for s in steps()}
    for used in re.findall(r"\$\{\{\s*steps\.([\w-]+)\.outputs", ACTION):
        assert used in ids
    assert step("Upload the JSON report")["uses"] == "actions/upload-artifact@v4"
    assert "always()" in step("Upload the JSON report")["if"] and step("Set the exit status")["if"] == "always()"
    for each in steps():  # inputs reach scripts through env only: none is pasted into a script
        assert "${{" not in each["run"]


def test_action_installs_its_own_checkout_and_never_torch():
    install = step("Install mpdoctor")
    assert install["env"]["MPDOCTOR_SOURCE"] == "${{ github.action_path }}"
    assert '-m pip install --disable-pip-version-check --quiet "$MPDOCTOR_SOURCE"' in install["run"]
    assert "torch" not in install["run"].replace("# mpdoctor itself from this action's checkout; torch is never", "")


def test_action_calls_only_options_that_exist():
    command = typer.main.get_command(app).commands["check"]
    known = {opt for param in command.params for opt in param.opts}
    script = step("mpdoctor check")["run"].replace("\\\n", " ")
    used = {
        opt
        for line in script.splitlines()
        if "-m mpdoctor check" in line
        for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line)
    }
    used |= set(re.findall(r"\((--[a-z][a-z-]*)", script))  # the options gathered in arrays
    assert {
        "--format",
        "--output",
        "--snapshot",
        "--fail-on",
        "--select",
        "--ignore",
        "--kernels",
        "--no-kernels",
    } <= used
    assert used <= known, used - known


def run_step(name: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """A step's script as a runner runs it (`bash --noprofile --norc -eo pipefail`)."""
    script = cwd / f"{step(name)['id'] if 'id' in step(name) else 'step'}.sh"
    script.write_text(step(name)["run"])
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("kernels", ["off", "quick"])  # quick: `--kernels quick` given (it was an internal error)
def test_action_check_step_runs_annotates_writes_json_and_sets_the_status(kernels, tmp_path):
    outputs = tmp_path / "github_output"
    env = {
        **os.environ,
        "GITHUB_OUTPUT": str(outputs),
        "MPDOCTOR_PYTHON": sys.executable,
        "MPDOCTOR_FAIL_ON": "info",
        "MPDOCTOR_SELECT": "ENV,STACK",
        "MPDOCTOR_IGNORE": "",
        "MPDOCTOR_KERNELS": kernels,
        "MPDOCTOR_ARGS": "--timeout 30",
        "MPDOCTOR_JSON": "mpdoctor.json",
    }
    env.pop("PYTHONPATH", None)
    result = run_step("mpdoctor check", env, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads((tmp_path / "mpdoctor.json").read_text())
    assert report["snapshot"]["invocation"]["kernels"] == ("" if kernels == "off" else kernels)
    status = exit_code([Finding(**{k: f[k] for k in ("severity", "title")}) for f in report["findings"]], "info")
    assert outputs.read_text() == f"exit-code={status}\n"
    lines = result.stdout.splitlines()
    assert len(lines) == len(report["findings"]) + 1 and SUMMARY.match(lines[-1])
    assert [parse(line)[1]["title"].split(" ")[0] for line in lines[:-1]] == [f["code"] for f in report["findings"]]
    finish = run_step("Set the exit status", {**os.environ, "MPDOCTOR_STATUS": str(status)}, tmp_path)
    assert finish.returncode == status
    assert run_step("Set the exit status", {**os.environ, "MPDOCTOR_STATUS": ""}, tmp_path).returncode == 3


def test_action_check_step_reports_a_usage_error_as_an_annotation(tmp_path):
    outputs = tmp_path / "github_output"
    env = {
        **os.environ,
        "GITHUB_OUTPUT": str(outputs),
        "MPDOCTOR_PYTHON": sys.executable,
        "MPDOCTOR_FAIL_ON": "bogus",
        "MPDOCTOR_SELECT": "",
        "MPDOCTOR_IGNORE": "",
        "MPDOCTOR_KERNELS": "off",
        "MPDOCTOR_ARGS": "",
        "MPDOCTOR_JSON": "mpdoctor.json",
    }
    result = run_step("mpdoctor check", env, tmp_path)
    assert result.returncode == 0 and outputs.read_text() == "exit-code=2\n"
    assert parse(result.stdout.strip())[0] == "error"


def test_action_parses_as_yaml():
    import yaml  # a test dependency (pyproject's [test] extra)

    data = yaml.safe_load(ACTION)
    assert data["runs"]["using"] == "composite" and list(data["inputs"]) == [
        "python",
        "fail-on",
        "select",
        "ignore",
        "kernels",
        "args",
        "json",
        "artifact-name",
    ]
    assert [s["name"] for s in data["runs"]["steps"]] == [s["name"] for s in steps()]
    assert all(s["run"] == t["run"] for s, t in zip(data["runs"]["steps"], steps()) if "run" in s)
