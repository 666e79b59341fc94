"""The dispatch mode's hot path: what a numerics watch does for every op of the step (``Recorder.observe``).

For every op: which module and phase it runs in (:mod:`mpdoctor.numerics.modules`), the slots of its floating
inputs (measuring the ones no op of the step made: parameters, inputs), and once it ran, its floating outputs'
statistics, queued on their device (:mod:`mpdoctor.numerics.window`). Views and copies share their source's slot;
a widening cast, a ``masked_fill`` with a number and an activation get extrema derived from their input's. The
zero-or-subnormal shares the underflow judgement needs are sampled only where it uses them: the fp16/bf16
outputs of the ops judged for underflow and those ops' inputs (not a term added to a product: addmm's bias).
Nothing here reads a value on the host.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from mpdoctor.numerics.ops import ALIASING, ALL, ALL_BUT_FIRST, bounding, judges_underflow
from mpdoctor.numerics.window import ACTIVATIONS, Types, Window, version_of

MAX_WINDOW = 200_000  # measured tensors held between reads, at most (two 0-d tensors each)
_VIEW, _MEASURE, _CAST, _DERIVED = 1, 2, 3, 4
_IGNORED = -2  # an input that does not bound the op's zeros (ops.bounding), unknown in the backward: not needed
_NO_NODE = 2**64 - 1  # AccumulateGrad and other nodes made outside a forward carry this sequence number
_INFINITIES = (math.inf, -math.inf)
_LOW_MAX = 65504.0  # fp16's largest finite value: a number beyond it cannot be stored in fp16
# Norms whose outputs after the first are saved statistics (the mean, 1/std) for their backward.
_STATISTICS_AFTER = frozenset(
    {"native_layer_norm", "native_batch_norm", "_native_batch_norm_legit", "native_group_norm", "_fused_rms_norm"}
)
# Shared by every watch of the process (a watch per step must not pay for it again): aten ops are immortal.
_KINDS: dict[int, tuple] = {}  # id(op) -> (kind, name, judged for underflow, callable, a view / ops.bounding)


class Recorder:
    """The watch's hot path: ``observe`` runs (and records) every op the dispatch mode sees."""

    def __init__(self, watch: Any, torch: Any, modules: Any) -> None:
        self.watch = watch
        self.torch = torch
        self.modules = modules
        self.ops = 0  # ops recorded
        self.skipped = 0  # ops the watch could not read (sparse or subclassed tensors): run, not judged
        self.types = types = _types(torch)
        self.window = Window(types)
        self.callback_queued = False
        self.kinds = _KINDS
        self.floating, self.low, self.wide = types.floating, types.low, types.wide
        self.tensor = torch.Tensor
        self.current_node = torch._C._current_autograd_node

    # ------------------------------------------------------------------ per op

    def classify(self, func) -> tuple:
        name = getattr(func, "_opname", None) or str(func).split(".")[-2]
        schema = getattr(func, "_schema", None)
        if schema is not None and schema.is_mutable:
            kind = _MEASURE  # an in-place write (uniform_, mul_, copy_, out=): new values, whatever its name
        elif name in ALIASING or getattr(func, "is_view", False):
            kind = _VIEW
        elif name == "_to_copy":
            kind = _CAST
        elif name in ACTIVATIONS or (name == "masked_fill" and getattr(func, "_overloadname", "") == "Scalar"):
            kind = _DERIVED
        else:
            kind = _MEASURE
        call = func._op if type(func).__name__ == "OpOverload" and hasattr(func, "_op") else func
        # A view's version counter is its source's, but only once the op has returned (autograd's view setup runs
        # above this mode): it is recorded with its source's version. For a view: whether it is one.
        fifth = bool(getattr(func, "is_view", False)) if kind == _VIEW else bounding(name)
        self.kinds[id(func)] = info = (kind, name, judges_underflow(name), call, fifth)
        return info

    def observe(self, func, args, kwargs):
        """Run ``func`` and record it: the mode's whole job, for every op of the step, so kept lean.

        The op always runs as it would: what the watch cannot read (a sparse or subclassed tensor, an exotic
        dtype) leaves that op unrecorded, counted in ``skipped``, never an error in the user's step.
        """
        info = self.kinds.get(id(func))
        if info is None:
            info = self.classify(func)
        if info[0] == _VIEW:
            out = info[3](*args, **kwargs)
            if args:
                try:
                    self._alias(args[0], out, info[4])
                except Exception:  # not ours to read (an inference tensor has no version): its consumer measures it
                    pass
            return out
        try:
            state = self._before(info, args, kwargs)
        except Exception:
            state = None
            self.skipped += 1
        out = info[3](*args, **kwargs)
        if state is not None:
            try:
                self._after(state, out)
            except Exception:
                self.skipped += 1
        return out

    def _alias(self, source, out, view: bool) -> None:
        """A view or copy: its values are its source's, so it shares the source's slot. A floating source no op
        made (a parameter, viewed as its transpose for a matmul) is measured here, in the forward: its own memory
        in order, once, for every view of it the step takes, forward and backward."""
        refs = self.window.refs
        entry = refs.get(id(source))
        if entry is None or entry[1]() is not source or entry[2] != version_of(source):
            if (
                not isinstance(source, self.tensor)
                or source.dtype not in self.floating
                or self.current_node() is not None
                or not source.is_leaf
            ):
                return
            self.window.leaf(source)
            entry = refs.get(id(source))
            if entry is None:
                return
        tensor_type = self.tensor
        version = entry[2] if view else None
        for tensor in out if type(out) is tuple or type(out) is list else (out,):
            if isinstance(tensor, tensor_type):
                refs[id(tensor)] = (entry[0], weakref.ref(tensor), version_of(tensor) if version is None else version)

    def _before(self, info, args, kwargs):
        """Which module and phase, and the inputs' slots (measuring leaves): before the op can write them."""
        kind, name, judged, _, bounds = info
        node = self.current_node()
        modules = self.modules
        if node is None:
            phase, module = 0, (modules.stack[-1] if modules.stack else -1)
        else:
            sequence_nr = node._sequence_nr()
            if sequence_nr == _NO_NODE:  # AccumulateGrad writing .grad: the values were judged when made
                return None
            phase, module = 1, modules.owner(sequence_nr)
            if not self.callback_queued:
                self.callback_queued = True
                self.torch.autograd.Variable._execution_engine.queue_callback(self.watch._end_of_backward)
        tensor_type, floating, low = self.tensor, self.floating, self.low
        tensors = []
        constant = narrow = False
        for value in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(value, tensor_type):
                if value.dtype in floating:
                    tensors.append(value)
                    narrow = narrow or value.dtype in low
            elif type(value) is list or type(value) is tuple:
                for item in value:
                    if isinstance(item, tensor_type) and item.dtype in floating:
                        tensors.append(item)
                        narrow = narrow or item.dtype in low
            elif type(value) is float and not -_LOW_MAX <= value <= _LOW_MAX:
                # A -inf fill value: what comes out was put in (True). A finite number beyond fp16's range (an
                # additive mask's -1e9): its magnitude, for the judge to compare with the output dtype's max.
                constant = True if value != value or value in _INFINITIES or constant is True else abs(value)
        fill = None
        if kind == _CAST:
            target = kwargs.get("dtype")
            source = tensors[0].dtype if tensors else None
            if target is None or target is source or (target in self.wide and source is not None and
                                                      target.itemsize >= source.itemsize):  # fmt: skip
                kind, judged = _DERIVED, False  # a copy or a widening cast: the same values
            narrow = target in low
        elif kind == _DERIVED and name == "masked_fill":  # masked_fill.Scalar(self, mask, value)
            fill = _scalar(args[2] if len(args) > 2 else kwargs.get("value"))
        # The zeros of its inputs bound what an op judged for underflow may honestly hold: sampled, when its
        # output is fp16/bf16 (an fp32 one is not judged).
        sample = judged and narrow
        window = self.window
        refs, sampled = window.refs, window.sampled
        inputs = []
        for position, item in enumerate(tensors):
            if bounds != ALL and (position == 0) == (bounds == ALL_BUT_FIRST):
                # addmm's bias, what a backward op was given besides the gradient: never sampled (ops.bounding)
                entry = refs.get(id(item))
                if entry is not None and entry[1]() is item and entry[2] == version_of(item):
                    inputs.append(entry[0])
                else:
                    inputs.append(window.leaf(item) if phase == 0 else _IGNORED)
                continue
            entry = refs.get(id(item))
            if entry is not None and entry[1]() is item and entry[2] == version_of(item):
                slot = entry[0]
            elif phase == 0:
                slot = window.leaf(item)
            elif sample:
                # In the backward an unknown input is a tensor autograd saved and handed back re-wrapped: its values
                # were judged when the forward made them; only its share of zeros matters here, so it is sampled.
                slot = window.blind_slot(item)
            else:
                inputs.append(-1)
                continue
            if sample and slot >= 0 and slot not in sampled:
                window.sample(item, slot)
            inputs.append(slot)
        return kind, name, judged, node, phase, module, inputs, constant, fill

    def _after(self, state, out) -> None:
        """Measure (or derive) the op's outputs, and record it."""
        kind, name, judged, node, phase, module, inputs, constant, fill = state
        window = self.window
        tensor_type, refs = self.tensor, window.refs
        if (
            kind == _DERIVED
            and inputs
            and inputs[0] >= 0
            and inputs[0] not in window.blind
            and (fill is not None or name != "masked_fill")
            and isinstance(out, tensor_type)
        ):
            slot = len(window.meta)
            window.where.append(None)
            window.meta.append((out.numel(), self.types.names.get(out.dtype, "")))
            window.derived[slot] = (name, inputs[0], fill)
            refs[id(out)] = (slot, weakref.ref(out), version_of(out))
            outputs = [slot]
        else:
            floating = self.floating
            outputs = []
            first = None
            results = out if type(out) is tuple or type(out) is list else (out,)
            if name in _STATISTICS_AFTER:
                results = results[:1]  # a norm's saved mean and 1/std: anything wrong there shows in its output
            for tensor in results:
                if isinstance(tensor, tensor_type) and tensor.dtype in floating and tensor.numel():
                    slot = window.measure(tensor)
                    refs[id(tensor)] = (slot, weakref.ref(tensor), version_of(tensor))
                    outputs.append(slot)
                    if first is None:
                        first = tensor
            if first is None:
                return
            if judged and first.dtype in self.low:
                window.sample(first, outputs[0])
        self.ops += 1
        window.records.append((name, module, phase, self.watch.step_index, outputs, inputs, constant))
        if len(window.meta) > MAX_WINDOW and not self.modules.stack and node is None:
            self.watch._flush()  # no backward and no step() for a long while (inference with grad on): read now

    def forget(self) -> None:
        """Tensors were written unseen (an optimizer's update): measure them afresh when next used."""
        self.window.refs.clear()

    # ------------------------------------------------------------------ the one host read

    def take_window(self) -> Window:
        """The window so far, and a fresh one for what runs next."""
        window, self.window = self.window, Window(self.types)
        self.callback_queued = False
        return window


_TYPES: dict = {}


def _types(torch: Any) -> Types:
    if id(torch) not in _TYPES:
        _TYPES[id(torch)] = Types(torch)
    return _TYPES[id(torch)]


def _scalar(value) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


_MODE: Any = None


def mode_class(torch: Any) -> Any:
    """The dispatch mode, defined on first use (its base class needs torch)."""
    global _MODE
    if _MODE is None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class NumericsMode(TorchDispatchMode):
            def __init__(self, watch: Any, recorder: Recorder) -> None:
                super().__init__()
                self.watch = watch
                self.observe = recorder.observe

            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                return False  # else every call is wrapped in torch._disable_dynamo: a third of the cost, for nothing

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                watch = self.watch
                if not watch._active or watch._quiet:
                    return func(*args, **(kwargs or {}))
                return self.observe(func, args, kwargs or {})

        _MODE = NumericsMode
    return _MODE
