"""watch.verify(step): the step re-run with the event's fix applied, on real torch (CPU, explicit fp16 and autocast).

Each case is built so that what the re-run should show is computed here too, from the values: a norm whose
x.pow(2) overflows while its output is zeros (the fix removes it), the same norm hiding a projection that
overflows once the norm works (the event moves there), a Linear whose output does not fit fp16 however it is
computed (it stays), gradients that underflow without a scaler (a loss scale removes it). Verifying must leave the
model exactly as it was: parameters, buffers, ``.grad``s, forwards, an optimizer's and a GradScaler's state, the
random state, also when the step raises.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from mpdoctor.numerics import numerics_watch  # noqa: E402

HALF = torch.float16
FP16_MAX = 65504.0


class RMSNorm(nn.Module):
    """A hand-written RMSNorm, variance in the input's dtype: in fp16, x.pow(2) overflows for |x| > 256 and the
    output is zeros (x * rsqrt(inf)), finite: nothing downstream sees an inf."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class NormThenProj(nn.Module):
    def __init__(self, gain: float = 1.0) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm = RMSNorm(16)
        self.proj = nn.Linear(16, 16)
        with torch.no_grad():
            self.proj.weight.mul_(gain)

    def forward(self, x):
        return self.proj(self.norm(x))


X = torch.randn(4, 8, 16, generator=torch.Generator().manual_seed(1)) * 300  # x.pow(2) ~ 1e5: past fp16's max


def watched(model, step):
    with numerics_watch(model) as watch:
        step()
    return watch


def snapshot(model) -> dict:
    return {
        "state": {k: v.clone() for k, v in model.state_dict().items()},
        "grads": {n: (p.grad, None if p.grad is None else p.grad.clone()) for n, p in model.named_parameters()},
        "dtypes": {n: p.dtype for n, p in model.named_parameters()},
        "forwards": [n for n, m in model.named_modules() if "forward" in m.__dict__],
        "rng": torch.get_rng_state(),
    }


def same(a, b) -> bool:
    """Bit for bit, NaN where NaN."""
    return a.dtype == b.dtype and torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan())


def assert_unchanged(model, before: dict) -> None:
    after = model.state_dict()
    assert after.keys() == before["state"].keys()
    for key, value in before["state"].items():
        assert same(after[key], value), key
    for name, param in model.named_parameters():
        grad, values = before["grads"][name]
        assert param.grad is grad, name  # the very tensor, not a copy of it
        assert grad is None or same(param.grad, values), name
        assert param.dtype == before["dtypes"][name], name
    assert [n for n, m in model.named_modules() if "forward" in m.__dict__] == before["forwards"]
    assert torch.equal(torch.get_rng_state(), before["rng"])


def test_a_culprit_the_fix_removes_is_verified_and_the_model_is_left_as_it_was():
    model = NormThenProj().half()
    x = X.half()

    def step():
        model(x).float().pow(2).sum().backward()

    watch = watched(model, step)
    first = watch.first
    assert (first.module, first.op, first.kind, first.phase) == ("norm", "pow", "overflow", "forward")
    before = snapshot(model)
    result = watch.verify(step)
    assert result is first.verification and result.status == "verified", result.text
    assert result.rank == 2 and result.fix == first.fixes[1] and result.fix.startswith("keep norm (RMSNorm) in fp32")
    assert result.text.startswith("verified: the overflow is gone when norm runs in fp32")
    assert result.text in str(watch) and watch.to_data()["first"]["verification"]["status"] == "verified"
    assert_unchanged(model, before)
    # What the re-run claims, computed here: in fp16 the norm's output is all zeros; in fp32 it is x normalised.
    with torch.no_grad():
        assert not model.norm(x).any()
        fp32 = copy.deepcopy(model.norm).float()(X)
        assert torch.isfinite(fp32).all() and fp32.abs().max() < 10 and fp32.abs().min() > 0


def test_a_fix_that_moves_the_event_downstream_names_where_it_went():
    model = NormThenProj(gain=2e5).half()  # with the norm working, proj's output passes 65504
    x = X.half()

    def step():
        model(x).float().sum().backward()

    watch = watched(model, step)
    assert (watch.first.module, watch.first.op) == ("norm", "pow")
    # Unchanged, proj's forward only ever sees the norm's zeros.
    assert not any(e.module == "proj" and e.phase == "forward" for e in watch.events)
    result = watch.verify(step)
    assert result.status == "moved", result.text
    assert (result.moved_to["module"], result.moved_to["kind"], result.moved_to["phase"]) == (
        "proj",
        "overflow",
        "forward",
    )
    assert "moves to proj (Linear): overflow in the forward" in result.text and result.text.startswith("not verified")
    with torch.no_grad():  # proj's output, in fp32 from a working norm, is past fp16's range
        out = model.proj.float()(copy.deepcopy(model.norm).float()(X))
        model.half()
    assert out.abs().max() > FP16_MAX


def test_a_module_whose_output_does_not_fit_the_dtype_stays_with_the_fix():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
    with torch.no_grad():
        model[2].weight.mul_(2e5)  # T5's wo: its output passes 65504 whatever precision computes it
    model = model.half()
    x = torch.randn(8, 16, dtype=HALF)

    def step():
        model(x).float().sum().backward()

    watch = watched(model, step)
    assert (watch.first.module, watch.first.kind) == ("2", "overflow")
    result = watch.verify(step)
    assert result.status == "stayed", result.text
    assert result.text.startswith("not verified: with 2 kept in fp32 (fix 1) the overflow stays in 2 (Linear)")
    assert any("op _to_copy" in line for line in result.after)  # the cast of its fp32 output back to fp16
    with torch.no_grad():
        assert copy.deepcopy(model).float()(x.float()).abs().max() > FP16_MAX


