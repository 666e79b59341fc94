"""What the code-path reader knows of a file's names: which nodes name a key word, what a name means.

Loaded beside ``code_paths.py`` (stdlib only, Python 3.8+). A unit of code (a function, or a top-level
statement) is read only when it names one of SITE_KEYS (``_keyed_nodes`` finds those in one pass); a name is
resolved through the file's imports (``_bindings``, ``_resolve``) to the dotted name it means, so that
``from torch import autocast as ac`` still reads as ``torch.autocast``.
"""

import ast

# Identifiers a unit of code (a function, or a top-level statement) must hold for its sites to be read: each is a
# key word of windows.KEYS' code-path reader, so a unit holding one is parsed whole by the windowed scan as well.
SITE_KEYS = frozenset(
    ("autocast", "GradScaler", "amp", "apex", "clip_grad_norm_", "clip_grad_value_", "scale_loss", "unscale_")
)
TORCH_ROOTS = ("torch",)


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
