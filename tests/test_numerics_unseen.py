"""mpdoctor numerics on scenarios its own tests do not build (real torch, CPU, explicit fp16/bf16).

Each model is small and has the structure of a case from a real project's issue thread; the expected module,
kind and phase follow from that structure (the comment at each says why), and where it is cheap the test computes
the culprit's values itself to show they really leave the dtype's range. A scenario mpdoctor gets wrong today is
marked ``xfail(strict=True)`` with what it says instead: the expectation stays, and the mark fails loudly once
mpdoctor is fixed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import mpdoctor  # noqa: E402

HALF, BF16 = torch.float16, torch.bfloat16
ROOT = Path(__file__).resolve().parent.parent


def verdict(watch) -> tuple:
    first = watch.first
    return None if first is None else (first.module, first.kind, first.phase)


def lines(watch) -> list[str]:
    return [e.line() for e in watch.events]


def peak(t) -> float:
    """The largest |value| of a tensor, as a float (assertion messages stay one line)."""
    return float(t.detach().float().abs().max())


def finite(*tensors) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in tensors)


FP16_MAX = 65504.0


def seeded(seed: int = 0):
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed + 100)


# ============================================================================================ forward: inside a module


class HandLogSoftmax(nn.Module):
    """A classifier head whose log-softmax is written by hand, without subtracting the max first:
    ``logits - logits.exp().sum(-1).log()``. exp overflows for logits above ln(65504) = 11.09 in fp16 and
    ln(3.4e38) = 88.7 in bf16, while the logits themselves and the log-sum-exp's true value are finite."""

    def __init__(self, d: int, classes: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, classes)

    def forward(self, x):
        logits = self.proj(x)
        return logits - logits.exp().sum(-1, keepdim=True).log()


class Classifier(nn.Module):
    def __init__(self, d: int = 16, classes: int = 40) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, d), nn.Tanh())
        self.head = HandLogSoftmax(d, classes)

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("dtype, gain", [(HALF, 20.0), (BF16, 300.0)], ids=["fp16", "bf16"])
def test_a_hand_written_log_sum_exp_overflows_at_exp_inside_the_head(dtype, gain):
    gen = seeded()
    model = Classifier()
    with torch.no_grad():
        model.head.proj.weight.mul_(gain)
    model = model.to(dtype)
    x = torch.randn(8, 16, generator=gen).to(dtype)
    with torch.no_grad():  # the culprit, computed here: finite logits whose exp passes the dtype's max
        logits = model.head.proj(model.body(x))
    assert finite(logits) and float(logits.float().max()) > math.log(torch.finfo(dtype).max)
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        F.nll_loss(out.float(), torch.arange(8) % 40).backward()
    # exp runs in HandLogSoftmax's own forward (its child proj returned finite logits): the head, not proj.
    assert verdict(watch) == ("head", "overflow", "forward"), lines(watch)
    assert watch.first.op == "exp" and watch.first.dtype == str(dtype).removeprefix("torch.")


class RelativeAttention(nn.Module):
    """T5's self-attention: scores q @ k^T (T5 does not scale them) plus a relative position bias that the first
    layer computes from an Embedding and every later layer reuses. In fp16 the add overflows where a large score
    meets a large bias, though both are finite."""

    def __init__(self, d: int = 16, heads: int = 2, buckets: int = 8, has_bias: bool = False) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.relative_attention_bias = nn.Embedding(buckets, heads) if has_bias else None

    def compute_bias(self, t: int):
        position = torch.arange(t)
        buckets = (position[None, :] - position[:, None]).abs().clamp(max=7)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)[None]  # (1, heads, t, t)

    def forward(self, x, position_bias=None):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if position_bias is None:
            position_bias = self.compute_bias(t)
        scores = q @ k.transpose(-1, -2)
        scores = scores + position_bias
        out = torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, d)), position_bias


class RelativeLayer(nn.Module):
    def __init__(self, has_bias: bool) -> None:
        super().__init__()
        self.attn = RelativeAttention(has_bias=has_bias)

    def forward(self, x, position_bias=None):
        h, position_bias = self.attn(x, position_bias)
        return x + h, position_bias


class RelativeEncoder(nn.Module):
    def __init__(self, depth: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList([RelativeLayer(has_bias=i == 0) for i in range(depth)])

    def forward(self, x):
        position_bias = None
        for layer in self.layers:
            x, position_bias = layer(x, position_bias)
        return x


def test_relative_position_bias_added_to_scores_overflows_in_the_layer_that_adds_it():
    gen = seeded()
    model = RelativeEncoder()
    with torch.no_grad():
        model.layers[0].attn.relative_attention_bias.weight.fill_(5e4)  # large but finite in fp16
        for proj in (model.layers[1].attn.q, model.layers[1].attn.k):
            proj.weight.mul_(80)  # layer 1's scores reach the tens of thousands; layer 0's stay small
    model = model.half()
    x = torch.randn(2, 6, 16, generator=gen).half()
    with torch.no_grad():  # layer 1's scores, computed here: finite, but score + bias passes 65504
        h1 = model.layers[0](x)[0]
        attn = model.layers[1].attn
        q = attn.q(h1).view(2, 6, 2, 8).transpose(1, 2)
        k = attn.k(h1).view(2, 6, 2, 8).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)
    assert finite(h1, scores) and float(scores.float().max()) > FP16_MAX - 5e4
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    # The bias came out of layer 0's Embedding finite; the add that overflows runs in layer 1's attention forward.
    assert verdict(watch) == ("layers.1.attn", "overflow", "forward"), lines(watch)
    assert watch.first.op == "add"


class GemmaRMSNorm(nn.Module):
    """Gemma's RMSNorm: normalised in fp32, scaled by (1 + weight) in fp32, cast back to the input's dtype.
    Gemma's norm weights are large (transformers#36822, Gemma 3 broken in fp16): everything inside is finite in
    fp32 and the value only leaves fp16's range at the cast back."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        h = h * (1.0 + self.weight.float())
        return h.type_as(x)


class GemmaBlock(nn.Module):
    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.input_layernorm = GemmaRMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 32), nn.GELU(approximate="tanh"), nn.Linear(32, d))
        self.post_feedforward_layernorm = GemmaRMSNorm(d)

    def forward(self, x):
        return x + self.post_feedforward_layernorm(self.mlp(self.input_layernorm(x)))


def test_gemma_norm_overflows_at_the_cast_back_to_fp16_not_in_its_fp32_math():
    gen = seeded()
    model = nn.Sequential(GemmaBlock(), GemmaBlock())
    with torch.no_grad():
        model[1].post_feedforward_layernorm.weight.fill_(4e4)  # (1 + w) * normalised (|.| up to ~3) > 65504
    model = model.half()
    x = torch.randn(4, 16, generator=gen).half()
    with torch.no_grad():
        norm = model[1].post_feedforward_layernorm
        inner = model[1].mlp(model[1].input_layernorm(model[0](x))).float()
        scaled = inner * torch.rsqrt(inner.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + norm.weight.float())
    assert finite(scaled) and peak(scaled) > FP16_MAX  # finite in fp32, out of fp16's range
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert verdict(watch) == ("1.post_feedforward_layernorm", "overflow", "forward"), lines(watch)
    assert watch.first.op == "_to_copy"  # the cast back, `type_as`: its fp32 input was finite


class ResnetBlock(nn.Module):
    """A VAE decoder's resnet block (diffusers' ResnetBlock2D): GroupNorm -> SiLU -> conv, twice, plus the skip.
    SDXL's VAE decoder in fp16 overflows in its up blocks (the accepted fix: sdxl-vae-fp16-fix, or the VAE in
    fp32): here the block's own residual add, of two finite halves, passes 65504."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(2, c), nn.GroupNorm(2, c)
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


