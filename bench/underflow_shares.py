#!/usr/bin/env python3
"""The measurement behind the numerics watch's underflow rule (mpdoctor/numerics/judge.py), reproducible.

Five small models (a GPT, a T5 stack with a hand-written RMSNorm, a conv net with BatchNorm and ReLU, a GELU MLP,
a deep tanh MLP), each run for one step (forward, a mean loss, backward) in fp16 under autocast with the loss
scaled by 2^16 (GradScaler's first scale) and without, in explicit fp16 without, and in explicit bf16. For every
op the watch judges for underflow (ops.judges_underflow) with an fp16/bf16 output, a dispatch mode counts exactly
(every value, no sampling) the share of the output that is zero or subnormal, the same for each input, and the
output's largest |value|. Printed per run:

* excess: the output's share minus its inputs' summed (the bound of what they explain). "judged": the largest among
  ops that also made subnormals (more than their inputs carried, or an all-zero output) and whose largest |value|
  is below 2^p times the smallest normal (p = 11 for fp16, 8 for bf16), and how many pass the 10-point margin:
  the watch reports those. "zeros only": ops past the margin without new subnormals (a gradient scattered into
  zeros: a select's, a loss's). "tails": ops with a larger largest (what flushed is below its rounding error);
* low: the fewest bits any output's largest sits above the smallest normal (-inf: an all-zero output);
* watch: what ``mpdoctor.numerics_watch`` itself reports on the same step (its first event), sampling included.

    python bench/underflow_shares.py
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from mpdoctor.numerics import numerics_watch  # noqa: E402
from mpdoctor.numerics.judge import PRECISION_BITS, UNDERFLOW_MARGIN  # noqa: E402
from mpdoctor.numerics.ops import ALL_BUT_FIRST, FIRST_ONLY, bounding, judges_underflow  # noqa: E402

TINY = {torch.float16: torch.finfo(torch.float16).tiny, torch.bfloat16: torch.finfo(torch.bfloat16).tiny}


class Shares(TorchDispatchMode):
    """Exact zero-or-subnormal shares of every judged op's output and inputs (as the watch bounds them)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._opname
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        tensors += [x for a in (*args, *kwargs.values()) if isinstance(a, (list, tuple)) for x in a]
        tensors = [t for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()]
        bounds = bounding(name)  # whose zeros explain the output's, as the watch bounds them
        tensors = tensors[1:] if bounds == ALL_BUT_FIRST else tensors[:1] if bounds == FIRST_ONLY else tensors
        shares = [self.share(t) for t in tensors]
        subnormal = [self.subnormal(t) for t in tensors]
        out = func(*args, **kwargs)
        first = out[0] if isinstance(out, (tuple, list)) else out
        if (
            isinstance(first, torch.Tensor)
            and first.dtype in TINY
            and first.numel() >= 16
            and judges_underflow(name)
            and bool(torch.isfinite(first).all())
        ):
            largest = float(first.abs().max())
            bits = math.log2(largest / TINY[first.dtype]) if largest > 0 else -math.inf
            excess = self.share(first) - min(1.0, sum(shares))
            reached = largest == 0 or self.subnormal(first) > min(1.0, sum(subnormal))
            self.rows.append((name, excess, bits, PRECISION_BITS[str(first.dtype)[6:]], reached))
        return out

    @staticmethod
    def subnormal(t) -> float:
        tiny = TINY.get(t.dtype)
        return 0.0 if tiny is None else float(((t.abs() < tiny) & (t != 0)).float().mean())

    @staticmethod
    def share(t) -> float:
        tiny = TINY.get(t.dtype)
        small = t.abs() < tiny if tiny is not None else t == 0  # wider inputs: their zeros only
        return float(small.float().mean())


