"""Every usage error, typer's own validation included, is one line on stderr and exit status 2.

One shape for all of them, ours and click's: ``mpdoctor: error: WHAT (see 'mpdoctor CMD --help')``.

Real processes (``python -m mpdoctor``), so the path through ``main()`` is the one users
get. The other exits stay as they were: help and version 0, a finding 1, nothing
recognised 1, no arguments prints the help.
"""

from __future__ import annotations

import pytest

from helpers import fixture_path, run_cli

BOX = set("╭╮╰╯─│┌┐└┘")

BAD = [  # at least one of each kind a command can refuse: a value, a missing file, an output, an option pair
    # root
    (["nosuch"], "No such command 'nosuch'", "mpdoctor --help"),
    (["chek"], "Did you mean 'check'", "mpdoctor --help"),
    (["--bogus"], "No such option: --bogus", "mpdoctor --help"),
    # check: a bad choice, a bad number, an unknown option, an extra argument, a missing value, ours
    (["check", "--fail-on", "bogus"], "Invalid value for '--fail-on': 'bogus' is not one of", "mpdoctor check --help"),
    (["check", "--timeout", "abc"], "Invalid value for '--timeout'", "mpdoctor check --help"),
    (["check", "--timeout", "nan"], "Invalid value for '--timeout'", "mpdoctor check --help"),
    (["check", "--timeout", "0"], "Invalid value for '--timeout'", "mpdoctor check --help"),
    (["check", "--format", "xml"], "Invalid value for '--format'", "mpdoctor check --help"),
    (["check", "--kernels", "huge"], "Invalid value for '--kernels'", "mpdoctor check --help"),
    (["check", "--bogus"], "No such option: --bogus", "mpdoctor check --help"),
    (["check", "extra"], "unexpected extra argument", "mpdoctor check --help"),
    (["check", "--output"], "requires an argument", "mpdoctor check --help"),
    (["check", "--select", "BOGUS"], "no check code starts with 'BOGUS'", "mpdoctor check --help"),
    (["check", "--select", "AUDIT"], "names checkpoint-audit codes", "mpdoctor check --help"),
    (["check", "--ignore", "FLEET"], "names fleet codes", "mpdoctor check --help"),
    (["check", "--select", "MPD"], "names mpdoctor's own codes", "mpdoctor check --help"),
    (["check", "--timeout", "1e308"], "must be between 0.1 and 86400", "mpdoctor check --help"),
    (["check", "--snapshot", "nosuch.json"], "nosuch.json", "mpdoctor check --help"),
    (["check", "--python", "/nonexistent/python"], "no such interpreter", "mpdoctor check --help"),
    (["check", "--output", "/dev/null"], "is a character device", "mpdoctor check --help"),
    (["check", "--save-snapshot", "/nonexistent/dir/s.json"], "no such directory", "mpdoctor check --help"),
    (["check", "--snapshot", "s.json", "--python", "p"], "exclude each other", "mpdoctor check --help"),
    # checks, rule
    (["checks", "extra"], "unexpected extra argument", "mpdoctor checks --help"),
    (["checks", "--bogus"], "No such option: --bogus", "mpdoctor checks --help"),
    (["rule"], "Missing argument 'CODE'", "mpdoctor rule --help"),
    (["rule", "A", "B"], "unexpected extra argument", "mpdoctor rule --help"),
    (["rule", "NOPE999"], "no check 'NOPE999'", "mpdoctor rule --help"),
    # explain
    (["explain", "--format", "xml", "x"], "Invalid value for '--format'", "mpdoctor explain --help"),
    (["explain", "--timeout", "abc", "x"], "Invalid value for '--timeout'", "mpdoctor explain --help"),
    (["explain", "a", "b"], "unexpected extra argument", "mpdoctor explain --help"),
    (["explain"], "exactly one of them", "mpdoctor explain --help"),
    (["explain", "--file", "nosuch.log"], "nosuch.log", "mpdoctor explain --help"),
    (["explain", "--python", "p", "x"], "only applies with --check", "mpdoctor explain --help"),
    (["explain", "--timeout", "inf", "x"], "must be between 0.1 and 86400", "mpdoctor explain --help"),
    # audit
    (["audit"], "Missing argument 'PATH'", "mpdoctor audit --help"),
    (["audit", "--fail-on", "bogus", "x"], "Invalid value for '--fail-on'", "mpdoctor audit --help"),
    (["audit", "/does/not/exist.safetensors"], "/does/not/exist.safetensors", "mpdoctor audit --help"),
    (["audit", "nosuch.pt"], "nosuch.pt", "mpdoctor audit --help"),
    (["audit", "--output", "/dev/null", "x.pt"], "is a character device", "mpdoctor audit --help"),
    (["audit", "--timeout", "-1", "x.pt"], "must be between 0.1 and 86400", "mpdoctor audit --help"),
    (["audit", "--python", "/nonexistent/python", "x.pt"], "no such interpreter", "mpdoctor audit --help"),
    # fleet and its subcommands
    (["fleet", "--fail-on", "bogus"], "Invalid value for '--fail-on'", "mpdoctor fleet --help"),
    (["fleet", "--deadline", "abc"], "Invalid value for '--deadline'", "mpdoctor fleet --help"),
    (["fleet", "nosuch"], "No such command 'nosuch'", "mpdoctor fleet --help"),
    (["fleet", "compare"], "Missing argument 'FILES...'", "mpdoctor fleet compare --help"),
    (["fleet", "compare", "one.json"], "at least two files", "mpdoctor fleet compare --help"),
    (["fleet", "compare", "nosuch-a.json", "nosuch-b.json"], "nosuch-a.json", "mpdoctor fleet compare --help"),
    (["fleet", "--deadline", "0"], "must be between 0.1 and 86400", "mpdoctor fleet --help"),
    (["fleet", "--full-snapshots"], "needs --save-snapshots", "mpdoctor fleet --help"),
    (
        ["fleet", "compare", "--format", "xml", "a", "b"],
        "Invalid value for '--format'",
        "mpdoctor fleet compare --help",
    ),
    (["fleet", "rules", "extra"], "unexpected extra argument", "mpdoctor fleet rules --help"),
    (["fleet", "rule"], "Missing argument 'CODE'", "mpdoctor fleet rule --help"),
    (["fleet", "rule", "NOPE"], "no fleet code 'NOPE'", "mpdoctor fleet rule --help"),
]


