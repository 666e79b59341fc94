"""Name the first module whose fp16/bf16 values overflow, turn NaN or underflow, forward and backward, live.

    with numerics_watch(model) as watch:       # or numerics_watch() for every module the process builds
        loss = loss_fn(model(x))
        loss.backward()
    print(watch)        # the verdict: the first event, where, the fix; headroom per module
    watch.first         # None or an Event (.module, .kind, .phase, .op, .dtype, .fix)
    watch.verify(step)  # re-run a step (no arguments: forward and backward) with the fix applied

How it sees inside modules: a ``TorchDispatchMode`` observes every aten op, forward and backward (autograd
runs its backward ops through the same dispatcher); :mod:`mpdoctor.numerics.modules` says which module each
runs in, :mod:`mpdoctor.numerics.record` queues each output's statistics on its device. They are read together,
one ``tolist()`` per device, at the end of each backward (a callback queued on the autograd engine), at
``watch.step()`` and when the block ends: one host read per training step. Nothing is ever written to a tensor
the model sees, so outputs are bit-identical with and without the watch.

What counts as an event (judged on the host after that read, op by op, in the order they ran, by
:mod:`mpdoctor.numerics.judge`):

* overflow: an output holds +/-inf though every input was finite (a ``-inf`` written by a mask op such as
  ``masked_fill`` or an additive mask is not one); nan: an output holds NaN though every input was finite. An op
  whose input already held inf/NaN only passes it on: not an event, so the first event is where the values left
  the range, not where they reached a module's boundary.
* underflow: an op that multiplies, divides, casts or makes a gradient flushed fp16/bf16 values to zero or
  subnormal beyond what its inputs' zeros explain, in a tensor whose largest value does not make them negligible
  (the rule, and the measurement behind its constants, in judge.py).
* GradScaler: its backward overflows in a step whose ``update()`` found inf at a scale above 1 are the scaler
  doing its job: listed in ``watch.scaler`` with the scale, not as events. Overflow that persists at scale 1, or
  in the forward, is the model's.

Importing this module does not import torch; the watch does, when it is made.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Optional

from mpdoctor.numerics.events import PHASES, Event, ScalerStep, headroom_bits
from mpdoctor.numerics.fixes import NO_MECHANICAL_FIX, fixes_for, mechanical_fix
from mpdoctor.numerics.judge import judge
from mpdoctor.numerics.judge import worse as _worse
from mpdoctor.numerics.modules import Modules
from mpdoctor.numerics.record import Recorder, mode_class
from mpdoctor.numerics.steps import hook_steps
from mpdoctor.numerics.verdict import verdict_text

MAX_EVENTS = 1000  # distinct (module, op, phase, kind) kept
UNVERIFIED = "not verified (`watch.verify(step)` re-runs a step with the fix applied)"


class NumericsWatch:
    """Watches ``model`` (every submodule) or, with ``model=None``, every module the process calls.

    ``first``, ``events``, ``headroom``, ``scaler`` hold what was found so far (read once per step);
    ``str(watch)`` is the verdict, ``to_data()`` the same as JSON-ready data. ``on_event`` is called with
    each new event as soon as it is known (the CLI prints the first one live). ``steps`` stops watching
    after that many optimizer steps (the model then runs unobserved, at full speed). ``verify(step)``
    re-runs a step with the first event's fix applied and says whether the event went away.
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
        self.problems: list[str] = []  # reads of the statistics that failed (that window is not judged)
        self.unverified = UNVERIFIED  # what an event no re-run verified says (the CLI: why it cannot be)
        self._modules = Modules(torch, model)
        self._recorder = Recorder(self, torch, self._modules)
        self._largest: dict[int, tuple[float, str]] = {}  # module -> (largest |value| of its forward, dtype)
        self._seen: dict[tuple, Event] = {}
        self._pending: list[tuple[int, Event]] = []  # backward events of scaled steps, until the scaler judged
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str, Any]] = []
        self._mode: Any = None
        self._active = False
        self._quiet = 0  # > 0: ops pass unobserved (an optimizer's update, the watch's own read)
        self._stepping = 0  # optimizer steps running (their update unobserved; steps.py)
        self._closures = 0  # optimizer closures running inside them (observed)
        self._lock = threading.RLock()
        self._finfo_max = {
            str(d).replace("torch.", ""): torch.finfo(d).max for d in (torch.float16, torch.bfloat16, torch.float32)
        }
        self._scaled_steps: set[int] = set()
        self._stepped_since_flush = False

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> "NumericsWatch":
        if self._active:
            raise RuntimeError("this numerics_watch is already active; make a new one")
        try:
            self._handles.extend(self._modules.hook(self))
            hook_steps(self)
            self._mode = mode_class(self._torch)(self, self._recorder)
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
        self.listen()
        self._flush()
        if not self._stepped_since_flush:
            self._advance()
        self._stepped_since_flush = False

    def listen(self) -> None:
        """An optimizer step that raised never ran its post-hook: outside a step's closure, listen again."""
        if self._stepping and not self._closures:
            self._quiet = max(0, self._quiet - self._stepping)
            self._stepping = 0
            self._recorder.forget()

    def verify(self, step: Callable[[], Any], event: Optional[Event] = None):
        """Re-run ``step`` (no arguments: one forward and backward, as in training) with ``event``'s fix applied
        (the first event by default), and record on it whether the event went away, moved or stayed: the
        ``Verification`` returned, also ``event.verification``, and in the verdict. The model is put back exactly
        (parameters, buffers, ``.grad``, forwards), also when ``step`` raises. None when there is no event."""
        from mpdoctor.numerics.verify import verify

        if self._active:
            raise RuntimeError("verify after the watch's `with` block has ended")
        if not callable(step):
            raise TypeError(f"verify needs the step as a callable with no arguments, got {type(step).__name__}")
        event = self.first if event is None else event
        if event is None:
            return None
        return verify(self, step, event)

    # ------------------------------------------------------------------ results

    @property
    def first(self) -> Optional[Event]:
        """The first event, in the order the ops ran; None when the model stayed in range."""
        return self.events[0] if self.events else None

    @property
    def ops_seen(self) -> int:
        return self._recorder.ops

    @property
    def skipped(self) -> int:
        """Ops the watch could not read (sparse or subclassed tensors): run, not judged."""
        return self._recorder.skipped

    @property
    def headroom(self) -> dict[str, float]:
        """{module: bits between the largest |value| its forward produced (its submodules' included) and its
        dtype's max}: 0 where it overflowed. Modules that ran only in fp32 are left out."""
        parents, names = self._modules.parents, self._modules.names
        largest: dict[int, tuple[float, str]] = {}
        for index, (value, dtype) in self._largest.items():
            while index >= 0:
                if index not in largest or _worse(value, dtype, *largest[index], self._finfo_max):
                    largest[index] = (value, dtype)
                index = parents[index]
        out = {}
        for index in sorted(largest):
            value, dtype = largest[index]
            if value > 0 or math.isnan(value):  # a module that only ever produced zeros has no bound to speak of
                out[names[index]] = headroom_bits(value, self._finfo_max[dtype])
        return out

    def verdict(self) -> str:
        return verdict_text(self)

    def __str__(self) -> str:
        return self.verdict()

    def to_data(self) -> dict:
        return {
            "first": None if self.first is None else self.first.to_data(self.unverified_text(self.first)),
            "events": [e.to_data(self.unverified_text(e)) for e in self.events],
            "headroom": self.headroom,
            "scaler": [s.to_data() for s in self.scaler],
            "steps": self.step_index,
            "reads": self.reads,
            "ops": self.ops_seen,
            "skipped": self.skipped,
            "problems": list(self.problems),
        }

    def unverified_text(self, event: Event) -> str:
        """What an event no re-run verified says: why it cannot be, or how to."""
        if self.unverified == UNVERIFIED and mechanical_fix(event) is None:
            return NO_MECHANICAL_FIX
        return self.unverified

    # ------------------------------------------------------------------ steps

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

    def _end_of_backward(self) -> None:
        self._recorder.callback_queued = False
        self._flush()

    # ------------------------------------------------------------------ the one host read, and the judging

    def _flush(self) -> None:
        with self._lock:
            pending = self._recorder.window
            if len(pending.records) == pending.checks and not pending.scaler:
                # Nothing but the checks of an optimizer's update (or nothing): no read of its own for them, they
                # are read with the next step's statistics (one host read per step). The last update before the
                # watch ends is therefore not checked: nothing the watch runs reads its parameters again.
                return
            window = self._recorder.take_window()
            self._quiet += 1
            try:
                measured, reads = window.read()  # the one host read of this window, per device
                self.reads += reads
            except Exception as exc:  # never an error in the user's backward: say so, judge the next window
                self.problems.append(f"{type(exc).__name__}: {exc}"[:500])
                return
            finally:
                self._quiet = max(0, self._quiet - 1)
            self._modules.trim()
            judge(window.records, measured, self._finfo_max, self._note_largest, self._event)
            for step, (before, found, after) in window.scaler:
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
        name = None if module < 0 else self._modules.names[module]
        cls = "" if module < 0 else self._modules.classes[module]
        phase_name = PHASES[phase]
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
        if phase == 1 and kind in ("overflow", "nan") and step in self._scaled_steps:
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
        self.events.sort(key=lambda e: (e.step, PHASES.index(e.phase)))


def numerics_watch(model: Any = None, *, steps: Optional[int] = None, on_event=None) -> NumericsWatch:
    """Watch ``model`` (or, with None, every module) for overflow, NaN and underflow, forward and backward."""
    return NumericsWatch(model, steps=steps, on_event=on_event)
