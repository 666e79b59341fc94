"""No raw terminal escape, C1 control or bidi override reaches a human format (issue 33, item 7).

Each input source of the report gets the same planted text (an erase-screen and a retitle escape, the C1 CSI and
OSC, a right-to-left override and an isolate, and Markdown that would link and load). Text output is read from a
real pty with styling off, so any ESC in it came from the input; Markdown and GitHub output from a pipe. None may
hold a raw control or bidi character, each must show the visible escape (``\\x1b``, ``\\x9b``, ``\\u202e``), and
the Markdown must hold no link or HTML outside code.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from fixtures.base import with_env
from fixtures.catalogue import snapshot_text
from helpers import load_fixture
from mpdoctor.render import sanitise
from test_plain_output import run_on_pty

# Erase the screen, retitle the window, C1 CSI and OSC (what the C0 forms do, on many terminals), a bidi
# override and an isolate, a NUL and a DEL.
PLANT = "\x1b[2J\x1b]0;pwned\x07\x9b31m\x9d8;;x\x9c\u202eevil\u2066\x00\x7f"
BARE = PLANT.replace("\x00", "")  # for an env value or a file name, which cannot hold a NUL
LINK = "[the fix](https://evil/x)<img src=x onerror=alert(1)>"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
VISIBLE = ("\\x1b", "\\x9b", "\\u202e")
PLAIN = {"NO_COLOR": "1", "COLUMNS": "200"}


def clean(text: str, where: str) -> None:
    """No raw control or bidi character in ``text``; the planted ones shown as escapes."""
    raw = sorted({repr(c) for c in RAW.findall(text)})
    assert not raw, f"{where}: raw {raw} in output"
    for shown in VISIBLE:
        assert shown in text, f"{where}: {shown!r} not shown"


def outside_code(markdown: str) -> str:
    """The Markdown with its fenced blocks and inline code removed: what GitHub would render as markup."""
    out, fence = [], ""
    for line in markdown.split("\n"):
        opened = re.match(r"\s*(`{3,})", line)
        if fence:
            if opened and opened.group(1) == fence and line.strip() == fence:
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        out.append(re.sub(r"(`+)(.+?)\1", "", line))
    return "\n".join(out)


def inert(markdown: str, where: str, linked: bool = True) -> None:
    clean(markdown, where)
    prose = outside_code(markdown)
    # Live: after no backslash or an even run of them (an escaped backslash, then the character itself).
    for mark in (r"<img", r"\[the fix", r"\]\(https"):
        live = re.search(r"(?<!\\)(?:\\\\)*" + mark, prose)
        assert not live, f"{where}: {live.group(0)!r} is live Markdown"
    if linked:  # the planted link and HTML were there to be made inert
        assert "<img" in markdown.replace("\\<", "<")


def text_on_pty(args: list[str], env: dict[str, str], cwd: Path) -> str:
    here = os.getcwd()
    os.chdir(cwd)  # run_on_pty runs in the current directory
    try:
        _, out = run_on_pty(args, env)
    finally:
        os.chdir(here)
    return out.decode("utf-8", errors="replace").replace("\r\n", "\n")


def piped(args: list[str], env: dict[str, str], cwd: Path) -> str:
    full = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args], capture_output=True, text=True, timeout=120, env=full, cwd=cwd
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def all_formats(args: list[str], tmp_path: Path, env: Optional[dict] = None, github: bool = True) -> dict[str, str]:
    env = {**PLAIN, **(env or {})}
    out = {"text": text_on_pty(args, env, tmp_path), "markdown": piped([*args, "-f", "markdown"], env, tmp_path)}
    if github:
        out["github"] = piped([*args, "-f", "github"], env, tmp_path)
    return out


def check_all(outputs: dict[str, str], source: str, linked: bool = True) -> None:
    for fmt, text in outputs.items():
        if fmt == "markdown":
            inert(text, f"{source}, {fmt}", linked)
        else:
            clean(text, f"{source}, {fmt}")


# ---------------------------------------------------------------- the sanitiser itself


def test_every_control_and_bidi_character_becomes_its_escape():
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        shown = sanitise.line(chr(code))
        assert not RAW.search(shown) and shown.startswith("\\"), (hex(code), shown)
    assert sanitise.line("a\nb\tc") == "a\\nb\\tc"
    assert sanitise.lines("a\nb\rc\x0bd") == ["a", "b\\rc\\x0bd"]  # split at \n only: \r and \x0b shown
    assert sanitise.line("caf\u00e9 \u4e2d \U0001f600") == "caf\u00e9 \u4e2d \U0001f600"  # printable text as it is


def test_markdown_keeps_its_own_code_and_makes_the_input_inert():
    assert sanitise.markdown("run `nvidia-smi -L` now") == "run `nvidia-smi -L` now"
    assert sanitise.markdown(LINK) == "\\[the fix\\](https://evil/x)\\<img src=x onerror=alert(1)\\>"
    assert sanitise.markdown("a ` b [x](y)") == "a \\` b \\[x\\](y)"  # a lone backtick cannot open code
    assert sanitise.markdown("&#x202e; # **") == "\\&\\#x202e; \\# \\*\\*"
    assert sanitise.markdown("`a|b` c|d", cell=True) == "`a\\|b` c\\|d"


# ---------------------------------------------------------------- every input source, every human format


def _snapshot(tmp_path: Path, snap) -> str:
    path = tmp_path / "s.json"
    path.write_text(snapshot_text(snap))
    return str(path)


def test_snapshot_fields_interpreter_env_and_traceback(tmp_path):
    # GPU008's machine (two MIG entries, no NVML list): the entry is quoted in its title and its fix command.
    snap = load_fixture("h100-mig-two-selected")
    snap.machine.nvml.gpus = []
    snap = with_env(snap, CUDA_VISIBLE_DEVICES=f"MIG-a{PLANT}{LINK},MIG-b")
    snap.environment.python.executable = f"/venv{PLANT}{LINK}/bin/python"
    outputs = all_formats(["check", "--snapshot", _snapshot(tmp_path, snap)], tmp_path)
    assert "GPU008" in outputs["text"]
    check_all(outputs, "snapshot env and interpreter")

    crashed = load_fixture("torch-import-error")
    crashed.torch.error_traceback = f'Traceback (most recent call last):\n  File "x{PLANT}.py"\nOSError: {PLANT}{LINK}'
    crashed.torch.error_message = f"OSError: {PLANT}"
    outputs = all_formats(["check", "--snapshot", _snapshot(tmp_path, crashed)], tmp_path)
    check_all(outputs, "snapshot traceback")


def test_a_live_cuda_visible_devices(tmp_path):
    outputs = all_formats(
        ["check", "--no-kernels", "--select", "GPU"], tmp_path, {"CUDA_VISIBLE_DEVICES": f"MIG-a{BARE}{LINK},MIG-b"}
    )
    assert "GPU008" in outputs["text"]
    check_all(outputs, "live CUDA_VISIBLE_DEVICES")


def test_a_project_file_name_env003(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    # A file the scan leaves unread (a line too long to parse safely): ENV003 names it.
    (project / f"train{BARE}.py").write_text("import apex\nx = 1  # " + "a" * 25_000 + "\n")
    outputs = all_formats(["check", "--no-kernels", "--select", "ENV003"], project)
    assert "ENV003" in outputs["text"]
    check_all(outputs, "project file name", linked=False)  # a file name holds no "/"


def _safetensors(path: Path) -> str:
    """A real .safetensors file whose tensor names carry the plant: an fp16 module among fp32 ones."""
    odd = f"block{BARE}{LINK}"
    header = {
        f"{odd}.weight": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
        "head.weight": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]},
        "head.bias": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]},
        "tail.weight": {"dtype": "F32", "shape": [4], "data_offsets": [40, 56]},
    }
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(56))
    return str(path)


def test_audit_tensor_names(tmp_path):
    model = _safetensors(tmp_path / "model.safetensors")
    outputs = all_formats(["audit", model, "--all"], tmp_path, github=False)
    check_all(outputs, "audit tensor names")


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory) -> Path:
    """A real torch traceback from a script whose file name carries the plant (C1 and bidi: explain's own reader
    already strips ESC), with a line of the plant printed before it."""
    root = tmp_path_factory.mktemp("explain")
    script = root / f"train{BARE}.py"
    script.write_text(
        "import sys, torch\n"
        f"print({PLANT!r}, file=sys.stderr)\n"
        "def step():\n    return torch.ones(2, 2, dtype=torch.half) @ torch.ones(2, 2)\nstep()\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "expected m1 and m2" in done.stderr or "same dtype" in done.stderr, done.stderr
    log = root / "log.txt"
    log.write_text(done.stderr)
    return log


def test_explain_a_log(hostile_log):
    text = text_on_pty(["explain", "--file", str(hostile_log)], PLAIN, hostile_log.parent)
    assert "recognised" in text and "dtype" in text
    raw = sorted({repr(c) for c in RAW.findall(text)})
    assert not raw, f"explain: raw {raw}"
    for shown in ("\\x9b", "\\u202e"):  # ESC itself explain's reader drops
        assert shown in text, shown


# ---------------------------------------------------------------- issue 40: JUnit, @mentions, invisible characters

# A generator of planted text: each piece is one thing a reader's screen or a ticket must not get raw.
C1_AND_BIDI = ["\x9b31m", "\x9d0;title\x9c", "\x85", "\u202e", "\u2067", "\u200f"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000e0041\U000e0042\U000e007f"]
MENTIONS = ["@alice", "@acme/ml-team", "@torch.compile", "(@bob)"]
RAW_ALL = re.compile(RAW.pattern[:-1] + "\u200b-\u200d\u2060-\u2064\ufeff\u00ad\U000e0000-\U000e007f]")


def planted(seed: int, count: int = 6) -> list[str]:
    import random

    rng = random.Random(seed)
    pieces = C1_AND_BIDI + INVISIBLE
    out = []
    for _ in range(count - 1):
        chosen = rng.sample(pieces, 3) + [rng.choice(MENTIONS)]
        rng.shuffle(chosen)
        out.append("x".join(chosen))
    return out + ["".join(pieces) + " " + " ".join(MENTIONS)]  # last (a report shows a traceback's end): all


def _planted_crash(tmp_path: Path, texts: list[str]) -> str:
    crashed = load_fixture("torch-import-error")
    crashed.torch.error_traceback = "Traceback (most recent call last):\n" + "\n".join(
        f'  File "/srv/{t}.py", line 1\n    import torch  # {t}' for t in texts
    )
    crashed.torch.error_message = "OSError: " + " | ".join(texts)
    return _snapshot(tmp_path, crashed)


def test_junit_shows_c1_controls_bidi_and_invisible_characters(tmp_path):
    import xml.etree.ElementTree as ET

    xml = piped(["check", "--snapshot", _planted_crash(tmp_path, planted(40)), "-f", "junit"], PLAIN, tmp_path)
    ET.fromstring(xml)  # still parses
    raw = sorted({repr(c) for c in RAW_ALL.findall(xml)})
    assert not raw, f"junit: raw {raw}"
    for shown in ("\\x9b", "\\u202e", "\\u200b", "\\ufeff", "\\U000e0041"):  # (NEL ends a line upstream)
        assert shown in xml, shown


def test_a_markdown_ticket_mentions_nobody_and_hides_nothing(tmp_path):
    ticket = piped(["check", "--snapshot", _planted_crash(tmp_path, planted(41)), "-f", "markdown"], PLAIN, tmp_path)
    raw = sorted({repr(c) for c in RAW_ALL.findall(ticket)})
    assert not raw, f"markdown: raw {raw}"
    for shown in ("\\u200b", "\\u200d", "\\U000e0041"):
        assert shown in ticket, shown
    prose = outside_code(ticket).replace(sanitise.NO_MENTION, "")
    live = re.findall(r"(?<![A-Za-z0-9_.+\-`@])@[A-Za-z0-9][\w./-]*", prose)
    assert live == [], f"live mentions: {live}"
    assert ticket.count(sanitise.NO_MENTION) >= len(MENTIONS)  # they were there, in prose, made inert
    # what reads as an address or a pinned version is no mention, and is left as it is
    assert sanitise.markdown("alice@example.com pkg.git@v1") == "alice@example.com pkg.git@v1"


def test_the_sanitiser_shows_every_invisible_character():
    for ch in "".join(INVISIBLE) + "\u2061\u2062\u2063\u2064\u180e\u115f\u1160\u3164\uffa0":
        shown = sanitise.line(f"a{ch}b")
        assert shown != f"a{ch}b" and shown.startswith("a\\") and shown.isascii(), (hex(ord(ch)), shown)


def test_a_dtype_trace_note_shows_a_hostile_module_name_escaped():
    # the note goes into the user's exception and is printed raw with its traceback: module names (a ModuleDict
    # key may be any string) are shown as escapes, and the note keeps its lines
    torch = pytest.importorskip("torch")
    from mpdoctor.trace import dtype_trace

    def note_for(key: str) -> str:
        model = torch.nn.Module()
        model.blocks = torch.nn.ModuleDict({key: torch.nn.Linear(4, 4)})
        model.blocks[key].half()
        with pytest.raises(RuntimeError) as raised:
            with dtype_trace(model):
                model.blocks[key](torch.ones(2, 4))
        return "\n".join(getattr(raised.value, "__notes__", [str(raised.value)]))

    plain = note_for("attn")
    for key in ["attn" + text.replace(".", "") for text in planted(42, 3)] + ["a\x1b]52;c;aGk=\x07\n  fake line"]:
        note = note_for(key)
        raw = sorted({repr(c) for c in RAW_ALL.findall(note.replace("\n", ""))})
        assert not raw, f"dtype_trace note: raw {raw}: {note!r}"
        assert note.count("\n") == plain.count("\n"), note  # a newline in a name adds no line
        assert "mpdoctor dtype_trace: raised inside blocks." in note
