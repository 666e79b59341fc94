"""mpdoctor installs and runs where pyproject.toml says it does, with the dependency versions it says it takes.

pyproject.toml declares the Pythons (``requires-python`` and the ``Programming Language :: Python :: 3.X``
classifiers), a lower bound for every dependency, and the setuptools that builds it. Each is tested here:

- the wheel is built once for the session, on the oldest declared Python, with exactly the lowest setuptools
  ``build-system.requires`` allows and ``--no-build-isolation``, from a copy of the files git would ship from
  this working tree (tracked, and untracked but not ignored), so it is what is on disk, not a stale build;
- the oldest declared Python: a venv, the wheel installed with every dependency pinned to its declared lower
  bound (read from pyproject.toml, never typed here), wheels only; ``mpdoctor --version`` and ``mpdoctor check
  --no-kernels`` must run, no traceback, and say torch is missing (that venv has none);
- the newest declared Python: the same with the newest releases pip finds.

Cost: the installs come from PyPI. With pip's cache warm the module takes about 25 s on a 2-core machine, cold
about 40 s. Without the oldest or newest interpreter the test skips, saying which; under CI (``CI=true``) it
fails instead, since the declared range would then go untested.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from interpreters import find_python
from source_tree import source_copy

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CLASSIFIER = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")
LOWER = (">=", "==", "~=", "===")  # operators whose version is a lower bound
# What a check without torch exits with: 0 or 1 by --fail-on (torch missing is an error, so 1); 2 and 3 are not
# a normal check (usage error, internal error).
CHECK_EXITS = (0, 1)


def declared_pythons() -> list[str]:
    """The "3.X" versions the classifiers name, oldest first."""
    found = [m.group(1) for c in PYPROJECT["project"].get("classifiers", []) if (m := CLASSIFIER.match(c))]
    return sorted(found, key=Version)


def floor(requirement: Requirement) -> str:
    """The lowest version ``requirement`` allows, as its specifiers state it; an error when they state none."""
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in LOWER]
    assert bounds, f"{requirement}: no lower bound declared, so none is tested"
    return str(max(bounds))


def floor_pins(requirements: list[str]) -> list[str]:
    """``name==floor`` for each requirement, its extras and environment marker kept (pip evaluates the marker for
    the interpreter it installs into)."""
    pins = []
    for text in requirements:
        req = Requirement(text)
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        pin = f"{req.name}{extras}=={floor(req)}"
        pins.append(f"{pin}; {req.marker}" if req.marker else pin)
    return pins


def interpreter(version: str) -> str:
    """The ``version`` interpreter, or a skip (a failure under CI) naming what is missing."""
    python = find_python(version)
    if python is None:
        why = f"no Python {version} on this machine (PATH or pyenv): the declared range's end {version} is untested"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)
        pytest.skip(why)
    return python


def venv(python: str, where: Path) -> Path:
    """A fresh venv of ``python`` at ``where``: its interpreter. Without a pip of its own (ensurepip costs
    seconds a venv): :func:`pip` runs this test's pip inside it."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True, timeout=120)
    return where / "bin" / "python"


