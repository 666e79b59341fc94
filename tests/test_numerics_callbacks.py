"""NumericsCallback in the real transformers Trainer (CPU): the watch runs where training already runs."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # the Trainer needs it on torch
from torch import nn  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from mpdoctor.numerics.callbacks import NumericsCallback  # noqa: E402


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wi = nn.Linear(16, 64, bias=False)
        self.wo = nn.Linear(64, 16, bias=False)

    def forward(self, x):
        return self.wo(torch.relu(self.wi(x)))


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ff = FeedForward()
        self.head = nn.Linear(16, 1)

    def forward(self, x, labels=None):
        out = self.head(self.ff(x)).float().squeeze(-1)
        return {"loss": ((out - labels) ** 2).sum(), "logits": out}


def train(model, tmp_path, callback, steps: int = 2):
    data = [{"x": torch.randn(16, dtype=torch.half), "labels": torch.tensor(0.0)} for _ in range(4 * steps)]
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=steps,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()


def test_the_trainer_callback_names_wo_and_logs_it(tmp_path, caplog):
    torch.manual_seed(0)
    model = Regressor()
    with torch.no_grad():
        model.ff.wo.weight.mul_(3e5)
    model = model.half()
    callback = NumericsCallback()
    with caplog.at_level(logging.WARNING, logger="mpdoctor.numerics"):
        train(model, tmp_path, callback)
    first = callback.watch.first
    assert (first.module, first.kind, first.phase) == ("ff.wo", "overflow", "forward")
    assert callback.watch.step_index == 2 and callback.watch._mode is None  # ended with the training
    assert "mpdoctor numerics: overflow in forward, step 0: ff.wo (Linear)" in caplog.text


def test_a_healthy_model_in_the_trainer_reports_nothing(tmp_path):
    torch.manual_seed(0)
    callback = NumericsCallback(steps=1)
    train(Regressor().half(), tmp_path, callback)
    assert callback.watch.events == [] and callback.watch.step_index == 1