class GPT(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 32, depth: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, 2, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(depth)
        )
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, src_mask=nn.Transformer.generate_square_subsequent_mask(tokens.shape[1]), is_causal=True)
        return self.head(x)


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class T5(nn.Module):
    def __init__(self, d: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.norms = nn.ModuleList(RMSNorm(d) for _ in range(depth))
        self.ffs = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d)) for _ in range(depth)
        )

    def forward(self, x):
        for norm, ff in zip(self.norms, self.ffs):
            x = x + ff(norm(x))
        return x


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = F.relu(h + self.b2(self.c2(h)))
        return self.fc(h.mean((2, 3)))


def cases():
    """(name, model, inputs, loss of the output)."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 50, (4, 12), generator=g)
    yield "gpt", GPT(), tokens, lambda out: F.cross_entropy(out.float().flatten(0, 1), tokens.flatten())
    x, y = torch.randn(4, 16, 16, generator=g), torch.randn(4, 16, 16, generator=g)
    yield "t5", T5(), x, lambda out: F.mse_loss(out.float(), y)
    images, labels = torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)
    yield "convnet", ConvNet(), images, lambda out: F.cross_entropy(out.float(), labels)
    x, y = torch.randn(64, 16, generator=g), torch.randn(64, 64, generator=g)
    mlp = nn.Sequential(nn.Linear(16, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 64))
    yield "gelu mlp", mlp, x, lambda out: F.mse_loss(out.float(), y)
    x = torch.randn(32, 64, generator=g)
    deep = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(64, 64), nn.Tanh())])
    yield "tanh mlp", deep, x, lambda out: out.float().pow(2).mean()


SETTINGS = [
    ("fp16 autocast, loss x 2^16", "autocast", 2.0**16),
    ("fp16 autocast, no scaler", "autocast", 1.0),
    ("fp16 explicit, no scaler", torch.float16, 1.0),
    ("bf16 explicit", torch.bfloat16, 1.0),
]


def prepare(model, inputs, how):
    """The model and its inputs as the setting runs them (cast before the step: not part of it)."""
    model = model.float() if how == "autocast" else model.to(how)
    model.zero_grad(set_to_none=True)
    return model, inputs if how == "autocast" or not inputs.is_floating_point() else inputs.to(how)


def run(model, x, loss, how, scale):
    with torch.autocast("cpu", dtype=torch.float16, enabled=how == "autocast"):
        out = model(x)
    (loss(out) * scale).backward()


def main() -> int:
    torch.manual_seed(0)
    print(f"{'model':<10}{'setting':<28}{'ops':>5}{'judged: max excess (n >= 10 pt)':>34}{'zeros only':>12}"
          f"{'tails':>9}{'low':>7}  watch")  # fmt: skip
    for name, model, inputs, loss in cases():
        start = {k: v.clone() for k, v in model.state_dict().items()}
        for label, how, scale in SETTINGS:
            model.float().load_state_dict(start)
            model, x = prepare(model, inputs, how)
            spy = Shares()
            with spy:
                run(model, x, loss, how, scale)
            model.float().load_state_dict(start)
            model, x = prepare(model, inputs, how)
            with numerics_watch(model) as watch:
                run(model, x, loss, how, scale)
            judged = [r for r in spy.rows if r[2] < r[3] and r[4]]
            zeros = [r[1] for r in spy.rows if r[2] < r[3] and not r[4]]
            tails = [r[1] for r in spy.rows if r[2] >= r[3]]
            top = max(judged, key=lambda r: r[1], default=None)
            over = sum(r[1] >= UNDERFLOW_MARGIN for r in judged)
            low = min((r[2] for r in spy.rows), default=math.inf)
            judged_text = "-" if top is None else f"{top[1] * 100:5.1f} pt {top[0]} ({over})"
            said = (
                "nothing"
                if watch.first is None
                else f"{watch.first.kind} in {watch.first.phase} at {watch.first.where}"
            )
            print(
                f"{name:<10}{label:<28}{len(spy.rows):>5}{judged_text:>34}{_pt(zeros):>12}{_pt(tails):>9}{low:>7.1f}"
                f"  {said}"
            )
    return 0


def _pt(values: list) -> str:
    return f"{max(values) * 100:.1f} pt" if values else "-"


if __name__ == "__main__":
    sys.exit(main())