class Deep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(64, 64) for _ in range(5)])
        with torch.no_grad():
            for layer in self.layers:
                layer.weight.mul_(0.05)  # each backward shrinks the gradient ~20x: fp16 flushes it

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def test_gradients_that_underflow_are_verified_with_a_loss_scale():
    model = Deep().half()
    x = torch.randn(32, 64, dtype=HALF, generator=torch.Generator().manual_seed(2))

    def step():
        model(x).float().pow(2).sum().backward()

    watch = watched(model, step)
    first = watch.first
    assert (first.kind, first.phase) == ("underflow", "backward") and "GradScaler" in first.fix
    before = snapshot(model)
    result = watch.verify(step)
    assert result.status == "verified" and result.rank == 1, result.text
    # 2^16 overflows this backward (its gradient enters at up to ~2): a GradScaler would back off, and so does this.
    assert "the underflow is gone when the gradient is scaled by 2^" in result.text and "would settle" in result.text
    bits = int(result.applied.split("2^")[1].split(" ")[0])
    assert 4 <= bits < 16
    assert_unchanged(model, before)


class Trained(nn.Module):
    """BatchNorm (its running statistics move in every training forward), dropout (it draws), and a head whose
    weights overflow fp16 in the forward under autocast."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2))
        self.head = nn.Linear(32, 4)
        with torch.no_grad():
            self.head.weight.mul_(1e5)

    def forward(self, x):
        return self.head(self.body(x))


def test_verify_trains_nothing_even_when_the_step_steps_an_optimizer_and_a_grad_scaler():
    model = Trained()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(3))
    sgd_step, scaler_scale = torch.optim.SGD.__dict__["step"], torch.amp.GradScaler.__dict__["scale"]

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=HALF):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    step()  # the optimizer and the scaler have state before the watched step
    watch = watched(model, step)
    assert (watch.first.module, watch.first.phase, watch.first.kind) == ("head", "forward", "overflow")
    before = snapshot(model)
    optimizer_state = copy.deepcopy(optimizer.state_dict())
    scale = scaler.get_scale()
    result = watch.verify(step)
    assert result.status in ("verified", "moved", "stayed"), result.text  # the step ran, twice
    assert_unchanged(model, before)
    assert scaler.get_scale() == scale
    state = optimizer.state_dict()
    assert state["param_groups"] == optimizer_state["param_groups"]
    for key, value in optimizer_state["state"].items():
        assert same(state["state"][key]["momentum_buffer"], value["momentum_buffer"])
    assert torch.optim.SGD.__dict__["step"] is sgd_step and torch.amp.GradScaler.__dict__["scale"] is scaler_scale


def test_a_step_that_raises_leaves_the_model_unchanged():
    model = NormThenProj().half()
    x = X.half()
    calls = []

    def step():
        calls.append(1)
        model(x).float().sum().backward()
        if len(calls) > 1:
            raise ValueError("the step's own bug")

    watch = watched(model, step)
    before = snapshot(model)
    with pytest.raises(ValueError, match="the step's own bug"):
        watch.verify(step)
    assert_unchanged(model, before)
    assert watch.first.verification.status == "not verified"
    assert "the step raised ValueError: the step's own bug" in watch.first.verification.text

    calls.clear()
    calls.append(1)  # from here the unchanged re-run passes and the one with the fix raises

    def fails_with_the_fix():
        calls.append(1)
        model(x).float().sum().backward()
        if len(calls) > 2:
            raise RuntimeError("only with the fix")

    result = watch.verify(fails_with_the_fix)
    assert result.status == "not verified" and "the step raised RuntimeError: only with the fix" in result.text
    assert_unchanged(model, before)


def test_what_cannot_be_verified_says_why():
    model = NormThenProj().half()
    x = X.half()
    runs = []

    def outside():
        runs.append(1)
        (model(x) * 1e4).exp().float().sum().backward()  # exp outside the model overflows

    with numerics_watch(model) as watch:
        outside()
    assert watch.first.module == "norm"
    out = next(e for e in watch.events if e.module is None)
    data = watch.to_data()["events"][watch.events.index(out)]
    assert data["verification"]["text"] == "not verified (no fix for it can be applied without changing code)"
    runs.clear()
    assert watch.verify(outside, event=out).status == "not verified" and runs == []  # nothing was run

    # An event the unchanged step does not show again: nothing to judge the fix against.
    inputs = iter([X.half(), X.half() / 1000])

    def fresh_data():
        model(next(inputs)).float().sum().backward()

    watch = watched(model, fresh_data)
    result = watch.verify(fresh_data)
    assert result.status == "not verified" and "re-run unchanged did not show the overflow in norm" in result.text
    assert "not verified (`watch.verify(step)` re-runs a step with the fix applied)" in str(
        watched(model, lambda: model(X.half()).float().sum().backward())
    )
    with pytest.raises(RuntimeError, match="ended"), numerics_watch(model) as active:
        active.verify(outside)
    with pytest.raises(TypeError, match="callable"):
        watch.verify("step")
