"""Every bound on how much of an outside text mpdoctor keeps is declared once, in mpdoctor/portable/limits.py.

What mpdoctor keeps of a text it did not write (an exception's message, a warning, a line of code, a log line) is
redacted and cut by the redact-clip helpers: ``redact_clip`` (portable/redact.py) and the helpers that wrap it (a
function named ``*clip*`` that calls one). This walks ``mpdoctor/`` and ``checks/`` with ``ast`` and fails on

* a literal length given to a redact-clip helper (``redact_clip(exc, 300)``);
* a length given to one that is a module-level constant not drawn from limits.py (``TEXT_LIMIT = 300`` and then
  ``redact_clip(line, TEXT_LIMIT)``), followed through imports and aliases (``ERROR_TEXT = supervise.DETAIL``);
* a module-level ``MAX_*`` / ``*_LIMIT`` / ``*_TEXT`` constant whose name says text (text, message, detail,
  error, warning, traceback, line), defined outside limits.py, that cuts something as a slice bound
  (``str(exc)[:MAX_MESSAGE]``).

A constant that is an alias of one of limits.py's (``MAX_LINE = limits.LOG_LINE``, kept where a public name was)
is the same definition and passes. Widths mpdoctor lays its own output out in (a Markdown cell, a trace table's
cell) go through helpers that do not redact, and are not bounds on what is kept: they stay with their renderer.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMITS = "mpdoctor.portable.limits"
# The target loads portable/ and remote/ under private names (probes/launch.py): the same modules.
ALIASES = {"_mpdoctor_portable": "mpdoctor.portable", "_mpdoctor_remote": "mpdoctor.probes.remote"}
TEXT_BOUND_NAME = re.compile(r"^MAX_|_LIMIT$|_TEXT$")
TEXT_WORDS = re.compile(r"TEXT|MESSAGE|DETAIL|ERROR|WARNING|TRACEBACK|LINE")


def project_sources() -> dict[str, str]:
    """Every module of the project by its import name (checks/ is installed as mpdoctor.checks), with its text."""
    found = {}
    for base, package in ((ROOT / "mpdoctor", "mpdoctor"), (ROOT / "checks", "mpdoctor.checks")):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path.read_text(encoding="utf-8")
    return found


class Project:
    """The modules' module-level bindings, enough to follow a name to where its value is written."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.trees = {name: ast.parse(text) for name, text in sources.items()}
        self.packages = {name for name in sources if any(other.startswith(name + ".") for other in sources)}
        self.bindings = {name: self._bind(name, tree) for name, tree in self.trees.items()}
        self.helpers = self._helpers()

    # ---------------------------------------------------------------- binding

    def _package_of(self, module: str) -> str:
        return module if module in self.packages else module.rpartition(".")[0]

    def _absolute(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            head, _, rest = (node.module or "").partition(".")
            return ".".join(filter(None, [ALIASES.get(head, head), rest]))
        base = self._package_of(module)
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        return ".".join(filter(None, [base, node.module]))

    def _bind(self, module: str, tree: ast.Module) -> dict:
        bound: dict[str, tuple] = {}

        def visit(body: list[ast.stmt]) -> None:
            for node in body:
                if isinstance(node, ast.ImportFrom):
                    source = self._absolute(module, node)
                    for alias in node.names:
                        full = f"{source}.{alias.name}"
                        bound[alias.asname or alias.name] = (
                            ("module", full) if full in self.trees else ("name", source, alias.name)
                        )
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            bound[alias.asname] = ("module", alias.name)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    bound[node.targets[0].id] = ("value", node.value, node.lineno)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    bound[node.name] = ("def", node)
                elif isinstance(node, ast.If):
                    visit(node.body)
                    visit(node.orelse)
                elif isinstance(node, ast.Try):
                    visit(node.body)
                    for handler in node.handlers:
                        visit(handler.body)

        visit(tree.body)
        return bound

    # ---------------------------------------------------------------- the redact-clip helpers

    def _callee(self, module: str, call: ast.Call, helpers: set) -> bool:
        """Whether ``call`` (in ``module``) calls a redact-clip helper."""
        func = call.func
        if isinstance(func, ast.Attribute):
            return func.attr == "redact_clip"
        if not isinstance(func, ast.Name):
            return False
        if func.id == "redact_clip":
            return True
        binding = self.bindings[module].get(func.id)
        if binding is None:
            return False
        if binding[0] == "def":
            return (module, func.id) in helpers
        if binding[0] == "name":
            return binding[2] == "redact_clip" or (binding[1], binding[2]) in helpers
        return False

    def _helpers(self) -> set:
        """(module, name) of every function named ``*clip*`` that calls a redact-clip helper: found to a fixpoint."""
        helpers: set = set()
        while True:
            more = {
                (module, node.name)
                for module, tree in self.trees.items()
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and "clip" in node.name
                and (module, node.name) not in helpers
                and any(isinstance(n, ast.Call) and self._callee(module, n, helpers) for n in ast.walk(node))
            }
            if not more:
                return helpers
            helpers |= more

    # ---------------------------------------------------------------- where a bound's value is written

    def origin(self, module: str, expr: ast.expr, seen: frozenset = frozenset()) -> list[str]:
        """Where the constants in ``expr`` (in ``module``) are written outside limits.py: "" entries mean none."""
        if module == LIMITS:
            return []
        if isinstance(expr, ast.Name):
            return self._name(module, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            base = self._module_of(module, expr.value)
            return self._defined(base, expr.attr, seen) if base else []
        if isinstance(expr, ast.BinOp):
            return self.origin(module, expr.left, seen) + self.origin(module, expr.right, seen)
        if isinstance(expr, ast.UnaryOp):
            return self.origin(module, expr.operand, seen)
        return []

    def _module_of(self, module: str, expr: ast.expr) -> str:
        """The project module ``expr`` names in ``module`` (through a bridge that re-exports it), else ""."""
        if not isinstance(expr, ast.Name):
            return ""
        binding = self.bindings.get(module, {}).get(expr.id)
        for _ in range(8):  # a bridge re-exports a module a few times at most
            if binding is None:
                return ""
            if binding[0] == "module":
                return binding[1]
            if binding[0] != "name":
                return ""
            binding = self.bindings.get(binding[1], {}).get(binding[2])
        return ""

    def _name(self, module: str, name: str, seen: frozenset) -> list[str]:
        binding = self.bindings[module].get(name)
        if binding is None or binding[0] in ("def", "module"):
            return []  # a local, a parameter: handed in by a caller, whose own bound this walk checks there
        if binding[0] == "name":
            return self._defined(binding[1], binding[2], seen)
        return self._value(module, name, binding, seen)

    def _defined(self, module: str, name: str, seen: frozenset) -> list[str]:
        if module == LIMITS or module not in self.trees or (module, name) in seen:
            return []
        binding = self.bindings[module].get(name)
        if binding is None or binding[0] in ("def", "module"):
            return []
        if binding[0] == "name":
            return self._defined(binding[1], binding[2], seen | {(module, name)})
        return self._value(module, name, binding, seen | {(module, name)})

    def _value(self, module: str, name: str, binding: tuple, seen: frozenset) -> list[str]:
        _, value, line = binding
        if literal(value):
            return [f"{module}:{line} {name} = {ast.unparse(value)}"]
        return self.origin(module, value, seen | {(module, name)})


def literal(expr: ast.expr) -> bool:
    """A number written out (``300``, ``4 << 10``): no name in it."""
    return not any(isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(expr)) and any(
        isinstance(n, ast.Constant) and isinstance(n.value, int) for n in ast.walk(expr)
    )


def _length(call: ast.Call) -> ast.expr | None:
    if len(call.args) > 1:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg == "limit"), None)