class UpBlock(nn.Module):
    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(c), ResnetBlock(c)])
        self.upsample = nn.Upsample(scale_factor=2.0, mode="nearest")

    def forward(self, x):
        for resnet in self.resnets:
            x = resnet(x)
        return self.upsample(x)


class Decoder(nn.Module):
    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(4, c, 3, padding=1)
        self.up_blocks = nn.ModuleList([UpBlock(c), UpBlock(c)])
        self.conv_norm_out = nn.GroupNorm(2, c)
        self.conv_out = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, z):
        x = self.conv_in(z)
        for block in self.up_blocks:
            x = block(x)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


def test_vae_decoder_residual_add_overflows_in_the_resnet_block_not_its_convs():
    gen = seeded()
    model = Decoder()
    with torch.no_grad():  # activations grow through the up blocks: ~3e4 out of block 1's first resnet ...
        model.up_blocks[1].resnets[0].conv2.bias.fill_(3e4)
        model.up_blocks[1].resnets[1].conv2.bias.fill_(4e4)  # ... and ~4e4 from the second one's convs
    model = model.half()
    z = torch.randn(1, 4, 4, 4, generator=gen).half()
    with torch.no_grad():
        block = model.up_blocks[1].resnets[1]
        x_in = model.up_blocks[1].resnets[0](model.up_blocks[0](model.conv_in(z)))
        h = block.conv2(F.silu(block.norm2(block.conv1(F.silu(block.norm1(x_in))))))
    assert finite(x_in, h) and peak(x_in.float() + h.float()) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        model(z).float().mean().backward()
    assert verdict(watch) == ("up_blocks.1.resnets.1", "overflow", "forward"), lines(watch)
    assert watch.first.op == "add"


class CumsumMixer(nn.Module):
    """A token mixer built on a running sum over the sequence (linear attention, a cumulative mean written as
    cumsum / position): in fp16 the running sum of positive features passes 65504 over a few hundred tokens,
    though every feature is finite and the final division would bring it back."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        h = F.softplus(self.proj(x)) * 100  # positive features
        running = h.cumsum(dim=1)
        count = torch.arange(1, x.shape[1] + 1, dtype=x.dtype).view(1, -1, 1)
        return running / count


def test_a_running_sum_over_the_sequence_overflows_at_cumsum():
    gen = seeded()
    model = nn.Sequential(nn.Linear(8, 8), CumsumMixer(), nn.Linear(8, 4)).half()
    x = torch.randn(2, 1024, 8, generator=gen).half()
    with torch.no_grad():
        h = F.softplus(model[1].proj(model[0](x))) * 100
    assert finite(h) and peak(h.float().sum(1)) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert verdict(watch) == ("1", "overflow", "forward"), lines(watch)
    assert watch.first.op == "cumsum"


class TiedLM(nn.Module):
    """GPT-2-style weight tying: the output projection is the embedding matrix, applied with F.linear in the
    root's own forward (no lm_head module). Large embeddings make the logits pass fp16's max: the op belongs to no
    submodule, so the root "" owns it."""

    def __init__(self, vocab: int = 64, d: int = 32) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

    def forward(self, tokens):
        h = self.wte(tokens)
        h = h + self.mlp(h)
        return F.linear(h, self.wte.weight)


def test_a_tied_output_projection_in_the_roots_own_forward_is_the_roots():
    gen = seeded()
    model = TiedLM()
    with torch.no_grad():
        model.wte.weight.mul_(100)
        model.mlp[2].weight.mul_(0.01)
    model = model.half()
    tokens = torch.randint(0, 64, (2, 8), generator=gen)
    with torch.no_grad():
        h = model.wte(tokens) + model.mlp(model.wte(tokens))
        logits = h.float() @ model.wte.weight.float().T
    assert finite(h) and peak(logits) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        out = model(tokens)
        F.cross_entropy(out.float().flatten(0, 1), tokens.flatten()).backward()
    assert verdict(watch) == ("", "overflow", "forward"), lines(watch)
    assert watch.first.where == "(root) (TiedLM)" and watch.first.op in ("mm", "matmul", "linear", "bmm")


class LSTMTagger(nn.Module):
    """An LSTM cell stepped over the sequence by hand (the module called once per token). Its gate
    pre-activations x @ W_ih^T overflow fp16 when the input weights are large; sigmoid/tanh of inf are finite,
    so the hidden state the cell returns stays finite: the overflow is only inside the cell."""

    def __init__(self, d: int = 8, hidden: int = 16) -> None:
        super().__init__()
        self.embed = nn.Linear(d, d)
        self.cell = nn.LSTMCell(d, hidden)
        self.head = nn.Linear(hidden, 3)

    def forward(self, x):
        h = c = torch.zeros(x.shape[0], self.cell.hidden_size, dtype=x.dtype)
        outs = []
        for t in range(x.shape[1]):
            h, c = self.cell(self.embed(x[:, t]), (h, c))
            outs.append(h)
        return self.head(torch.stack(outs, 1))


@pytest.mark.parametrize("overflowing", [True, False], ids=["gates-overflow", "healthy"])
def test_lstm_gates_overflow_inside_the_cell_while_its_state_stays_finite(overflowing):
    gen = seeded()
    model = LSTMTagger()
    if overflowing:
        with torch.no_grad():
            model.cell.weight_ih.mul_(1e5)
    model = model.half()
    x = torch.randn(4, 5, 8, generator=gen).half()
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        (out.float().pow(2).sum() * 1024).backward()  # a static loss scale, as fp16 training without autocast
    if not overflowing:
        assert watch.events == [], lines(watch)
        return
    with torch.no_grad():
        gates = model.embed(x[:, 0]).float() @ model.cell.weight_ih.float().T
    assert peak(gates) > FP16_MAX
    assert verdict(watch) == ("cell", "overflow", "forward"), lines(watch)


class Router(nn.Module):
    """A mixture-of-experts router over a ModuleDict of experts, each a Sequential: the qualified name goes
    through the dict's key."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.experts = nn.ModuleDict(
            {name: nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, d)) for name in ("small", "big")}
        )
        self.gate = nn.Linear(d, 2)

    def forward(self, x):
        weights = torch.softmax(self.gate(x), -1)
        return weights[..., :1] * self.experts["small"](x) + weights[..., 1:] * self.experts["big"](x)


