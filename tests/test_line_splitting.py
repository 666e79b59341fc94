"""Text from outside is cut into lines where a terminal, a log and the Python parser cut it: ``\\n``, ``\\r\\n``, ``\\r``.

``str.splitlines`` also breaks at ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e``, NEL (U+0085), U+2028 and U+2029. A torch
error holding a NEL lost the text before it from TORCH002's title, and a form feed in a project file made the scan
quote the line above the one the parser named. Real throwaway targets, diagnosed by the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import dist_info
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.probes.child import run_child
from mpdoctor.probes.remote import checkpoint_loader

# Every character str.splitlines breaks at, asked of Python itself (all of them lie in the BMP).
SPLITLINES_BREAKS = [chr(c) for c in range(0x10000) if len(f"a{chr(c)}b".splitlines()) == 2]
NOT_LINE_BREAKS = [c for c in SPLITLINES_BREAKS if c not in "\r\n"]
MESSAGE = "CUDA driver init failed\x85 detail: libcuda.so.1 missing\u2028 see docs"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def test_only_newline_carriage_return_and_both_end_a_line():
    assert set(NOT_LINE_BREAKS) >= {"\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"}
    for char in NOT_LINE_BREAKS:
        assert split_lines(f"one{char}line\nnext") == [f"one{char}line", "next"], repr(char)
    # Where no such character is in the text, the lines are str.splitlines' own.
    for text in ["", "\n", "a", "a\n", "a\n\n", "\na", "a\r\nb\rc\nd\r\n", "a\r", "a\r\r\n", "\r\n\r\n", " x \n\ty "]:
        assert split_lines(text) == text.splitlines(), repr(text)


@pytest.fixture(scope="module")
def diagnosed(fake_venv, tmp_path_factory) -> tuple[dict, str]:
    """A target whose ``import torch`` raises MESSAGE, checked from a project whose train.py has form feeds above
    its apex import: (the JSON report, the text report)."""
    init = f"raise RuntimeError({MESSAGE!r})\n"
    venv = fake_venv("torch-raises-nel", {"torch/__init__.py": init, **dist_info("torch", "2.3.0")})
    python = str(fake_venv.python(venv))
    project = tmp_path_factory.mktemp("form-feed-project")
    (project / ".git").mkdir()
    (project / "train.py").write_bytes(
        b"import torch\n\x0c\n# helpers\x0c\nfrom apex import amp\n"
        b'model, opt = amp.initialize(model, opt, opt_level="O1")\n'
    )
    args = ("check", "--python", python, "--no-kernels", "--fail-on", "never")
    as_json, as_text = cli(*args, "--format", "json", cwd=project), cli(*args, cwd=project)
    assert as_json.returncode == 0 and as_text.returncode == 0, as_json.stderr + as_text.stderr
    return json.loads(as_json.stdout), as_text.stdout


def _one(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, [(f["code"], f["title"]) for f in report["findings"]]
    return found[0]


def test_a_torch_error_holding_nel_and_u2028_keeps_its_whole_message_in_the_title(diagnosed):
    report, text = diagnosed
    assert report["snapshot"]["torch"]["error_message"] == MESSAGE  # the fact, as the target raised it
    finding = _one(report, "TORCH002")
    assert finding["title"] == f"`import torch` fails: RuntimeError: {MESSAGE}"
    assert any(line.endswith(f"RuntimeError: {MESSAGE}") for line in finding["evidence"]), finding["evidence"]
    # The terminal shows the two characters as escapes, inside the one title line.
    shown = "CUDA driver init failed\\x85 detail: libcuda.so.1 missing\\u2028 see docs"
    assert f"TORCH002   `import torch` fails: RuntimeError: {shown}" in text, text


def test_a_form_feed_in_a_source_file_does_not_shift_the_quoted_line(diagnosed):
    report, _ = diagnosed
    finding = _one(report, "APEX006")
    assert "train.py:4 `from apex import amp`" in finding["evidence"], finding["evidence"]


def test_a_child_stderr_last_line_is_the_last_line_a_terminal_shows():
    script = "import sys; sys.stderr.write('warming up\\nfatal: bad\\x85state\\u2028here\\n'); sys.exit(3)"
    result = run_child([sys.executable, "-c", script], 30)
    assert result.exit_code == 3
    assert result.stderr_last_line == "fatal: bad\x85state\u2028here"


def test_a_checkpoint_loader_message_keeps_a_line_with_nel_whole():
    # The line naming the refused global goes first, whole: a NEL inside it must not leave a part behind.
    exc = RuntimeError(
        "Weights only load failed.\nUnsupported\x85 global: GLOBAL posix.system was not an allowed global by default."
    )
    assert checkpoint_loader.message(exc) == (
        "Unsupported global: GLOBAL posix.system was not an allowed global by default. Weights only load failed."
    )


def test_explain_counts_and_quotes_lines_as_the_log_has_them(tmp_path):
    log = tmp_path / "run.log"
    log.write_bytes(
        b"step 1\xc2\x85step 2\xe2\x80\xa8step 3\nTraceback (most recent call last):\n"
        b'  File "train.py", line 3, in <module>\n    y = model(x)\n'
        b"RuntimeError: expected scalar type Float but found Half\xc2\x85 in addmm\xe2\x80\xa8 hint\n"
    )
    done = cli("explain", "--file", str(log), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["input_lines"] == 5
    (recognised,) = report["recognised"]
    assert recognised["lines"] == [
        {"line": 5, "text": "RuntimeError: expected scalar type Float but found Half\x85 in addmm\u2028 hint"}
    ]
    assert recognised["frames"] == ["train.py:3 in <module>"]
