"""Find code that imports apex or uses torch's AMP, *inside the interpreter under diagnosis*.

Loaded beside ``target.py`` (stdlib only, Python 3.8+, judges nothing). Two scans:

* installed distributions that import apex (who will pick it up), run only when
  some apex is present;
* the user's project: apex.amp, torch.amp and OneFlow use, and the code paths of mixed precision
  (``amp_sites``: each step with its function and the if/else branches above it, for the checks
  that judge paths rather than words: checks/_code.py). Which directory that is
  (``--project DIR``, the repository that holds the working directory, or the working
  directory) and what below it is never the user's code (other repositories,
  environments, caches) is ``project_root.py``'s rule; :func:`project_facts` applies it.

Both read source with ``ast``, never run it: a docstring that mentions
``from apex import amp`` is not an import. Both stop at a time and file budget,
saying so (the project scan names the files it did not read).

The project scan pays for what it finds: per file, a few byte searches (memchr
speed) decide which readers it needs, exactly as the regular expressions they
replace did; only a file whose key words stand in code (not in a string or a
comment) is parsed, and then only the statements around them (``windows.py``),
after a syntax check of the whole file that builds no syntax tree (``symtable``),
so a file that does not parse still reports nothing, as a whole-file parse did.
"""

import ast
import os
import re
import symtable
import time

from . import listing, project_root, windows
from ._portable import files, redact

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

SKIP_DISTRIBUTIONS = ("apex", "nvidia-apex", "torch", "pip", "setuptools", "mpdoctor")
APEX_IMPORT = windows.APEX_IMPORT
# What windows.readers decides with byte searches; kept as the reference for the tests.
TORCH_AMP = re.compile(rb"autocast|GradScaler|torch\.cuda\.amp|torch\.amp")
TORCH_AMP_NAMES = ("autocast", "GradScaler")
TORCH_AMP_MODULES = ("torch.cuda.amp", "torch.amp", "torch.cpu.amp")
ONEFLOW = re.compile(rb"oneflow|onediff")
ONEFLOW_PACKAGES = ("oneflow", "onediff", "onediffx")
MAX_USES = 200
MAX_FILE = 4 << 20
MAX_SKIPPED = 50
MAX_OTHERS = 50  # other repositories named in the facts; the count says how many there were
# Files listed at most per second of the scan's budget, and never fewer than MIN_FILES (1.5 s: 3,000). The time
# budget follows --timeout (portable/limits.py); a cap that did not would stop a longer scan at the same file.
FILES_PER_SECOND = 2000
MIN_FILES = 3000
TEXT_LIMIT = 200  # characters of a source line kept in a use (redacted, then cut)
# Source the parser cannot be trusted with: Python 3.9+ raises RecursionError on an
# expression nested some 100,000 deep (a chain of attributes, calls or operators), and
# 3.8's parser crashes the interpreter with a segfault. Real code comes nowhere near
# either bound: a line this long, or this many lines that continue an expression.
MAX_LINE = 20000
CONTINUATION = re.compile(rb"\n[ \t]*[.+\-*/%&|^@]")
MAX_CONTINUATIONS = 20000


def _read(path, skipped=None, label=""):
    """The first MAX_FILE bytes of a regular file; None for anything else (a FIFO would block, a device never end).

    ``skipped`` collects "label: why" for files that are there but were not read.
    """
    try:
        return files.read_bytes(path, MAX_FILE, cut=True)
    except files.Refused as exc:
        if skipped is not None:
            skipped.append("%s: %s" % (label or path, exc.why))
        return None
    except OSError:
        return None


