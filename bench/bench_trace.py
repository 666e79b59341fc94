#!/usr/bin/env python3
"""Time one forward step with and without ``mpdoctor.dtype_trace``: the cost of leaving it on.

Stdlib and torch only; asserts nothing. Two small fp32 models on the CPU:

* ``mlp``: four Linear + ReLU layers (9 module calls a step);
* ``transformer``: an embedding, four pre-norm blocks of attention (q/k/v/o
  projections and SDPA) and an MLP, a final norm and a head (52 module calls a step).

One step is ``model(x)`` with autograd on, as in training; traced, it is the whole
``with dtype_trace(model) as trace: model(x)``, so hooking in and out is counted too.
After untimed warm-up steps, each of ``--reps`` repetitions runs both, plain and
traced, the first of the two alternating, so both see the same machine state. It
prints the median of each, their ratio, and the cost per module call.

    python bench/bench_trace.py                  # 200 repetitions per model
    python bench/bench_trace.py --reps 500 --threads 1 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from mpdoctor.trace import dtype_trace  # noqa: E402


class MLP(nn.Module):
    def __init__(self, dim: int = 256, depth: int = 4) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(dim, dim), nn.ReLU()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        out = nn.functional.scaled_dot_product_attention(
            split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x)), is_causal=True
        )
        return self.o_proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    def __init__(self, vocab: int = 1000, dim: int = 128, heads: int = 4, depth: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def models():
    torch.manual_seed(0)
    return {
        "mlp": (MLP(), torch.randn(32, 256)),
        "transformer": (Transformer(), torch.randint(0, 1000, (4, 64))),
    }


def plain_step(model, x) -> float:
    start = time.perf_counter()
    model(x)
    return time.perf_counter() - start


def traced_step(model, x) -> float:
    start = time.perf_counter()
    with dtype_trace(model):
        model(x)
    return time.perf_counter() - start


def bench(model, x, reps: int, warmup: int) -> dict:
    for _ in range(warmup):
        plain_step(model, x)
        traced_step(model, x)
    plain, traced = [], []
    for rep in range(reps):
        if rep % 2:
            traced.append(traced_step(model, x))
            plain.append(plain_step(model, x))
        else:
            plain.append(plain_step(model, x))
            traced.append(traced_step(model, x))
    with dtype_trace(model) as trace:
        model(x)
    calls = len(trace.calls)
    p, t = statistics.median(plain), statistics.median(traced)
    return {
        "module_calls": calls,
        "plain_median_s": p,
        "traced_median_s": t,
        "ratio": t / p,
        "per_call_us": (t - p) / calls * 1e6,
        "plain_s": plain,
        "traced_s": traced,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=200, help="timed repetitions per model (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first (default 20)")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="every sample, medians and ratios as JSON")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    results = {name: bench(model, x, args.reps, args.warmup) for name, (model, x) in models().items()}
    if args.json:
        print(
            json.dumps(
                {
                    "torch": torch.__version__,
                    "python": platform.python_version(),
                    "threads": torch.get_num_threads(),
                    "results": results,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs, {platform.machine()}"
    )
    print(f"one forward step, autograd on; {args.reps} alternating repetitions after {args.warmup} warm-up\n")
    print(f"{'model':<12}{'calls':>6}{'plain ms':>11}{'traced ms':>11}{'ratio':>8}{'us/call':>9}")
    for name, r in results.items():
        print(
            f"{name:<12}{r['module_calls']:>6}{r['plain_median_s'] * 1e3:>11.3f}"
            f"{r['traced_median_s'] * 1e3:>11.3f}{r['ratio']:>8.2f}{r['per_call_us']:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
