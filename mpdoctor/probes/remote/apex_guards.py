"""Which apex a file's code tests for before it imports apex: the imports that never run without it.

Loaded beside ``amp_uses.py`` (stdlib only, Python 3.8+, judges nothing). An import of apex that runs only once
the code has seen apex (or a part of it) is there does not fail where apex is missing: the code takes another way
there, or says so itself. Real code spells the test many ways, and each is read here as the modules it proves
importable (``tests``):

* a call that asks for apex by name: ``is_apex_available()``, ``_is_apex_installed()``, ``find_spec("apex")``,
  ``RequirementCache("apex")``, ``module_available("apex.amp")`` (a name holding apex, or a string naming an apex
  module, with a word of availability: available, installed, importable, spec, loader, requirement, has);
* a flag: a name holding apex and such a word (``_APEX_AVAILABLE``, ``HAS_APEX``), a name assigned from one of
  the calls above, a name a guarded import binds (``try: from apex import amp`` ... ``except ImportError: amp =
  None``) or one the body of such a ``try`` sets (``HAS_AMP = True``), tested as it is, ``is not None``, ``!=
  None``; ``not``, ``is None`` and ``== None`` turn it round, ``and`` needs one such test, ``or`` all.

The import is reached only with those modules when it sits in the branch the test takes (``if test:`` or the else
of ``if not test:``), or after a statement that leaves when the test fails (``if not test: raise ...`` or
``return``, ``assert test``): there the code's own message tells the user, and the import never runs. A test a
user's flag makes (``if args.apex:``, ``use_apex``) proves nothing: such an import still fails when asked for.

A class whose ``__init__`` leaves that way when apex is missing has no instances without apex: the imports in its
other methods (not static or class methods) never run without it, nor those of a private function of the module
(``_name``) that only such methods call. That rule needs every function of the file (``needs_whole_file``).

Every statement these rules read names apex (in an identifier, any case, or a string naming an apex module) or
holds the import, except those of a function holding the import: the windowed scan parses all of them
(``windows.py``). A module- or class-level ``if`` that leaves counts only when its test names apex, for the same
reason.
"""

import ast
import re

# Words that make a name (or a call) a question about availability rather than a user's choice.
AVAILABLE = ("avail", "install", "import", "spec", "loader", "requirement", "exist", "present", "found")
OWNS = re.compile(r"(?:^|_)(?:has|have)(?:_|$)")
# Exceptions whose handler makes a try around an import a fallback for a missing module ("" is a bare except).
FALLBACK = ("", "ImportError", "ModuleNotFoundError", "Exception", "BaseException")
LEAVES = (ast.Raise, ast.Return)


def _identifier(node):
    """The last identifier of a name, an attribute or a call's function; "" for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _apex_string(node):
    """The apex module a string constant names ("apex", "apex.amp"); "" for any other."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value == "apex" or node.value.startswith("apex."):
            return node.value
    return ""


def _asks(name):
    lowered = name.lower()
    return any(word in lowered for word in AVAILABLE) or bool(OWNS.search(lowered))


def _named_flag(name):
    """A name that says apex is there: it holds apex and a word of availability (_APEX_AVAILABLE, HAS_APEX)."""
    return "apex" in name.lower() and _asks(name)


def _call_test(node):
    """The modules a call proves importable (is_apex_available(), find_spec("apex.amp")); () when none."""
    if not isinstance(node, ast.Call):
        return ()
    name = _identifier(node)
    if not _asks(name):
        return ()
    named = [_apex_string(arg) for arg in node.args[:1] if _apex_string(arg)]
    if named:
        return tuple(named)
    return ("apex",) if "apex" in name.lower() else ()


def tests(node, flags, holds=True):
    """The modules ``node`` proves importable when it is ``holds`` (True: the test passed; False: it failed); ()
    when it proves none. ``flags``: {name: modules} (``flags``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return tests(node.operand, flags, not holds)
    if isinstance(node, ast.BoolOp):
        # `a and b` passing proves each; `a or b` failing proves neither holds: turned round, each.
        if isinstance(node.op, ast.And) == holds:
            return tuple(module for value in node.values for module in tests(value, flags, holds))
        each = [tests(value, flags, holds) for value in node.values]
        return ("apex",) if all(each) else ()
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        right = node.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            if isinstance(node.ops[0], (ast.IsNot, ast.NotEq)):
                return tests(node.left, flags, holds)
            if isinstance(node.ops[0], (ast.Is, ast.Eq)):
                return tests(node.left, flags, not holds)
        return ()
    if not holds:
        return ()
    if isinstance(node, ast.Name) and node.id in flags:
        return flags[node.id]
    if isinstance(node, (ast.Name, ast.Attribute)) and _named_flag(_identifier(node)):
        return ("apex",)
    return _call_test(node)


def _falls_back(try_node):
    """Whether a try's except clauses catch a failed import and go on (no raise at their top level)."""
    for handler in try_node.handlers:
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(statement, ast.Raise) for statement in handler.body):
            continue
        if any((_identifier(name) if name is not None else "") in FALLBACK for name in names):
            return True
    return False


