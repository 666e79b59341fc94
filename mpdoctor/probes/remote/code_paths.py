"""The code paths of mixed precision in a parsed file: where AMP is set up, and in what order (``amp_sites``).

Loaded beside ``scan.py`` (stdlib only, Python 3.8+, judges nothing). Each step (autocast entered or named,
GradScaler built, apex.amp called, gradients clipped, the scaler's backward, unscale_ and step) comes with its
function and the if/else branches above it, and the calls between this file's functions that hold such steps:
the facts the checks that judge paths rather than words read (checks/_code.py). Which units are read, and what
a name means through the file's imports, is ``code_names.py``'s.
"""

import ast
import re

from ._portable import limits, redact
from .amp_uses import _dotted
from .code_names import SITE_KEYS, _bindings, _keyed, _keyed_nodes, _module_bindings, _resolve

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

MAX_SITES = 2000
LINE_BREAK = re.compile(rb"\r\n|\r|\n")  # where the parser starts a line (str.splitlines knows more)
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
        return redact_clip(self.source[line - 1].decode("utf-8", "replace").strip(), limits.CODE_LINE)

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
        return redact_clip(" ".join(text.decode("utf-8", "replace").split()), limits.CODE_LINE)


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
