"""The wheel: checks/ installs as mpdoctor.checks, the schema ships, torch is never a dependency, no test support.

The wheel is built for real (``pip wheel --no-build-isolation``, about a second, offline:
setuptools is in the test extra) from a clean copy of the source tree (``source_tree``: the
files git would ship), so that a stale ``build/`` of an earlier build cannot put files in it
that the tree no longer has. tests/test_declared_floor.py installs and runs it on the oldest and
newest declared Pythons.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tarfile
import zipfile
import pytest

from source_tree import ROOT, source_copy

# A module is test support when its path or its code says so: the tests' fix simulator and its models, a hook
# that makes the product misbehave on purpose, a tests package, pytest's own files.
TEST_SUPPORT_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$"
    r"|fix_simulator|(^|/)_?simulated_"
)
TEST_SUPPORT_CODE = re.compile(
    r"\bTEST_HOOK\b|MPDOCTOR_\w*TEST\w*|fix_simulator|\b_?simulated_\w+"
    r"|\bfor tests\b|\btest[- ]only\b|\btest hook\b",
    re.I,
)
# Imported only by the tests (the test extra): a shipped module that imports one is test support.
TEST_PACKAGES = ("pytest", "_pytest", "hypothesis", "jsonschema", "xmlschema", "yaml", "setuptools")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    source = source_copy(tmp_path_factory.mktemp("source") / "mpdoctor")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (path,) = out.glob("mpdoctor-*.whl")
    return zipfile.ZipFile(path)


def modules(wheel: zipfile.ZipFile) -> list[str]:
    return sorted(n for n in wheel.namelist() if n.endswith(".py"))


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
    assert "mpdoctor/probes/remote/target.py" in names and "mpdoctor/portable/redact.py" in names
    # the planned modules of every package, so a new package cannot be left out of pyproject.toml
    assert "mpdoctor/explain/matcher.py" in names and "mpdoctor/explain/known/dtype.py" in names
    assert "mpdoctor/checkpoint_audit/safetensors.py" in names and "mpdoctor/schema/audit-v1.schema.json" in names
    assert "mpdoctor/checkpoint_audit/kept_fp32.json" in names  # audit judges intended fp32 with it


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


def test_no_test_support_ships(wheel):
    names = wheel.namelist()
    assert not [n for n in names if TEST_SUPPORT_PATH.search(n)]
    marked = {
        n: sorted({m.group(0) for m in TEST_SUPPORT_CODE.finditer(wheel.read(n).decode())}) for n in modules(wheel)
    }
    assert {n: found for n, found in marked.items() if found} == {}
    assert not [n for n in names if not n.startswith(("mpdoctor/", "mpdoctor-"))], "only the mpdoctor package ships"


def test_no_shipped_module_imports_test_packages(wheel):
    imported = {}
    for name in modules(wheel):
        for node in ast.walk(ast.parse(wheel.read(name), name)):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            imported.setdefault(name, set()).update(t for t in tops if t in TEST_PACKAGES)
    assert {n: found for n, found in imported.items() if found} == {}


def test_every_shipped_module_imports_from_the_wheel_alone(wheel, tmp_path):
    """Each module of the wheel, unpacked, imports in a fresh interpreter that sees no checkout and no tests."""
    wheel.extractall(tmp_path / "site")
    names = [
        n[:-3].replace("/", ".").removesuffix(".__init__") for n in modules(wheel) if not n.endswith("__main__.py")
    ]  # __main__ runs the CLI: the entry point test covers it
    # probes/remote and portable run in the interpreter under diagnosis, loaded by path as _mpdoctor_remote and
    # _mpdoctor_portable (probes.child's BOOTSTRAP): imported here as part of mpdoctor they must load too, without
    # touching torch.
    code = (
        "import importlib, json, sys\n"
        "loaded = {n: importlib.import_module(n).__file__ for n in json.loads(sys.argv[1])}\n"
        "print(json.dumps({'files': loaded, 'modules': sorted(sys.modules)}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(names)],
        cwd=tmp_path / "site",
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    site = str(tmp_path / "site")
    assert not [n for n, f in found["files"].items() if not f.startswith(site)], "imported from outside the wheel"
    assert not [m for m in found["modules"] if m.split(".")[0] in TEST_PACKAGES + ("torch",)]


def test_the_licence_ships_in_the_wheel_and_the_sdist(wheel, tmp_path):
    """The MIT licence pyproject.toml declares: its text in the wheel and the sdist, its name in the metadata."""
    licence = (ROOT / "LICENSE").read_bytes()
    assert b"MIT License" in licence
    (meta,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    assert "License-Expression: MIT" in wheel.read(meta).decode().splitlines()
    (shipped,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(shipped) == licence
    source = source_copy(tmp_path / "source")
    build = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    result = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path / "dist")], cwd=source, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    name = result.stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / "dist" / name) as sdist:
        (member,) = [m for m in sdist.getnames() if m.count("/") == 1 and m.endswith("/LICENSE")]
        assert sdist.extractfile(member).read() == licence