def _unsafe(source):
    """Why the parser cannot be trusted with ``source`` (see MAX_LINE); "" when it can."""
    # A line that long holds one of the newline-free spans found by these memchr probes, one every MAX_LINE/2
    # bytes; only then are the lines measured (a regex [^\n]{N} backtracks).
    half = MAX_LINE // 2
    if (
        any(source.find(b"\n", at, at + half + 1) < 0 for at in range(0, len(source) - half, half))
        and max(map(len, source.split(b"\n"))) > MAX_LINE
    ):
        return "a line longer than %d characters" % MAX_LINE
    if source.count(b"\n") > MAX_CONTINUATIONS and len(CONTINUATION.findall(source)) > MAX_CONTINUATIONS:
        return "more than %d lines continuing one expression" % MAX_CONTINUATIONS
    return ""


def _parse(source, path, skipped=None, label=""):
    """The file's syntax tree; None when it is not Python, or too deeply nested to parse safely (noted)."""
    reason = _unsafe(source)
    if not reason:
        try:
            return ast.parse(source, filename=path)
        except (SyntaxError, ValueError):
            return None
        except (RecursionError, MemoryError):  # nested too deeply for the parser: this file only
            reason = "nested too deeply for the parser"
    if skipped is not None:
        skipped.append("%s: %s, not parsed" % (label or path, reason))
    return None


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


