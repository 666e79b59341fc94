"""The numerics watch's underflow rule on real torch (CPU): flushed values where the values were not zero, never a
ReLU's honest zeros, never in bf16 unless values really reach its bottom (1.2e-38).

Where the culprit is claimed, the test computes it without the watch: the same model in fp32, the gradient each
module sends back recorded, and the first module (in the order the backward ran) whose gradient falls below the
dtype's smallest normal while the gradient it received did not.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from mpdoctor.numerics import numerics_watch  # noqa: E402
from mpdoctor.numerics.window import SAMPLE, Types, Window  # noqa: E402

HALF, BF16 = torch.float16, torch.bfloat16
TINY = {HALF: torch.finfo(HALF).tiny, BF16: torch.finfo(BF16).tiny}


def underflows(watch) -> list:
    return [e for e in watch.events if e.kind == "underflow"]


def flushed(t, dtype) -> float:
    """Share of values that are not zero but below ``dtype``'s smallest normal: what it flushes or makes subnormal."""
    return float(((t.abs() < TINY[dtype]) & (t != 0)).float().mean())


def first_flush(model, x, loss, dtype) -> str:
    """In fp32: the first module, in backward order, whose gradient to its input is mostly below ``dtype``'s
    range while the gradient it received is not."""
    reference = copy.deepcopy(model).float()
    seen = []
    for name, module in reference.named_modules():
        if name and not list(module.children()):
            module.register_full_backward_hook(
                lambda m, grad_in, grad_out, name=name: seen.append((name, grad_in[0], grad_out[0]))
            )
    loss(reference(x.float())).backward()
    for name, grad_in, grad_out in seen:
        if grad_in is not None and flushed(grad_in, dtype) > 0.5 and flushed(grad_out, dtype) < 0.1:
            return name
    return ""


class Chain(nn.Module):
    """Five Linear+tanh layers; the third one's small weights shrink the gradient it sends back ~1000x."""

    def __init__(self, small: float = 2e-3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(5)])
        with torch.no_grad():
            self.layers[2][0].weight.mul_(small)

    def forward(self, x):
        return self.layers(x)


X = torch.randn(32, 64, generator=torch.Generator().manual_seed(1))


def chain_loss(out):
    return out.float().sum() * 0.01  # a gradient of 0.01 enters the model: well inside fp16's range


def test_gradients_that_flush_without_a_scaler_are_named_at_the_module_whose_backward_flushed_them():
    model = Chain().half()
    with numerics_watch(model) as watch:
        chain_loss(model(X.half())).backward()
    first = watch.first
    assert (first.kind, first.phase, first.dtype) == ("underflow", "backward", "float16"), [
        e.line() for e in watch.events
    ]
    assert first.module == first_flush(Chain(), X, chain_loss, HALF) == "layers.2.0"
    assert "GradScaler" in first.fix and first.op == "mm"
    assert not [e for e in watch.events if e.kind != "underflow"]


def test_the_same_chain_in_bf16_does_not_underflow():
    assert flushed(torch.full((4,), 2e-5), HALF) == 1.0 and flushed(torch.full((4,), 2e-5), BF16) == 0.0
    model = Chain().to(BF16)
    with numerics_watch(model) as watch:
        chain_loss(model(X.to(BF16))).backward()
    assert watch.events == [], [e.line() for e in watch.events]


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 64))

    def forward(self, x):
        return self.net(x)


def regress(scaler) -> object:
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(2)
    x, y = torch.randn(64, 16, generator=gen), torch.randn(64, 64, generator=gen)
    with numerics_watch(model) as watch:
        for _ in range(2):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=HALF):
                loss = F.mse_loss(model(x).float(), y)  # a mean over 4096 values: gradients of ~1e-4 and below
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
    return watch


def test_a_healthy_fp16_model_with_a_grad_scaler_reports_no_underflow_and_without_one_it_does():
    scaled = regress(torch.amp.GradScaler("cpu", init_scale=2.0**16))
    assert scaled.events == [], [e.line() for e in scaled.events]
    assert [s.found_inf for s in scaled.scaler] == [False, False]
    unscaled = regress(None)
    assert underflows(unscaled) and unscaled.first.kind == "underflow" and unscaled.first.phase == "backward"
    assert "GradScaler" in unscaled.first.fix


