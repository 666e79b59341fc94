"""The numerics watch where training already runs: a transformers ``Trainer`` callback and a Lightning one.

    from mpdoctor.numerics.callbacks import NumericsCallback, NumericsLightningCallback

    callback = NumericsCallback()                 # steps=N: stop watching after N optimizer steps
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])
    trainer.train()
    print(callback.watch)                         # the verdict; callback.watch.first, .events, .headroom

    callback = NumericsLightningCallback()        # the same, for a LightningModule
    lightning.pytorch.Trainer(callbacks=[callback]).fit(module)

The watch starts when training starts, on the model being trained (the Trainer's ``on_train_begin``,
Lightning's ``on_train_start``: after Lightning has moved and cast the module), and ends when it ends (and,
in Lightning, when it fails: ``on_exception``); each training gets a fresh watch, ``.watch`` is the latest.
The first event is logged as soon as it is found: on the ``mpdoctor.numerics`` logger, and in the trainer's
own logs (the Trainer's as the text ``numerics/first``; Lightning's, which take numbers only, as
``numerics/events``, the count of events so far, each training batch while the watch runs). transformers
and lightning are imported when a callback is made, never by ``import mpdoctor``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Optional

LOG = logging.getLogger("mpdoctor.numerics")


class _Run:
    """What both callbacks share: the watch over one training at a time, its first event logged, its end."""

    def __init__(self, steps: Optional[int]) -> None:
        self.steps = _checked(steps)
        self.watch: Any = None
        self._closures: Any = None  # the optimizer hook that lets closures be watched, while a watch runs

    @property
    def watching(self) -> bool:
        return self._closures is not None

    def start(self, model: Any) -> None:
        from mpdoctor.numerics.watch import NumericsWatch

        if model is None or self.watching:
            return
        self.watch = NumericsWatch(model, steps=self.steps, on_event=self._found)
        self.watch.__enter__()
        try:
            self._closures = _watch_closures(self.watch)
        except BaseException:
            self.watch.__exit__(None, None, None)
            raise

    def end(self) -> None:
        if not self.watching:
            return
        self._closures.remove()
        self._closures = None
        self.watch.__exit__(None, None, None)
        LOG.info("%s", self.watch.verdict())

    def _found(self, event: Any) -> None:
        if event is self.watch.first:
            LOG.warning("mpdoctor numerics: %s\n  fix: %s", event.line(), event.fix)


def _checked(steps: Optional[int]) -> Optional[int]:
    """``steps`` as given, or a clear error."""
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps must be a whole number of optimizer steps, at least 1 (got {steps!r})")
    return steps


def _watch_closures(watch: Any) -> Any:
    """Let the watch see what an optimizer's closure runs; returns the hook's handle.

    The watch keeps quiet inside ``optimizer.step`` (the update writes the parameters, unobserved on purpose),
    but Lightning's automatic optimization, like LBFGS, runs the whole step, forward and backward, inside
    ``optimizer.step(closure)``: unwrapped, the watch would see none of it. The closure runs with the watch
    listening again; the update around it stays unobserved. (This belongs in the watch's own step hooks,
    mpdoctor/numerics/steps.py; until it is there the callbacks do it: the watch has no public switch.)
    """
    import torch.optim.optimizer as optimizer

    def listening(closure):
        @functools.wraps(closure)
        def closure_seen(*args, **kwargs):
            quiet, watch._quiet = watch._quiet, 0
            try:
                return closure(*args, **kwargs)
            finally:
                watch._quiet = quiet

        return closure_seen

    def before(opt, args, kwargs):  # args[0] is the optimizer itself
        if callable(kwargs.get("closure")):
            return args, {**kwargs, "closure": listening(kwargs["closure"])}
        if len(args) > 1 and callable(args[1]):
            return (args[0], listening(args[1]), *args[2:]), kwargs
        return None

    return optimizer.register_optimizer_step_pre_hook(before)


# ---------------------------------------------------------------------------------------- transformers


@functools.lru_cache(maxsize=None)
def _trainer_class() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError as exc:  # the callback is for transformers users: say so plainly
        raise ImportError(f"NumericsCallback needs transformers ({exc})") from exc

    class _NumericsCallback(TrainerCallback):
        def __init__(self, steps: Optional[int]) -> None:
            self._run = _Run(steps)
            self.steps = steps
            self._logged = None  # the watch whose first event went into the Trainer's logs

        @property
        def watch(self):
            return self._run.watch

        def __reduce__(self):  # pickled as the call that makes it (a class made here has no importable name)
            return NumericsCallback, (self.steps,)

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self._run.start(model)

        def on_train_end(self, args, state, control, **kwargs):
            self._run.end()

        def on_log(self, args, state, control, logs=None, **kwargs):
            first = self.watch.first if self.watch is not None else None
            if first is not None and logs is not None and self._logged is not self.watch:
                logs["numerics/first"] = first.line()
                self._logged = self.watch

    _NumericsCallback.__name__ = _NumericsCallback.__qualname__ = "NumericsCallback"
    return _NumericsCallback


def NumericsCallback(steps: Optional[int] = None) -> Any:  # noqa: N802 (a class to its users)
    """A ``transformers.TrainerCallback`` that watches the trained model; ``.watch`` holds the verdict."""
    steps = _checked(steps)  # first: a bad argument is one whether transformers is installed or not
    return _trainer_class()(steps)


# ---------------------------------------------------------------------------------------- Lightning


def _lightning_callback_base() -> type:
    """``lightning.pytorch.Callback``, or, where only the older package is installed, ``pytorch_lightning``'s.
    Lightning calls its callbacks' hooks by name, so either Trainer runs either one."""
    try:
        from lightning.pytorch import Callback
    except ImportError as exc:
        try:
            from pytorch_lightning import Callback
        except ImportError:
            raise ImportError(
                f"NumericsLightningCallback needs lightning (pip install lightning) or pytorch_lightning ({exc})"
            ) from exc
    return Callback


@functools.lru_cache(maxsize=None)
def _lightning_class(base: type) -> type:
    class _NumericsLightningCallback(base):
        def __init__(self, steps: Optional[int]) -> None:
            self._run = _Run(steps)
            self.steps = steps

        @property
        def watch(self):
            return self._run.watch

        def __reduce__(self):  # Lightning's ddp_spawn pickles the callbacks to start its processes
            return NumericsLightningCallback, (self.steps,)

        def on_train_start(self, trainer, pl_module):
            self._run.start(pl_module)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if self._run.watching:  # a number: Lightning's loggers take no text (the words are on the mpdoctor logger)
                pl_module.log("numerics/events", float(len(self.watch.events)), on_step=True, on_epoch=False)

        def on_train_end(self, trainer, pl_module):
            self._run.end()

        def on_exception(self, trainer, pl_module, exception):
            self._run.end()  # a failed fit leaves no watch running (nor its hook on the optimizers)

    _NumericsLightningCallback.__name__ = _NumericsLightningCallback.__qualname__ = "NumericsLightningCallback"
    return _NumericsLightningCallback


def NumericsLightningCallback(steps: Optional[int] = None) -> Any:  # noqa: N802 (a class to its users)
    """A Lightning ``Callback`` that watches the ``LightningModule`` being fit; ``.watch`` holds the verdict."""
    steps = _checked(steps)  # first: a bad argument is one whether lightning is installed or not
    return _lightning_class(_lightning_callback_base())(steps)
