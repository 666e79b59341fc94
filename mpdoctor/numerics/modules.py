"""Which module is running, forward and backward: the module tree a numerics watch knows and its hooks.

Forward: pre/post forward hooks keep a stack of the modules running; an op belongs to the innermost.
Backward: autograd numbers every node it creates (its sequence number, from a counter that only grows); the
hooks note that counter at every module's entry and exit, so the number of the node a backward op runs in says
which module's forward made it (``owner``). That holds for a module called twice and for in-place ops, and
needs no backward hooks (which would wrap outputs and break in-place writes to them).

With no model (``numerics_watch()``, the CLI) global hooks register every module the first time it runs: the
first top-level module names its tree, later roots are prefixed by their class.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from typing import Any, Optional

MAX_BOUNDS = 400_000  # module entry/exit marks kept to attribute backward nodes (two per module call)


class Modules:
    """The modules a watch attributes ops to: qualified names, classes, parents, and who is running."""

    def __init__(self, torch: Any, model: Any) -> None:
        self._torch = torch
        self.model = model
        self.names: list[str] = []
        self.classes: list[str] = []
        self.parents: list[int] = []
        self.index: dict[int, int] = {}  # id(module) -> index
        self.by_name: dict[str, int] = {}
        self.alive: list[Any] = []  # weak references: in global mode a dead module's id may be reused
        self.stack: list[int] = []  # the modules whose forward is running, innermost last
        self.bounds_seq: list[int] = []  # the autograd sequence counter at each module entry and exit...
        self.bounds_mod: list[int] = []  # ...and the module running from that mark on (-1: none)
        self._held: dict[int, tuple] = {}  # id(parameter) -> (the module holding it, a weak reference to it)
        self._held_count = -1  # modules mapped into _held
        if model is not None:
            for name, module in model.named_modules():
                self.register(module, name)

    def register(self, module: Any, name: str, parent: Optional[int] = None) -> int:
        index = self.index.get(id(module))
        if index is not None:
            return index
        index = len(self.names)
        self.index[id(module)] = index
        self.alive.append(weakref.ref(module))
        self.names.append(name)
        self.classes.append(type(module).__name__)
        if parent is None:  # from the name: "a.b" is a child of "a", and "a" of the root ""
            parent = self.by_name.get(name.rsplit(".", 1)[0] if "." in name else "", -1) if name else -1
        self.parents.append(parent)
        self.by_name.setdefault(name, index)
        return index

    def register_root(self, module: Any) -> int:
        """Global mode: the first module called at the top names its tree; later roots are prefixed by class."""
        prefix = "" if not self.names else type(module).__name__
        root = self.register(module, prefix, parent=-1)  # a root of its own, never a child of the first
        for name, sub in module.named_modules():
            if name:
                self.register(sub, f"{prefix}.{name}" if prefix else name)
        return root

    def module(self, name: Optional[str]) -> Any:
        """The module object of a qualified name, while it is alive; None when unknown or gone."""
        index = self.by_name.get(name) if name is not None else None
        return None if index is None else self.alive[index]()

    def root_of(self, name: Optional[str]) -> Any:
        """The top-level module that ``name`` belongs to (the watched model, or a root global mode found)."""
        index = self.by_name.get(name) if name is not None else None
        if index is None:
            return None
        while self.parents[index] >= 0:
            index = self.parents[index]
        return self.alive[index]()

    def hook(self, watch: Any) -> list:
        """Install the forward hooks for ``watch``; returns their handles. The outermost module's return ends an
        inference step (no backward will): the watch reads its statistics there."""
        seq = self._torch._C._autograd._get_sequence_nr
        grad_enabled = self._torch.is_grad_enabled
        stack, bounds_seq, bounds_mod = self.stack, self.bounds_seq, self.bounds_mod
        everything = self.model is None

        def pre_hook(module, args):
            if not watch._active:
                return
            if watch._quiet and watch._stepping:
                watch.listen()  # a module called while an optimizer step is still "running": that step raised
            index = self.index.get(id(module))
            if index is not None and everything and self.alive[index]() is not module:
                index = None  # a module that died, and this new one got its id
            if index is None:
                if not everything:
                    return
                if not stack:
                    index = self.register_root(module)
                else:
                    name = f"{self.names[stack[-1]]}.({type(module).__name__})".lstrip(".")
                    index = self.register(module, name, stack[-1])
            stack.append(index)
            bounds_seq.append(seq())
            bounds_mod.append(index)

        def post_hook(module, args, output):
            index = self.index.get(id(module))
            if index is None or index not in stack:
                return
            while stack and stack.pop() != index:  # a child that raised never popped itself
                pass
            bounds_seq.append(seq())
            bounds_mod.append(stack[-1] if stack else -1)
            if not stack and not grad_enabled() and watch._active:
                watch._flush()  # inference: no backward will end this step, the outermost module's return does

        # Global hooks, also for one model (its modules are the known ones): two registrations instead of two per
        # module, which a watch made for every step would pay each time.
        hooks = self._torch.nn.modules.module
        return [
            hooks.register_module_forward_pre_hook(pre_hook),
            hooks.register_module_forward_hook(post_hook, always_call=True),
        ]

    def parameter_owner(self, parameter: Any) -> int:
        """The module that holds ``parameter`` as its own (-1: none this watch knows), for the optimizer's update."""
        if self._held_count != len(self.names):  # modules registered since (global mode): map theirs too
            self._held_count = len(self.names)
            for index, ref in enumerate(self.alive):
                module = ref()
                for value in getattr(module, "_parameters", {}).values() if module is not None else ():
                    if value is not None:
                        self._held.setdefault(id(value), (index, weakref.ref(value)))
        found = self._held.get(id(parameter))
        return found[0] if found is not None and found[1]() is parameter else -1

    def owner(self, sequence_nr: int) -> int:
        """The module whose forward made the autograd node numbered ``sequence_nr`` (-1: outside every module)."""
        at = bisect_right(self.bounds_seq, sequence_nr) - 1
        return self.bounds_mod[at] if at >= 0 else -1

    def trim(self) -> None:
        if len(self.bounds_seq) > MAX_BOUNDS:  # keep the newest half: old graphs have run their backward
            del self.bounds_seq[: MAX_BOUNDS // 2], self.bounds_mod[: MAX_BOUNDS // 2]
