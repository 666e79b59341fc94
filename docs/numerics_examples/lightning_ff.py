"""The "In Lightning" example of docs/numerics.md: a LightningModule whose feed-forward ``wo`` overflows in fp16,
fit for two steps on the CPU under NumericsLightningCallback (the model of tests/test_numerics_callbacks.py).

    python docs/numerics_examples/lightning_ff.py 2>&1

The page shows what it prints with Lightning's own banner lines (accelerators, tips, warnings) left out.
"""

import logging
import tempfile

import lightning.pytorch as pl
import torch
from torch import nn

from mpdoctor.numerics.callbacks import NumericsLightningCallback


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wi = nn.Linear(16, 64, bias=False)
        self.wo = nn.Linear(64, 16, bias=False)

    def forward(self, x):
        return self.wo(torch.relu(self.wi(x)))


class Module(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.ff = FeedForward()
        self.head = nn.Linear(16, 1)
        with torch.no_grad():
            self.ff.wo.weight.mul_(3e5)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        return (self.head(self.ff(x)).float() ** 2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-3)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 16)), batch_size=4)


if __name__ == "__main__":
    logging.basicConfig(format="%(message)s", level=logging.WARNING)
    torch.manual_seed(0)
    module = Module()
    callback = NumericsLightningCallback()
    with tempfile.TemporaryDirectory() as root:
        trainer = pl.Trainer(
            accelerator="cpu", precision="16-true", max_steps=2, default_root_dir=root, logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[callback],
        )  # fmt: skip
        trainer.fit(module)
    print(callback.watch)
