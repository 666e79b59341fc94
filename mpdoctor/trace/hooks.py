"""Find the module where fp16 and fp32 meet: a dtype trace of one forward pass.

    with dtype_trace(model) as trace:
        model(*inputs)
    print(trace)              # a table: call order, module, class, input/parameter/output dtypes, autocast
    trace.mismatches          # the calls where dtypes meet, with what brought each dtype
    trace.failure             # where the forward raised, if it did

While the ``with`` block runs, every module of ``model`` carries a forward pre-hook
and a forward hook. Each module call becomes a :class:`ModuleCall` record, in call
order: the module's qualified name and class, the dtypes and shapes of its floating
inputs, of its own floating parameters and buffers, and of its floating outputs, and
whether autocast was on for the inputs' device. Only dtypes, shapes and names are
kept, never a tensor, and the hooks never change an argument or an output.

A call is a mismatch where dtypes meet, autocast off: its floating inputs differ from
its parameters or from each other, or the outputs of its children that it combined
(``chains``: not those one child passed to the next) differ, so an attention block
with no parameters of its own is named where ``q_proj`` and ``k_proj`` disagree.

When the forward raises, the innermost module that was running at that moment is
found, and a note is added to the exception: its inputs, its parameters, and what its
submodules had produced before the error, so the traceback itself says where the
dtypes met (the error message names an op; this names the module). The exception
then propagates as it was, same type, same traceback. The hooks are removed when
the block ends, whether or not it raised.

What it cannot see: it looks at module boundaries, so a dtype mix made inside one
forward (a functional op, a tensor created there) is reported at the module whose
forward it happened in, with what that module's children produced. Under
``torch.compile`` the hooks are traced with the model; trace the eager model.

Importing this module does not import torch: ``import mpdoctor`` and the CLI stay
torch-free. torch is imported when a trace starts.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from dataclasses import replace
from typing import Any, Optional, Sequence

from mpdoctor.trace.chains import combined, offer, take
from mpdoctor.trace.children import promotion_seen, relative
from mpdoctor.trace.compat import autocast_queries as _autocast_queries
from mpdoctor.trace.compat import register_hook as _register
from mpdoctor.trace.reading import MAX_TENSORS, TensorReader
from mpdoctor.trace.records import (
    MAX_PRODUCED,
    Failure,
    Mismatch,
    ModuleCall,
    Produced,
    TensorInfo,
    attach_note,
    first_line,
    with_note,
)
from mpdoctor.trace.table import table

MAX_CALLS = 100_000  # records kept per trace; a generate() loop under a trace must not grow memory forever
# Best first. with_kwargs (torch 2.0) shows keyword inputs; always_call (torch 2.1) runs
# the forward hook when the forward raises, which is how the innermost module is found.
# Older torch gets what it supports; the last call still open then stands in.
_PRE_HOOK_OPTIONS = ({"with_kwargs": True}, {})
_POST_HOOK_OPTIONS = ({"with_kwargs": True, "always_call": True}, {"with_kwargs": True}, {})


class _Frame:
    """A module call that is running: its record and the calls that finished inside it."""

    __slots__ = ("module", "call", "produced", "produced_count", "ambient", "offered")

    def __init__(self, module: Any, call: ModuleCall, ambient: Optional[BaseException]) -> None:
        self.module = module
        self.call = call
        # Made at the first finished child (most calls are leaves and never need one), and
        # bounded: a forward that loops over a child 10,000 times keeps the last few.
        self.produced: Optional[deque] = None
        self.produced_count = 0
        # The exception being handled around this call, if any: the forward hook compares
        # against it to tell "forward raised" from "forward returned inside an except block".
        self.ambient = ambient
        # [child, dtype, weak reference, taken] per floating output of a finished child: a later child
        # that takes the very tensor as input chains it (not combined here). Weak: no tensor kept alive.
        self.offered: Optional[deque] = None


class DtypeTrace:
    """Records the dtypes of every module call of ``model`` while it is used as a context manager.

    ``calls`` holds the :class:`ModuleCall` records in call order, ``mismatches`` the
    calls where dtypes meet (autocast off; see ``ModuleCall.mismatched``), ``failure`` the
    :class:`Failure` when the forward raised. ``str(trace)`` is a table; ``to_data()``
    is the same as JSON-ready data. The records stay readable after the block ends.
    """

    def __init__(self, model: Any, *, max_calls: int = MAX_CALLS) -> None:
        import torch  # here, not at import time: `import mpdoctor` must stay torch-free

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"dtype_trace needs a torch.nn.Module, got {type(model).__name__}")
        self._torch = torch
        self.model = model
        self.max_calls = max_calls
        self.calls: list[ModuleCall] = []
        self.dropped = 0  # calls not recorded once max_calls was reached
        self.failure: Optional[Failure] = None
        self._handles: list[Any] = []
        self._local = threading.local()  # one stack per thread: DataParallel replicas run in threads
        self._count = 0
        self._pending: Optional[tuple[BaseException, Failure]] = None
        self._read = TensorReader(torch, *_autocast_queries(torch))

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> "DtypeTrace":
        if self._handles:
            raise RuntimeError("this dtype_trace is already active; make a new one to nest traces")
        self.calls, self.dropped, self.failure, self._count, self._pending = [], 0, None, 0, None
        try:
            for name, module in self.model.named_modules():
                self._attach(name, module)
        except BaseException:
            self._detach()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            # KeyboardInterrupt and SystemExit are not dtype problems: no note on them.
            if isinstance(exc, Exception):
                self.failure = self._with_origin(self._failure_for(exc))
                if self.failure is not None:
                    attach_note(exc, self.failure.note)
        finally:
            self._detach()
            self._pending = None  # the exception holds frames, and they hold tensors: let it go
            self._local = threading.local()
        return False  # never swallow the exception

    # ------------------------------------------------------------------ results

    @property
    def mismatches(self) -> list[Mismatch]:
        """The calls where dtypes meet, autocast off: inputs that differ from each other or from the parameters,
        or children's outputs combined in another dtype each; with what brought each dtype (``producers``)."""
        return [c.mismatch() for c in self.calls if c.mismatched]

    def table(self) -> str:
        """The calls as a text table; only mismatched calls and the failing call are marked."""
        return table(self.calls, self.failure, self.dropped, self.max_calls)

    def __str__(self) -> str:
        return self.table()

    def to_data(self) -> dict:
        """JSON-ready: every call, the mismatches and the failure."""
        return {
            "calls": [c.to_data() for c in self.calls],
            "dropped": self.dropped,
            "mismatches": [m.to_data() for m in self.mismatches],
            "failure": None if self.failure is None else self.failure.to_data(),
        }

    # ------------------------------------------------------------------ hooks

    def _attach(self, name: str, module: Any) -> None:
        def pre_hook(mod, args, kwargs=None):
            try:
                self._enter_call(name, mod, args, kwargs)
            except Exception:  # an input the trace cannot read must not break the user's forward
                self._enter_call(name, mod, (), None)

        def post_hook(mod, args, *rest):
            self._leave_call(mod, rest[-1])  # rest is (kwargs, output) or (output,)

        self._handles.append(_register(module.register_forward_pre_hook, pre_hook, _PRE_HOOK_OPTIONS))
        self._handles.append(_register(module.register_forward_hook, post_hook, _POST_HOOK_OPTIONS))

    def _detach(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()

    def _stack(self) -> list[_Frame]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _enter_call(self, name: str, module: Any, args: Sequence[Any], kwargs: Optional[dict]) -> None:
        stack = self._stack()
        inputs: list[TensorInfo] = []
        first = None  # the first floating input: its device says which autocast state applies
        named = [(f"args[{i}]", value) for i, value in enumerate(args)]
        if kwargs:
            named += [(str(key), value) for key, value in kwargs.items()]
        offered = stack[-1].offered if stack else None
        objects: Optional[list] = [] if offered else None  # the input tensors, only to match against those
        for input_name, value in named:
            found = self._read.collect(value, input_name, inputs, 1, objects)
            if first is None:
                first = found
        sources = take(offered, objects) if objects else None
        params = self._read.own(module._parameters)
        buffers = self._read.own(module._buffers)
        if first is None:  # no floating input: the parameters' device, else the CPU
            first = next((t for t in module._parameters.values() if t is not None), None)
        device = first.device.type if first is not None else None
        autocast, autocast_dtype = self._read.autocast(device)
        parent = stack[-1].call if stack else None
        call = ModuleCall(
            index=self._count,
            name=name,
            cls=type(module).__name__,
            depth=len(stack),
            parent=None if parent is None else parent.index,
            inputs=tuple(inputs),
            params=params,
            buffers=buffers,
            autocast=autocast,
            autocast_dtype=autocast_dtype,
            device=device,
        )
        if sources and len(call.input_dtypes) > 1:  # inputs that meet here: which sibling made which
            call.sources = tuple((inputs[i].name, source) for i, source in sorted(sources.items()))
        self._count += 1
        if len(self.calls) < self.max_calls:
            self.calls.append(call)
        else:
            self.dropped += 1
        stack.append(_Frame(module, call, sys.exc_info()[1]))

    def _leave_call(self, module: Any, output: Any) -> None:
        stack = self._stack()
        # The frame is normally on top. It is not when a call's forward hook never ran
        # (torch without always_call, a BaseException); drop those stale frames.
        at = len(stack) - 1
        while at >= 0 and stack[at].module is not module:
            at -= 1
        if at < 0:
            return  # a call that began before the trace did
        frame = stack[at]
        del stack[at:]
        call = frame.call
        raising = sys.exc_info()[1]
        if raising is not None and raising is not frame.ambient:
            # torch calls always_call hooks from its `except` clause: the forward raised.
            call.raised = True
            if self._pending is None or self._pending[0] is not raising:
                # The first hook to see an exception is the innermost module: a child that
                # raised it would have seen it first.
                self._pending = (raising, self._describe_failure(frame, raising))
            call.combined = combined(frame.offered)
            return
        call.combined = combined(frame.offered)
        outputs: list[TensorInfo] = []
        objects: Optional[list] = [] if stack else None
        try:
            # The container a forward returns is a level of its own, as the argument tuple is for inputs.
            self._read.collect(output, "output", outputs, 2, objects)
        except Exception:  # an output the trace cannot read must not break the user's forward
            outputs, objects = [], None
        call.outputs = tuple(outputs)
        call.finished = True
        if call.combined and not promotion_seen(self._torch, self._read, self.calls, self.dropped, call):
            call.combined = ()
        if stack:
            parent = stack[-1]
            if parent.produced is None:
                parent.produced = deque(maxlen=MAX_PRODUCED)
            parent.produced.append(call)
            parent.produced_count += 1
            if objects:
                if parent.offered is None:
                    parent.offered = deque(maxlen=MAX_TENSORS)
                offer(
                    parent.offered,
                    relative(call.name, f"{parent.call.name}." if parent.call.name else ""),
                    call.name,
                    outputs,
                    objects,
                )

    # ------------------------------------------------------------------ failures

    def _describe_failure(self, frame: _Frame, exc: BaseException) -> Failure:
        call, module = frame.call, frame.module
        prefix = f"{call.name}." if call.name else ""
        produced = tuple(Produced(relative(c.name, prefix), c.cls, c.outputs) for c in frame.produced or ())
        params = tuple(self._read.info(n, t) for n, t in module.named_parameters() if t.is_floating_point())
        buffers = tuple(self._read.info(n, t) for n, t in module.named_buffers() if t.is_floating_point())
        failure = Failure(
            index=call.index if _kept(self.calls, call) else None,
            module=call.name,
            cls=call.cls,
            inputs=call.inputs,
            params=params,
            buffers=buffers,
            produced=produced,
            produced_earlier=frame.produced_count - len(produced),
            autocast=call.autocast,
            autocast_dtype=call.autocast_dtype,
            error=first_line(exc),
        )
        return with_note(failure)

    def _with_origin(self, failure: Optional[Failure]) -> Optional[Failure]:
        """The failure, noted with the first mismatch of the forward when that is another call.

        Only now, once every call still open when the forward raised has had its children's outputs combined
        (``_failure_for``), are the mismatches complete: the first one, in call order, is where the dtypes met.
        """
        if failure is None:
            return None
        origin = next((m for m in self.mismatches if m.index != failure.index), None)
        return with_note(replace(failure, origin=origin)) if origin is not None else failure

    def _failure_for(self, exc: BaseException) -> Optional[Failure]:
        if self._pending is not None and self._pending[0] is exc:
            return self._pending[1]
        stack = self._stack()
        if stack:
            # torch without always_call: the forward hooks of the failing calls never ran,
            # so the last call still open is the innermost one.
            frame = stack[-1]
            for f in stack:
                f.call.raised = True
                f.call.combined = combined(f.offered)
            return self._describe_failure(frame, exc)
        return None  # raised outside every module of the model (a loss, a user's own code)


def dtype_trace(model: Any, *, max_calls: int = MAX_CALLS) -> DtypeTrace:
    """Trace the dtypes of ``model``'s module calls: ``with dtype_trace(model) as trace: model(x)``.

    See :class:`DtypeTrace` for what the trace holds. ``max_calls`` bounds the records
    kept (later calls are counted in ``trace.dropped``).
    """
    return DtypeTrace(model, max_calls=max_calls)


# ---------------------------------------------------------------------- helpers


def _kept(calls: list[ModuleCall], call: ModuleCall) -> bool:
    return call.index < len(calls) and calls[call.index] is call
