"""mpdoctor.numerics_watch on real torch (CPU, explicit fp16/bf16): small models built like the real cases.

Each model has the structure of a case users hit (T5's DenseReluDense.wo, attention scores overflowing
inside the block, an RMSNorm whose x.pow(2) overflows while its output stays finite, gradients
underflowing without a scaler, GradScaler's own overflow steps), and healthy models that must report
nothing. The watch must name the module, phase and kind, read the statistics once per step, and leave
every output bit-identical.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import mpdoctor  # noqa: E402
from mpdoctor.numerics import numerics_watch  # noqa: E402

HALF, BF16 = torch.float16, torch.bfloat16


# ---------------------------------------------------------------------------------------------- models


class DenseReluDense(nn.Module):
    """T5's feed-forward: wi -> ReLU -> dropout -> wo. In fp16, wo's output overflows (t5-large, mT5)."""

    def __init__(self, d: int = 16, f: int = 64) -> None:
        super().__init__()
        self.wi = nn.Linear(d, f, bias=False)
        self.wo = nn.Linear(f, d, bias=False)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.wo(self.dropout(self.act(self.wi(x)))))


class RMSNorm(nn.Module):
    """A hand-written RMSNorm, variance in the input's dtype: x.pow(2) overflows, the output is finite (zeros)."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class T5Layer(nn.Module):
    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.layer_norm = RMSNorm(d)
        self.DenseReluDense = DenseReluDense(d)

    def forward(self, x):
        return x + self.DenseReluDense(self.layer_norm(x))


class T5Stack(nn.Module):
    def __init__(self, depth: int = 3, d: int = 16) -> None:
        super().__init__()
        self.block = nn.ModuleList([T5Layer(d) for _ in range(depth)])
        self.final_layer_norm = RMSNorm(d)

    def forward(self, x):
        for layer in self.block:
            x = layer(x)
        return self.final_layer_norm(x)


class Attention(nn.Module):
    """Scores q @ k^T unscaled, then softmax: in fp16 the scores overflow inside the block, not at its edge."""

    def __init__(self, d: int = 32, heads: int = 2, scaled: bool = True) -> None:
        super().__init__()
        self.heads, self.scaled = heads, scaled
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        if self.scaled:
            q = q * (d // self.heads) ** -0.5
        scores = q @ k.transpose(-1, -2)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return self.o_proj((probs @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int = 32, scaled: bool = True) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, scaled=scaled)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 32, depth: int = 2, scaled: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d, scaled) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def gpt(dtype, scaled: bool = True, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(scaled=scaled).to(dtype)


def tokens(seed: int = 1):
    return torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(seed))


def lm_step(model, x):
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), x.flatten()) * x.numel()  # a sum: no underflow
    loss.backward()
    return logits


# ---------------------------------------------------------------------------------------------- forward


def test_t5_wo_overflow_in_fp16_is_named_at_wo_not_at_the_dropout_after_it():
    torch.manual_seed(0)
    model = T5Stack()
    with torch.no_grad():
        model.block[1].DenseReluDense.wo.weight.mul_(3e5)  # t5-large's wo: activations past 65504 in fp16
    model = model.half()
    x = torch.randn(2, 8, 16, dtype=HALF)
    with numerics_watch(model) as watch:
        model(x).float().sum().backward()
    first = watch.first
    assert (first.module, first.kind, first.phase, first.dtype) == (
        "block.1.DenseReluDense.wo",
        "overflow",
        "forward",
        "float16",
    )
    assert first.op in ("mm", "addmm") and first.cls == "Linear"
    assert "fp32" in first.fix and '"wo"' in first.fix and "_keep_in_fp32_modules" in first.fix
    assert any("bf16" in fix for fix in first.fixes)
    assert watch.headroom["block.1.DenseReluDense.wo"] == 0 and watch.headroom["block.0.DenseReluDense.wo"] > 0
    assert "block.1.DenseReluDense.wo (Linear)" in str(watch)


def test_attention_scores_overflow_inside_the_block_is_named_at_the_scores_op():
    model = gpt(HALF, scaled=False)
    with torch.no_grad():
        for proj in (model.blocks[0].attn.q_proj, model.blocks[0].attn.k_proj):
            proj.weight.mul_(200)
    with numerics_watch(model) as watch:
        lm_step(model, tokens())
    first = watch.first
    assert (first.module, first.phase, first.kind) == ("blocks.0.attn", "forward", "overflow")
    assert first.op in ("bmm", "mm", "matmul")
    assert "1/sqrt(head_dim)" in first.fix
    # The same watch says nothing about the healthy block after it: values that only pass NaN on are no event.
    assert not any(e.module and e.module.startswith("blocks.1") and e.phase == "forward" for e in watch.events)