class Stage(nn.Module):
    """A stage that runs a ModuleList of blocks: a norm, then the router."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.LayerNorm(d), Router(d)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_nested_containers_are_named_by_their_full_qualified_path():
    gen = seeded()
    # Sequential > Sequential > Stage > ModuleList > Router > ModuleDict > Sequential > Linear
    model = nn.Sequential(nn.Linear(16, 16), nn.Sequential(Stage()), nn.Linear(16, 4))
    router = model[1][0].blocks[1]
    with torch.no_grad():
        router.experts["big"][2].weight.mul_(1.5e5)
    model = model.half()
    x = torch.randn(8, 16, generator=gen).half()
    with torch.no_grad():
        expert = router.experts["big"]
        hidden = expert[1](expert[0](model[1][0].blocks[0](model[0](x))))
        out = hidden.float() @ expert[2].weight.float().T
    assert finite(hidden) and peak(out) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert verdict(watch) == ("1.0.blocks.1.experts.big.2", "overflow", "forward"), lines(watch)


def test_a_loss_written_by_hand_outside_the_model_is_outside_the_model():
    gen = seeded()
    # A Poisson regression whose negative log-likelihood exp(log_rate) - y * log_rate is written by hand in fp16:
    # the model's log-rates (~15) are finite, the loss's exp passes 65504 outside every module.
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    with torch.no_grad():
        model[2].bias.fill_(15.0)
    model = model.half()
    x, y = torch.randn(16, 8, generator=gen).half(), torch.ones(16, 1).half()
    with mpdoctor.numerics_watch(model) as watch:
        log_rate = model(x)
        assert torch.isfinite(log_rate).all()
        loss = (torch.exp(log_rate) - y * log_rate).float().mean()
        loss.backward()
    assert verdict(watch) == (None, "overflow", "forward"), lines(watch)
    assert watch.first.op == "exp" and "outside the model" in watch.first.where


class MaskedAttention(nn.Module):
    """Causal attention with a padding mask, both written with masked_fill(-inf). A left-padded sequence's
    first query sees only padding: its whole row is -inf and softmax turns it into 0/0 = NaN (pytorch#41508,
    fixed in SDPA by _safe_softmax; hand-written attention still does it). Finite scores, NaN probabilities."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)

    def forward(self, x, padding):
        q, k, v = self.qkv(x).chunk(3, -1)
        scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        t = x.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal | padding[:, None, :], float("-inf"))
        return self.o(torch.softmax(scores, -1) @ v)


class PaddedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(16, 16)
        self.attn = MaskedAttention()

    def forward(self, x, padding):
        return self.attn(self.embed(x), padding)


def test_a_fully_masked_attention_row_is_a_nan_made_by_the_softmax():
    gen = seeded()
    model = PaddedLM().half()
    x = torch.randn(2, 5, 16, generator=gen).half()
    padding = torch.tensor([[True, True, False, False, False], [False] * 5])  # the first sequence left-padded
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x, padding)
    assert torch.isnan(out[0, 0]).all() and torch.isfinite(out[1]).all()
    # softmax of a row that is all -inf: NaN from inputs that held only mask values, in attn's own forward.
    assert verdict(watch) == ("attn", "nan", "forward"), lines(watch)


class L2Normalize(nn.Module):
    """A CLIP-style embedding head normalising by hand, x / x.norm(), without F.normalize's eps: a padded
    (all-zero) input row gives 0 / 0 = NaN, from finite values, in any dtype."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        z = self.proj(x)
        return z / z.norm(dim=-1, keepdim=True)


def test_normalising_a_zero_row_by_hand_is_a_nan_in_bf16():
    gen = seeded()
    model = nn.Sequential(nn.Identity(), L2Normalize()).to(BF16)
    x = torch.randn(4, 16, generator=gen).to(BF16)
    x[3] = 0  # a padding row
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
    assert torch.isnan(out[3]).all()
    assert verdict(watch) == ("1", "nan", "forward"), lines(watch)
    assert watch.first.op == "div" and watch.first.dtype == "bfloat16"


def test_an_overflow_that_starts_after_the_optimizer_blew_the_weights_up_is_at_that_step():
    gen = seeded()
    # A learning rate far too high: step 0 is healthy; its update makes fc2's weights huge, and step 1's
    # forward overflows in fc2 (training that diverges after a few steps).
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)).half()
    optimizer = torch.optim.SGD(model.parameters(), lr=3e3)
    x = torch.rand(32, 16, generator=gen).half() + 1
    with mpdoctor.numerics_watch(model) as watch:
        for _ in range(2):
            optimizer.zero_grad()
            model(x).float().pow(2).mean().backward()
            optimizer.step()
    assert verdict(watch) == ("2", "overflow", "forward"), lines(watch)
    assert watch.first.step == 1 and watch.step_index == 2


class OutOfOrder(nn.Module):
    """Two branches defined in one order and called in the other (common: a head defined before the body).
    Both overflow on the same input; the first is the one that ran first, `second`."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 8)
        self.second = nn.Linear(8, 8)

    def forward(self, x):
        y = self.second(x)
        return y + self.first(x)


def test_first_is_the_first_to_run_not_the_first_registered():
    gen = seeded()
    model = OutOfOrder()
    with torch.no_grad():
        model.first.weight.mul_(3e4)
        model.second.weight.mul_(3e4)
    model = model.half()
    x = torch.randn(4, 8, generator=gen).half() * 3
    with torch.no_grad():
        assert peak(x.float() @ model.first.weight.float().T) > FP16_MAX
        assert peak(x.float() @ model.second.weight.float().T) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert verdict(watch) == ("second", "overflow", "forward"), lines(watch)
    assert [e.module for e in watch.events[:2]] == ["second", "first"]


class SafeSqrt(nn.Module):
    """``torch.where(x > 0, x.sqrt(), 0)``: the forward computes sqrt of the negative entries too (NaN from finite
    values) and discards them; the backward multiplies the zero gradient where() gives them by sqrt's infinite
    derivative there, and the NaN reaches the weights (pytorch#68425, the where-gradient trap). The NaN is made
    in the forward, by sqrt, inside this module."""

    def forward(self, x):
        return torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))