def _imports_with_context(body, context, out, handlers=()):
    """Collect (import node, context, handlers) triples; context names the enclosing try/def/if blocks, handlers
    are the except clauses of the innermost try whose body holds the import."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, context, handlers))
            continue
        for field in BLOCK_FIELDS:
            children = getattr(node, field, None)
            if not isinstance(children, list) or not children:
                continue
            inner, caught = context, handlers
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner, caught = context | {"def"}, ()
            elif isinstance(node, ast.If):
                inner = context | {"if"}
            elif field == "body" and (isinstance(node, ast.Try) or type(node).__name__ == "TryStar"):
                inner, caught = context | {"try"}, tuple(_handlers(node))
            if field in ("handlers", "cases"):  # except clauses and match cases hold their own bodies
                for clause in children:
                    _imports_with_context(clause.body, inner, out, caught)
            else:
                _imports_with_context(children, inner, out, caught)
    return out


def apex_imports(tree, lines):
    """Each import of apex (or a submodule) in a parsed file, with the blocks around it."""
    uses = []
    for node, context, handlers in _imports_with_context(tree.body, frozenset(), []):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names if alias.name.split(".")[0] == "apex"]
            names = []
        elif not node.level and (node.module or "").split(".")[0] == "apex":
            modules = [node.module]
            names = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            uses.append(
                {
                    "module": module,
                    "names": names,
                    "line": node.lineno,
                    "text": redact_clip(lines[node.lineno - 1].strip(), TEXT_LIMIT)
                    if node.lineno <= len(lines)
                    else "",
                    "guarded": "try" in context,
                    "handlers": list(handlers),
                    "handlers_read": True,
                    "lazy": "def" in context,
                    "conditional": "if" in context,
                }
            )
    return uses


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
                    "text": redact_clip(lines[line - 1].strip(), TEXT_LIMIT) if 0 < line <= len(lines) else "",
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
                    "text": redact_clip(lines[line - 1].strip(), TEXT_LIMIT) if 0 < line <= len(lines) else "",
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


# ---------------------------------------------------------------- code paths: where AMP is set up, and in what order

# Identifiers a unit of code (a function, or a top-level statement) must hold for its sites to be read: each is a
# key word of windows.KEYS' code-path reader, so a unit holding one is parsed whole by the windowed scan as well.
SITE_KEYS = frozenset(
    ("autocast", "GradScaler", "amp", "apex", "clip_grad_norm_", "clip_grad_value_", "scale_loss", "unscale_")
)
MAX_SITES = 2000
LINE_BREAK = re.compile(rb"\r\n|\r|\n")  # where the parser starts a line (str.splitlines knows more)
TORCH_ROOTS = ("torch",)
# Where `enabled` and `dtype` sit among the positional arguments of each spelling.
AUTOCAST_ARGS = {"torch.cuda.amp.autocast": (0, 1), "torch.cpu.amp.autocast": (0, 1)}  # default: torch.autocast's
SCALER_ENABLED = {"torch.cuda.amp.GradScaler": 4, "torch.cuda.amp.grad_scaler.GradScaler": 4}  # default: 5
DTYPES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "float16": "float16",
    "half": "float16",
    "torch.bfloat16": "bfloat16",
    "bfloat16": "bfloat16",
}


def _names_key(node):
    """Whether ``node`` itself names one of SITE_KEYS (a name, an attribute, a part of an imported module's name)."""
    if isinstance(node, ast.Name):
        return node.id in SITE_KEYS
    if isinstance(node, ast.Attribute):
        return node.attr in SITE_KEYS
    if isinstance(node, ast.Import):
        return any(set(alias.name.split(".")) & SITE_KEYS for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return bool((set((node.module or "").split(".")) | set(alias.name for alias in node.names)) & SITE_KEYS)
    return False


def _keyed(node):
    """Whether ``node`` or anything in it names one of SITE_KEYS."""
    return any(_names_key(child) for child in ast.walk(node))


def _keyed_nodes(tree):
    """The ids of the nodes that hold a key (``_keyed``), found in one pass: breadth-first order lists each node
    after its parent, so walked backwards every node is decided before its parent is."""
    order, parents = [tree], {}
    for node in order:  # grows as it goes: a breadth-first walk that records parents
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            order.append(child)
    keyed = set()
    for node in reversed(order):
        if id(node) in keyed or _names_key(node):
            keyed.add(id(node))
            parent = parents.get(id(node))
            if parent is not None:
                keyed.add(id(parent))
    return keyed


def _module_bindings(tree, keyed):
    """The names the file's top level imports: its import statements, and those in a statement that names a key
    (both parsed by the windowed scan too); a function's own imports are added when it is read."""
    bound = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and id(node) in keyed
        ):
            bound.update(_bindings(node))
    return bound


def _bindings(tree):
    """{name: dotted module or object it is bound to} for every import in ``tree`` (the last one wins)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                bound[alias.asname or alias.name] = node.module + "." + alias.name
        elif isinstance(node, ast.ImportFrom):  # a module of this project: never torch's or apex's
            for alias in node.names:
                bound[alias.asname or alias.name] = "." + alias.name
    return bound


def _resolve(name, bound):
    """The dotted name ``name`` means through the file's imports; "" when its root is no import (a local)."""
    if not name:
        return ""
    root, _, rest = name.partition(".")
    target = bound.get(root)
    if target is None:
        return name if root in TORCH_ROOTS else ""
    return target + ("." + rest if rest else "")


class _Sites(ast.NodeVisitor):
    """Collects the AMP steps of each unit (function, or top-level statement) with the branches above them."""

    def __init__(self, lines, source_lines, bound, keyed, every_unit=False):
        self.lines, self.source, self.bound, self.every_unit = lines, source_lines, bound, every_unit
        self.keyed = keyed  # ids of the nodes holding a key (_keyed_nodes)
        self.scope, self.klass, self.guards = "", "", []
        self.units = []  # [(has a key identifier, [site, ...])]
        self.unit = None

    # -- units
    def run(self, tree):
        for node in tree.body:
            self._top(node, "")
        return self.units

    def _top(self, node, klass):
        if not self.every_unit and id(node) not in self.keyed:  # no unit in it can be read: not worth a visit
            return
        if isinstance(node, ast.ClassDef) and not klass:
            for member in node.body:
                self._top(member, node.name)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(node, klass + "." + node.name if klass else node.name, klass)
            return
        saved = (self.scope, self.klass, self.guards)
        self.scope, self.klass, self.guards = klass, klass, []
        self._begin()
        self.visit(node)
        self._end()
        self.scope, self.klass, self.guards = saved

    def _function(self, node, scope, klass):
        if not self.every_unit and id(node) not in self.keyed:
            return
        saved = (self.scope, self.klass, self.guards, self.unit, self.bound)
        self.scope, self.klass, self.guards = scope, klass, []
        self.bound = dict(self.bound)  # its own imports bind names from where they stand (visit_Import)
        self._begin()
        for child in node.decorator_list + [node.args]:
            self.visit(child)
        for child in node.body:
            self.visit(child)
        self._end()
        self.scope, self.klass, self.guards, self.unit, self.bound = saved

    def _begin(self):
        self.unit = [False, []]
        self.units.append(self.unit)

    def _end(self):
        pass

    # -- nodes
    def visit_FunctionDef(self, node):
        self._function(node, (self.scope + "." if self.scope else "") + node.name, self.klass)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):  # a class inside a function: its methods are units of their own
        for child in node.decorator_list + node.bases:
            self.visit(child)
        for member in node.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(member, node.name + "." + member.name, node.name)
            else:
                self.visit(member)

    def visit_Lambda(self, node):
        self.generic_visit(node)

    def _branch(self, node, test, body, orelse):
        self.visit(test)
        text = self._segment(test)
        for branch, part in (("if", body), ("else", orelse)):
            self.guards.append("%d:%s:%s" % (node.lineno, branch, text))
            for child in part if isinstance(part, list) else [part]:
                self.visit(child)
            self.guards.pop()

    def visit_If(self, node):
        self._branch(node, node.test, node.body, node.orelse)

    def visit_Try(self, node):  # the body and its fallbacks exclude each other: `try: new API except: old API`
        self.guards.append("%d:if:<try>" % node.lineno)
        for child in node.body + node.orelse:
            self.visit(child)
        self.guards[-1] = "%d:else:<try>" % node.lineno
        for handler in node.handlers:
            self.visit(handler)
        self.guards.pop()
        for child in node.finalbody:
            self.visit(child)

    visit_TryStar = visit_Try

    def visit_IfExp(self, node):
        self._branch(node, node.test, node.body, node.orelse)

    def visit_Name(self, node):
        if node.id in SITE_KEYS:
            self.unit[0] = True
        target = self.bound.get(node.id, "")
        if target and isinstance(node.ctx, ast.Load) and _autocast(target):
            self._reference(node, target)

    def visit_Attribute(self, node):
        if node.attr in SITE_KEYS:
            self.unit[0] = True
        if isinstance(node.ctx, ast.Load) and node.attr == "autocast":
            target = _resolve(_dotted(node), self.bound)
            if _autocast(target):
                self._reference(node, target)
                return
        self.generic_visit(node)

    def visit_Assign(self, node):  # `scaler_type = GradScaler`: built later under another name (isinstance is no use)
        target = _resolve(_dotted(node.value), self.bound)
        if _scaler(target):
            self._mark(node.value)
            self._reference(node.value, target)
        self.generic_visit(node)

    def visit_Import(self, node):
        for alias in node.names:
            if set(alias.name.split(".")) & SITE_KEYS:
                self.unit[0] = True
        if self.scope and self.scope != self.klass:  # in a function (module-level imports: _module_bindings)
            self.bound.update(_bindings(node))

    def visit_ImportFrom(self, node):
        parts = set((node.module or "").split(".")) | set(alias.name for alias in node.names)
        if parts & SITE_KEYS:
            self.unit[0] = True
        if self.scope and self.scope != self.klass:
            self.bound.update(_bindings(node))

    def visit_Call(self, node):
        func = node.func
        name = _dotted(func)
        target = _resolve(name, self.bound)
        args = node.args
        if target in ("functools.partial",) and args:  # partial(torch.autocast, ...): autocast, arguments shifted
            inner = _resolve(_dotted(args[0]), self.bound)
            if _autocast(inner):
                self._mark(node)
                self._autocast(node, inner, args[1:])
                self.visit(args[0].value if isinstance(args[0], ast.Attribute) else args[0])
                for child in args[1:] + [k.value for k in node.keywords]:
                    self.visit(child)
                return
        if _autocast(target):
            self._mark(func)
            self._autocast(node, target, args)
            self._visit_arguments(node, func)
            return
        if _scaler(target):
            index = SCALER_ENABLED.get(target, 5)
            self._mark(func)
            self._add(node, "grad_scaler", target, enabled=self._argument(node, "enabled", index))
            self._visit_arguments(node, func)
            return
        if target.startswith("apex.amp.") or target == "apex.amp":
            self._add(node, "apex_amp", target)
        elif target.startswith("torch.") and target.rsplit(".", 1)[-1] in ("clip_grad_norm_", "clip_grad_value_"):
            self._add(node, "clip", target)
        elif isinstance(func, ast.Attribute):
            value = func.value
            if isinstance(value, ast.Name) and value.id == "self" and self.klass:  # a method of this class
                self._add(node, "call", self.klass + "." + func.attr)
            elif func.attr == "backward":
                inner = value.func if isinstance(value, ast.Call) else None
                if isinstance(inner, ast.Attribute) and inner.attr == "scale":
                    self._add(node, "scale_backward", "", receiver=self._segment(inner.value))
                elif not node.args:  # loss.backward(); accelerator.backward(loss) scales on its own
                    self._add(node, "backward", "", receiver=self._segment(value))
            elif func.attr in ("unscale_", "step"):
                self._add(node, "unscale" if func.attr == "unscale_" else "step", "", receiver=self._segment(value))
        elif isinstance(func, ast.Name) and func.id not in self.bound:
            self._add(node, "call", func.id)
        self.generic_visit(node)

    def _mark(self, node):
        if _keyed(node):
            self.unit[0] = True

    def _visit_arguments(self, node, func):
        if isinstance(func, ast.Attribute):
            self.visit(func.value)
        for child in node.args + [k.value for k in node.keywords]:
            self.visit(child)

    def _reference(self, node, target):  # named without a call: `ctx = torch.autocast`, `scaler_type = GradScaler`
        kind = "autocast" if _autocast(target) else "grad_scaler"
        self._add(node, kind, target, device=_device(target, []), reference=True)

    # -- sites
    def _autocast(self, node, target, args):
        enabled_at, dtype_at = AUTOCAST_ARGS.get(target, (2, 1))
        enabled = self._argument(node, "enabled", enabled_at, args)
        dtype = self._argument(node, "dtype", dtype_at, args)
        device = _device(target, args, node)
        self._add(node, "autocast", target, enabled=enabled, dtype=DTYPES.get(dtype, dtype), device=device)

    def _argument(self, node, keyword, index, args=None):
        """The argument's source text; "" when absent or constant True, "false" for a constant False."""
        args = node.args if args is None else args
        value = next((k.value for k in node.keywords if k.arg == keyword), None)
        if value is None and index is not None and len(args) > index and not isinstance(args[index], ast.Starred):
            value = args[index]
        if value is None or (isinstance(value, ast.Constant) and value.value is True):
            return ""
        if isinstance(value, ast.Constant) and value.value is False:
            return "false"
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
        return self._segment(value)

    def _add(self, node, kind, what, enabled="", dtype="", device="", receiver="", reference=False):
        line = node.lineno
        self.unit[1].append(
            {
                "kind": kind,
                "what": what,
                "line": line,
                "column": node.col_offset,
                "text": self._text(line),
                "scope": self.scope,
                "guards": list(self.guards),
                "enabled": enabled,
                "dtype": dtype,
                "device": device,
                "receiver": receiver,
                "reference": reference,
            }
        )

    def _text(self, line):
        if not 0 < line <= len(self.source):
            return ""
        return redact_clip(self.source[line - 1].decode("utf-8", "replace").strip(), TEXT_LIMIT)

    def _segment(self, node):
        """The source of an expression (ast.unparse is 3.9+), whitespace collapsed, redacted and cut."""
        start, end = node.lineno, getattr(node, "end_lineno", None) or node.lineno
        if not 0 < start <= end <= len(self.source):
            return ""
        if start == end:
            text = self.source[start - 1][node.col_offset : node.end_col_offset]
        else:
            pieces = [self.source[start - 1][node.col_offset :]] + self.source[start : end - 1]
            text = b" ".join(pieces + [self.source[end - 1][: node.end_col_offset]])
        return redact_clip(" ".join(text.decode("utf-8", "replace").split()), TEXT_LIMIT)


