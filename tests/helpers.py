"""Test helpers: the snapshot fixtures and running the real CLI."""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


from fixtures import catalogue
from mpdoctor.snapshot import Snapshot

FIXTURES = Path(__file__).parent / "fixtures"


@functools.lru_cache(maxsize=None)
def _built(name: str) -> Snapshot:
    return catalogue.build(name)


def load_fixture(name: str) -> Snapshot:
    """The snapshot fixture ``name`` (recorded or constructed: see tests/fixtures/catalogue.py), a fresh copy."""
    return copy.deepcopy(_built(name))


def snapshot_fixture_names() -> list[str]:
    return catalogue.names()


@functools.lru_cache(maxsize=None)
def _session_dir() -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="mpdoctor-fixtures-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


@functools.lru_cache(maxsize=None)
def _written(name: str) -> Path:
    path = _session_dir() / f"{name}.json"
    path.write_text(catalogue.snapshot_text(_built(name)), encoding="utf-8")
    return path


def fixture_path(name: str) -> Path:
    """The fixture ``name`` as a snapshot file (for ``--snapshot FILE``): a recorded capture's own JSON, or a
    constructed fixture written once per session to a temporary directory."""
    return catalogue.recorded_path(name) if catalogue.is_recorded(name) else _written(name)


def run_cli(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """``python -m mpdoctor ARGS`` as a real subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args], capture_output=True, text=True, timeout=timeout, **kwargs
    )