def test_the_where_sqrt_trap_is_a_nan_made_by_sqrt_in_the_forward():
    gen = seeded()
    model = nn.Sequential(nn.Linear(8, 8), SafeSqrt(), nn.Linear(8, 2)).half()
    x = torch.randn(4, 8, generator=gen).half()
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        assert finite(out)  # where() hid the NaN from the output ...
        out.float().sum().backward()
    assert torch.isnan(model[0].weight.grad).any()  # ... not from the gradient
    assert verdict(watch) == ("1", "nan", "forward"), lines(watch)
    assert watch.first.op == "sqrt"


class RMSNormFp16(nn.Module):
    """A hand-written RMSNorm with its variance in fp16, on small activations (an embedding initialised at
    std 1e-3, as some codebases do): x.pow(2) of ~3e-3 is ~1e-5, below fp16's smallest normal, so the variance
    is made of subnormals and the normalisation is off. The mirror image of the pow overflow."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * x * torch.rsqrt(variance + 1e-6)


def test_an_rmsnorm_variance_of_small_activations_underflows_in_the_forward():
    gen = seeded()
    model = nn.Sequential(nn.Embedding(20, 16), RMSNormFp16(16), nn.Linear(16, 4))
    with torch.no_grad():
        model[0].weight.mul_(3e-3)
    model = model.half()
    tokens = torch.randint(0, 20, (2, 6), generator=gen)
    squares = model[0](tokens).detach().float().pow(2)
    assert float((squares < torch.finfo(HALF).tiny).float().mean()) > 0.9  # computed here: nearly all subnormal
    with mpdoctor.numerics_watch(model) as watch:
        (model(tokens).float().sum() * 1024).backward()
    assert verdict(watch) == ("1", "underflow", "forward"), lines(watch)
    assert watch.first.op == "pow"


def test_steps_count_optimizer_steps_under_gradient_accumulation():
    # Two micro-batches per optimizer step; the second micro-batch of the second step carries values ~2e4, which
    # the first Linear (weights all 1, 8 inputs) sums past 65504. The event is at optimizer step 1, not backward 3.
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].bias.zero_()
    model = model.half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with mpdoctor.numerics_watch(model) as watch:
        for step in range(3):
            optimizer.zero_grad()
            for micro in range(2):
                value = 2e4 if (step, micro) == (1, 1) else 1.0
                model(torch.full((4, 8), value, dtype=HALF)).float().sum().backward()
            optimizer.step()
    assert verdict(watch) == ("0", "overflow", "forward"), lines(watch)
    assert watch.first.step == 1 and watch.step_index == 3


def test_a_hand_written_update_that_writes_nan_is_an_event_outside_the_model():
    # The control for the Adam case below: the same 0 / 0 in an update written by hand, outside optimizer.step().
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 2)).half()
    with mpdoctor.numerics_watch(model) as watch:
        model(torch.tensor([[1, 2, 3]])).float().pow(2).sum().backward()
        with torch.no_grad():
            for p in model.parameters():
                denom = p.grad.abs().sqrt().add_(1e-8)  # eps 1e-8 is 0 in fp16
                p.addcdiv_(p.grad, denom, value=-1e-3)  # unused rows: 0 / 0
    assert torch.isnan(model[0].weight).any()
    assert verdict(watch) == (None, "nan", "forward"), lines(watch)


def test_pure_fp16_adam_writing_nan_into_unused_embedding_rows_is_an_event():
    # Adam's default eps=1e-8 is 0 in fp16 (its smallest subnormal is 6e-8). Embedding rows the batch did not use
    # have gradient 0, so m = v = 0 and the update is 0 / (sqrt(0) + 0) = NaN, written into the weights inside
    # optimizer.step() (pure fp16 training with Adam; the fixes: fp32 master weights, eps=1e-4, or bf16). The next
    # batch that reads such a row has a NaN loss. Expected: a nan at step 0, outside the model (the optimizer;
    # the doc names no phase for it, so none is asserted) or at the Embedding "0" whose weight it wrote.
    assert float(torch.tensor(1e-8, dtype=HALF)) == 0.0  # the eps, computed here
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 2)).half()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with mpdoctor.numerics_watch(model) as watch:
        for tokens in ([[1, 2, 3]], [[5, 1]]):
            optimizer.zero_grad()
            loss = model(torch.tensor(tokens)).float().pow(2).sum()
            loss.backward()
            optimizer.step()
    assert torch.isnan(loss)  # the second batch reads row 5, NaN since step 0's update
    first = watch.first
    assert first is not None, str(watch)
    assert first.kind == "nan" and first.step == 0 and first.module in (None, "0"), lines(watch)


# ================================================================================================= backward


class ExpActivation(nn.Module):
    """A steep activation, exp: forward exp(x) for x up to ~10 is finite (22026); its backward is
    grad * exp(x), so an upstream gradient of 4 overflows fp16 in this module's backward alone."""

    def forward(self, x):
        return torch.exp(x)


def test_a_steep_activations_backward_alone_overflows():
    gen = seeded()
    model = nn.Sequential(nn.Linear(8, 8), ExpActivation())
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.copy_(torch.linspace(0, 10, 8))
    model = model.half()
    x = torch.randn(4, 8, generator=gen).half()
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        assert finite(out) and peak(out) * 4 > FP16_MAX  # grad 4 * exp(10) > 65504
        (out.float().sum() * 4).backward()
    assert verdict(watch) == ("1", "overflow", "backward"), lines(watch)


class ReverseGrad(torch.autograd.Function):
    """DANN's gradient reversal: identity forward, -lambda * grad backward (a custom autograd.Function)."""

    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.lam * grad, None


class GradientReversal(nn.Module):
    def __init__(self, lam: float) -> None:
        super().__init__()
        self.lam = lam

    def forward(self, x):
        return ReverseGrad.apply(x, self.lam)


class DANN(nn.Module):
    """Domain-adversarial training: features -> gradient reversal -> domain classifier. With lambda far too
    large, the reversal's own backward (a custom Function's) overflows fp16; its forward is the identity."""

    def __init__(self, lam: float) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.grl = GradientReversal(lam)
        self.domain = nn.Linear(16, 2)

    def forward(self, x):
        return self.domain(self.grl(self.features(x)))


def test_a_custom_autograd_functions_backward_is_its_modules():
    gen = seeded()
    model = DANN(lam=1e4).half()
    x = torch.randn(4, 8, generator=gen).half()
    with torch.no_grad():  # the gradient into the reversal, computed here: x lambda passes 65504
        g = torch.full((4, 2), 20.0) @ model.domain.weight.float()
    assert peak(g) < FP16_MAX < peak(g) * 1e4
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        (out.float().sum() * 20).backward()
    assert verdict(watch) == ("grl", "overflow", "backward"), lines(watch)