def _slice_names(node: ast.Subscript) -> list[ast.Name]:
    if not isinstance(node.slice, ast.Slice):
        return []
    bounds = [b for b in (node.slice.lower, node.slice.upper) if b is not None]
    return [n for b in bounds for n in ast.walk(b) if isinstance(n, ast.Name)]


def violations(sources: dict[str, str]) -> list[str]:
    """Every text bound of ``sources`` written outside limits.py, and every literal length given to a helper."""
    project = Project(sources)
    found = []
    for module, tree in project.trees.items():
        if module == LIMITS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and project._callee(module, node, project.helpers):
                length = _length(node)
                if length is None:
                    continue
                where = f"{module}:{node.lineno} {ast.unparse(node)}"
                if literal(length):
                    found.append(f"{where}: a literal length; name it in portable/limits.py")
                found += [
                    f"{where}: its length is {o}, not portable/limits.py's" for o in project.origin(module, length)
                ]
            elif isinstance(node, ast.Subscript):
                for name in _slice_names(node):
                    if TEXT_BOUND_NAME.search(name.id) and TEXT_WORDS.search(name.id):
                        where = f"{module}:{node.lineno} {ast.unparse(node)}"
                        found += [
                            f"{where}: cut to {o}, not portable/limits.py's" for o in project.origin(module, name)
                        ]
    return sorted(set(found))


def test_every_text_bound_is_declared_in_portable_limits():
    sources = project_sources()
    assert LIMITS in sources and len(sources) > 200  # the walk saw the project
    assert violations(sources) == []


