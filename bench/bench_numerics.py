#!/usr/bin/env python3
"""Time one training step plain, under ``mpdoctor.numerics_watch``, anomaly mode and a forward-hook tracer.

Stdlib and torch only (transformers' ``DebugUnderflowOverflow`` is timed too when transformers is
installed); asserts nothing. The model is a small pre-norm transformer (an embedding, ``--depth``
blocks of attention and an MLP, a head) in ``--dtype`` on the CPU; one step is forward, a
cross-entropy loss and backward, as in training. The variants:

* ``plain``: the step;
* ``watch``: the step inside ``with mpdoctor.numerics_watch(model)`` (hooking in and out counted);
* ``anomaly``: the step inside ``torch.autograd.detect_anomaly()`` (backward NaN checks, stacks);
* ``hooks``: a forward-hook tracer built like transformers' ``DebugUnderflowOverflow``: every module's
  inputs and outputs checked for inf/nan and their abs min/max read on the host (self-contained here);
* ``transformers``: ``transformers.debug_utils.DebugUnderflowOverflow`` itself, when importable.

Each round runs every variant ``--steps`` times, in a rotated order so none always runs first; a
round's ratio is that variant's time over plain's in the same round. Time is the process's CPU time
(``time.process_time``: on a shared machine other processes' work is not counted; with
``--threads 1`` it is the work the step does), the wall clock beside it. Printed: the median ratio
over ``--rounds`` rounds and its spread (the lowest and highest round), and the median step time.

    python bench/bench_numerics.py --threads 1          # bf16, 15 rounds of 5 steps
    python bench/bench_numerics.py --dtype float16 --json
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

from mpdoctor.numerics import numerics_watch  # noqa: E402


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = (q * (d // self.heads) ** -0.5) @ k.transpose(-1, -2)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        return self.o_proj((probs @ v).transpose(1, 2).reshape(b, t, d))


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
    def __init__(self, vocab: int, dim: int, heads: int, depth: int) -> None:
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


class HookTracer:
    """A forward-hook tracer like transformers' DebugUnderflowOverflow: per module, per tensor, host reads."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.handles = []
        self.found = []

    def __enter__(self):
        for name, module in self.model.named_modules():
            self.handles.append(module.register_forward_hook(self._hook(name)))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()

    def _hook(self, name):
        def hook(module, args, output):
            for tensor in [*args, *(output if isinstance(output, tuple) else (output,))]:
                if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel():
                    magnitude = tensor.abs()
                    low, high = magnitude.min().item(), magnitude.max().item()  # two host reads, as transformers
                    if torch.isinf(tensor).any().item() or torch.isnan(tensor).any().item():
                        self.found.append(name)
                    del low, high

        return hook


def step(model, tokens):
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), tokens.flatten())
    loss.backward()
    model.zero_grad(set_to_none=True)


def variants(model):
    def plain(tokens):
        step(model, tokens)

    def watch(tokens):
        with numerics_watch(model):
            step(model, tokens)

    def anomaly(tokens):
        with torch.autograd.detect_anomaly():
            step(model, tokens)

    def hooks(tokens):
        with HookTracer(model):
            step(model, tokens)

    found = {"plain": plain, "watch": watch, "anomaly": anomaly, "hooks": hooks}
    try:
        from transformers.debug_utils import DebugUnderflowOverflow
    except Exception:  # not installed, or broken: the self-contained tracer stands in
        return found

    def transformers_debug(tokens):
        debug = DebugUnderflowOverflow(model, max_frames_to_save=1)
        step(model, tokens)
        for handle in getattr(debug, "_mpdoctor_handles", []):
            handle.remove()
        model._forward_hooks.clear()
        for module in model.modules():  # it never removes its hooks: do it, so the next variant runs bare
            module._forward_hooks.clear()

    found["transformers"] = transformers_debug
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--steps", type=int, default=5, help="steps per variant per round (default 5)")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="every sample as JSON")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    model = Transformer(1000, args.dim, 4, args.depth).to(dtype)
    tokens = torch.randint(0, 1000, (args.batch, args.seq))
    runs = variants(model)
    names = list(runs)
    for name in names:  # warm-up: allocator, oneDNN primitives, the watch's op table
        for _ in range(2):
            runs[name](tokens)
    times = {name: [] for name in names}
    walls = {name: [] for name in names}
    ratios = {name: [] for name in names}
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        this = {}
        for name in order:
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                runs[name](tokens)
            # CPU time of this process: on a shared machine, what other processes take is not counted (with
            # --threads 1 it is the work done); the wall clock is kept beside it.
            this[name] = (time.process_time() - cpu) / args.steps
            times[name].append(this[name])
            walls[name].append((time.perf_counter() - start) / args.steps)
        for name in names:
            ratios[name].append(this[name] / this["plain"])
    with numerics_watch(model) as watch:
        step(model, tokens)
    summary = {
        name: {
            "median_ms": statistics.median(times[name]) * 1e3,
            "wall_median_ms": statistics.median(walls[name]) * 1e3,
            "wall_ratio": statistics.median(w / p for w, p in zip(walls[name], walls["plain"])),
            "ratio": statistics.median(ratios[name]),
            "ratio_low": min(ratios[name]),
            "ratio_high": max(ratios[name]),
        }
        for name in names
    }
    if args.json:
        print(
            json.dumps(
                {
                    "args": vars(args),
                    "torch": torch.__version__,
                    "ops": watch.ops_seen,
                    "reads": watch.reads,
                    "summary": summary,
                    "cpu_s": times,
                    "wall_s": walls,
                    "ratios": ratios,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs; {args.dtype} transformer dim {args.dim} depth {args.depth}, "
        f"batch {args.batch} x {args.seq} tokens; {watch.ops_seen} ops watched a step, {watch.reads} host read(s)"
    )
    print(f"{args.rounds} rounds of {args.steps} steps per variant, order rotated each round; CPU time of the process")
    print("(ratio: median over rounds of variant / plain in the same round; low, high: the extreme rounds)\n")
    print(f"{'variant':<14}{'cpu ms':>8}{'ratio':>8}{'low':>7}{'high':>7}{'wall ms':>9}{'wall ratio':>12}")
    for name in names:
        s = summary[name]
        print(
            f"{name:<14}{s['median_ms']:>8.1f}{s['ratio']:>8.2f}{s['ratio_low']:>7.2f}{s['ratio_high']:>7.2f}"
            f"{s['wall_median_ms']:>9.1f}{s['wall_ratio']:>12.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