class Sandwich(nn.Module):
    """One Linear called twice with another between: shared -> amp -> shared. Only amp's backward overflows
    (its input gradient is grad @ W_amp with W_amp large); a module called twice must not capture it."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.shared = nn.Linear(d, d)
        self.amp = nn.Linear(d, d)

    def forward(self, x):
        return self.shared(self.amp(self.shared(x)))


def test_backward_of_a_module_between_two_calls_of_a_shared_module_is_its_own():
    gen = seeded()
    model = Sandwich()
    with torch.no_grad():
        model.amp.weight.mul_(4000)
        model.shared.bias.zero_()
        model.amp.bias.zero_()
    model = model.half()
    x = torch.randn(8, 16, generator=gen).half() * 1e-3
    loss_scale = 50.0
    with torch.no_grad():  # the gradients, computed here in fp32: into amp finite, out of amp past 65504
        g_out = torch.full((8, 16), loss_scale)
        g_mid = g_out @ model.shared.weight.float()
        g_in = g_mid @ model.amp.weight.float()
    assert peak(g_mid) < FP16_MAX < peak(g_in)
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        assert finite(out)
        (out.float().sum() * loss_scale).backward()
    assert verdict(watch) == ("amp", "overflow", "backward"), lines(watch)


class InPlaceGain(nn.Module):
    """A learned gain applied in place (``x.mul_(gain)``, a functional op only, no submodule): forward small
    values times 1e3 are finite; backward the gradient times 1e3 passes 65504, in this module's backward."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.full((d,), 1e3))

    def forward(self, x):
        return x.mul_(self.gain)


def test_an_in_place_ops_backward_is_attributed_to_the_module_that_ran_it():
    gen = seeded()
    model = nn.Sequential(nn.Linear(16, 16), InPlaceGain(), nn.Linear(16, 4))
    with torch.no_grad():
        model[0].weight.mul_(1e-3)
        model[0].bias.zero_()
        model[2].weight.fill_(1.0)
    model = model.half()
    x = torch.randn(8, 16, generator=gen).half()
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        assert finite(out)
        (out.float().sum() * 20).backward()  # grad into the gain: 20 * 4 outputs = 80; times 1e3 > 65504
    assert verdict(watch) == ("1", "overflow", "backward"), lines(watch)


class ResidualInPlace(nn.Module):
    """A residual block that adds its skip in place (``h.add_(x)``) and applies relu_ after: the in-place add
    of two finite halves overflows fp16 in this block's own forward."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        h = self.fc2(torch.relu(self.fc1(x)))
        h.add_(x)
        return h.relu_()


def test_an_in_place_residual_add_overflows_in_the_block():
    gen = seeded()
    model = nn.Sequential(nn.Linear(16, 16), ResidualInPlace(), nn.Linear(16, 4))
    with torch.no_grad():
        model[0].bias.fill_(4e4)  # the stream arriving: ~4e4
        model[1].fc1.weight.mul_(1e-4)
        model[1].fc2.bias.fill_(4e4)  # the block's own update: ~4e4
    model = model.half()
    x = torch.randn(8, 16, generator=gen).half()
    with torch.no_grad():
        stream = model[0](x)
        update = model[1].fc2(torch.relu(model[1].fc1(stream)))
    assert finite(stream, update) and peak(stream.float() + update.float()) > FP16_MAX
    with mpdoctor.numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert verdict(watch) == ("1", "overflow", "forward"), lines(watch)
    assert watch.first.op == "add_"


class CheckpointedNet(nn.Module):
    """Gradient checkpointing (torch.utils.checkpoint): block 1's forward runs again inside the backward.
    Its fc2 has large weights and a tiny input: the forward is finite, its backward grad @ W overflows."""

    def __init__(self, use_reentrant: bool, d: int = 16) -> None:
        super().__init__()
        self.use_reentrant = use_reentrant
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d)) for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.use_reentrant)
        return x


def checkpointed(use_reentrant: bool) -> CheckpointedNet:
    seeded()
    model = CheckpointedNet(use_reentrant)
    with torch.no_grad():
        model.blocks[1][0].weight.mul_(1e-3)
        model.blocks[1][0].bias.zero_()
        model.blocks[1][2].weight.mul_(3e4)  # forward: tanh(~1e-3) @ W ~ 1; backward: grad @ W past 65504
    return model


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_backward_inside_a_checkpointed_block_is_named_at_the_module(use_reentrant):
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(7))
    loss_scale = 32.0
    reference = checkpointed(use_reentrant=False)  # in fp32: the gradient out of fc2's backward, computed here
    seen = {}
    reference.blocks[1][2].register_full_backward_hook(lambda m, gi, go: seen.update(into=gi[0], out=go[0]))
    (reference(x.requires_grad_(True)).sum() * loss_scale).backward()
    assert peak(seen["out"]) < FP16_MAX < peak(seen["into"])
    model = checkpointed(use_reentrant).half()
    x = x.detach().half().requires_grad_(True)
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x)
        assert finite(out)
        (out.float().sum() * loss_scale).backward()
    assert verdict(watch) == ("blocks.1.2", "overflow", "backward"), lines(watch)


class Encoder(nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d))

    def forward(self, x):
        return self.net(x)


class HandDistance(nn.Module):
    """Euclidean distance written as ((a - b)^2).sum().sqrt(): at a == b the forward is 0, finite, and sqrt's
    backward divides by 2 * 0 (pytorch#2421: 'Gradient of zero norm is nan'). A Siamese model comparing a pair
    with itself."""

    def forward(self, a, b):
        return (a - b).pow(2).sum(-1).sqrt()


class Siamese(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.distance = HandDistance()

    def forward(self, x1, x2):
        return self.distance(self.encoder(x1), self.encoder(x2))


def test_sqrt_of_a_zero_distance_blows_up_in_the_distances_backward():
    gen = seeded()
    model = Siamese().half()
    x1 = torch.randn(4, 8, generator=gen).half()
    x2 = torch.randn(4, 8, generator=gen).half()
    x2[0] = x1[0]  # an identical pair
    with mpdoctor.numerics_watch(model) as watch:
        d = model(x1, x2)
        assert torch.isfinite(d).all() and d[0] == 0
        d.float().sum().backward()
    # SqrtBackward: grad / (2 * sqrt(0)) = inf from finite values (then inf * 0 = NaN, only passed on).
    assert verdict(watch) == ("distance", "overflow", "backward"), lines(watch)


# ================================================================================================= underflow


class WideRegressor(nn.Module):
    """A Llama-style model: the head's fp16 output is cast to fp32 in the root's forward (``.float()``), and
    the loss is a mean over every output. Its gradient, 2 (out - y) / N with N = 65536, is below fp16's
    smallest normal (6.1e-05): the cast back to fp16 in the backward (the root's node) flushes it, unless a
    GradScaler multiplied the loss first."""

    def __init__(self, d: int = 16, out: int = 1024) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 64), nn.GELU())
        self.head = nn.Linear(64, out)

    def forward(self, x):
        return self.head(self.body(x)).float()


@pytest.fixture(scope="module")
def regression():
    gen = seeded()
    x = torch.randn(64, 16, generator=gen)
    y = torch.randn(64, 1024, generator=gen)
    return x, y


def train_regressor(x, y, scaler) -> object:
    torch.manual_seed(0)
    model = WideRegressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    with mpdoctor.numerics_watch(model) as watch:
        for _ in range(2):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=HALF):
                loss = F.mse_loss(model(x), y)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
    return watch


def test_a_mean_loss_gradient_underflows_at_the_cast_back_without_a_scaler(regression):
    x, y = regression
    torch.manual_seed(0)
    with torch.autocast("cpu", dtype=HALF):  # the gradient entering the model, computed here in fp32
        out = WideRegressor()(x)
    (grad,) = torch.autograd.grad(F.mse_loss(out, y), out)
    assert (
        peak(grad) < 256 * torch.finfo(HALF).tiny and float((grad.abs() < torch.finfo(HALF).tiny).float().mean()) > 0.5
    )
    watch = train_regressor(x, y, scaler=None)
    assert verdict(watch) == ("", "underflow", "backward"), lines(watch)
    assert "GradScaler" in watch.first.fix and watch.first.dtype == "float16"


def test_the_same_step_with_a_grad_scaler_reports_nothing(regression):
    x, y = regression
    watch = train_regressor(x, y, scaler=torch.amp.GradScaler("cpu", init_scale=2.0**16))
    assert watch.events == [], lines(watch)
    assert [s.found_inf for s in watch.scaler] == [False, False]


# ================================================================================================= healthy


class BasicBlock(nn.Module):
    """torchvision's ResNet basic block: conv-BN-ReLU-conv-BN, the skip added in place (``out += identity``),
    ReLU(inplace=True) (its honest zeros), training mode."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1, self.bn2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class TinyResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.layer1 = nn.Sequential(BasicBlock(), BasicBlock())
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(self.layer1(self.stem(x)).mean((2, 3)))


class PaddedEncoder(nn.Module):
    """A BERT-style encoder layer with transformers' additive padding mask: (1 - mask) * finfo(dtype).min added to
    the scaled scores. Where a score is negative the add rounds to -inf: that is the mask, not an overflow."""

    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d))
        self.cls = nn.Linear(d, 2)

    def forward(self, tokens, mask):
        x = self.embed(tokens)
        b, t, d = x.shape
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in self.qkv(x).chunk(3, -1))
        extended = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + extended
        h = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(h))
        x = self.ln2(x + self.ffn(x))
        pooled = (x * mask[..., None].to(x.dtype)).sum(1) / mask.sum(1, keepdim=True).to(x.dtype)
        return self.cls(pooled)


