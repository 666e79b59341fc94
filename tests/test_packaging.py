"""The wheel: checks/ installs as mpdoctor.checks, the schema ships, torch is never a dependency."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (path,) = out.glob("mpdoctor-*.whl")
    return zipfile.ZipFile(path)


def test_checks_install_as_mpdoctor_checks(wheel):
    names = wheel.namelist()
    assert "mpdoctor/checks/__init__.py" in names
    assert "mpdoctor/checks/torch_build.py" in names
    assert not [n for n in names if n.startswith("checks/")], "a top-level checks package would shadow others"
    assert not [n for n in names if n.startswith("tests/")]


def test_schema_and_probe_ship(wheel):
    names = wheel.namelist()
    assert "mpdoctor/schema/report-v1.schema.json" in names
    assert "mpdoctor/schema/explain-v1.schema.json" in names
    assert "mpdoctor/probes/remote/target.py" in names and "mpdoctor/probes/remote/redact.py" in names
    # the planned modules of every package, so a new package cannot be left out of pyproject.toml
    assert "mpdoctor/explain/matcher.py" in names and "mpdoctor/explain/known/dtype.py" in names
    assert "mpdoctor/checkpoint_audit/safetensors.py" in names and "mpdoctor/schema/audit-v1.schema.json" in names


def test_torch_is_only_an_optional_extra(wheel):
    (meta,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [line for line in wheel.read(meta).decode().splitlines() if line.startswith("Requires-Dist:")]
    torch = [line for line in requires if line.split()[1].startswith("torch")]
    assert torch and all("extra ==" in line for line in torch)
    names = {re.split(r"[<>=!~;\[( ]", line.split(": ", 1)[1])[0] for line in requires}
    assert {"typer", "rich", "packaging", "nvidia-ml-py"} <= names


def test_entry_point(wheel):
    (entry,) = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
    assert "mpdoctor = mpdoctor.__main__:run" in wheel.read(entry).decode()