def _autocast(target):
    return target.startswith("torch.") and target.rsplit(".", 1)[-1] == "autocast"


def _scaler(target):
    return target.startswith("torch.") and target.rsplit(".", 1)[-1] == "GradScaler"


def _device(target, args, node=None):
    if ".cuda." in target:
        return "cuda"
    if ".cpu." in target:
        return "cpu"
    value = next((k.value for k in node.keywords if k.arg == "device_type"), None) if node is not None else None
    if value is None and args and not isinstance(args[0], ast.Starred):
        value = args[0]
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else ""


def both_systems(sites):
    """Whether a file sets up apex.amp and torch's AMP, in any functions: then which function calls which is
    worth the whole file (a `fit` that names no AMP word may call the function of each), not only its key units."""
    kinds = set(site["kind"] for site in sites)
    return "apex_amp" in kinds and bool(kinds & {"autocast", "grad_scaler"})


def amp_sites(tree, lines, source=b"", every_unit=False):
    """The steps of mixed precision in a file, each with its function and the branches it sits under.

    autocast (entered or named, with its enabled, dtype and device), GradScaler built, apex.amp called, gradients
    clipped, and, in the same units, the scaler's scale(...).backward(), unscale_, step and plain backward calls,
    and calls to this file's functions that hold such steps (the call chains a check follows). A unit's steps are
    read only when it names one of SITE_KEYS, which keeps the answer the same for the windowed parse; in a file
    that sets up both AMP systems (``both_systems``) every unit is read, from a parse of the whole file.
    """
    source_lines = LINE_BREAK.split(source) if source else [line.encode("utf-8") for line in lines]
    keyed = _keyed_nodes(tree)
    units = _Sites(lines, source_lines, _module_bindings(tree, keyed), keyed, every_unit).run(tree)
    sites = [site for keyed, found in units if keyed or every_unit for site in found]
    if not every_unit and both_systems(sites):
        return amp_sites(tree, lines, source, every_unit=True)
    steps = [site for site in sites if site["kind"] != "call"]
    holders = set(site["scope"] for site in steps)
    calls = [site for site in sites if site["kind"] == "call"]
    kept, grew = [], True
    while grew:  # a call is kept when its callee holds steps, or calls one that does
        grew = False
        for call in calls:
            if call["what"] in holders and call not in kept:
                kept.append(call)
                if call["scope"] not in holders:
                    holders.add(call["scope"])
                    grew = True
    found = steps + [call for call in calls if call in kept]
    found.sort(key=lambda site: (site["line"], site["column"], site["kind"]))
    for site in found:
        del site["column"]
    return found