class DeadReluMLP(nn.Module):
    """An MLP with many dead ReLUs (negative biases) and dropout: most activations and their gradients are
    honest zeros."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5)
        )
        with torch.no_grad():
            self.net[0].bias.fill_(-0.8)
            self.net[3].bias.fill_(-0.3)

    def forward(self, x):
        return self.net(x)


def healthy_batches(name: str, gen):
    if name == "resnet":
        return TinyResNet(), [(torch.randn(8, 3, 8, 8, generator=gen),), (torch.randn(8, 3, 8, 8, generator=gen),)]
    if name == "padded-encoder":
        tokens = torch.randint(1, 50, (4, 10), generator=gen)
        mask = torch.ones(4, 10, dtype=torch.long)
        mask[0, 6:] = 0
        mask[2, 3:] = 0
        return PaddedEncoder(), [(tokens * mask, mask), (tokens.flip(1) * mask, mask)]
    return DeadReluMLP(), [(torch.randn(32, 16, generator=gen),), (torch.randn(32, 16, generator=gen),)]


@pytest.mark.parametrize("name", ["resnet", "padded-encoder", "dead-relu-mlp"])
def test_healthy_models_under_autocast_with_a_grad_scaler_report_nothing(name):
    # The usual fp16 recipe: fp32 weights, autocast, GradScaler at its default scale.
    gen = seeded()
    model, batches = healthy_batches(name, gen)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu")
    with mpdoctor.numerics_watch(model) as watch:
        for inputs in batches:
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=HALF):
                logits = model(*inputs)
            loss = F.cross_entropy(logits.float(), torch.arange(logits.shape[0]) % logits.shape[-1])
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    assert watch.events == [], lines(watch)
    assert len(watch.scaler) == 2 and watch.step_index == 2


class MaskedScores(nn.Module):
    """Self-attention with a padding mask made additive in one of the ways real code makes it. Every way puts
    -inf (or a value fp16 rounds to -inf) where the mask is 0 and nothing else: softmax turns it into 0, and no
    row is fully masked. A healthy model: nothing to report."""

    def __init__(self, how: str, d: int = 16) -> None:
        super().__init__()
        self.how = how
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, keep):
        q, k, v = self.qkv(x).chunk(3, -1)
        scores = q @ k.transpose(-1, -2) / 4
        keep = keep[:, None, :]
        if self.how == "generate_square_subsequent_mask":  # PyTorch's own helper: triu of a full(-inf)
            scores = scores + nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=x.dtype)
        elif self.how == "where":
            scores = torch.where(keep, scores, float("-inf"))
        elif self.how == "log":  # log of the 0/1 mask: 0 where kept, -inf where not
            scores = scores + keep.to(x.dtype).log()
        elif self.how == "times -1e9":  # the Annotated-Transformer constant, as an additive mask
            scores = scores + (1.0 - keep.to(x.dtype)) * -1e9
        return self.o(torch.softmax(scores, -1) @ v)


@pytest.mark.parametrize(
    "how, dtype",
    [
        ("generate_square_subsequent_mask", HALF),
        ("where", HALF),
        ("log", HALF),
        ("log", BF16),
        ("times -1e9", HALF),
        ("times -1e9", BF16),
    ],
    ids=["subsequent-mask-fp16", "where-fp16", "log-fp16", "log-bf16", "times-1e9-fp16", "times-1e9-bf16"],
)
def test_masks_written_as_real_code_writes_them_are_not_events(how, dtype):
    gen = seeded()
    model = MaskedScores(how).to(dtype)
    keep = torch.ones(2, 6, dtype=torch.bool)
    keep[0, 4:] = False
    x = torch.randn(2, 6, 16, generator=gen).to(dtype)
    with mpdoctor.numerics_watch(model) as watch:
        out = model(x, keep)
        assert finite(out)
        (out.float().sum() * 1024).backward()
    assert finite(*(p.grad for p in model.parameters()))
    assert watch.events == [], lines(watch)


@pytest.mark.parametrize("dtype", [HALF, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", ["resnet", "padded-encoder", "dead-relu-mlp"])
def test_healthy_models_report_nothing(name, dtype):
    gen = seeded()
    model, batches = healthy_batches(name, gen)
    model = model.to(dtype).train()
    # fp16 trains with a loss scale (here a static one, as before GradScaler); without one, gradients this small sit
    # at the bottom of fp16's range and mpdoctor rightly reports underflow. bf16 needs none.
    loss_scale = 1024.0 if dtype == HALF else 1.0
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2 / loss_scale)
    with mpdoctor.numerics_watch(model) as watch:
        for inputs in batches:
            inputs = tuple(i.to(dtype) if i.is_floating_point() else i for i in inputs)
            optimizer.zero_grad()
            logits = model(*inputs)
            target = torch.arange(logits.shape[0]) % logits.shape[-1]
            loss = F.cross_entropy(logits.float(), target)
            assert torch.isfinite(loss)
            (loss * loss_scale).backward()
            optimizer.step()
    assert watch.events == [], lines(watch)
    assert watch.first is None and watch.step_index == 2 and "no overflow" in str(watch)


# ================================================================================================= drift (bf16)


class ResidualStack(nn.Module):
    """A residual stream accumulated in bf16: x = x + 0.8 * sigmoid(fc(x / 256)) over many layers. The stream
    sits near 256, where bf16's spacing is 2: every update (0 to 0.8, less than half a spacing) rounds away in the
    add, so the stack loses all it should have added, while each layer on its own computes its update to within
    rounding (why Megatron and others keep the residual stream, or an accumulator, in fp32)."""

    def __init__(self, d: int = 32, depth: int = 32) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.Sigmoid()) for _ in range(depth)])
        with torch.no_grad():
            for layer in self.layers:
                layer[0].bias.fill_(3.0)  # updates of ~0.8 * 0.95: each just under half bf16's spacing at 256

    def forward(self, x):
        for layer in self.layers:
            x = x + 0.8 * layer(x / 256)
        return x


class StreamModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(16, 32)
        self.stack = ResidualStack()
        self.head = nn.Linear(32, 8)
        with torch.no_grad():
            self.embed.bias.fill_(256.0)

    def forward(self, x):
        return self.head(self.stack(self.embed(x)))


def test_bf16_drift_of_a_residual_stream_names_the_stack_not_its_layers_or_the_head():
    torch.manual_seed(0)
    model = StreamModel()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():  # the stack alone in bf16 against fp32, on the same fp32 input: computed here
        stream = model.embed(x)
        ref = model.stack(stream)
        low = model.stack.to(BF16)(stream.to(BF16)).float()
        model.stack.float()
    u = torch.finfo(BF16).eps / 2
    own = float((low - ref).norm() / ref.norm())
    assert own > 20 * u  # far past the ~1 u that rounding the input and output once costs
    assert float((low - ref).norm() / (ref - stream).norm()) > 0.5  # most of what the layers added is lost
    report = mpdoctor.numerics_compare(model, x, dtype=BF16)
    first = report.first
    assert (first.module, first.kind, first.phase) == ("stack", "drift", "forward"), str(report)
    for name in ("embed", "stack.layers.0", "stack.layers.0.0", "stack.layers.31", "head"):
        assert report.errors[name]["forward"] < report.tolerances[name], (name, str(report))


class ScoresAttention(nn.Module):
    """Attention whose logits have grown (ViT-22B's "attention logit growth", fixed there by QK-layernorm): q and
    k carry a large shared component, so every score is ~3300 while the scores of one query differ by only a few
    units. Softmax keeps only those differences; bf16's spacing at 3300 is 16, so rounding the scores (or the q
    and k they come from, each accurate to within u) wipes the differences out. q and k are accurate; the
    attention's own scores-softmax is what turns their rounding into an O(1) error."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(-1, -2)
        return self.o(torch.softmax(scores, -1) @ self.v(x))


