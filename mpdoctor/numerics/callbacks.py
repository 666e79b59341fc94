"""The numerics watch where training already runs: a transformers ``Trainer`` callback.

    from mpdoctor.numerics.callbacks import NumericsCallback

    callback = NumericsCallback()                 # steps=N: stop watching after N optimizer steps
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])
    trainer.train()
    print(callback.watch)                         # the verdict; callback.watch.first, .events, .headroom

The watch starts at ``on_train_begin`` on the model the Trainer trains and ends at ``on_train_end``;
the first event is logged (the ``mpdoctor.numerics`` logger, and the Trainer's own log as
``numerics/first``) when it is found. transformers is imported when the callback is made, never by
``import mpdoctor``.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

LOG = logging.getLogger("mpdoctor.numerics")


def _base():
    try:
        from transformers import TrainerCallback
    except ImportError as exc:  # the callback is for transformers users: say so plainly
        raise ImportError(f"NumericsCallback needs transformers ({exc})") from exc
    return TrainerCallback


def NumericsCallback(steps: Optional[int] = None) -> Any:  # noqa: N802 (a class to its users)
    """A ``transformers.TrainerCallback`` that watches the trained model; ``.watch`` holds the verdict."""

    class _NumericsCallback(_base()):
        def __init__(self) -> None:
            self.watch = None
            self.steps = steps
            self._logged = False

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            from mpdoctor.numerics.watch import NumericsWatch

            if model is None or self.watch is not None:
                return
            self.watch = NumericsWatch(model, steps=self.steps, on_event=self._found)
            self.watch.__enter__()

        def on_train_end(self, args, state, control, **kwargs):
            if self.watch is not None and self.watch._mode is not None:
                self.watch.__exit__(None, None, None)
                LOG.info("%s", self.watch.verdict())

        def on_log(self, args, state, control, logs=None, **kwargs):
            first = self.watch.first if self.watch is not None else None
            if first is not None and logs is not None and not self._logged:
                logs["numerics/first"] = first.line()
                self._logged = True

        def _found(self, event) -> None:
            if event is self.watch.first or len(self.watch.events) <= 1:
                LOG.warning("mpdoctor numerics: %s\n  fix: %s", event.line(), event.fix)

    return _NumericsCallback()
