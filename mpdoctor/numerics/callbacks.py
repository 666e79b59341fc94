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
        self.watching = False  # a watch of this run is active (Lightning's closures inside optimizer.step included)

    def start(self, model: Any) -> None:
        from mpdoctor.numerics.watch import NumericsWatch

        if model is None or self.watching:
            return
        self.watch = NumericsWatch(model, steps=self.steps, on_event=self._found)
        self.watch.__enter__()
        self.watching = True

    def end(self) -> None:
        if not self.watching:
            return
        self.watching = False
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