def test_the_walk_sees_the_helpers_and_the_bounds_it_guards():
    """What the rule holds is really there: the wrappers are found, and the lengths they are given are limits'."""
    project = Project(project_sources())
    assert ("mpdoctor.probes.remote.env_facts", "_clip") in project.helpers  # wraps redact_clip
    assert ("mpdoctor.render.markdown", "_clip") not in project.helpers  # a layout width: does not redact
    calls = [
        (module, node)
        for module, tree in project.trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and project._callee(module, node, project.helpers)
    ]
    assert len(calls) >= 30
    from mpdoctor.portable import limits

    used = {
        n.attr
        for _, call in calls
        for n in ast.walk(_length(call) or ast.Constant(0))
        if isinstance(n, ast.Attribute) and hasattr(limits, n.attr)
    }
    assert {"CODE_LINE", "ERROR_TEXT", "FAILURE_TEXT", "TRACEBACK", "WARNING_TEXT", "REPORTED_VALUE"} <= used


# A small project with each way a text bound is spelled twice, and the ways it is spelled once.
FAKE = {
    LIMITS: "CODE_LINE = 200\nERROR_TEXT = 600\n",
    "mpdoctor.portable": "",
    "mpdoctor.portable.redact": "def redact_clip(text, limit, tail=False):\n    return text[:limit]\n",
    "mpdoctor.probes": "",
    "mpdoctor.probes.remote": "",
    "mpdoctor.probes.remote._portable": (
        "if __name__.startswith('_mpdoctor_remote'):\n    from _mpdoctor_portable import limits, redact\n"
        "else:\n    from mpdoctor.portable import limits, redact\n"
    ),
    "mpdoctor.probes.remote.good": (
        "from ._portable import limits, redact\nredact_clip = redact.redact_clip\n"
        "ALIAS = limits.ERROR_TEXT\n"
        "def f(x):\n    return redact_clip(x, limits.CODE_LINE), redact.redact_clip(x, ALIAS, tail=True)\n"
        "def _clip(text, limit):\n    return redact.redact_clip(text, limit - 3)\n"
        "def g(x):\n    return _clip(x, limits.CODE_LINE)\n"
    ),
    "mpdoctor.probes.remote.copy": (
        "from ._portable import redact\nTEXT_LIMIT = 300\ndef f(x):\n    return redact.redact_clip(x, TEXT_LIMIT)\n"
    ),
    "mpdoctor.probes.remote.literal": (
        "from ._portable import redact\ndef f(e):\n    return redact.redact_clip(e, 600, tail=True)\n"
    ),
    "mpdoctor.probes.remote.through": (
        "from . import copy\nfrom .copy import TEXT_LIMIT\nfrom ._portable import redact\nDETAIL = copy.TEXT_LIMIT\n"
        "def f(x):\n    return redact.redact_clip(x, TEXT_LIMIT), redact.redact_clip(x, DETAIL)\n"
    ),
    "mpdoctor.probes.remote.wrapped": (
        "from ._portable import redact\ndef _clip(text, limit):\n    return redact.redact_clip(text, limit)\n"
        "def f(x):\n    return _clip(x, limit=100)\n"
    ),
    "mpdoctor.probes.remote.sliced": (
        "from ._portable import redact\nMAX_MESSAGE = 4000\n"
        "def f(e):\n    return redact.redact_text(str(e))[:MAX_MESSAGE]\n"
    ),
    "mpdoctor.render": "",
    "mpdoctor.render.layout": (
        "MAX_CELL = 48\ndef _clip(text, limit):\n    return text[:limit]\n"
        "def cell(t):\n    return _clip(t, 40) + t[: MAX_CELL - 3]\n"
    ),
}


def test_the_rule_fails_on_each_way_a_bound_is_spelled_twice():
    found = violations(FAKE)
    modules = sorted({line.split(":")[0] for line in found})
    assert modules == [
        "mpdoctor.probes.remote.copy",
        "mpdoctor.probes.remote.literal",
        "mpdoctor.probes.remote.sliced",
        "mpdoctor.probes.remote.through",
        "mpdoctor.probes.remote.wrapped",
    ], found
    assert "mpdoctor.probes.remote.copy:4 redact.redact_clip(x, TEXT_LIMIT): its length is " in found[0]
    assert found[0].endswith("mpdoctor.probes.remote.copy:2 TEXT_LIMIT = 300, not portable/limits.py's")
    through = [line for line in found if line.startswith("mpdoctor.probes.remote.through")]
    assert len(through) == 2 and all("copy:2 TEXT_LIMIT = 300" in line for line in through)
    assert any("wrapped:5 _clip(x, limit=100): a literal length" in line for line in found)
    assert any("sliced:4" in line and "MAX_MESSAGE = 4000" in line for line in found)
