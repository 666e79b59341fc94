"""Every usage error, typer's own validation included, is one line on stderr and exit status 2.

One shape for all of them, ours and click's: ``mpdoctor: error: WHAT (see 'mpdoctor CMD --help')``.

Real processes (``python -m mpdoctor``), so the path through ``main()`` is the one users
get. The other exits stay as they were: help and version 0, a finding 1, nothing
recognised 1, no arguments prints the help.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_driver import run_all
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


# ---------------------------------------------------------------- usage that would lose work silently (issue 40)
#
# `check --snapshot ""` ran a live check, `audit ""` audited the working directory, `-o X --save-snapshot X` lost
# the snapshot, and a 41-digit integer was read though over 40 are refused. Each is now a usage error of the one
# shape, made here by generators: every path option with every kind of empty value, the same file spelt in
# several ways, integers around the bound.

SHAPE = re.compile(r"mpdoctor: error: .+ \(see 'mpdoctor [a-z ]+ --help'\)\n\Z")
EMPTY_VALUES = ["", " ", "\t", "  \t "]


def empty_path_argvs(fixture: str) -> list[tuple[list[str], str]]:
    """Every option or argument that names a file to read or write, given each empty value."""
    argvs = []
    for empty in EMPTY_VALUES:
        argvs += [
            (["check", "--snapshot", empty], "--snapshot: an empty path"),
            (["check", "--snapshot", fixture, "--output", empty], "--output: an empty path"),
            (["check", "--snapshot", fixture, "--save-snapshot", empty], "--save-snapshot: an empty path"),
            (["audit", empty], "PATH: an empty path"),
            (["audit", "x.pt", "--output", empty], "--output: an empty path"),
            (["explain", "--file", empty], "--file: an empty path"),
            (["fleet", "compare", fixture, empty], "FILES (file 2): an empty path"),
            (["fleet", "compare", empty, fixture], "FILES (file 1): an empty path"),
            (["fleet", "compare", fixture, fixture, "--output", empty], "--output: an empty path"),
        ]
    return argvs


def same_file_spellings(folder: Path, name: str) -> list[str]:
    """One file, named in several ways: as given, through ``..``, through ``.``, through a symlinked folder."""
    (folder / "sub").mkdir(exist_ok=True)
    link = folder / "link"
    if not link.exists():
        link.symlink_to(folder)
    return [str(folder / name), str(folder / "sub" / ".." / name), str(folder / "." / name), str(link / name)]


def same_file_argvs(folder: Path, fixture: Path) -> list[tuple[list[str], str]]:
    report = folder / "report.json"
    snapshot = folder / "snap.json"
    snapshot.write_bytes(fixture.read_bytes())
    argvs = []
    for one in same_file_spellings(folder, report.name):
        for other in same_file_spellings(folder, report.name):
            argv = ["check", "--snapshot", str(fixture), "-o", one, "--save-snapshot", other]
            argvs.append((argv, "--output and --save-snapshot name the same file"))
    for spelt in same_file_spellings(folder, snapshot.name):
        argvs.append((["check", "--snapshot", str(snapshot), "-o", spelt], "the report would replace the snapshot"))
        argvs.append((["audit", str(snapshot), "-o", spelt], "the report would replace what it audits"))
        argvs.append((["fleet", "compare", str(fixture), str(snapshot), "-o", spelt], "the report would replace it"))
    return argvs


def assert_usage_errors(cases: list[tuple[list[str], str]], results) -> None:
    assert [argv for argv, _, _ in results] == [argv for argv, _ in cases]
    for (argv, message), (_, code, err) in zip(cases, results):
        assert code == 2, (argv, code, err)
        assert SHAPE.match(err), (argv, err)
        assert message in err, (argv, message, err)


def test_an_empty_path_is_a_usage_error_everywhere():
    cases = empty_path_argvs(str(fixture_path("cpu-kernels")))
    assert len(cases) >= 36
    assert_usage_errors(cases, run_all([argv for argv, _ in cases]))


def test_one_file_named_twice_where_one_is_written_is_a_usage_error(tmp_path):
    fixture = fixture_path("cpu-kernels")
    cases = same_file_argvs(tmp_path, fixture)
    assert len(cases) >= 28
    assert_usage_errors(cases, run_all([argv for argv, _ in cases]))
    assert not (tmp_path / "report.json").exists()  # refused before anything was written
    assert (tmp_path / "snap.json").read_bytes() == fixture.read_bytes()  # and nothing replaced


def test_distinct_outputs_and_the_same_input_twice_still_work(tmp_path):
    fixture = str(fixture_path("cpu-kernels"))
    report, saved = tmp_path / "report.json", tmp_path / "saved.json"
    runs = run_all(
        [
            ["check", "--snapshot", fixture, "-o", str(report), "--save-snapshot", str(saved), "--fail-on", "never"],
            ["fleet", "compare", fixture, fixture, "--fail-on", "never"],  # one file as two ranks: allowed, as before
        ]
    )
    assert [code for _, code, _ in runs] == [0, 0], runs
    assert report.stat().st_size > 0 and saved.stat().st_size > 0


def integers_around_the_bound(bound: int = 40) -> list[tuple[str, bool]]:
    """JSON integers of bound-2 to bound+3 digits, positive and negative: (text, refused)."""
    out = []
    for digits in range(bound - 2, bound + 4):
        for sign in ("", "-"):
            out.append((sign + "9" * digits, digits > bound))
    return out


def test_an_integer_of_over_40_digits_is_refused_and_40_are_read(tmp_path):
    data = json.loads(fixture_path("cpu-kernels").read_text())
    cases, expected = [], []
    for index, (number, refused) in enumerate(integers_around_the_bound()):
        path = tmp_path / f"n{index}.json"
        text = json.dumps(data).replace('"schema_version": 1', f'"schema_version": 1, "x_extra": {number}', 1)
        assert number in text
        path.write_text(text)
        cases.append(["check", "--snapshot", str(path), "--fail-on", "never", "-f", "json"])
        expected.append(refused)
    for argv, refused, (_, code, err) in zip(cases, expected, run_all(cases)):
        if refused:
            assert code == 2 and SHAPE.match(err) and "digits (at most 40 are read)" in err, (argv, code, err)
        else:
            assert code == 0, (argv, code, err)
