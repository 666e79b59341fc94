"""A long fix command on a terminal is continued with ` \\` at spaces a shell splits at: never cut mid-word,
and the shell reads the lines as the very same command."""

from __future__ import annotations

import io
import re
import subprocess

import pytest
from rich.console import Console

from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.doctor.judge import judge
from mpdoctor.render.wrap import shell_words, command_lines

PROMPT, HANGING = "       $ ", "           "


def every_fix_command() -> list[str]:
    commands = {
        step.command
        for name in snapshot_fixture_names()
        for finding in judge(load_fixture(name))
        for step in finding.fix
        if step.command
    }
    return sorted(commands)


def undone(lines: list[str]) -> str:
    """What a shell reads: each backslash-newline removed, the indentation after it only separating words."""
    return re.sub(r" \\\n +", " ", "\n".join(lines))[len(PROMPT) :]


@pytest.mark.parametrize("width", [40, 80, 120])
def test_every_fix_command_fits_at_words_and_reads_back_the_same(width):
    commands = every_fix_command()
    assert len(commands) > 40  # the fixtures' real fix commands, not a handful
    for command in commands:
        lines = command_lines(command, width)
        assert undone(lines) == command
        for line in lines:
            body = line.rstrip("\\").strip().removeprefix("$ ")
            assert len(line) <= width or len(shell_words(body)) == 1, (command, line)  # too wide: one word only


def test_quoted_spaces_and_escapes_are_never_split():
    command = (
        "pip install --index-url https://download.pytorch.org/whl/cu124 'torch==2.5.1' "
        "\"a b c d e f g h\" x\\ y && python -c 'import torch; print(torch.cuda.is_available())'"
    )
    lines = command_lines(command, 30)
    assert len(lines) > 3
    text = "\n".join(lines)
    for whole in ("'torch==2.5.1'", '"a b c d e f g h"', "x\\ y", "'import torch; print(torch.cuda.is_available())'"):
        assert whole in text


def test_bash_reads_the_continued_lines_as_the_same_words(tmp_path):
    command = "printf '%s|' one 'two  three' \"four five\" six\\ seven " + " ".join(f"word{i}" for i in range(30))
    lines = command_lines(command, 50)
    assert len(lines) > 2
    script = tmp_path / "continued.sh"
    script.write_text("\n".join(lines)[len(PROMPT) :] + "\n")
    continued = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
    whole = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout
    assert continued == whole and "two  three|" in whole


@pytest.mark.parametrize(
    "command",
    [
        "echo a # a comment that a continuation would swallow",
        "cat <<EOF\nx\nEOF",
        "echo 'an unclosed quote and more words than fit",
    ],
)
def test_a_command_a_continuation_could_change_stays_one_line(command):
    assert command_lines(command, 20) == [PROMPT + command]


def test_only_a_terminal_gets_continued_lines():
    from mpdoctor.render.wrap import print_command

    long = "mpdoctor check --python " + "/very/long/path" * 3 + " --timeout 300 --kernels full --select TORCH"
    piped = io.StringIO()
    print_command(Console(file=piped, width=60, force_terminal=False), long)
    assert piped.getvalue() == PROMPT + long + "\n"
    shown = io.StringIO()
    print_command(Console(file=shown, width=60, force_terminal=True, color_system=None), long)
    assert shown.getvalue().count("\n") > 1 and "\\\n" + HANGING in shown.getvalue()
