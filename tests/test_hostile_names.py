"""A file name can hold a terminal escape: every usage error shows it inert (issue 40, item 2).

``fleet compare node1.json "$(printf 'n\\e]52;c;...\\a.json')"`` wrote an OSC 52 clipboard command to the
terminal, and ``check --snapshot``, ``audit``, ``explain --file`` did the same with such a name. Every message
that quotes the user's input goes through the one sanitiser (mpdoctor/render/sanitise.py, via
``mpdoctor.cli.options.shown``). Here a generator makes hostile names (OSC 52 and OSC 0, CSI, C1 controls, bidi
overrides, a newline that would fake a second line) and each goes through every command that can quote a path
or a value back: one real process runs them all through ``mpdoctor.cli.app.run`` (the CLI's own parser and
error path), and one more through ``python -m mpdoctor`` end to end.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from cli_driver import run_all
from helpers import fixture_path, run_cli

# The escapes an attacker would put in a name: what each does on a terminal.
ESCAPES = [
    "\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: set the clipboard
    "\x1b]0;owned\x07",  # OSC 0: the window title
    "\x1b]8;;https:evil.example\x1b\\",  # OSC 8: a hyperlink (no slash: a file name cannot hold one)
    "\x1b[2J\x1b[H",  # CSI: clear the screen
    "\x9b2J",  # the same with the C1 CSI
    "\x9d0;title\x9c",  # C1 OSC ... ST
    "\x08\x08\x08",  # backspaces over what came before
    "\r",  # back to the start of the line
    "\x7f",
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u2028",  # line separator
    "\x85",  # NEL
    "\n",  # a newline: a fake second line
]
# Raw controls (C0 but the final newline, DEL, C1) and bidi characters: none may reach stderr.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]")


def hostile_names(seed: int = 40, count: int = 4) -> list[str]:
    """File names (no ``/``, no NUL) that hold one or more escapes between ordinary characters; the first holds
    every escape, so each is seen at least once."""
    rng = random.Random(seed)
    names = ["all" + "".join(ESCAPES) + ".json"]
    for _ in range(count - 1):
        parts = rng.sample(ESCAPES, rng.randint(1, 4))
        names.append(
            rng.choice(["node", "run", "x"]) + "".join(p + rng.choice(["a", "1", "-"]) for p in parts) + ".json"
        )
    return names


def commands(tmp: Path, name: str) -> list[list[str]]:
    """Every command that quotes a path or a value back in a usage error, with ``name`` in it."""
    missing = str(tmp / "no-such-dir" / name)
    corrupt = tmp / name
    corrupt.write_bytes(b"\x00not json{")
    fixture = str(fixture_path("cpu-kernels"))
    return [
        ["check", "--snapshot", name],
        ["check", "--snapshot", str(corrupt)],
        ["check", "--output", missing],
        ["check", "--save-snapshot", missing],
        ["check", "--python", name],
        ["check", "--select", name],
        ["check", "--format", name],
        ["check", "--timeout", name],
        ["audit", name],
        ["audit", "--python", name, "x.pt"],
        ["explain", "--file", name],
        ["fleet", "compare", fixture, name],
        ["fleet", "compare", fixture, str(corrupt)],
        ["rule", name],
        ["fleet", "rule", name],
    ]


def test_every_usage_error_shows_a_hostile_name_inert(tmp_path):
    for index in range(len(hostile_names())):
        (tmp_path / str(index)).mkdir()
    argvs = [argv for index, name in enumerate(hostile_names()) for argv in commands(tmp_path / str(index), name)]
    results = run_all(argvs)
    assert len(results) == len(argvs) >= 60
    for argv, code, err in results:
        assert code == 2, (argv, code, err)
        assert err.startswith("mpdoctor: error: ") and err.endswith("\n"), (argv, err)
        assert err.count("\n") == 1, (argv, err)  # one line: a newline in a name cannot fake a second
        raw = RAW.search(err)
        assert raw is None, (argv, f"raw {raw.group(0)!r} on stderr", err)
    # each escape was quoted back, made visible: the user sees what the name held
    shown = "".join(err for _, _, err in results)
    for visible in ("\\x1b]52;c;", "\\x1b]0;", "\\x9b2J", "\\u202e", "\\n", "\\r", "\\x08"):
        assert visible in shown, visible


def test_fleet_compare_end_to_end_writes_no_escape(tmp_path):
    # the issue's own command, through `python -m mpdoctor` (main(), its prescan and error handling)
    name = "n\x1b]52;c;aGVsbG8=\x07\x1b]0;pwned\x07.json"
    result = run_cli("fleet", "compare", str(fixture_path("cpu-kernels")), name)
    assert result.returncode == 2, result.stderr
    assert RAW.search(result.stderr) is None, repr(result.stderr)
    assert "n\\x1b]52;c;aGVsbG8=\\x07\\x1b]0;pwned\\x07.json" in result.stderr


@pytest.mark.parametrize("name", hostile_names(seed=41, count=2))
def test_check_snapshot_end_to_end_writes_no_escape(name):
    result = run_cli("check", "--snapshot", name)
    assert result.returncode == 2 and RAW.search(result.stderr) is None, repr(result.stderr)
