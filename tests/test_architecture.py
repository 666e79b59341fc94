"""The layout keeps its promises: the flow has no import circles, and code that runs in the target stays portable.

docs/architecture.md states the rules these tests hold the tree to:

* no import circles among mpdoctor's modules (``mpdoctor/`` and ``checks/``);
* ``mpdoctor/probes/remote/`` runs inside the interpreter under diagnosis: it imports
  only the standard library and its own siblings (relatively), torch only inside
  functions, and parses and runs on the oldest Python mpdoctor diagnoses (3.8);
* ``mpdoctor/portable/`` runs on both sides (mpdoctor's process and the target's): the
  same rules, stricter (no torch at all, nothing of mpdoctor); the remote modules
  reach it through one bridge, ``probes/remote/_portable.py``, the one remote module
  with absolute imports (``_mpdoctor_portable`` in the target, ``mpdoctor.portable``
  at home); every stage may import it;
* each layer imports only the layers before it (probes -> snapshot -> analysis ->
  checks -> doctor -> render -> cli); nothing a renderer needs imports a renderer;
* ``python -m mpdoctor`` works from a source checkout that was never installed.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REMOTE = ROOT / "mpdoctor" / "probes" / "remote"
PORTABLE = ROOT / "mpdoctor" / "portable"
BRIDGE = REMOTE / "_portable.py"
BRIDGE_IMPORTS = {"_mpdoctor_portable", "mpdoctor.portable"}  # the target's name for portable/, and home's
OLDEST_PYTHON = (3, 8)
SUBJECTS = {"torch"}  # what the remote code diagnoses: imported inside functions, where a failure is a fact


ROOT_PACKAGE = "mpdoctor"


def _modules() -> dict[str, Path]:
    """Every module of the project by its import name (checks/ is installed as mpdoctor.checks)."""
    found = {}
    for base, package in ((ROOT / "mpdoctor", "mpdoctor"), (ROOT / "checks", "mpdoctor.checks")):
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports (anywhere in the file, functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            # A name resolves to its module, else to the package that defines it (``*``: the package).
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    resolved = set()
    for target in targets:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        # A module's own package counts too: its __init__ may import the module back, a circle that Python hides
        # until the import order changes. Except the root package, whose public API (mpdoctor.audit,
        # mpdoctor.dtype_trace) its submodules never import, and which loads them lazily on first use.
        if target and target != name and not (target == ROOT_PACKAGE and name.startswith(ROOT_PACKAGE + ".")):
            resolved.add(target)
    return resolved


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _circles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = counter
                    counter += 1
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(GRAPH[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_the_whole_project():
    assert {"mpdoctor.cli", "mpdoctor.checks.registry", "mpdoctor.probes.remote.target"} <= set(GRAPH)
    assert "mpdoctor.checks.registry" in GRAPH["mpdoctor.checks.torch_build"]


def test_no_import_circles():
    assert _circles() == []


def test_the_circle_finder_finds_a_circle(monkeypatch):
    """The check above can fail: a planted circle is reported."""
    monkeypatch.setitem(GRAPH, "mpdoctor.snapshot", GRAPH["mpdoctor.snapshot"] | {"mpdoctor.doctor.report"})
    assert any("mpdoctor.snapshot" in circle for circle in _circles())


def test_a_module_importing_its_own_package_back_is_a_circle(tmp_path, monkeypatch):
    """The hidden kind: mpdoctor/snapshot/__init__.py imports reading.py, which imported ``mpdoctor.snapshot``."""
    reading = tmp_path / "reading.py"
    reading.write_text("from mpdoctor.snapshot import SCHEMA_VERSION, Snapshot\n")
    assert "mpdoctor.snapshot" in _imports("mpdoctor.snapshot.reading", reading)
    assert "mpdoctor.snapshot.reading" in GRAPH["mpdoctor.snapshot"]  # the package imports it
    monkeypatch.setitem(GRAPH, "mpdoctor.snapshot.reading", _imports("mpdoctor.snapshot.reading", reading))
    assert ["mpdoctor.snapshot", "mpdoctor.snapshot.reading"] in _circles()
    # Relatively, too; and the root package's lazy API is no edge.
    reading.write_text("from . import Snapshot\nimport mpdoctor\n")
    assert _imports("mpdoctor.snapshot.reading", reading) == {"mpdoctor.snapshot"}


# Layers, in the order data flows. A module may import its own layer and the layers before it.
# mpdoctor.portable (stdlib only, imports nothing of mpdoctor: see the rules below) is usable by every stage.
LAYERS = [
    (
        "foundation",
        (
            "mpdoctor.schema.serde",
            "mpdoctor.schema.contract",
            "mpdoctor.findings",
            "mpdoctor.portable",
            "mpdoctor.probes",
        ),
    ),
    ("snapshot", ("mpdoctor.snapshot",)),
    ("probes", ("mpdoctor.probes.",)),
    ("analysis", ("mpdoctor.analysis",)),
    ("checks", ("mpdoctor.checks",)),
    # mpdoctor.fleet judges many ranks' reports (it runs mpdoctor.doctor on each); mpdoctor.render.fleet formats it.
    (
        "reports",
        (
            "mpdoctor.doctor",
            "mpdoctor.explain",
            "mpdoctor.checkpoint_audit",
            "mpdoctor.trace",
            "mpdoctor.fleet",
            "mpdoctor.numerics",
        ),
    ),
    ("render", ("mpdoctor.render", "mpdoctor.schema")),
    # mpdoctor/__init__.py is the Python API's door (mpdoctor.audit, mpdoctor.dtype_trace, loaded on first use);
    # its submodules importing it for __version__ are not edges (a package comes with its modules).
    ("entry points", ("mpdoctor", "mpdoctor.cli", "mpdoctor.__main__")),
]


def _layer(name: str) -> int:
    best = (-1, -1)  # (length of the matching prefix, layer): the most specific prefix wins
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = name == prefix.rstrip(".")
            if exact or name.startswith(prefix if prefix.endswith(".") else prefix + "."):
                best = max(best, (len(prefix) + (1000 if exact else 0), number))
    assert best[1] >= 0, f"{name} is in no layer: add it to LAYERS"
    return best[1]


def test_every_import_goes_with_the_flow():
    backwards = []
    for name, targets in GRAPH.items():
        for target in targets:
            if _layer(target) > _layer(name):
                backwards.append(f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})")
    assert backwards == []


def test_checks_are_pure_functions_of_the_snapshot():
    """No check reaches for a probe, a renderer or the CLI: it reads facts and yields findings."""
    for name, targets in GRAPH.items():
        if name.startswith("mpdoctor.checks"):
            impure = {
                t
                for t in targets
                if t.startswith(("mpdoctor.probes.", "mpdoctor.render", "mpdoctor.cli", "mpdoctor.doctor"))
            }
            assert not impure, name  # mpdoctor.portable (redaction...) is no probe: checks may use it


def test_analysis_reads_the_snapshot_not_the_probes():
    """The verdicts are judged from the snapshot's facts; what they share with the kernel runner (the ops, the
    dtypes, the rounds a ratio needs) is mpdoctor.portable's, which both sides import, never a probe's."""
    reaching = {
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith("mpdoctor.analysis")
        for target in targets
        if target.startswith("mpdoctor.probes")
    }
    assert reaching == set()


def test_top_level_holds_only_entry_points_and_the_shared_finding():
    flat = sorted(p.name for p in (ROOT / "mpdoctor").glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "findings.py"]


# ---------------------------------------------------------------- code that runs in the target


def _target_files() -> list[Path]:
    """Every module that runs in the interpreter under diagnosis: probes/remote's and portable's."""
    return sorted(REMOTE.glob("*.py")) + sorted(PORTABLE.glob("*.py"))


def _where(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _import_problems(path: Path, portable: bool) -> list[str]:
    """Why ``path``'s imports break its package's rules (none: it keeps them).

    Both packages: the stdlib, and siblings of the same directory by a relative import of
    level 1. probes/remote: torch (a subject) too, inside functions; the bridge, its two
    absolute imports of portable. portable: nothing else at all (the host imports it too).
    """
    stdlib = set(sys.stdlib_module_names)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_level = {id(node) for node in tree.body}
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            for name in names:
                sibling = path.parent / name.split(".")[0]
                if node.level != 1 or not (sibling.with_suffix(".py").exists() or sibling.is_dir()):
                    problems.append(f"{_where(path)} imports {'.' * node.level}{name}: not a sibling module")
            continue
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if not portable and path.name == BRIDGE.name and name in BRIDGE_IMPORTS:
                continue
            if top in SUBJECTS and not portable:
                if id(node) in module_level:
                    problems.append(f"{_where(path)}: `import {name}` at module level")
                continue
            if top not in stdlib:
                problems.append(f"{_where(path)} imports {name}: only the stdlib and relative imports are allowed")
    return problems


@pytest.mark.parametrize("path", _target_files(), ids=_where)
def test_target_code_imports_only_the_stdlib_and_its_siblings(path):
    assert _import_problems(path, portable=path.parent == PORTABLE) == []


def test_the_remote_import_rule_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    for text in (
        "import packaging\n",
        "import torch\n",  # a subject, but at module level
        "from .. import portable\n",  # out of the package: only siblings
        "from mpdoctor.portable import redact\n",
    ):  # only the bridge may
        bad.write_text(text)
        assert _import_problems(bad, portable=False), text


def test_the_portable_import_rule_can_fail(tmp_path):
    (tmp_path / "redact.py").write_text("")
    bad = tmp_path / "bad.py"
    for text in (
        "import packaging\n",  # not the stdlib
        "from mpdoctor.probes.remote import steps\n",  # a remote module, absolutely
        "from _mpdoctor_remote import steps\n",  # ... by its name in the target
        "from ..probes.remote import steps\n",  # ... relatively
        "from . import steps\n",  # not a sibling
        "def f():\n    import torch\n",
    ):  # not even a subject: the host imports portable too
        bad.write_text(text)
        assert _import_problems(bad, portable=True), text
    bad.write_text("import json\nfrom . import redact\nfrom .redact import redact_text\n")
    assert _import_problems(bad, portable=True) == []


def test_the_bridge_hands_over_every_portable_module_as_one_object():
    """remote/_portable.py exports each portable module, the very module object mpdoctor.portable has."""
    import importlib

    from mpdoctor.probes.remote import _portable

    names = sorted(p.stem for p in PORTABLE.glob("*.py") if p.stem != "__init__")
    assert sorted(_portable.__all__) == names
    for name in names:
        assert getattr(_portable, name) is importlib.import_module(f"mpdoctor.portable.{name}")


def _oldest_python() -> str | None:
    """An interpreter of the oldest version mpdoctor diagnoses, if this machine has one."""
    version = ".".join(map(str, OLDEST_PYTHON))
    from interpreters import find_python

    return find_python(version)


@pytest.mark.parametrize("path", _target_files(), ids=_where)
def test_target_code_parses_as_the_oldest_python(path):
    """Grammar newer than 3.8 (match, except*, PEP 604 unions in annotations evaluated at import...) is refused."""
    ast.parse(path.read_text(encoding="utf-8"), feature_version=OLDEST_PYTHON)


def test_target_code_runs_under_the_oldest_python(tmp_path):
    python = _oldest_python()
    if python is None:
        pytest.skip(f"no Python {OLDEST_PYTHON} on this machine (the parse test above still ran)")
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.child import LOAD_PACKAGES, package_inits, remote_argv

    compiled = subprocess.run([python, "-m", "py_compile", *map(str, _target_files())], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    out = tmp_path / "env.jsonl"
    result = subprocess.run(
        remote_argv(python, "target", "env", str(out), json.dumps(Budget.from_timeout(20).env_limits())),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    steps = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if "data" in record:
            steps[record["step"]] = record["data"]
    assert steps["python"]["version"].startswith(".".join(map(str, OLDEST_PYTHON)))
    assert steps["done"] is True and "distributions" in steps
    # Every module imports there too, as the private packages the bootstrap makes (a stdlib module newer
    # than 3.8, say tomllib or graphlib, would fail here even though this 3.11 test run knows it), and the
    # bridge hands the remote modules the very modules of _mpdoctor_portable: one object per file, no mpdoctor.
    names = [
        f"_mpdoctor_{'portable' if p.parent == PORTABLE else 'remote'}.{p.stem}"
        for p in _target_files()
        if p.stem != "__init__"
    ]
    load_all = LOAD_PACKAGES + (
        "for name in sys.argv[3:]: importlib.import_module(name)\n"
        "bridge = sys.modules['_mpdoctor_remote._portable']\n"
        "assert all(getattr(bridge, n) is sys.modules['_mpdoctor_portable.' + n] for n in bridge.__all__)\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'mpdoctor'], sorted(sys.modules)\n"
    )
    imported = subprocess.run(
        [python, "-c", load_all, *package_inits(), *names], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert imported.returncode == 0, imported.stderr


# ---------------------------------------------------------------- a source checkout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """mpdoctor/ and checks/ copied as a checkout would have them, never installed."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "mpdoctor", root / "mpdoctor", ignore=ignore)
    shutil.copytree(ROOT / "checks", root / "checks", ignore=ignore)
    return root


def test_python_m_mpdoctor_runs_from_an_uninstalled_checkout(checkout):
    # -S: no site processing, so neither this venv's install of mpdoctor (its .pth finder) nor anything
    # else of the venv is seen; the dependencies come through PYTHONPATH alone.
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    result = subprocess.run(
        [sys.executable, "-S", "-m", "mpdoctor", "checks"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "TORCH001" in result.stdout and "GPU001" in result.stdout
    where = subprocess.run(
        [sys.executable, "-S", "-c", "import mpdoctor.checks as c; print(c.__file__)"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.strip() == str(checkout / "checks" / "__init__.py")


def test_python_m_mpdoctor_without_its_dependencies_says_how_to_install(checkout):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-S", "-m", "mpdoctor", "check"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install" in lines[0] and "Traceback" not in result.stderr