def test_rmsnorm_variance_overflow_while_its_output_stays_finite():
    torch.manual_seed(0)
    model = T5Stack().half()
    x = torch.randn(2, 8, 16) * 300  # x.pow(2) passes 65504; the normalised output is zeros, never inf
    x = x.half()
    with numerics_watch(model) as watch:
        out = model(x)
    assert torch.isfinite(out).all()
    first = watch.first
    assert (first.module, first.op, first.kind, first.phase) == ("block.0.layer_norm", "pow", "overflow", "forward")
    assert "variance" in first.fix and "x.float().pow(2)" in first.fix


# ---------------------------------------------------------------------------------------------- backward


class Deep(nn.Module):
    def __init__(self, d: int = 64, depth: int = 5, gain: float = 1.0) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(depth)])
        self.act = nn.Tanh()
        with torch.no_grad():
            for layer in self.layers:
                layer.weight.mul_(gain)

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return x


def test_gradient_underflow_without_a_scaler_is_a_backward_event_with_the_scaler_fix():
    torch.manual_seed(0)
    model = Deep(gain=0.05).half()  # each layer's backward shrinks the gradient ~20x: fp16 flushes it
    x = torch.randn(32, 64, dtype=HALF)
    with numerics_watch(model) as watch:
        model(x).float().pow(2).sum().backward()  # a gradient of ~0.1 enters the model
    under = [e for e in watch.events if e.kind == "underflow"]
    assert under and under[0] is watch.first and under[0].phase == "backward"
    assert under[0].module.startswith("layers.") and under[0].dtype == "float16"
    assert "GradScaler" in under[0].fix
    assert not [e for e in watch.events if e.kind in ("overflow", "nan")]


def test_backward_overflow_is_attributed_to_the_module_whose_backward_made_it():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32), nn.Linear(32, 8))
    with torch.no_grad():
        model[2].weight.mul_(1e5)  # forward: its input is ~1e-3, fine; backward: grad @ W passes 65504
        model[0].weight.mul_(1e-2)
        model[0].bias.zero_()
    model = model.half()
    x = torch.randn(16, 32, dtype=HALF) * 0.1
    with numerics_watch(model) as watch:
        out = model(x)
        assert torch.isfinite(out).all()
        (out.float().sum() * 10).backward()
    first = watch.first
    assert (first.module, first.phase, first.kind) == ("2", "backward", "overflow")


def test_gradscaler_overflow_steps_are_the_scaler_doing_its_job():
    torch.manual_seed(0)
    model = Deep(d=32, depth=3)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    # Start far too high: the first steps' gradients overflow in fp16, the scaler skips them and backs off.
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40, backoff_factor=2.0**-8, growth_interval=1000)
    x = torch.randn(16, 32)
    with numerics_watch(model) as watch:
        for _ in range(6):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=HALF):
                loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    assert watch.events == [], [e.line() for e in watch.events]
    assert [s.found_inf for s in watch.scaler][:2] == [True, True] and watch.scaler[-1].found_inf is False
    assert watch.scaler[0].scale == 2.0**40 and watch.scaler[-1].new_scale < 2.0**40
    assert "recovered" in str(watch) and watch.step_index == 6


def test_overflow_that_persists_at_scale_one_is_the_models():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.Linear(32, 4))
    with torch.no_grad():
        model[1].weight.mul_(3e3)  # its backward overflows fp16 at any scale
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, backoff_factor=0.5, growth_interval=1000)
    x = torch.randn(8, 32)
    with numerics_watch(model) as watch:
        for _ in range(12):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=HALF):
                loss = model(x).float().sum() * 30
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    # Steps 0-7 (scale 256 down to 2) are the scaler's; from scale 1 on, the same ops are the model's.
    first = watch.first
    assert (first.phase, first.kind, first.module, first.step) == ("backward", "overflow", "0", 8)
    assert watch.scaler[8].scale == 1.0 and watch.scaler[8].found_inf
    assert "the model's, not the scaler's" in str(watch)


# ---------------------------------------------------------------------------------------------- healthy


@pytest.mark.parametrize("dtype", [HALF, BF16])
def test_healthy_models_report_nothing(dtype):
    model = gpt(dtype)
    t5 = T5Stack().to(dtype)
    with numerics_watch(model) as watch:
        for seed in range(2):
            lm_step(model, tokens(seed))
            watch.step()
    assert watch.events == [], [e.line() for e in watch.events]
    assert watch.first is None and watch.reads == 2
    assert 0 < min(watch.headroom.values()) and "no overflow" in str(watch)
    with numerics_watch(t5) as watch:
        t5(torch.randn(2, 8, 16, dtype=dtype)).float().sum().backward()
    assert watch.events == [], [e.line() for e in watch.events]


# ---------------------------------------------------------------------------------------------- structure