def imported(node):
    """{name bound: apex module} of an import of apex (`from apex import amp` binds amp to apex.amp)."""
    bound = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == "apex":
                bound[alias.asname or "apex"] = alias.name if alias.asname else "apex"
    elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "apex":
        for alias in node.names:
            bound[alias.asname or alias.name] = node.module + "." + alias.name
    return bound


def flags(tree):
    """{name: modules it proves importable}: names guarded imports of apex bind, flags their try sets, and names
    assigned from a test (``tests``) anywhere in the file."""
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Try) or type(node).__name__ == "TryStar") and _falls_back(node):
            bound = {}
            for statement in node.body:
                for inner in ast.walk(statement):
                    bound.update(imported(inner))
            if not bound:
                continue
            modules = tuple(sorted(set(bound.values())))
            for name, module in bound.items():
                found[name] = (module,)
            for statement in node.body + node.orelse:  # HAS_APEX = True: set once the imports above it worked
                for inner in ast.walk(statement):
                    if isinstance(inner, ast.Assign):
                        for target in inner.targets:
                            if isinstance(target, ast.Name) and target.id not in bound:
                                found[target.id] = modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name not in found:
                proved = tests(node.value, {})
                if proved:
                    found[name] = proved
    return found


def leaves_unless(statement, known, names_apex):
    """The modules a statement proves importable for the statements after it: `if not test: raise` (or return),
    `assert test`; () for any other. ``names_apex``: count only tests that name apex (module and class level)."""
    if isinstance(statement, ast.Assert):
        test = statement.test
        proved = tests(test, known)
    elif (
        isinstance(statement, ast.If)
        and not statement.orelse
        and statement.body
        and isinstance(statement.body[-1], LEAVES)
    ):
        test = statement.test
        proved = tests(test, known, holds=False)
    else:
        return ()
    if proved and names_apex and not mentions_apex(test):
        return ()
    return proved


def mentions_apex(node):
    """Whether an expression names apex: an identifier holding it (any case) or a string naming an apex module."""
    for inner in ast.walk(node):
        if "apex" in _identifier(inner).lower() or _apex_string(inner):
            return True
    return False


def _methods(node):
    return [member for member in node.body if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _plain_method(function):
    """A method that needs an instance: not a static or class method."""
    return not any(_identifier(decorator) in ("staticmethod", "classmethod") for decorator in function.decorator_list)


def guarded_classes(tree, known):
    """{id of a function: modules}: the methods of classes whose ``__init__`` leaves without those modules
    (``leaves_unless`` at its top level), and the module's private functions only such methods call."""
    within = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        init = next((m for m in _methods(node) if m.name == "__init__"), None)
        if init is None:
            continue
        proved = tuple(module for statement in init.body for module in leaves_unless(statement, known, False))
        if not proved:
            continue
        for method in _methods(node):
            if method is not init and _plain_method(method):
                within[id(method)] = proved
    # A private function of the module that only those methods call (by its bare name) never runs without them.
    callers = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(function):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
                callers.setdefault(inner.func.id, []).append(id(function))
    top_calls = set()
    for statement in tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Name):
                    top_calls.add(inner.id)
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.name.startswith("_"):
            continue
        if function.name in top_calls or function.name.startswith("__"):
            continue
        calls = callers.get(function.name, [])
        if calls and all(caller in within for caller in calls) and not _named_elsewhere(tree, function.name):
            within[id(function)] = tuple(sorted({m for caller in calls for m in within[caller]}))
    return within


def _named_elsewhere(tree, name):
    """Whether ``name`` is used other than by calling it (passed on, stored, exported): then anyone may call it."""
    calls = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.add(id(node.func))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and id(node) not in calls:
            return True
        if isinstance(node, ast.Constant) and node.value == name:  # __all__ = ["_name"]
            return True
    return False