def test_bf16_drift_of_grown_attention_logits_names_the_attention_not_q_k_or_what_follows():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), ScoresAttention(), nn.Sequential(nn.GELU(), nn.Linear(16, 4)))
    with torch.no_grad():
        model[1].q.bias.fill_(10.0)
        model[1].k.bias.fill_(20.0)
        model[1].k.weight.mul_(0.1)
    x = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():  # the scores, computed here: thousands, with differences of a few units per query
        h = model[0](x)
        scores = model[1].q(h) @ model[1].k(h).transpose(-1, -2)
    assert peak(scores) > 1000 and peak(scores - scores.mean(-1, keepdim=True)) < 10
    report = mpdoctor.numerics_compare(model, x, dtype=BF16, loss=lambda out: out.pow(2).sum())
    first = report.first
    assert (first.module, first.kind, first.phase) == ("1", "drift", "forward"), str(report)
    for name in ("0", "1.q", "1.k", "1.v", "1.o", "2.1"):
        assert report.errors[name]["forward"] < report.tolerances[name], (name, str(report))
    assert report.fixed_output_error < report.output_error / 4  # kept in fp32, the model's error goes


class StatsPool(nn.Module):
    """x-vector statistics pooling over time, returning (mean, std) as a tuple, the std written as
    sqrt(E[x^2] - E[x]^2). Frame features with a large offset (un-normalised log filterbank energies, ~30) lose
    every significant bit of their variance in bf16: the culprit is this module's SECOND output."""

    def forward(self, x):
        mean = x.mean(1)
        std = ((x * x).mean(1) - mean * mean).clamp(min=1e-5).sqrt()
        return mean, std


class XVector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.frames = nn.Linear(16, 32)
        self.pool = StatsPool()
        self.head = nn.Linear(64, 4)
        with torch.no_grad():
            self.frames.bias.fill_(30.0)

    def forward(self, x):
        mean, std = self.pool(self.frames(x))
        return self.head(torch.cat([mean, std], -1))


