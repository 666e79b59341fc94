"""No file of the repository names a path of the machine that wrote it.

A fixture recorded here, a README output pasted from a terminal, a test that runs "/home/me/.pyenv/..." each
leak the author's machine, and the last one fails everywhere else. Fixtures and docs use neutral paths
(``/home/user/venv``, ``/home/user/src/mpdoctor``); tests find other interpreters through PATH or pyenv
(``tests/interpreters.py``). This scans every tracked file, in whatever checkout it runs (CI clones into
another folder), for that checkout's own absolute path, the interpreter manager's root and the home directory.

Home is special: a traceback quoted from a public report may well say ``/root/miniconda3/...``. A path under
``$HOME`` counts as this machine's only when what it names below home exists here (``~/.pyenv`` on a
machine that has one), so a reporter's ``/root/anaconda3`` in a signature is not flagged, the author's own
``~/.pyenv`` or ``~/.cargo`` is (the XDG directories every home has, ``.cache``, ``.config``, ``.local``,
are not this machine's either).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tracked() -> List[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode("utf-8", "surrogateescape")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: nothing to scan by `git ls-files`")
    return [ROOT / name for name in out.split("\0") if name]


def _nontrivial(path: str) -> bool:
    path = path.rstrip("/")
    return bool(path) and path.count("/") >= 1 and path not in ("/tmp", "/usr", "/opt", "/home")


def _pyenv_roots() -> List[str]:
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        try:
            roots.append(subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=10).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    return sorted({root.rstrip("/") for root in roots if root and os.path.isdir(root)})


# What every home has (the XDG directories): a quoted `/root/.cache/huggingface/...` is any machine's.
EVERY_HOME = frozenset({".cache", ".config", ".local"})


def needles() -> List[Tuple[str, "re.Pattern[str]"]]:
    """(what it is, a pattern for it) for each path of this machine a file must not hold."""
    found = []
    for what, path in [("the checkout", str(ROOT))] + [("pyenv's root", root) for root in _pyenv_roots()]:
        if _nontrivial(path):
            found.append((f"{what} {path}", re.compile(re.escape(path.rstrip("/")) + r"(?![\w.-])")))
    home = os.path.expanduser("~").rstrip("/")
    if _nontrivial(home) and os.path.isdir(home):
        below = sorted((n for n in os.listdir(home) if len(n) > 1 and n not in EVERY_HOME), key=len, reverse=True)
        if below:
            alternatives = "|".join(re.escape(name) for name in below)
            found.append((f"the home directory {home}", re.compile(rf"{re.escape(home)}/(?:{alternatives})(?![\w.-])")))
    return found


def _text(path: Path):
    try:
        data = path.read_bytes()
    except OSError:
        return None  # a tracked file deleted in the working tree, a dangling link
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", "replace")


def scan(paths, patterns, base: Path = ROOT) -> List[str]:
    """``file:line: the path (what it is)`` for each of ``patterns`` in ``paths``."""
    hits = []
    for path in paths:
        text = _text(path)
        if text is None:
            continue
        seen = set()  # one report per place, though pyenv's root lies in home too
        for what, pattern in patterns:
            for match in pattern.finditer(text):
                if match.start() in seen:
                    continue
                seen.add(match.start())
                line = text.count("\n", 0, match.start()) + 1
                hits.append(f"{path.relative_to(base)}:{line}: {match.group(0)!r} ({what})")
    return hits


def test_no_tracked_file_names_this_machines_paths():
    hits = scan(_tracked(), needles())
    assert not hits, "paths of this machine in the repository (use /home/user/... instead):\n" + "\n".join(hits[:50])


def test_the_scan_finds_a_planted_path(tmp_path, monkeypatch):
    """Not vacuous: the checkout and what lies in home are found, with their line; a reporter's path is not."""
    home = tmp_path / "home" / "someone"
    (home / ".pyenv").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PYENV_ROOT", raising=False)
    planted = tmp_path / "planted.py"
    planted.write_text(
        "\n".join(
            [
                'NEUTRAL = "/home/user/venv/bin/python"',
                f'CHECKOUT = "{ROOT}/.venv/bin/python3"',
                f'PYENV = "{home}/.pyenv/versions/3.8.18/bin/python"',
                f'REPORTER = "{home}/miniconda3/envs/x/lib/python3.10/site-packages/apex/__init__.py"',
            ]
        ),
        encoding="utf-8",
    )
    hits = scan([planted], needles(), base=tmp_path)
    assert [hit.split(":")[1] for hit in hits if "the checkout" in hit] == ["2"]
    assert any(hit.startswith("planted.py:3:") for hit in hits)  # as pyenv's root and as a home path
    assert not any(":1:" in hit or ":4:" in hit for hit in hits)
