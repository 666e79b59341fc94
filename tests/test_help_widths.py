"""Every command's --help, `mpdoctor checks` and the reports' tables read whole at 80 and 120 columns.

A terminal folds a line wider than itself mid-word, and a layout that cuts (`gith` / `ub|junit>`,
`mpdoctor/probes/budget.p…`) loses the rest. Each rendering at 80 and 120 columns is compared with
the same thing rendered without a width limit: the same words, as many times, none split across lines,
nothing cut with an ellipsis; and the help strings in the source appear whole in it. The commands come
from the typer application itself, so a new command or option is covered without being listed here.
"""

from __future__ import annotations

import io
from ast import literal_eval
import re
import sys

import pytest
from rich.console import Console

from helpers import load_fixture
from test_widths import problems as width_problems
from test_widths import words

WIDTHS = (80, 120)


def problems(text: str, wide: str, width: int) -> list[str]:
    """test_widths' checks, less a "split word" that is two words in the wide rendering too (`set` / `up`)."""
    whole = flat(wide)
    found = []
    for problem in width_problems(text, wide, width):
        pair = re.match(r"split word .*?: (.*) / (.*)$", problem)
        if pair:
            tail, head = literal_eval(pair.group(1)).split()[-1], literal_eval(pair.group(2)).split()[0]
            if f"{tail} {head}" in whole:
                continue
        found.append(problem)
    return found


def commands() -> list[tuple[list[str], object]]:
    """(argv to the command, its click command) for the root and every command and subcommand, found in the app."""
    import typer

    from mpdoctor.cli import app

    found = []

    def walk(path: list[str], command) -> None:
        found.append((path, command))
        for name in getattr(command, "list_commands", lambda ctx: [])(None):
            walk(path + [name], command.get_command(None, name))

    walk([], typer.main.get_command(app))
    return found


COMMANDS = commands()


def test_the_walk_finds_every_command():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "check", "checks", "rule", "explain", "audit", "fleet", "fleet compare", "fleet rules"} <= names


def help_text(argv: list[str], monkeypatch, capsys, columns: int | None) -> str:
    """``mpdoctor ARGV --help`` as the CLI prints it; ``columns`` None: no width limit at all."""
    from mpdoctor.cli._click import formatting

    from mpdoctor.cli.app import run

    monkeypatch.setattr(formatting, "FORCED_WIDTH", 10_000 if columns is None else None)
    monkeypatch.setenv("COLUMNS", str(columns or 80))
    with pytest.raises(SystemExit) as exit:
        run([*argv, "--help"])
    assert exit.value.code in (0, None)
    out, err = capsys.readouterr()
    assert err == ""
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("argv", [path for path, _ in COMMANDS], ids=[" ".join(p) or "mpdoctor" for p, _ in COMMANDS])
def test_help_fits_80_and_120_columns_without_splitting_a_word(argv, monkeypatch, capsys):
    command = dict((" ".join(p), c) for p, c in COMMANDS)[" ".join(argv)]
    wide = help_text(argv, monkeypatch, capsys, None)
    for width in WIDTHS:
        text = help_text(argv, monkeypatch, capsys, width)
        assert "…" not in text and not re.search(r"\w\.\.\.$", text, re.M), text
        assert problems(text, wide, width) == [], (argv, width, text)
    for param in command.params:  # each help string of the source, whole, and its choices unbroken
        if getattr(param, "help", None):
            assert flat(param.help) in flat(wide), param.help
        for choice in getattr(param.type, "choices", ()):
            assert re.search(rf"[<\[{{|]{re.escape(str(choice))}[|>\]}}]", text), (param.name, choice, text)


def test_help_names_no_module_of_mpdoctor(monkeypatch, capsys):
    for argv, _ in COMMANDS:
        text = help_text(argv, monkeypatch, capsys, 80)
        assert not re.search(r"\b[\w/]+\.py\b|mpdoctor\.\w+\.\w+", text), (argv, text)


@pytest.mark.parametrize(
    "argv, option", [(["check"], "--timeout"), (["audit"], "--timeout"), (["fleet"], "--deadline")]
)
def test_help_states_each_bounded_option_s_whole_range(argv, option, monkeypatch, capsys):
    from mpdoctor.probes.budget import MAX_TIMEOUT, MIN_TIMEOUT

    text = flat(help_text(argv, monkeypatch, capsys, 80))
    entry = text[text.index(option) :]
    assert f"{MIN_TIMEOUT:g} to {MAX_TIMEOUT:g}" in entry[:400], entry[:400]
    assert "x>=" not in text