def test_bf16_drift_in_a_modules_second_output_names_that_module():
    torch.manual_seed(0)
    model = XVector()
    x = torch.randn(4, 20, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():  # pool alone in bf16 on the fp32 frames, computed here: the std is garbage
        frames = model.frames(x)
        (_, std_ref), (_, std_low) = model.pool(frames), model.pool(frames.to(BF16))
    assert float((std_low.float() - std_ref).norm() / std_ref.norm()) > 10 * torch.finfo(BF16).eps
    report = mpdoctor.numerics_compare(model, x, dtype=BF16)
    first = report.first
    assert (first.module, first.kind, first.phase) == ("pool", "drift", "forward"), str(report)


class SaturatedGate(nn.Module):
    """A gated unit, x * sigmoid(fc(x)), whose gate has saturated open (logits ~6; MoE routers and LSTM gates
    get there). sigmoid's backward uses its bf16 output: s rounds to 1.0 or 0.996 where the truth is 0.9975, so
    s * (1 - s), the gradient into the gate's logits and fc's weight gradient, is off by tens of percent; the
    forward, and the gradient into x (dominated by s), are accurate to a unit of roundoff."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        with torch.no_grad():
            self.fc.bias.fill_(6.0)
            self.fc.weight.mul_(0.5)

    def forward(self, x):
        return x * torch.sigmoid(self.fc(x))


def test_bf16_backward_drift_of_a_saturated_gates_weight_gradient_names_the_gate():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), SaturatedGate(), nn.Linear(16, 4))
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(3))
    gate_in = model[0](x).detach()
    grad_out = torch.randn(8, 16, generator=torch.Generator().manual_seed(4))

    def gate_weight_grad(dtype):  # the gate alone, on the same fp32 input and output gradient, computed here
        gate = SaturatedGate()
        gate.load_state_dict(model[1].state_dict())
        gate = gate.to(dtype)
        gate(gate_in.to(dtype)).backward(grad_out.to(dtype))
        return gate.fc.weight.grad.float()

    ref, low = gate_weight_grad(torch.float32), gate_weight_grad(BF16)
    assert float((low - ref).norm() / ref.norm()) > 10 * torch.finfo(BF16).eps
    report = mpdoctor.numerics_compare(model, x, dtype=BF16, loss=lambda out: out.pow(2).sum())
    first = report.first
    assert first is not None, str(report)
    assert (first.module, first.kind, first.phase) == ("1", "drift", "backward"), str(report)


def test_compare_a_healthy_resnet_with_in_place_relus_reports_nothing():
    gen = seeded()
    model = TinyResNet().eval()
    x = torch.randn(4, 3, 8, 8, generator=gen)
    report = mpdoctor.numerics_compare(model, x, dtype=BF16)
    assert report.output_error < 4 * report.unit_roundoff  # the whole model: a few units of roundoff at most
    assert report.first is None, str(report)


def test_compare_with_a_loss_on_a_model_with_in_place_relus_works():
    gen = seeded()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Linear(32, 4))
    x = torch.randn(8, 16, generator=gen)
    report = mpdoctor.numerics_compare(model, x, dtype=BF16, loss=lambda out: out.pow(2).sum())
    assert report.first is None, str(report)
    assert report.errors["0"]["backward"] < report.tolerances["0"]


def test_compare_in_fp16_calls_an_out_of_range_module_an_overflow():
    gen = seeded()
    model = Classifier()
    with torch.no_grad():
        model.head.proj.weight.mul_(20)  # as in the log-sum-exp case above: exp of logits past 11.09
    x = torch.randn(8, 16, generator=gen)
    report = mpdoctor.numerics_compare(model, x, dtype=HALF)
    first = report.first
    assert (first.module, first.kind, first.phase) == ("head", "overflow", "forward"), str(report)
    assert any("bf16" in fix for fix in first.fixes)


# ================================================================================================= the CLI

SCRIPT = '''
"""A small training script that knows nothing of mpdoctor."""
import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn


class Gain(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gain = nn.Parameter(torch.full((d,), 1e3))

    def forward(self, x):
        return x * self.gain


class Net(nn.Module):
    def __init__(self, gain):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), Gain(16)) for _ in range(2)])
        self.head = nn.Linear(16, 4)
        with torch.no_grad():
            self.encoder[0].weight.mul_(1e-2)
            self.encoder[0].bias.zero_()
            for block in self.blocks:
                block[0].bias.zero_()
            self.blocks[0][1].gain.fill_(1.0)
            self.blocks[1][1].gain.fill_(gain)

    def forward(self, x):
        x = self.encoder(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--healthy", action="store_true")
    parser.add_argument("--bad-shape", action="store_true")
    parser.add_argument("--amp", action="store_true", help="fp32 weights, autocast fp16, a GradScaler")
    args = parser.parse_args()
    config = json.loads(Path(__file__).with_name("config.json").read_text())  # found through its own __file__
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    # Block 1's gain of 1e3 meets activations of ~1e-3 in the forward (finite) and gradients of ~150 in the
    # backward (1.5e5: past fp16's max). Healthy: gain 1, loss not scaled.
    model = Net(gain=1.0 if args.healthy else 1e3)
    if not args.amp:
        model = model.to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    # Started far too high on purpose: its first steps overflow and are skipped (the scaler's own job).
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24, backoff_factor=2.0**-8) if args.amp else None
    loss_scale = 1.0 if args.healthy else 500.0
    for step in range(3):
        optimizer.zero_grad()
        x = torch.randn(4, 15 if args.bad_shape else 16, dtype=torch.float32 if args.amp else dtype)
        with torch.autocast("cpu", dtype=torch.float16, enabled=args.amp):
            loss = model(x).float().sum() * loss_scale
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        print("step", step, "loss", float(loss.detach()))
    if args.healthy:
        model.eval()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.float16, enabled=args.amp):
            print("eval", float(model(torch.randn(4, 16)).float().abs().max()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("numerics-unseen")
    path = where / "train_net.py"
    path.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (where / "config.json").write_text('{"lr": 1e-4}', encoding="utf-8")
    return path


def numerics(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPDOCTOR_")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", "numerics", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_cli_names_a_backward_culprit_of_an_unchanged_script_in_json(script):
    result = numerics("--format", "json", script.name, "--dtype", "float16", cwd=script.parent)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert "step 2 loss" in result.stderr  # the script ran all of its steps, its prints on stderr
    first = report["watch"]["first"]
    # Block 1's Gain multiplies by 1e3: its forward is finite (inputs ~1e-4), its backward grad * 1e3 is not.
    assert (first["module"], first["kind"], first["phase"], first["dtype"]) == (
        "blocks.1.1",
        "overflow",
        "backward",
        "float16",
    ), result.stdout
    assert report["script"]["status"] == "ok" and report["script"]["exit_code"] == 0


def test_cli_a_healthy_amp_script_whose_scaler_backs_off_exits_0(script):
    result = numerics("--format", "json", script.name, "--healthy", "--amp", cwd=script.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["watch"]["first"] is None and report["watch"]["events"] == []
    scaler = report["watch"]["scaler"]
    # The scaler's own overflow steps, seen without a handle on it, and its recovery: not the model's.
    assert scaler[0]["found_inf"] is True and scaler[-1]["found_inf"] is False, scaler
    assert "eval" in result.stderr and report["script"]["status"] == "ok"


def test_cli_the_scripts_own_failure_inside_a_watched_forward_is_reported_as_such(script):
    result = numerics("--format", "json", script.name, "--healthy", "--bad-shape", cwd=script.parent)
    # torch's own message for the script's bug, from torch itself
    with pytest.raises(RuntimeError) as raised:
        nn.Linear(16, 16)(torch.randn(4, 15))
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)  # stdout is still the JSON report alone
    assert report["script"]["status"] != "ok" and report["script"]["exit_code"] == 1
    assert "RuntimeError" in report["script"]["error"]
    assert str(raised.value).splitlines()[0] in report["script"]["error"]
    assert report["watch"]["events"] == []
    assert "Traceback" in result.stderr  # the script's own traceback, as Python prints it