# ---------------------------------------------------------------- installed distributions


def _python_files(dist, location):
    """The .py files a distribution installed, from its RECORD (read directly: it is much faster)."""
    try:
        record = dist.read_text("RECORD")
    except Exception:
        record = None
    if record is None:  # an egg-info install lists its files elsewhere; let importlib.metadata find them
        try:
            return [str(entry.locate()) for entry in dist.files or [] if str(entry).endswith(".py")]
        except Exception:
            return []
    paths = (line.rsplit(",", 2)[0].strip('"') for line in record.splitlines())
    return [os.path.join(location, path) for path in paths if path.endswith(".py") and not path.startswith("..")]


def installed_uses(budget):
    """Installed distributions whose code imports apex: who switches to apex when it imports."""
    import importlib.metadata as metadata

    deadline = time.monotonic() + budget
    uses, unscanned, scanned = [], [], 0
    for dist in metadata.distributions():
        try:
            name, version = dist.metadata["Name"] or "", dist.metadata["Version"] or ""
        except Exception:
            continue
        if "".join("-" if ch in "_." else ch for ch in name.lower()) in SKIP_DISTRIBUTIONS:
            continue
        if time.monotonic() > deadline:
            unscanned.append(name)
            continue
        scanned += 1
        location = str(dist.locate_file(""))
        for path in _python_files(dist, location):
            source = _read(path)
            # The byte search is a memchr; the regex only runs on the few files that mention apex.
            if not source or b"apex" not in source or not APEX_IMPORT.search(source):
                continue
            tree = _parse(source, path)
            if tree is None:
                continue
            lines = source.decode("utf-8", "replace").splitlines()
            for use in apex_imports(tree, lines):
                use.update({"distribution": name, "version": version, "file": os.path.relpath(path, location)})
                uses.append(use)
    return {"uses": uses[:MAX_USES], "distributions_scanned": scanned, "unscanned": unscanned}


