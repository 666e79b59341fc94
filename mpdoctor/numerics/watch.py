"""Name the first module whose fp16/bf16 values overflow, turn NaN or underflow, forward and backward, live.

    with numerics_watch(model) as watch:       # or numerics_watch() for every module the process builds
        loss = loss_fn(model(x))
        loss.backward()
    print(watch)        # the verdict: the first event, where, the fix; headroom per module
    watch.first         # None or an Event (.module, .kind, .phase, .op, .dtype, .fix)

How it sees inside modules: a ``TorchDispatchMode`` observes every aten op, forward and backward
(autograd runs its backward ops through the same dispatcher). Forward ops belong to the innermost
module on a stack kept by forward pre/post hooks. Backward ops belong to the module whose forward
created the autograd node that is running (``torch._C._current_autograd_node()``): each node carries
the sequence number autograd gave it when the forward created it, and the hooks note the sequence
counter at every module's entry and exit, so a node's number says which module's forward it was made
in. That holds for modules called twice and for in-place ops, and needs no backward hooks (which
would wrap outputs and break in-place writes to them).

What is measured, and when it reaches the host: for every floating output, its min and max
(``torch.aminmax``, one kernel; NaN propagates) and, for fp16, the count of values that are zero or
subnormal. These stay on the device, in a list; they are read together, with one ``tolist()`` per
device, at the end of each backward (a callback queued on the autograd engine), at ``watch.step()``
and when the block ends: one host read per training step. Nothing is ever written to a tensor the
model sees, so outputs are bit-identical with and without the watch.

What counts as an event (judged on the host after that read, op by op, in the order they ran):

* overflow: an output holds +/-inf though every input was finite (a ``-inf`` written by a mask op
  such as ``masked_fill`` or an additive mask is not one); nan: an output holds NaN though every input
  was finite. An op whose input already held inf/NaN only passes it on: not an event, so the first
  event is where the values left the range, not where they reached a module's boundary.
* underflow: for products, quotients, casts and gradient ops (``ops.judges_underflow``) with an fp16
  output, the share of outputs that are zero or subnormal exceeds the largest such share among its
  inputs by ``UNDERFLOW_MARGIN``, and the output's largest |value| is within ``UNDERFLOW_BITS`` of the
  smallest normal number: values flushed where the inputs had none to give, in a tensor that as a whole
  sits at the bottom of the range. A ReLU's zeros, a dropout mask's or an unused embedding row's are in
  its inputs (or the op is not judged).
* GradScaler: its backward overflows in a step whose ``update()`` found inf at a scale above 1 are
  the scaler doing its job: listed in ``watch.scaler`` with the scale, not as events. Overflow that
  persists at scale 1, or in the forward, is the model's.

Importing this module does not import torch; the watch does, when it is made.
"""

from __future__ import annotations

import math
import threading
import weakref
from bisect import bisect_right
from typing import Any, Callable, Optional

from mpdoctor.numerics.events import Event, ScalerStep, headroom_bits
from mpdoctor.numerics.fixes import fixes_for
from mpdoctor.numerics.judge import UNDERFLOW_BITS as UNDERFLOW_BITS  # re-exported: the rules' constants
from mpdoctor.numerics.judge import UNDERFLOW_MARGIN as UNDERFLOW_MARGIN
from mpdoctor.numerics.judge import UNDERFLOW_MIN_ELEMENTS as UNDERFLOW_MIN_ELEMENTS
from mpdoctor.numerics.judge import judge, unpack
from mpdoctor.numerics.judge import worse as _worse
from mpdoctor.numerics.ops import ALIASING, judges_underflow
from mpdoctor.numerics.steps import hook_steps
from mpdoctor.numerics.verdict import verdict_text

MAX_BOUNDS = 400_000  # module entry/exit marks kept to attribute backward nodes (two per module call)
MAX_EVENTS = 1000  # distinct (module, op, phase, kind) kept
MAX_WINDOW = 200_000  # measurements held on the device between reads, at most (a few bytes each)
_VIEW, _MEASURE = 1, 2
_INFINITIES = (math.inf, -math.inf)
_NO_NODE = 2**64 - 1  # AccumulateGrad and other nodes made outside a forward carry this sequence number


