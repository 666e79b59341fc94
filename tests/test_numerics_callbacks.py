"""The numerics callbacks in the real trainers (CPU): the watch runs where training already runs.

NumericsCallback in the transformers Trainer, NumericsLightningCallback in Lightning's Trainer (the
installed ``lightning`` package, and its older ``pytorch_lightning`` namespace). The same feed-forward
block is the culprit in both: its ``wo`` overflows in fp16, as T5's does.
"""

from __future__ import annotations

import csv
import logging
import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from mpdoctor.numerics.callbacks import NumericsCallback, NumericsLightningCallback  # noqa: E402


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wi = nn.Linear(16, 64, bias=False)
        self.wo = nn.Linear(64, 16, bias=False)

    def forward(self, x):
        return self.wo(torch.relu(self.wi(x)))


def test_callbacks_import_no_framework_and_bad_steps_are_clear():
    code = (
        "import sys, mpdoctor, mpdoctor.numerics.callbacks\n"
        "print([m for m in ('torch', 'transformers', 'lightning', 'pytorch_lightning') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr
    for bad in (0, -3, 2.5, "10", True):
        for make in (NumericsCallback, NumericsLightningCallback):
            with pytest.raises(ValueError, match=r"steps must be a whole number of optimizer steps, at least 1"):
                make(steps=bad)


# ---------------------------------------------------------------------------------------------- transformers


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ff = FeedForward()
        self.head = nn.Linear(16, 1)

    def forward(self, x, labels=None):
        out = self.head(self.ff(x)).float().squeeze(-1)
        return {"loss": ((out - labels) ** 2).sum(), "logits": out}


@pytest.fixture(scope="module")
def transformers_trainer():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (the test extra has it)")
    pytest.importorskip("accelerate", reason="accelerate is not installed (the transformers Trainer needs it)")
    return transformers


def train(transformers, model, tmp_path, callback, steps: int = 2):
    data = [{"x": torch.randn(16, dtype=torch.half), "labels": torch.tensor(0.0)} for _ in range(4 * steps)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=steps,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
    )
    transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()


def test_the_trainer_callback_names_wo_and_logs_it(transformers_trainer, tmp_path, caplog):
    torch.manual_seed(0)
    model = Regressor()
    with torch.no_grad():
        model.ff.wo.weight.mul_(3e5)
    model = model.half()
    callback = NumericsCallback()
    with caplog.at_level(logging.WARNING, logger="mpdoctor.numerics"):
        train(transformers_trainer, model, tmp_path, callback)
    first = callback.watch.first
    assert (first.module, first.kind, first.phase) == ("ff.wo", "overflow", "forward")
    assert callback.watch.step_index == 2 and callback.watch._mode is None  # ended with the training
    assert "mpdoctor numerics: overflow in forward, step 0: ff.wo (Linear)" in caplog.text


def test_a_healthy_model_in_the_trainer_reports_nothing(transformers_trainer, tmp_path):
    torch.manual_seed(0)
    callback = NumericsCallback(steps=1)
    train(transformers_trainer, Regressor().half(), tmp_path, callback)
    assert callback.watch.events == [] and callback.watch.step_index == 1
    assert pickle.loads(pickle.dumps(callback)).steps == 1


# ---------------------------------------------------------------------------------------------- Lightning


@pytest.fixture(scope="module")
def lightning():
    return pytest.importorskip("lightning.pytorch", reason="lightning is not installed (the test extra has it)")


def lightning_module(pl, scale: float = 1.0, late: float = 1.0, fail_at: int = -1):
    """A LightningModule of ``pl`` (lightning.pytorch or pytorch_lightning) around FeedForward: ``scale``
    multiplies ``wo``'s weight, ``late`` multiplies it again in the second batch, ``fail_at`` raises in that batch.
    Its optimizer takes Lightning's closure (automatic optimization): forward and backward run inside step."""

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.ff = FeedForward()
            self.head = nn.Linear(16, 1)
            with torch.no_grad():
                self.ff.wo.weight.mul_(scale)

        def training_step(self, batch, batch_idx):
            if batch_idx == fail_at:
                raise RuntimeError("this batch went wrong")
            if batch_idx == 1 and late != 1.0:
                with torch.no_grad():
                    self.ff.wo.weight.mul_(late)
            (x,) = batch
            return (self.head(self.ff(x)).float() ** 2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

        def train_dataloader(self):
            data = torch.utils.data.TensorDataset(torch.randn(16, 16))
            return torch.utils.data.DataLoader(data, batch_size=4)

    torch.manual_seed(0)
    return Module()


def fit(pl, module, tmp_path, callback, steps: int = 2, precision: str = "16-true"):
    """Lightning's own Trainer on the CPU, its CSV logger writing under tmp_path; returns the trainer."""
    trainer = pl.Trainer(
        accelerator="cpu",
        precision=precision,  # "16-true": the module and its inputs cast to float16, as on a GPU
        max_steps=steps,
        default_root_dir=tmp_path,
        logger=pl.loggers.CSVLogger(tmp_path),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )
    trainer.fit(module)
    return trainer


def logged_counts(trainer) -> list[float]:
    """``numerics/events`` per step, as the CSV logger wrote it."""
    with open(f"{trainer.logger.log_dir}/metrics.csv", newline="") as f:
        return [float(row["numerics/events"]) for row in csv.DictReader(f) if row.get("numerics/events")]


def test_the_lightning_callback_names_wo_and_logs_it(lightning, tmp_path, caplog):
    module = lightning_module(lightning, scale=3e5)
    callback = NumericsLightningCallback()
    assert isinstance(callback, lightning.Callback)
    with caplog.at_level(logging.WARNING, logger="mpdoctor.numerics"):
        trainer = fit(lightning, module, tmp_path, callback)
    first = callback.watch.first
    assert (first.module, first.kind, first.phase, first.step, first.dtype) == (
        "ff.wo",
        "overflow",
        "forward",
        0,
        "float16",
    )
    assert callback.watch.step_index == trainer.global_step == 2
    assert "mpdoctor numerics: overflow in forward, step 0: ff.wo (Linear), op mm, float16" in caplog.text
    assert logged_counts(trainer) == [1.0, 1.0]  # Lightning's own logger got the count, every step
    ops = callback.watch.ops_seen
    module.ff(torch.randn(4, 16, dtype=torch.half))
    assert callback.watch.ops_seen == ops  # the watch ended with the fit


def test_a_healthy_lightning_model_reports_nothing(lightning, tmp_path):
    callback = NumericsLightningCallback()
    trainer = fit(lightning, lightning_module(lightning), tmp_path, callback, steps=3)
    assert callback.watch.events == [] and callback.watch.step_index == 3
    assert callback.watch.ops_seen > 3 * 20  # each step's forward and backward were seen, inside step(closure)
    assert "numerics: no overflow, NaN or underflow in 3 step(s)" in str(callback.watch)
    assert logged_counts(trainer) == [0.0, 0.0, 0.0]


def test_lightning_steps_stops_watching(lightning, tmp_path):
    # wo's weight grows in the second batch: wo overflows at step 1, after a watch of steps=1 stopped
    watched = NumericsLightningCallback()
    fit(lightning, lightning_module(lightning, late=3e5), tmp_path / "all", watched, steps=3)
    assert (watched.watch.first.module, watched.watch.first.phase, watched.watch.first.step) == ("ff.wo", "forward", 1)
    callback = NumericsLightningCallback(steps=1)
    trainer = fit(lightning, lightning_module(lightning, late=3e5), tmp_path / "one", callback, steps=3)
    assert callback.watch.events == [] and callback.watch.step_index == 1 and trainer.global_step == 3
    again = pickle.loads(pickle.dumps(callback))  # as Lightning's ddp_spawn sends it to its processes
    assert (type(again), again.steps, again.watch) == (type(callback), 1, None)


def test_a_failed_lightning_fit_ends_the_watch(lightning, tmp_path):
    module = lightning_module(lightning, fail_at=1)
    callback = NumericsLightningCallback()
    with pytest.raises(RuntimeError, match="this batch went wrong"):
        fit(lightning, module, tmp_path, callback, steps=3)
    assert callback.watch.step_index == 1  # the first step was watched
    hooks = [h for m in module.modules() for h in (*m._forward_pre_hooks.values(), *m._forward_hooks.values())]
    assert hooks == [] and torch._C._len_torch_dispatch_stack() == 0  # on_exception ended it: nothing left behind


def test_the_older_pytorch_lightning_namespace(tmp_path, monkeypatch):
    pl = pytest.importorskip("pytorch_lightning", reason="pytorch_lightning is not installed (lightning brings it)")
    monkeypatch.setitem(sys.modules, "lightning.pytorch", None)  # as where only pytorch_lightning is installed
    callback = NumericsLightningCallback()
    assert type(callback).__bases__ == (pl.Callback,)
    fit(pl, lightning_module(pl, scale=3e5), tmp_path, callback)
    assert (callback.watch.first.module, callback.watch.first.kind) == ("ff.wo", "overflow")