# ---------------------------------------------------------------- the user's project


READERS = (
    ("apex_uses", apex_imports),
    ("torch_amp_uses", torch_amp_uses),
    ("oneflow_uses", oneflow_uses),
    ("amp_sites", amp_sites),
)
USE_LIMITS = {"amp_sites": MAX_SITES}
WHOLE = "parse the whole file"


def _uses(tree, source, readers):
    lines = source.decode("utf-8", "replace").splitlines()
    return {
        key: read(tree, lines, source) if read is amp_sites else read(tree, lines)
        for wanted, (key, read) in zip(readers, READERS)
        if wanted
    }


def _window_tree(source, path, readers):
    """The syntax tree of the statements around the file's uses (see ``windows.py``); None when it can hold none
    (its key words all sit in strings and comments), WHOLE when only a parse of the whole file can say."""
    if _unsafe(source) or len(source) >= MAX_FILE or not windows.plain_utf8(source):  # a cut file, another encoding
        return WHOLE
    hits, masked = windows.hits(source, readers)
    if not hits:
        return None
    window = windows.window_source(source, masked, hits)
    if window is None:
        return WHOLE
    try:
        return ast.parse(window, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return WHOLE


def _file_uses(source, path, readers, skipped, label):
    """{reader's key: uses} of a flagged file, exactly as ``_parse`` of the whole file gives them.

    A file not worth a parse gives none; otherwise only the statements around its uses are parsed. When they
    hold a use, the whole file is checked to be Python by ``symtable`` (parsed in C, no syntax tree built):
    a file that is not Python reports nothing, as its whole-file parse did.
    """
    tree = _window_tree(source, path, readers)
    if tree is None:
        return {}
    if tree is not WHOLE:
        uses = _uses(tree, source, readers)
        if not any(uses.values()):
            return uses
        if both_systems(uses.get("amp_sites", ())):
            tree = WHOLE  # the call chains between them need every function: parse the whole file
    if tree is not WHOLE:
        try:
            symtable.symtable(source, path, "exec")
            return uses
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass  # not Python (the parse below says None), or a file ast.parse forgives and symtable does not
    tree = _parse(source, path, skipped, label)
    return {} if tree is None else _uses(tree, source, readers)


def _not_read(facts, labels, budget, limit):
    """Name the files the scan ran out of time for, as many as ``limit`` notes hold, then how many more."""
    room = limit - len(facts["skipped_files"])
    room = len(labels) if len(labels) <= room else max(1, room - 1)
    why = "not read, the scan ran out of its %.1f s budget" % budget
    facts["skipped_files"] += ["%s: %s" % (label, why) for label in labels[:room]]
    if len(labels) > room:
        facts["skipped_files"].append("%d more files: %s" % (len(labels) - room, why))


def file_cap(budget):
    """How many files a scan of ``budget`` seconds lists at most (FILES_PER_SECOND, at least MIN_FILES)."""
    return max(MIN_FILES, int(FILES_PER_SECOND * budget))


def project_facts(cwd, budget, skip=(), given=""):
    """The project scan of a run from ``cwd``: the root ``project_root.choose`` picks (``given``: --project's
    directory), and why, then :func:`project_uses` of it."""
    chosen = project_root.choose(cwd, given)
    if not chosen["root"]:
        facts = project_uses("", budget)
        facts["skipped"] = chosen["reason"]
        return facts
    if given and project_root.problem(chosen["root"]):  # checked by the host; gone or changed since
        facts = project_uses("", budget)
        facts["skipped"] = project_root.problem(chosen["root"])
        return facts
    facts = project_uses(
        chosen["root"],
        budget,
        file_cap(budget),
        skip,
        first=chosen["first"],
        nested_projects=chosen["nested_projects"],
    )
    facts["root_reason"] = chosen["reason"]
    return facts


def project_uses(top, budget, max_files=MIN_FILES, skip=(), first="", nested_projects=False):
    """apex imports, torch AMP use and OneFlow use in the code under ``top``, the project's root.

    ``first``: a directory below ``top`` read first; ``nested_projects``: folders holding a project file below
    ``top`` are other projects (see ``listing.python_files``). Other repositories are never read.
    """
    deadline = time.monotonic() + budget
    facts = {
        "root": top,
        "files_found": 0,
        "files_scanned": 0,
        "truncated": False,
        "apex_uses": [],
        "torch_amp_uses": [],
        "oneflow_uses": [],
        "amp_sites": [],
        "skipped_files": [],
        "other_repositories": [],
        "other_repositories_total": 0,
    }
    if not top or os.path.dirname(top) == top:  # never walk a whole filesystem from /
        facts["skipped"] = (
            "the filesystem root is never scanned whole; run mpdoctor from your project, or use --project DIR"
        )
        return facts
    paths, stopped, others = listing.python_files(top, deadline, max_files, first, nested_projects)
    facts["files_found"] = len(paths)
    facts["other_repositories"] = others[:MAX_OTHERS]
    facts["other_repositories_total"] = len(others)
    facts["truncated"] = bool(stopped)
    skip = tuple(os.path.join(path, "") for path in skip)
    prefix = os.path.join(top, "")

    def relative(path):  # the listing yields top + sep + the rest; relpath is slow, called 3,000 times
        return path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, top)

    for number, (path, regular) in enumerate(paths):
        if time.monotonic() > deadline:
            facts["truncated"] = True
            _not_read(
                facts,
                [relative(p) for p, _ in paths[number:] if not p.startswith(skip)],
                budget,
                MAX_SKIPPED - bool(stopped),
            )
            break
        if path.startswith(skip):
            continue
        try:
            source = listing.read(path, regular, MAX_FILE)
        except files.Refused as exc:
            facts["skipped_files"].append("%s: %s" % (relative(path), exc.why))
            continue
        except OSError:
            continue
        facts["files_scanned"] += 1
        readers = windows.readers(source)
        if not any(readers):
            continue
        label = relative(path)
        for key, uses in _file_uses(source, path, readers, facts["skipped_files"], label).items():
            facts[key] += [dict(use, file=label) for use in uses]
    for key, _ in READERS:
        facts[key] = facts[key][: USE_LIMITS.get(key, MAX_USES)]
    facts["skipped_files"] = facts["skipped_files"][: MAX_SKIPPED - bool(stopped)] + ([stopped] if stopped else [])
    return facts
