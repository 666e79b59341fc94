"""`python -m mpdoctor.schema`: regenerates the shipped schemas, and never writes on --help or --check."""

from __future__ import annotations

import subprocess
import sys

from mpdoctor.schema.__main__ import schemas


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpdoctor.schema", *args], capture_output=True, text=True, timeout=60)


def stamps() -> dict:
    return {path: path.stat().st_mtime_ns for path in schemas()}


def test_help_and_check_write_nothing():
    before = stamps()
    shown = run("--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m mpdoctor.schema")
    checked = run("--check")
    assert checked.returncode == 0, checked.stdout  # the shipped schemas are what the dataclasses generate
    assert run("--bogus").returncode == 2
    assert stamps() == before