def test_the_help_checker_catches_a_split_choice():
    wide = "  -f, --format <text|json|markdown|github|junit>  Output format.\n"
    narrow = "  -f, --format <text|json|markdown|gith\n  ub|junit>  Output format.\n"
    assert problems(narrow, wide, 80)


# ---------------------------------------------------------------- tables


@pytest.mark.parametrize("width", WIDTHS)
def test_the_checks_table_wraps_what_it_finds_and_never_the_code(width):
    from mpdoctor.checks.registry import builtin_registry
    from mpdoctor.cli.check import table_lines

    header = ("CODE", "NAME", "FAMILY", "JUDGES", "WHAT IT FINDS")
    rows = [(e.code, e.name, e.family, e.subject, e.summary) for e in builtin_registry()]
    wide = "\n".join(table_lines(header, rows))
    text = "\n".join(table_lines(header, rows, width))
    assert problems(text, wide, width) == []
    assert "…" not in text
    codes = [line.split()[0] for line in text.splitlines() if line[:1].strip()]
    assert codes == ["CODE", *(row[0] for row in rows)]  # one row a code, its code at the start of its line
    for row in rows:  # the short columns stay on the code's line; the summary, read back in order, is whole
        line = next(line for line in text.splitlines() if line.startswith(row[0] + " "))
        assert line.split()[:4] == list(row[:4])


def terminal(width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None, highlight=False, emoji=False)
    return console, buffer


def drawn(draw, width: int) -> str:
    console, buffer = terminal(width)
    draw(console)
    return buffer.getvalue()


def explain_report():
    """explain's report on a failure raised here by the real torch."""
    import traceback

    import torch

    from mpdoctor.explain import explainer

    try:
        torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.half)
    except RuntimeError:
        text = traceback.format_exc()
    return explainer.explain(text.encode(), "the argument", False)


def audit_report(tmp_path):
    import torch

    from mpdoctor.checkpoint_audit.report import audit_files
    from mpdoctor.checkpoint_audit.sources import read_all, weight_files
    from mpdoctor.probes.budget import Budget
    from test_audit import unet_state, write_safetensors

    path = write_safetensors(tmp_path / "model.safetensors", {**unet_state(), "extra.weight": torch.ones(2)})
    return audit_files(str(path), read_all(weight_files(str(path)), sys.executable, Budget.from_timeout(60)))


def report_drawings(tmp_path) -> dict:
    """name: draw(console), for the text reports of check (a fixture), explain, explain --list, audit and fleet
    compare."""
    from test_widths import _report

    from mpdoctor.explain.known import all_signatures
    from mpdoctor.render import audit as audit_view
    from mpdoctor.render import explain as explain_view
    from mpdoctor.render.text import render_text

    from helpers import fixture_path
    from mpdoctor.fleet.model import redacted_fleet
    from mpdoctor.fleet.offline import compare_files
    from mpdoctor.render.fleet import render_fleet_text

    check = _report("a100-t4-fastest-first")
    fleet = redacted_fleet(compare_files([str(fixture_path(n)) for n in ("titan-rtx-1080ti-cpu-torch", "cpu-laptop")]))
    explained, audited = explain_report(), audit_report(tmp_path)
    assert explained.recognised and load_fixture("a100-t4-fastest-first")
    return {
        "check": lambda console: render_text(check, console),
        "explain": lambda console: explain_view.render_text(explained, console),
        "explain --list": lambda console: explain_view.render_list(all_signatures(), console),
        "audit": lambda console: audit_view.render_text(audited, console, False),
        "audit --all": lambda console: audit_view.render_text(audited, console, True),
        "fleet compare": lambda console: render_fleet_text(fleet, console),
    }


@pytest.mark.parametrize("name", ["check", "explain", "explain --list", "audit", "audit --all", "fleet compare"])
def test_report_tables_fit_80_and_120_columns_without_splitting_a_word(name, tmp_path):
    draw = report_drawings(tmp_path)[name]
    wide = drawn(draw, 400)
    assert words(wide), name
    for width in WIDTHS:
        text = drawn(draw, width)
        assert text.count("…") == wide.count("…"), (name, width)  # nothing cut to fit
        assert problems(text, wide, width) == [], (name, width, text)