class Gated(nn.Module):
    """relu(gate(x)) * up(x): most gate units dead (their honest zeros), values small enough to sit within fp16's
    underflow window (below 2^11 times its smallest normal), so only the zeros' origin tells them apart."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gate, self.up, self.down = nn.Linear(32, 128), nn.Linear(32, 128), nn.Linear(128, 32)
        with torch.no_grad():
            self.gate.bias.fill_(-0.03)
            for layer in (self.gate, self.up, self.down):
                layer.weight.mul_(0.1)

    def forward(self, x):
        return self.down(F.relu(self.gate(x)) * self.up(x))


def test_relu_zeros_are_never_underflow_forward_or_backward():
    model = Gated().half()
    x = torch.randn(64, 32, dtype=HALF, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        gate = F.relu(model.gate(x))
        product = gate * model.up(x)
    assert float((gate == 0).float().mean()) > 0.6  # the ReLU's zeros, and the product's
    assert 0 < float(product.abs().max()) < TINY[HALF] * 2**11 and float((product == 0).float().mean()) > 0.6
    with numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert watch.events == [], [e.line() for e in watch.events]
    assert watch.ops_seen > 10


class FirstToken(nn.Module):
    """Classifies from the first token (BERT's CLS pooling): its backward scatters the gradient into a tensor of
    zeros, one token of twelve; the loss in fp16 does the same over the classes (one target per row)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.encode = nn.Linear(16, 16)
        self.classify = nn.Linear(16, 10)

    def forward(self, x):
        return self.classify(torch.tanh(self.encode(x))[:, 0])


def test_a_gradient_scattered_into_zeros_is_not_underflow():
    model = FirstToken().half()
    gen = torch.Generator().manual_seed(6)
    x, y = torch.randn(8, 12, 16, generator=gen).half(), torch.randint(0, 10, (8,), generator=gen)
    with numerics_watch(model) as watch:
        logits = model(x)
        F.cross_entropy(logits, y).backward()  # in fp16: its gradient is zero off the targets
    assert watch.events == [], [e.line() for e in watch.events]
    hidden = torch.tanh(model.encode(x))
    (grad,) = torch.autograd.grad(F.cross_entropy(model.classify(hidden[:, 0]), y), [hidden])
    assert float((grad == 0).float().mean()) > 0.9  # the scattered zeros...
    assert 0 < float(grad.abs().max()) < TINY[HALF] * 2**11  # ...in a small gradient: only their origin decides


class DeadGelu(nn.Module):
    """A GELU layer whose units 64..255 sit far below zero: their derivative, ~1e-5 to 1e-7, turns their share of
    a healthy gradient subnormal in fp16, 2^11 and more below the gradient's largest (the live units')."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.up, self.down = nn.Linear(16, 256), nn.Linear(256, 16)
        with torch.no_grad():
            self.up.bias[64:] = -4.5

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def test_a_tail_far_below_the_tensors_largest_is_not_underflow():
    model = DeadGelu().half()
    x = torch.randn(32, 16, dtype=HALF, generator=torch.Generator().manual_seed(7))
    with numerics_watch(model) as watch:
        model(x).float().sum().backward()
    assert watch.events == [], [e.line() for e in watch.events]
    pre = model.up(x).detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(model.down(F.gelu(pre)).float().sum(), [pre])  # what gelu_backward made
    assert flushed(grad, HALF) > 0.2 and float(grad.abs().max()) > TINY[HALF] * 2**11


class Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Tiny(nn.Module):
    """A head that scales by 1e-20: in bf16 its output is normal (bf16 has fp32's range), and so is the gradient
    it is given; its backward multiplies that gradient by 1e-20 again, down to ~1e-40: below 1.2e-38."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(32, 32), nn.Tanh())
        self.head = Scale(1e-20)

    def forward(self, x):
        return self.head(self.body(x))


def test_bf16_reports_underflow_where_values_really_reach_its_bottom():
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(4))

    def loss(out, factor=1e-20):
        return out.float().sum() * factor

    assert first_flush(Tiny(), x, loss, BF16) == "head"
    model = Tiny().to(BF16)
    with numerics_watch(model) as watch:
        out = model(x.to(BF16))
        assert float(out.abs().min()) >= TINY[BF16]  # the forward stays in range
        loss(out).backward()
    first = watch.first
    assert (first.module, first.kind, first.phase, first.dtype) == ("head", "underflow", "backward", "bfloat16")
    assert first.op == "mul" and "below 1.18e-38" in first.detail
    with numerics_watch(model) as healthy:  # the same model, the gradient it is given at 1: 1e-20 is no trouble
        loss(model(x.to(BF16)), factor=1.0).backward()
    assert healthy.events == [], [e.line() for e in healthy.events]


@pytest.mark.parametrize(
    "name",
    ["zero columns", "zero rows", "pairs", "subnormal block", "small"],
)
def test_the_sampled_share_follows_the_tensors_structure(name):
    """The share is estimated from a sample: spread over the whole tensor, in step with none of its rows or
    columns, within a few points of the exact count whatever the structure of its zeros."""
    gen = torch.Generator().manual_seed(5)
    if name == "zero columns":
        t = torch.randn(1024, 768, generator=gen)
        t[:, ::4] = 0  # dead units: every 4th column
    elif name == "zero rows":
        t = torch.randn(4096, 512, generator=gen)
        t[: int(4096 * 0.3)] = 0  # padding tokens first
    elif name == "pairs":
        t = torch.randn(512, 64, 2, generator=gen)
        t[..., 1] = 0  # interleaved (rotary) pairs
    elif name == "subnormal block":
        t = torch.randn(256, 1024, generator=gen)
        t[:, 700:] *= 1e-7  # subnormal in fp16, not zero
    else:
        t = torch.randn(37, generator=gen)
        t[::3] = 0
    t = t.half()
    window = Window(Types(torch))
    slot = window.measure(t)
    window.sample(t, slot)
    window.sample(t.t() if t.dim() == 2 else t, window.measure(t.t() if t.dim() == 2 else t))  # a transposed view
    measured, reads = window.read()
    exact = float((t.abs() < TINY[HALF]).float().mean())
    subnormal = float(((t.abs() < TINY[HALF]) & (t != 0)).float().mean())
    assert reads == 1 and measured[slot].sampled == min(t.numel(), SAMPLE)
    for m in measured:
        assert abs(m.small - exact) < 0.03 and abs(m.subnormal - subnormal) < 0.03, (name, m.small, exact)