def pip(python: Path, *args: str) -> None:
    """``pip ARGS`` run by ``python`` on its venv (``pip --python``); a failure shows pip's own words."""
    command = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", "--no-input"]
    result = subprocess.run(command + list(args), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"pip {' '.join(args)}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"


def pip_install(python: Path, *args: str) -> None:
    """``pip install ARGS`` into ``python``'s venv, from wheels only."""
    pip(python, "install", "--only-binary", ":all:", *args)


def installed(python: Path) -> dict[str, str]:
    """Every distribution in ``python``'s venv: normalised name -> version."""
    code = (
        "import importlib.metadata as m, json, re\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return {normalise(name): version for name, version in json.loads(out.stdout).items()}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run_mpdoctor(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The venv's own ``mpdoctor`` console script, as a user there runs it: no PYTHONPATH, not from the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    script = python.parent / "mpdoctor"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """The wheel, built on the oldest declared Python with the lowest setuptools the build requires."""
    oldest = interpreter(declared_pythons()[0])
    (setuptools,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    builder = venv(oldest, tmp_path_factory.mktemp("build-venv") / "venv")
    pip_install(builder, f"setuptools=={floor(setuptools)}")
    source = source_copy(tmp_path_factory.mktemp("source") / "mpdoctor")
    out = tmp_path_factory.mktemp("wheel")
    pip(builder, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), str(source))
    (wheel,) = out.glob("mpdoctor-*.whl")
    return wheel


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def assert_runs(python: Path, wheel: Path, cwd: Path) -> None:
    """``mpdoctor --version`` prints the wheel's version; ``mpdoctor check --no-kernels`` is a normal check that
    finds torch missing, with no traceback."""
    version = run_mpdoctor(python, "--version", cwd=cwd)
    assert (version.returncode, version.stdout.strip(), version.stderr) == (0, f"mpdoctor {wheel_version(wheel)}", "")
    check = run_mpdoctor(python, "check", "--no-kernels", cwd=cwd)
    shown = f"exit {check.returncode}\nstdout:\n{check.stdout[-3000:]}\nstderr:\n{check.stderr[-3000:]}"
    assert check.returncode in CHECK_EXITS, shown
    assert "Traceback" not in check.stdout + check.stderr and "internal error" not in check.stderr, shown
    assert "TORCH001" in check.stdout and "torch is not installed" in check.stdout, shown


def test_the_declared_pythons_are_one_range_from_requires_python():
    """The classifiers start at requires-python's floor and leave no minor version out between their ends."""
    pythons = declared_pythons()
    assert pythons, "no `Programming Language :: Python :: 3.X` classifier: the newest supported Python is unsaid"
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert [str(s) for s in requires] == [f">={pythons[0]}"], "requires-python and the oldest classifier differ"
    minors = [int(v.split(".")[1]) for v in pythons]
    assert minors == list(range(minors[0], minors[-1] + 1)), f"a gap in the classifiers: {pythons}"


def test_the_floor_pins_come_from_pyproject():
    """Every dependency is pinned, at its lower bound; the marker stays for pip to judge."""
    requirements = PYPROJECT["project"]["dependencies"]
    pins = floor_pins(requirements)
    assert [Requirement(p).name for p in pins] == [Requirement(r).name for r in requirements]
    for pin, text in zip(pins, requirements):
        (spec,) = Requirement(pin).specifier
        assert spec.operator == "==" and Requirement(text).specifier.contains(spec.version, prereleases=True)
    with pytest.raises(AssertionError, match="no lower bound"):
        floor_pins(["rich<20"])
    assert floor_pins(["a[x]>=1.2,<2; python_version < '3.10'"]) == ['a[x]==1.2; python_version < "3.10"']


def test_the_wheel_ships_the_licence(built_wheel):
    with zipfile.ZipFile(built_wheel) as wheel:
        names = wheel.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = wheel.read(meta).decode()
        (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert wheel.read(licence) == (ROOT / "LICENSE").read_bytes()
    assert f"License-Expression: {PYPROJECT['project']['license']}" in metadata.splitlines()


def test_oldest_python_with_every_dependency_at_its_floor(built_wheel, tmp_path):
    oldest = declared_pythons()[0]
    python = venv(interpreter(oldest), tmp_path / "venv")
    pins = floor_pins(PYPROJECT["project"]["dependencies"])
    pip_install(python, str(built_wheel), *pins)
    have = installed(python)
    for pin in pins:
        req = Requirement(pin)
        (spec,) = req.specifier
        name = normalise(req.name)
        if name in have:
            assert Version(have[name]) == Version(spec.version), f"{pin}: {have[name]} installed"
        else:  # only a marker that excludes this Python may leave it out
            assert req.marker is not None and not req.marker.evaluate({"python_version": oldest}), f"{pin}: missing"
    assert "torch" not in have
    assert_runs(python, built_wheel, tmp_path)


def test_newest_python_with_the_newest_releases(built_wheel, tmp_path):
    newest = declared_pythons()[-1]
    python = venv(interpreter(newest), tmp_path / "venv")
    pip_install(python, "--upgrade", str(built_wheel))
    assert "torch" not in installed(python)
    assert_runs(python, built_wheel, tmp_path)
