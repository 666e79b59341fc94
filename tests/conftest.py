"""Shared fixtures for the mpdoctor test suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Union

import pytest

# The interpreter the test venv was made from: throwaway venvs are made from it
# too, so they do not inherit this venv's packages (torch, mpdoctor...).
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable

FileContent = Optional[Union[str, bytes]]  # None: make a directory


def dist_info(name: str, version: str, extra: str = "") -> dict[str, FileContent]:
    """The files of a minimal, real installed distribution ``name`` ``version``."""
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}"
    return {f"{name.replace('-', '_')}-{version}.dist-info/METADATA": metadata}


class FakeVenvFactory:
    """Makes real venvs (``python -m venv --without-pip``) with fake packages in them.

    Each named venv is created once per session; asking again returns the same one.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[str, Path] = {}

    @staticmethod
    def python(venv: Path) -> Path:
        return venv / "bin" / "python"

    def site_packages(self, venv: Path) -> Path:
        out = subprocess.run(
            [str(self.python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        )
        return Path(out.stdout.strip())

    def __call__(self, name: str, files: Optional[Mapping[str, FileContent]] = None) -> Path:
        """The venv ``name`` with ``files`` (paths relative to its site-packages) in it."""
        if name in self._made:
            return self._made[name]
        venv = self.root / name
        subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")})
        site = self.site_packages(venv)
        for rel, content in (files or {}).items():
            path = site / rel
            if content is None:
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        self._made[name] = venv
        return venv


@pytest.fixture(scope="session")
def fake_venv(tmp_path_factory: pytest.TempPathFactory) -> FakeVenvFactory:
    """Factory: ``fake_venv("name", {"pkg/__init__.py": "...", **dist_info("pkg", "1.0")})``."""
    return FakeVenvFactory(tmp_path_factory.mktemp("venvs"))
