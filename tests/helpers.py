"""Test helpers: recorded snapshots and running the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpdoctor.snapshot import Snapshot, load_snapshot

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_path(name: str) -> Path:
    return FIXTURES / f"{name}.json"


def load_fixture(name: str) -> Snapshot:
    return load_snapshot(str(fixture_path(name)))


def snapshot_fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def run_cli(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """``python -m mpdoctor ARGS`` as a real subprocess."""
    return subprocess.run([sys.executable, "-m", "mpdoctor", *args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


@pytest.fixture(scope="session")
def live_report_json() -> str:
    """One real `mpdoctor check --format json` of this machine, shared by tests."""
    result = run_cli("check", "--format", "json", "--fail-on", "never", "--timeout", "60")
    assert result.returncode == 0, result.stderr
    return result.stdout
