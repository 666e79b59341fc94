"""The readers of one parsed file: its imports of apex, its uses of torch's AMP, its uses of OneFlow.

Loaded beside ``scan.py`` (stdlib only, Python 3.8+, judges nothing), which hands each reader the syntax tree
of a file (the whole file, or the statements around its uses: ``windows.py``) and its lines, and files what it
returns under the reader's key (``scan.READERS``). The installed-distribution scan uses ``apex_imports`` too.
"""

import ast

from . import apex_guards
from ._portable import limits, redact

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

TORCH_AMP_NAMES = ("autocast", "GradScaler")
TORCH_AMP_MODULES = ("torch.cuda.amp", "torch.amp", "torch.cpu.amp")
ONEFLOW_PACKAGES = ("oneflow", "onediff", "onediffx")


# Statement lists a block holds; imports are statements, so nothing else needs a visit.
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _handlers(node):
    """A try statement's except clauses, each as the exception it names ("" for a bare except; a tuple gives
    one entry per name), marked ":raise" when its body raises again at its top level: that is no fallback."""
    found = []
    for handler in getattr(node, "handlers", []):
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        raises = any(isinstance(statement, ast.Raise) for statement in handler.body)
        for name in names:
            text = _dotted(name).rsplit(".", 1)[-1] if name is not None else ""
            found.append(text + (":raise" if raises else ""))
    return found


def _imports_with_context(body, context, out, handlers=(), proved=(), known=None, level=True, functions=()):
    """Collect (import node, context, handlers, proved, functions) tuples; context names the enclosing
    try/def/if blocks, handlers are the except clauses of the innermost try whose body holds the import, proved
    the apex modules the code has tested for on the way (``apex_guards``), functions the ids of the functions
    around it. ``level``: at module or class level, where a statement that leaves counts only when it names apex."""
    known = {} if known is None else known
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, context, handlers, proved, functions))
            continue
        for field in BLOCK_FIELDS:
            children = getattr(node, field, None)
            if not isinstance(children, list) or not children:
                continue
            inner, caught, shown, flat, around = context, handlers, proved, level, functions
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner, caught, flat, around = context | {"def"}, (), False, functions + (id(node),)
            elif isinstance(node, ast.ClassDef):
                flat = True
            elif isinstance(node, ast.If):
                inner = context | {"if"}
                shown = proved + apex_guards.tests(node.test, known, field == "body")
            elif field == "body" and (isinstance(node, ast.Try) or type(node).__name__ == "TryStar"):
                inner, caught = context | {"try"}, tuple(_handlers(node))
            if field in ("handlers", "cases"):  # except clauses and match cases hold their own bodies
                for clause in children:
                    _imports_with_context(clause.body, inner, out, caught, shown, known, flat, around)
            else:
                _imports_with_context(children, inner, out, caught, shown, known, flat, around)
        proved = proved + apex_guards.leaves_unless(node, known, level)  # `if not available: raise` before it
    return out


def apex_imports(tree, lines):
    """Each import of apex (or a submodule) in a parsed file, with the blocks around it and the apex modules the
    code tests for before it (``runs_only_with``, see ``apex_guards``)."""
    known, found = _apex_found(tree)
    classes = None
    uses = []
    for node, context, handlers, proved, functions in found:
        if not proved and functions:  # a method of a class that cannot exist without apex (the whole file)
            if classes is None:
                classes = apex_guards.guarded_classes(tree, known)
            proved = next((classes[f] for f in reversed(functions) if f in classes), ())
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names if alias.name.split(".")[0] == "apex"]
            names = []
        else:
            modules = [node.module]
            names = [alias.name for alias in node.names]
        for module in modules:
            uses.append(
                {
                    "module": module,
                    "names": names,
                    "line": node.lineno,
                    "text": redact_clip(lines[node.lineno - 1].strip(), limits.CODE_LINE)
                    if node.lineno <= len(lines)
                    else "",
                    "guarded": "try" in context,
                    "handlers": list(handlers),
                    "handlers_read": True,
                    "lazy": "def" in context,
                    "conditional": "if" in context,
                    "runs_only_with": sorted(set(proved)),
                }
            )
    return uses


def _apex_found(tree):
    known = apex_guards.flags(tree)
    found = _imports_with_context(tree.body, frozenset(), [], known=known)
    return known, [item for item in found if apex_guards.imported(item[0])]


def needs_whole_file(tree):
    """Whether the apex imports of a window need every function of the file: one in a function that the code tests
    nothing for on the way, which a class that cannot exist without apex may still hold, and whose callers the
    window may lack (``apex_guards.guarded_classes``)."""
    return any(functions and not proved for _, _, _, proved, functions in _apex_found(tree)[1])


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def torch_amp_uses(tree, lines):
    """Where a file uses torch's AMP (autocast, GradScaler), first hit of each spelling."""
    seen, uses = set(), []
    for node in ast.walk(tree):
        what = ""
        if isinstance(node, ast.ImportFrom) and node.module in TORCH_AMP_MODULES + ("torch",):
            picked = [alias.name for alias in node.names if alias.name in TORCH_AMP_NAMES or node.module != "torch"]
            what = "from %s import %s" % (node.module, ", ".join(picked)) if picked else ""
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name.startswith("torch.") and name.split(".")[-1] in TORCH_AMP_NAMES:
                what = name
        if what and what not in seen:
            seen.add(what)
            line = getattr(node, "lineno", 0)
            uses.append(
                {
                    "what": what,
                    "line": line,
                    "text": redact_clip(lines[line - 1].strip(), limits.CODE_LINE) if 0 < line <= len(lines) else "",
                }
            )
    return uses


def oneflow_uses(tree, lines):
    """Where a file imports OneFlow/OneDiff, compiles with OneFlow, or enters oneflow.autocast."""
    aliases, seen, uses = {"oneflow"}, set(), []

    def add(what, node):
        if what not in seen:
            seen.add(what)
            line = getattr(node, "lineno", 0)
            uses.append(
                {
                    "what": what,
                    "line": line,
                    "text": redact_clip(lines[line - 1].strip(), limits.CODE_LINE) if 0 < line <= len(lines) else "",
                }
            )

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ONEFLOW_PACKAGES:
                    add("import " + alias.name, node)
                    if alias.name == "oneflow":
                        aliases.add(alias.asname or "oneflow")  # `import oneflow as flow` is the custom
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[0] in ONEFLOW_PACKAGES
        ):  # `from .oneflow import x` is local
            add("from %s import %s" % (node.module, ", ".join(alias.name for alias in node.names)), node)
    autocasts = {alias + suffix for alias in aliases for suffix in (".autocast", ".amp.autocast", ".cuda.amp.autocast")}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        backend = [k.value.value for k in node.keywords if k.arg == "backend" and isinstance(k.value, ast.Constant)]
        if name.split(".")[-1] == "oneflow_compile" or backend == ["oneflow"]:
            add("oneflow_compile" if name.endswith("oneflow_compile") else 'compile(backend="oneflow")', node)
        elif name in autocasts:
            add("oneflow.autocast", node)
    return sorted(uses, key=lambda use: use["line"])
