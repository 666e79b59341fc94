"""The text report fits 80 and 120 columns without splitting a word; `mpdoctor checks` fits its terminal.

Every snapshot fixture (recorded or constructed: see tests/fixtures) is rendered as a
terminal of that width shows it (a console that is a terminal, without colours), and
compared with the same report rendered 400 columns wide: the same words, none split
across lines, no line wider than the terminal unless it is one word that no line can
hold (a long path or UUID) or a shell command (never broken: it is there to be pasted).
"""

from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from rich.console import Console

from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.analysis.kernel_matrix import kernel_table
from mpdoctor.doctor.judge import judge
from mpdoctor.doctor.report import Report
from mpdoctor.render.text import environment_parts, render_text
from mpdoctor.render.wrap import fill, join_parts

RULE_CHARACTERS = set("─━")


def _report(name: str) -> Report:
    snap = load_fixture(name)
    return Report(created="", findings=judge(snap), snapshot=snap, gpus=device_table(snap), kernels=kernel_table(snap))


def render(report: Report, width: int, terminal: bool = True) -> str:
    buffer = io.StringIO()
    render_text(
        report,
        Console(file=buffer, width=width, force_terminal=terminal, color_system=None, highlight=False, emoji=False),
    )
    return buffer.getvalue()


def words(text: str) -> Counter:
    """Every word of a rendering; table rules (as long as the table) and the header's separators left out."""
    # A lone backslash ends a fix command's line on a terminal: the shell continues it (render/wrap.py command_lines).
    return Counter(w for w in text.split() if w not in ("|", "\\") and set(w) - RULE_CHARACTERS)


def problems(text: str, wide: str, width: int) -> list[str]:
    found = []
    lines = text.splitlines()
    for line in lines:
        body = re.sub(r"^\s*(-|\d+\.)?\s*", "", line).removesuffix(" \\")
        if len(line) > width and not body.startswith("$ ") and len(body.split()) > 1:
            found.append(f"{len(line)} columns: {line!r}")
    for above, below in zip(lines, lines[1:]):
        tail, head = above.rstrip(), below.lstrip()
        if tail and head and tail[-1].isalnum() and head[0].isalnum():
            joined = tail.split()[-1] + head.split()[0]
            if re.search(r"(?<!\S)" + re.escape(joined) + r"(?!\S)", wide):
                found.append(f"split word {joined!r}: {above!r} / {below!r}")
    if words(text) != words(wide):
        found.append(f"words changed: lost {words(wide) - words(text)}, gained {words(text) - words(wide)}")
    return found


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_every_fixture_fits_80_and_120_columns_without_splitting_a_word(name):
    report = _report(name)
    wide = render(report, 400)
    for width in (80, 120):
        assert problems(render(report, width), wide, width) == [], (name, width)


def test_the_checker_catches_a_split_word_and_a_cut_one():
    """The checks above can fail: a word folded by the terminal, and one cut short, are both reported."""
    wide = "mpdoctor: NVML: LibraryNotFound\n"
    assert any("split word" in p for p in problems("mpdoctor: NVML: LibraryNotFoun\nd\n", wide, 80))
    assert any("words changed" in p for p in problems("mpdoctor: NVML: LibraryNot…\n", wide, 80))
    assert any("columns" in p for p in problems("x " * 50 + "\n", "x " * 50, 80))


def test_the_header_breaks_only_between_its_parts():
    report = _report("nvml-library-not-found")
    parts = environment_parts(report.snapshot)
    lines = render(report, 80).split("\n\n")[0].splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    pieces = [piece.strip() for line in lines for piece in line.split(" | ")]
    assert pieces[0].startswith("mpdoctor ") and pieces[0].endswith(parts[0])
    assert pieces[1:] == parts[1:]
    assert render(report, 400).splitlines()[0].count(" | ") == len(parts) - 1  # wide enough: one line


def test_join_parts_wraps_a_part_too_long_for_any_line_at_its_spaces():
    lines = join_parts(["short", "a part " * 20, "tail"], 40)
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(" ".join(lines).replace(" | ", " ").split()) == " ".join(
        ["short", *("a part " * 20).split(), "tail"]
    )
    assert fill("one-very-long-token-that-no-line-can-hold", 10, "  - ") == [
        "  - one-very-long-token-that-no-line-can-hold"
    ]


def test_a_device_name_is_never_cut_in_a_narrow_table():
    """Incident: `A100-SXM4-40G` / `B` in the 80-column device table."""
    report = _report("a100-t4-fastest-first")
    names = [row.name.removeprefix("NVIDIA ") for row in report.gpus.devices]
    narrow = render(report, 80)
    for name in names:
        for word in name.split():
            assert re.search(rf"(?<!\S){re.escape(word)}(?!\S)", narrow), (word, narrow)
    table = narrow.split("\n\n")[1].splitlines()
    assert all(len(line) <= 80 for line in table) and "fp8" in table[0]


def test_piped_text_keeps_every_fact_on_one_line():
    """In a pipe or file (no terminal) nothing is wrapped: each evidence line is whole, for grep."""
    report = _report("a100-t4-fastest-first")
    piped = render(report, 80, terminal=False)
    for finding in report.findings:
        assert finding.title in piped
        for line in finding.evidence:
            assert line.splitlines()[0] in piped


# ---------------------------------------------------------------- `mpdoctor checks`


@pytest.mark.parametrize("columns", [80, 120])
def test_checks_on_a_terminal_fits_it_and_wraps_what_it_finds_at_words(columns):
    from test_plain_output import run_on_pty

    from mpdoctor.checks.registry import builtin_registry

    code, out = run_on_pty(["checks"], {"TERM": "xterm-256color"}, columns=columns)
    assert code == 0
    text = out.decode().replace("\r\n", "\n")
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["CODE", "NAME", "FAMILY"]
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    assert "…" not in text
    entries = list(builtin_registry())
    expected = Counter(w for e in entries for w in (e.code, e.name, e.family, e.subject, *e.summary.split()))
    expected.update("CODE NAME FAMILY JUDGES WHAT IT FINDS".split())
    assert Counter(text.split()) == expected  # every summary whole: no word cut, split or lost
    assert sum(line.startswith("FLEET001 ") for line in lines) == 1


def test_checks_piped_is_whole_and_lists_the_fleet_codes():
    from helpers import run_cli
    from mpdoctor.checks.registry import RANKS, builtin_registry

    result = run_cli("checks", env={"COLUMNS": "60", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    for rule in builtin_registry().judging(RANKS):
        assert rows[rule.code].endswith(rule.summary) and " fleet " in rows[rule.code]
    assert run_cli("rule", "FLEET001").stdout.startswith("FLEET001 rank-never-reported (fleet")