@pytest.mark.parametrize("argv, message, see", BAD, ids=[" ".join(a) or "(none)" for a, _, _ in BAD])
def test_a_usage_error_is_one_line_on_stderr(argv, message, see):
    result = run_cli(*argv)
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("mpdoctor: error: "), line
    assert message.lower() in line.lower(), line
    assert line.endswith(f"(see '{see}')"), line
    assert "Traceback" not in result.stderr and not BOX & set(result.stderr), result.stderr
    assert result.stdout == ""


def test_a_usage_error_redacts_what_it_quotes():
    result = run_cli("check", "--format", "https://user:hunter2@example.org/x")
    assert result.returncode == 2 and "hunter2" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    "argv, code, stream, text",
    [
        (["--help"], 0, "stdout", "Usage: mpdoctor"),
        (["check", "--help"], 0, "stdout", "--fail-on"),
        (["fleet", "compare", "--help"], 0, "stdout", "Usage: mpdoctor fleet compare"),
        (["--version"], 0, "stdout", "mpdoctor "),
        ([], 2, "stdout", "Usage: mpdoctor"),  # no command: the help, exit 2 (click's convention, kept)
        (["checks"], 0, "stdout", "CODE"),
        (["explain", "nothing that mpdoctor knows"], 1, "stdout", "No known mixed-precision failure"),
    ],
)
def test_other_exits_are_unchanged(argv, code, stream, text):
    result = run_cli(*argv)
    assert result.returncode == code, result.stderr
    assert text in getattr(result, stream)
    assert "Traceback" not in result.stderr


def test_a_finding_still_exits_1():
    result = run_cli("check", "--snapshot", str(fixture_path("titan-rtx-1080ti-cpu-torch")))
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
