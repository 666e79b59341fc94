"""Plain means plain: with NO_COLOR or TERM=dumb no command writes an escape code, even on a terminal.

Every command runs as a real process whose stdout and stderr are a real pseudo-terminal
(os.openpty), so rich sees a terminal and would style; the same commands without
NO_COLOR and TERM=dumb must show styling, or the test could not fail. Also: paths
given to --python are shown normalised, a venv's symlinked interpreter kept as such.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
import time

import pytest

from helpers import fixture_path, run_cli
from interpreters import find_python

ESC = b"\x1b"
STYLED_ENV = {"TERM": "xterm-256color"}


def run_on_pty(
    args: list[str], env_extra: dict[str, str], columns: int = 100, timeout: float = 120
) -> tuple[int, bytes]:
    """``python -m mpdoctor ARGS`` with stdout and stderr on one pty of ``columns`` columns: (exit status, bytes)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "TERM", "FORCE_COLOR", "PY_COLORS", "COLUMNS", "LINES", "GITHUB_ACTIONS", "CI")
    }
    env.update(env_extra)
    process = subprocess.Popen(
        [sys.executable, "-m", "mpdoctor", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the pty
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return code, b"".join(chunks)


def _safetensors(path) -> str:
    """A real .safetensors file (header and zero bytes) with an fp16 module beside fp32 weights: audit finds things."""
    header = {
        "block.weight": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
        "block.bias": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]},
        "head.weight": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(40))
    return str(path)


@pytest.fixture(scope="module")
def invocations(tmp_path_factory):
    """Every command that prints something, with real input: (name, argv, whether it styles on a terminal)."""
    tmp = tmp_path_factory.mktemp("plain")
    log = tmp / "train.log"
    log.write_text("Traceback (most recent call last):\nRuntimeError: expected scalar type Float but found Half\n")
    snapshot = str(fixture_path("titan-rtx-1080ti-cpu-torch"))
    return {
        "check": (["check", "--snapshot", snapshot, "--fail-on", "never"], True),
        "checks": (["checks"], False),  # plain columns by design: nothing to strip
        "rule": (["rule", "TORCH005"], False),
        "explain": (["explain", "--file", str(log)], True),
        "audit": (["audit", _safetensors(tmp / "m.safetensors"), "--fail-on", "never"], True),
        "fleet compare": (["fleet", "compare", snapshot, str(fixture_path("cpu-laptop")), "--fail-on", "never"], True),
        "help": (["--help"], False),  # plain click help: nothing to strip
        "check help": (["check", "--help"], False),
    }


NAMES = ["check", "checks", "rule", "explain", "audit", "fleet compare", "help", "check help"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "plain", [{"NO_COLOR": "1", "TERM": "xterm-256color"}, {"TERM": "dumb"}], ids=["NO_COLOR", "TERM=dumb"]
)
def test_no_escape_code_when_plain_is_asked_for(invocations, name, plain):
    argv, _ = invocations[name]
    code, out = run_on_pty(argv, plain)
    assert code in (0, 1), out.decode(errors="replace")
    assert out.strip(), "the command printed nothing"
    assert ESC not in out, out[max(0, out.find(ESC) - 60) : out.find(ESC) + 20]


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("checks", "rule", "help", "check help")])
def test_the_same_commands_style_on_a_terminal(invocations, name):
    """The control: without NO_COLOR/TERM=dumb these commands do write escape codes on a pty."""
    argv, styles = invocations[name]
    assert styles
    code, out = run_on_pty(argv, STYLED_ENV)
    assert code in (0, 1), out.decode(errors="replace")
    assert ESC in out


def test_an_empty_no_color_is_not_a_request():
    """no-color.org: NO_COLOR counts only when it is non-empty."""
    from mpdoctor.render.console import make_console, styling_off

    assert not styling_off({"NO_COLOR": "", "TERM": "xterm"})
    assert styling_off({"NO_COLOR": "0", "TERM": "xterm"}) and styling_off({"TERM": "dumb"})
    import io

    buffer = io.StringIO()
    console = make_console(buffer, plain=True)
    console.print("[bold]x[/bold] [link=https://example.org]y[/link]")
    assert buffer.getvalue() == "x y\n"


# ---------------------------------------------------------------- paths


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A real venv without torch, made by Python 3.8, which keeps `..` in sys.executable as it was run."""
    base = find_python("3.8") or sys.executable
    root = tmp_path_factory.mktemp("paths")
    subprocess.run([base, "-m", "venv", "--without-pip", str(root / "bare")], check=True, timeout=120)
    (root / "project").mkdir()
    return root


def test_python_paths_are_normalised_but_a_venv_link_is_kept(bare_venv):
    given = str(bare_venv / "project" / ".." / "bare" / "bin" / "python")
    result = run_cli("check", "--python", given, "--no-kernels", "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    python = json.loads(result.stdout)["snapshot"]["environment"]["python"]
    venv_python = str(bare_venv / "bare" / "bin" / "python")
    assert os.path.islink(venv_python)
    # Normalised, but the venv's own link, not its target (the base interpreter would lose the venv).
    assert python["executable"] == venv_python
    assert python["prefix"] == str(bare_venv / "bare")
    text = run_cli("check", "--python", given, "--no-kernels", "--fail-on", "never")
    assert f"({venv_python})" in text.stdout and ".." not in text.stdout.splitlines()[0]


def test_resolve_python_keeps_a_path_whose_dotdot_crosses_a_symlink(tmp_path, bare_venv):
    """`link/..` is the link target's parent, not link's: normalising that string would name another file."""
    from mpdoctor.probes.target_python import normalised

    (tmp_path / "deep" / "er").mkdir(parents=True)
    os.symlink(bare_venv / "bare" / "bin", tmp_path / "deep" / "er" / "link")
    given = str(tmp_path / "deep" / "er" / "link" / ".." / "bin" / "python")
    assert os.path.exists(given)
    assert normalised(given) == given  # string normalisation would give deep/er/bin/python, which does not exist
    assert normalised(str(bare_venv / "project" / ".." / "bare" / "bin" / "python")) == str(
        bare_venv / "bare" / "bin" / "python"
    )