class NumericsWatch:
    """Watches ``model`` (every submodule) or, with ``model=None``, every module the process calls.

    ``first``, ``events``, ``headroom``, ``scaler`` hold what was found so far (read once per step);
    ``str(watch)`` is the verdict, ``to_data()`` the same as JSON-ready data. ``on_event`` is called with
    each new event as soon as it is known (the CLI prints the first one live). ``steps`` stops watching
    after that many optimizer steps (the model then runs unobserved, at full speed).
    """

    def __init__(
        self,
        model: Any = None,
        *,
        steps: Optional[int] = None,
        on_event: Optional[Callable[[Event], None]] = None,
    ) -> None:
        import torch  # here, not at import time: `import mpdoctor` must stay torch-free

        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"numerics_watch needs a torch.nn.Module (or None for every module), got {type(model).__name__}"
            )
        if steps is not None and steps < 1:
            raise ValueError("steps must be at least 1")
        self._torch = torch
        self.model = model
        self.max_steps = steps
        self.on_event = on_event
        self.events: list[Event] = []
        self.scaler: list[ScalerStep] = []
        self.step_index = 0
        self.reads = 0  # host reads of the statistics (one per step)
        self.ops_seen = 0
        self.skipped = 0  # ops the watch could not read (sparse or subclassed tensors): run, not judged
        self.problems: list[str] = []  # reads of the statistics that failed (that window is not judged)
        self._names: list[str] = []
        self._classes: list[str] = []
        self._parents: list[int] = []
        self._index: dict[int, int] = {}
        self._by_name: dict[str, int] = {}
        self._alive: list[Any] = []  # weak references: in global mode a dead module's id may be reused
        self._largest: dict[int, tuple[float, str]] = {}  # module -> (largest |value| of its forward, dtype)
        self._seen: dict[tuple, Event] = {}
        self._pending: list[tuple[int, Event]] = []  # backward events of scaled steps, until the scaler judged
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str, Any]] = []
        self._mode: Any = None
        self._active = False
        self._quiet = 0
        self._lock = threading.RLock()
        self._kinds: dict[Any, tuple[int, str, bool]] = {}  # op -> (view or measured, name, underflow judged)
        self._tiny = {torch.float16: torch.finfo(torch.float16).tiny}
        self._tiny_value = {"float16": torch.finfo(torch.float16).tiny}
        self._finfo_max = {
            str(d).replace("torch.", ""): torch.finfo(d).max for d in (torch.float16, torch.bfloat16, torch.float32)
        }
        self._floating = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
        self._tensor_type = torch.Tensor
        self._plain = (torch.Tensor, torch.nn.Parameter)
        self._strided = torch.strided
        self._current_node = torch._C._current_autograd_node
        self._scaled_steps: set[int] = set()
        self._stepped_since_flush = False
        self._reset_window()
        self._stack: list[int] = []
        self._bounds_seq: list[int] = []
        self._bounds_mod: list[int] = []
        if model is not None:
            for name, module in model.named_modules():
                self._register(module, name)

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> "NumericsWatch":
        if self._active:
            raise RuntimeError("this numerics_watch is already active; make a new one")
        torch = self._torch
        try:
            self._hook_modules()
            self._hook_steps()
            self._mode = _mode_class(torch)(self)
            self._mode.__enter__()
        except BaseException:
            self._unhook()
            raise
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if self._active:
                self._flush()
        finally:
            self._active = False
            try:
                if self._mode is not None:
                    self._mode.__exit__(None, None, None)
            finally:
                self._mode = None
                self._unhook()
                self._resolve_pending(final=True)
        return False

    def step(self) -> None:
        """End of a training step: read this step's statistics now (one host read). Optional: the end of each
        backward and the end of the block read them too; call it after a forward-only step to see it live."""
        self._flush()
        if not self._stepped_since_flush:
            self._advance()
        self._stepped_since_flush = False

    # ------------------------------------------------------------------ results

    @property
    def first(self) -> Optional[Event]:
        """The first event, in the order the ops ran; None when the model stayed in range."""
        return self.events[0] if self.events else None

    @property
    def headroom(self) -> dict[str, float]:
        """{module: bits between the largest |value| its forward produced (its submodules' included) and its
        dtype's max}: 0 where it overflowed. Modules that ran only in fp32 are left out."""
        largest: dict[int, tuple[float, str]] = {}
        for index, (value, dtype) in self._largest.items():
            while index >= 0:
                if index not in largest or _worse(value, dtype, *largest[index], self._finfo_max):
                    largest[index] = (value, dtype)
                index = self._parents[index]
        out = {}
        for index in sorted(largest):
            value, dtype = largest[index]
            if value > 0 or math.isnan(value):  # a module that only ever produced zeros has no bound to speak of
                out[self._names[index]] = headroom_bits(value, self._finfo_max[dtype])
        return out

    def verdict(self) -> str:
        return verdict_text(self)

    def __str__(self) -> str:
        return self.verdict()

    def to_data(self) -> dict:
        return {
            "first": None if self.first is None else self.first.to_data(),
            "events": [e.to_data() for e in self.events],
            "headroom": self.headroom,
            "scaler": [s.to_data() for s in self.scaler],
            "steps": self.step_index,
            "reads": self.reads,
            "ops": self.ops_seen,
            "skipped": self.skipped,
            "problems": list(self.problems),
        }

    # ------------------------------------------------------------------ modules

    def _register(self, module: Any, name: str, parent: Optional[int] = None) -> int:
        index = self._index.get(id(module))
        if index is not None:
            return index
        index = len(self._names)
        self._index[id(module)] = index
        self._alive.append(weakref.ref(module))
        self._names.append(name)
        self._classes.append(type(module).__name__)
        if parent is None:  # from the name: "a.b" is a child of "a", and "a" of the root ""
            parent = self._index_of_name(name.rsplit(".", 1)[0] if "." in name else "") if name else -1
        self._parents.append(parent)
        self._by_name.setdefault(name, index)
        return index

    def _index_of_name(self, name: str) -> int:
        return self._by_name.get(name, -1)

    def _register_root(self, module: Any) -> int:
        """Global mode: the first module called at the top names its tree; later roots are prefixed by class."""
        prefix = "" if not self._names else type(module).__name__
        root = self._register(module, prefix, parent=-1)  # a root of its own, never a child of the first
        for name, sub in module.named_modules():
            if name:
                self._register(sub, f"{prefix}.{name}" if prefix else name)
        return root

    def _hook_modules(self) -> None:
        seq = self._torch._C._autograd._get_sequence_nr
        grad_enabled = self._torch.is_grad_enabled
        stack, bounds_seq, bounds_mod = self._stack, self._bounds_seq, self._bounds_mod
        everything = self.model is None

        def pre_hook(module, args):
            if not self._active:
                return
            index = self._index.get(id(module))
            if index is not None and everything and self._alive[index]() is not module:
                index = None  # a module that died, and this new one got its id
            if index is None:
                if not everything:
                    return
                index = (
                    self._register_root(module)
                    if not stack
                    else self._register(
                        module, f"{self._names[stack[-1]]}.({type(module).__name__})".lstrip("."), stack[-1]
                    )
                )
            stack.append(index)
            bounds_seq.append(seq())
            bounds_mod.append(index)

        def post_hook(module, args, output):
            index = self._index.get(id(module))
            if index is None or index not in stack:
                return
            while stack and stack.pop() != index:  # a child that raised never popped itself
                pass
            bounds_seq.append(seq())
            bounds_mod.append(stack[-1] if stack else -1)
            if not stack and not grad_enabled() and self._active:
                self._flush()  # inference: no backward will end this step, the outermost module's return does

        if everything:
            hooks = self._torch.nn.modules.module
            self._handles.append(hooks.register_module_forward_pre_hook(pre_hook))
            self._handles.append(hooks.register_module_forward_hook(post_hook, always_call=True))
            return
        for module in self.model.modules():
            self._handles.append(module.register_forward_pre_hook(pre_hook))
            self._handles.append(module.register_forward_hook(post_hook, always_call=True))

    def _owner(self, sequence_nr: int) -> int:
        at = bisect_right(self._bounds_seq, sequence_nr) - 1
        return self._bounds_mod[at] if at >= 0 else -1

    # ------------------------------------------------------------------ steps, optimizers, GradScaler

    def _hook_steps(self) -> None:
        hook_steps(self)

    def _advance(self) -> None:
        self.step_index += 1
        self._stepped_since_flush = True
        if self.max_steps is not None and self.step_index >= self.max_steps and self._active:
            self._flush()
            self._active = False  # the mode stays pushed but passes every op straight through

    def _unhook(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched = []

    # ------------------------------------------------------------------ the hot path (called by the mode)

    def _reset_window(self) -> None:
        self._buckets: dict[Any, tuple[list, list, list, list]] = {}  # device -> (lows, highs, tinies, tiny owners)
        self._where: list[tuple[Any, int]] = []  # measured slot -> (device, position)
        self._meta: list[tuple[int, str, int]] = []  # slot -> (numel, dtype name, 1 if tiny counted)
        self._records: list[tuple] = []
        self._zeros_counted: set[int] = set()
        # id(tensor) -> (slot, weak reference, version): a tensor written in place since (by an op the watch
        # did not see: an optimizer's update, `.data =`) has another version, and is measured again.
        self._refs: dict[int, tuple[int, Any, int]] = {}
        self._scaler_slots: list[tuple[int, tuple[int, int, int]]] = []
        self._callback_queued = False

    def _classify(self, func) -> tuple[int, str, bool]:
        name = getattr(func, "_opname", None) or str(func).split(".")[-2]
        schema = getattr(func, "_schema", None)
        if schema is not None and schema.is_mutable:
            kind = _MEASURE  # an in-place write (uniform_, mul_, copy_, out=): new values, whatever its name
        elif name in ALIASING or getattr(func, "is_view", False):
            kind = _VIEW
        else:
            kind = _MEASURE
        self._kinds[func] = (kind, name, judges_underflow(name))
        return self._kinds[func]

    def _measure(self, tensor) -> int:
        """Queue the statistics of ``tensor`` on its device; returns its slot. No host read."""
        torch = self._torch
        if type(tensor) not in self._plain or tensor.layout is not self._strided:
            raise TypeError("not a plain dense tensor")  # a DTensor, a sparse tensor: left alone
        lo, hi = torch.aminmax(tensor)
        device = tensor.device
        bucket = self._buckets.get(device)
        if bucket is None:
            bucket = self._buckets[device] = ([], [], [], [])
        slot = len(self._where)
        self._where.append((device, len(bucket[0])))
        bucket[0].append(lo)
        bucket[1].append(hi)
        tiny = self._tiny.get(tensor.dtype)
        if tiny is not None:
            bucket[2].append((tensor.abs() < tiny).sum())
            bucket[3].append(slot)
            self._zeros_counted.add(slot)
        self._meta.append((tensor.numel(), str(tensor.dtype)[6:], tiny is not None))
        return slot

    def _count_zeros(self, slot: int, tensor) -> None:
        bucket = self._buckets[self._where[slot][0]]
        bucket[2].append((tensor == 0).sum())
        bucket[3].append(slot)
        self._zeros_counted.add(slot)

    def _raw(self, scalar) -> int:
        """Queue a 0-d value (a scaler's scale) to be read with the statistics."""
        bucket = self._buckets.get(scalar.device)
        if bucket is None:
            bucket = self._buckets[scalar.device] = ([], [], [], [])
        slot = len(self._where)
        self._where.append((scalar.device, len(bucket[0])))
        bucket[0].append(scalar)
        bucket[1].append(scalar)
        self._meta.append((1, str(scalar.dtype)[6:], False))
        return slot

    def _leaf(self, tensor) -> int:
        """Measure a tensor no op of this window made (a parameter, an input); returns its slot."""
        if tensor.numel() == 0:
            return -1
        slot = self._measure(tensor)
        self._refs[id(tensor)] = (slot, weakref.ref(tensor), _version(tensor))
        return slot

    def _observe(self, func, args, kwargs):
        """Run ``func`` and record it: the mode's whole job. Kept lean: it runs for every op of the step.

        The op always runs as it would: anything the watch cannot read (a sparse or subclassed tensor, an
        exotic dtype) leaves that op unrecorded, counted in ``skipped``, never an error in the user's step.
        """
        try:
            state = self._before(func, args, kwargs)
        except Exception:
            state = None
            self.skipped += 1
        out = func(*args, **kwargs)
        if state is not None:
            try:
                self._after(state, out)
            except Exception:
                self.skipped += 1
        return out

    def _before(self, func, args, kwargs):
        """Which module and phase, and the inputs' slots (measuring leaves): before the op can write them."""
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._classify(func)
        node = self._current_node()
        if node is None:
            phase, module = 0, (self._stack[-1] if self._stack else -1)
        else:
            sequence_nr = node._sequence_nr()
            if sequence_nr == _NO_NODE:  # AccumulateGrad writing .grad: the values were judged when made
                return None
            phase, module = 1, self._owner(sequence_nr)
            if not self._callback_queued:
                self._callback_queued = True
                self._torch.autograd.Variable._execution_engine.queue_callback(self._end_of_backward)
        tensor_type = self._tensor_type
        tensors = []
        constant = False
        for value in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(value, tensor_type):
                tensors.append(value)
            elif type(value) is list or type(value) is tuple:
                tensors.extend(item for item in value if isinstance(item, tensor_type))
            elif type(value) is float and (value != value or value in _INFINITIES):
                constant = True  # a -inf fill value: what comes out was put in
        inputs = []
        wider = []  # (slot, tensor) of inputs wider than fp16, for an op judged for underflow: zeros counted if needed
        floating, narrow, judged, refs = self._floating, self._tiny, kind[2], self._refs
        for item in tensors:
            if item.dtype not in floating:
                continue
            entry = refs.get(id(item))
            if entry is not None and entry[1]() is item and entry[2] == _version(item):
                inputs.append(entry[0])
                if judged and item.dtype not in narrow:
                    wider.append((entry[0], item))
            elif phase == 0 or (judged and item.dtype in narrow):
                inputs.append(self._leaf(item))
                if judged and item.dtype not in narrow:
                    wider.append((inputs[-1], item))
            else:
                # In the backward an unknown input is a tensor autograd saved and re-wrapped: its values were
                # judged when the forward made them, so it is measured again only where its zeros matter
                # (an fp16 op judged for underflow).
                inputs.append(-1)
        return kind, node, phase, module, inputs, wider, constant

    def _after(self, state, out) -> None:
        """Tag and measure the op's outputs, and record it."""
        kind, node, phase, module, inputs, wider, constant = state
        tensor_type, floating, refs = self._tensor_type, self._floating, self._refs
        if type(out) is tuple or type(out) is list:
            results = out
        else:
            results = (out,)
        if kind[0] == _VIEW:
            if inputs and inputs[0] >= 0:
                source = inputs[0]
                for tensor in results:
                    if isinstance(tensor, tensor_type):
                        refs[id(tensor)] = (source, weakref.ref(tensor), _version(tensor))
            return
        outputs = []
        for tensor in results:
            if isinstance(tensor, tensor_type) and tensor.dtype in floating and tensor.numel():
                slot = self._measure(tensor)
                refs[id(tensor)] = (slot, weakref.ref(tensor), _version(tensor))
                outputs.append(slot)
        if wider and outputs and self._meta[outputs[0]][2]:
            # An fp16 output made from wider inputs (a cast of fp32 gradients): its inputs' zeros are what it may
            # honestly hold, so count them now, while they are intact.
            for slot, tensor in wider:
                if slot >= 0 and slot not in self._zeros_counted:
                    self._count_zeros(slot, tensor)
        if outputs:
            self.ops_seen += 1
            self._records.append((kind[1], module, phase, self.step_index, outputs, inputs, constant))
            if len(self._where) > MAX_WINDOW and not self._stack and node is None:
                self._flush()  # no backward and no step() for a long while (inference with grad on): read now

    def _end_of_backward(self) -> None:
        self._callback_queued = False
        self._flush()

    # ------------------------------------------------------------------ the one host read, and the judging

    def _flush(self) -> None:
        with self._lock:
            if not self._where:
                self._reset_window()
                return
            torch = self._torch
            self._quiet += 1
            try:
                values: dict[Any, list] = {}
                for device, (lows, highs, tinies, _) in self._buckets.items():
                    parts = [torch.stack(lows).float(), torch.stack(highs).float()]
                    if tinies:
                        parts.append(torch.stack(tinies).float())
                    values[device] = torch.cat(parts).tolist()  # the one host read of this window, per device
                    self.reads += 1
            except Exception as exc:  # never an error in the user's backward: say so, judge the next window
                self.problems.append(f"{type(exc).__name__}: {exc}"[:500])
                self._reset_window()
                return
            finally:
                self._quiet = max(0, self._quiet - 1)
            measured = unpack(values, self._buckets, self._where, self._meta)
            if len(self._bounds_seq) > MAX_BOUNDS:  # keep the newest half: old graphs have run their backward
                del self._bounds_seq[: MAX_BOUNDS // 2], self._bounds_mod[: MAX_BOUNDS // 2]
            records, scaler_slots = self._records, self._scaler_slots
            self._reset_window()
            judge(records, measured, self._finfo_max, self._tiny_value, self._note_largest, self._event)
            for step, (before, found, after) in scaler_slots:
                self.scaler.append(
                    ScalerStep(
                        step=step,
                        scale=measured[before].hi,
                        found_inf=found >= 0 and measured[found].hi != 0,
                        new_scale=measured[after].hi,
                    )
                )
            self._resolve_pending(final=False)

    def _note_largest(self, module: int, value: float, dtype: str) -> None:
        current = self._largest.get(module)
        if current is None or _worse(value, dtype, *current, self._finfo_max):
            self._largest[module] = (value, dtype)

    def _event(self, kind: str, phase: int, module: int, op: str, dtype: str, step: int, detail: str) -> None:
        name = None if module < 0 else self._names[module]
        cls = "" if module < 0 else self._classes[module]
        phase_name = "backward" if phase else "forward"
        key = (name, op, phase_name, kind)
        seen = self._seen.get(key)
        if seen is not None:
            seen.count += 1
            return
        if len(self._seen) >= MAX_EVENTS:
            return
        event = Event(
            kind=kind,
            phase=phase_name,
            module=name,
            cls=cls,
            op=op,
            dtype=dtype,
            step=step,
            detail=detail,
            fixes=fixes_for(kind, phase_name, name, cls, op, dtype),
        )
        self._seen[key] = event
        if phase and kind in ("overflow", "nan") and step in self._scaled_steps:
            self._pending.append((step, event))  # the scaler may own it: wait for its update()
            return
        self._publish(event)

    def _publish(self, event: Event) -> None:
        self.events.append(event)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a printer that fails must not break the user's step
                pass

    def _resolve_pending(self, final: bool) -> None:
        judged = {s.step: s for s in self.scaler}
        keep = []
        for step, event in self._pending:
            verdict = judged.get(step)
            if verdict is None and not final:
                keep.append((step, event))
            elif verdict is not None and verdict.found_inf and verdict.scale > 1:
                # The scaler skipped this step and lowered its scale: its job, not the model's. The same op
                # overflowing again later (at scale 1) must be a new event, not a count on this one.
                key = (event.module, event.op, event.phase, event.kind)
                if self._seen.get(key) is event:
                    del self._seen[key]
            else:
                event.detail += (
                    " (with GradScaler at scale 1 or less: the model's, not the scaler's)" if verdict else ""
                )
                self._publish(event)
        self._pending = keep
        self.events.sort(key=lambda e: (e.step, 0 if e.phase == "forward" else 1))


def _version(tensor) -> int:
    try:
        return tensor._version
    except RuntimeError:  # an inference-mode tensor keeps no version counter; it is never written in place
        return -1


_MODE: Any = None


def _mode_class(torch):
    """The dispatch mode, defined on first use (its base class needs torch)."""
    global _MODE
    if _MODE is None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class NumericsMode(TorchDispatchMode):
            def __init__(self, watch: NumericsWatch) -> None:
                super().__init__()
                self.watch = watch

            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                return False  # else every call is wrapped in torch._disable_dynamo: a third of the cost, for nothing

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                watch = self.watch
                if not watch._active or watch._quiet:
                    return func(*args, **(kwargs or {}))
                return watch._observe(func, args, kwargs or {})

        _MODE = NumericsMode
    return _MODE


def numerics_watch(model: Any = None, *, steps: Optional[int] = None, on_event=None) -> NumericsWatch:
    """Watch ``model`` (or, with None, every module) for overflow, NaN and underflow, forward and backward."""
    return NumericsWatch(model, steps=steps, on_event=on_event)