class Twice(nn.Module):
    """One Linear called twice: only the second call overflows."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Linear(16, 16)
        self.gain = nn.Linear(16, 16)

    def forward(self, x):
        y = self.shared(x)
        return self.shared(self.gain(y))


def test_a_module_called_twice_is_named_for_the_call_that_overflowed():
    torch.manual_seed(0)
    model = Twice()
    with torch.no_grad():
        model.gain.weight.mul_(40)
        model.shared.weight.mul_(30)
    model = model.half()
    x = torch.randn(4, 16, dtype=HALF) * 4
    with numerics_watch(model) as watch:
        model(x)
    first = watch.first
    assert (first.module, first.phase, first.kind) == ("shared", "forward", "overflow")


class InPlace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(16, 16)

    def forward(self, x):
        y = self.act(self.proj(x)) * 2  # ReLU in place on the Linear's output
        y.mul_(5e3)  # in place, in the root's own forward
        return self.out(y)


def test_in_place_ops_are_judged_on_their_own_values_forward_and_backward():
    torch.manual_seed(0)
    model = InPlace().half()
    x = torch.randn(8, 16, dtype=HALF) * 10
    with numerics_watch(model) as watch:
        out = model(x)
        out.float().sum().backward()
    first = watch.first
    assert (first.module, first.op, first.phase, first.kind) == ("", "mul_", "forward", "overflow")
    assert first.where == "(root) (InPlace)"


# ---------------------------------------------------------------------------------------------- cheap


def test_outputs_and_gradients_are_bit_identical_with_and_without_the_watch():
    def run(watched: bool):
        model = gpt(HALF, scaled=False)
        with torch.no_grad():
            model.blocks[0].attn.q_proj.weight.mul_(30)
        x = tokens()
        if watched:
            with numerics_watch(model):
                logits = lm_step(model, x)
        else:
            logits = lm_step(model, x)
        return logits.detach(), [p.grad.clone() for p in model.parameters()]

    plain, watched = run(False), run(True)
    assert torch.equal(plain[0].nan_to_num(), watched[0].nan_to_num())
    assert torch.equal(plain[0].isnan(), watched[0].isnan())
    for a, b in zip(plain[1], watched[1]):
        assert torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan())


class _Reads(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts every host read of a tensor's values: item/bool/float/int reach aten._local_scalar_dense,
    a device-to-host copy reaches _to_copy/copy_ with a CPU destination; tolist/numpy are counted by name."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.count += 1
        return func(*args, **(kwargs or {}))


def test_statistics_reach_the_host_once_per_step(monkeypatch):
    model = gpt(HALF)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    reads = _Reads()
    by_name = {"tolist": 0, "numpy": 0, "item": 0}
    for name in by_name:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            by_name[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    steps = 3
    with reads:  # outside the watch's mode: it sees every op the watch itself runs
        with numerics_watch(model) as watch:
            for seed in range(steps):
                optimizer.zero_grad()
                lm_step(model, tokens(seed))
                optimizer.step()
    assert reads.count == 0 and by_name["numpy"] == 0 and by_name["item"] == 0
    assert by_name["tolist"] == watch.reads == steps  # one read at the end of each backward, none at exit
    assert watch.ops_seen > 100 * steps and watch.step_index == steps


def test_the_api_is_lazy_and_torch_free_at_import(tmp_path):
    import subprocess
    import sys

    code = "import mpdoctor, sys; assert 'torch' not in sys.modules; mpdoctor.numerics_watch; mpdoctor.numerics_compare"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert mpdoctor.numerics_watch is numerics_watch


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        numerics_watch("model")
    with pytest.raises(ValueError, match="steps"):
        numerics_watch(nn.Linear(2, 2), steps=0)


def test_steps_stops_watching_after_n_optimizer_steps():
    model = gpt(HALF)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    with numerics_watch(model, steps=1) as watch:
        for seed in range(3):
            optimizer.zero_grad()
            lm_step(model, tokens(seed))
            optimizer.step()
        seen = watch.ops_seen
    assert watch.step_index == 1 and seen == watch.ops_seen and math.isfinite(seen)


def test_inference_is_read_once_per_forward_and_events_arrive_live():
    torch.manual_seed(0)
    model = T5Stack()
    with torch.no_grad():
        model.block[2].DenseReluDense.wo.weight.mul_(3e5)
    model = model.half()
    seen = []
    with torch.no_grad(), numerics_watch(model, on_event=seen.append) as watch:
        for _ in range(3):
            model(torch.randn(2, 8, 16, dtype=HALF))
            assert seen, "the event is known when the outermost forward returns, not only at the end"
    assert watch.reads == 3 and seen[0] is watch.first and first_of(watch) == ("block.2.DenseReluDense.wo", "forward")


def first_of(watch):
    return watch.first.module, watch.first.phase


def test_tensors_it_cannot_read_leave_the_step_alone():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(20, 8, sparse=True), nn.Linear(8, 4)).half()
    with numerics_watch(model) as watch:
        model(torch.tensor([[1, 2, 3]])).float().sum().backward()
    assert model[0].weight.grad.is_sparse and watch.events == [] and watch.skipped > 0
    assert "not judged" in str(watch)
