"""The numerics watch around optimizer steps, and the rules that tell a mask from an overflow (real torch, CPU).

A closure given to ``optimizer.step(closure)`` (LBFGS; Lightning's automatic optimization) is watched while the
update around it is not; a step that raises leaves the watch listening; what an update writes into the parameters
is checked; an fp32 model is never told to keep a module in fp32; masks made additive by ``log`` or a constant
beyond fp16's range are not events, while the same ops on values of either sign are.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import mpdoctor  # noqa: E402

HALF = torch.float16


def verdict(watch) -> tuple:
    first = watch.first
    return None if first is None else (first.module, first.kind, first.phase, first.step)


def lines(watch) -> list:
    return [e.line() for e in watch.events]


def ffn(gain, dtype=HALF) -> nn.Sequential:
    """Linear, ReLU, Linear; the second's weights all ``gain`` (when given): at 1e4 its fp16 product, a sum of 32
    such terms times ReLU outputs of about 0.5, leaves the range in the forward."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if gain:
        with torch.no_grad():
            model[2].weight.fill_(gain)
    return model.to(dtype)


X = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("gain, expected", [(None, None), (1e4, ("2", "overflow", "forward", 0))])
def test_an_lbfgs_closure_is_watched_inside_optimizer_step(gain, expected):
    # LBFGS runs the whole step, forward and backward, inside optimizer.step(closure), several times.
    model = ffn(gain)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1e-3, max_iter=2)
    x = X.to(HALF)

    def closure():
        optimizer.zero_grad()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        return loss

    with mpdoctor.numerics_watch(model) as watch:
        optimizer.step(closure)
    assert verdict(watch) == expected, lines(watch)
    assert watch.ops_seen > 10 and watch.step_index == 1  # the closure's ops were seen; one optimizer step
    assert watch._quiet == 0


class Failing(torch.optim.SGD):
    """An optimizer whose step raises (a bad state dict, a fused kernel refusing a dtype): its post-hook never runs."""

    def step(self, closure=None):
        raise RuntimeError("step failed")


@pytest.mark.parametrize("how", ["step", "closure"])
def test_an_optimizer_step_that_raises_leaves_the_watch_listening(how):
    model = ffn(1e4)
    x = X.to(HALF)
    with mpdoctor.numerics_watch(model) as watch:
        with pytest.raises(RuntimeError, match="failed"):
            if how == "step":
                Failing(model.parameters(), lr=0.1).step()
            else:

                def closure():
                    raise RuntimeError("closure failed")

                torch.optim.LBFGS(model.parameters()).step(closure)
        model(x).float().sum().backward()  # the overflow comes after the failed step: it must be seen
    assert verdict(watch) == ("2", "overflow", "forward", 0), lines(watch)


def test_nan_an_update_writes_is_named_at_the_module_holding_the_parameter_and_healthy_updates_are_not():
    # Pure fp16 Adam: eps 1e-8 is 0 in fp16, and embedding rows the batch did not use get 0 / 0 = NaN.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 2)).half()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with mpdoctor.numerics_watch(model) as watch:
        for tokens in ([[1, 2, 3]], [[1, 2]]):  # the second batch reads no NaN row: only the update can tell
            optimizer.zero_grad()
            model(torch.tensor(tokens)).float().pow(2).sum().backward()
            optimizer.step()
    assert torch.isnan(model[0].weight).any() and not torch.isnan(model[1].weight).any()
    assert verdict(watch) == ("0", "nan", "optimizer", 0), lines(watch)
    assert watch.first.op == "Adam.step" and watch.reads == 2  # one read per step: the check rode with step 1's
    assert "eps=1e-4" in " ".join(watch.first.fixes) and "master weights" in watch.first.fix
    assert "not verified (no fix for it can be applied" in str(watch)
    healthy = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 2))  # fp32 parameters: eps is representable
    optimizer = torch.optim.Adam(healthy.parameters(), lr=1e-3)
    with mpdoctor.numerics_watch(healthy) as watch:
        for tokens in ([[1, 2, 3]], [[5, 1]]):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = healthy(torch.tensor(tokens)).float().pow(2).sum()
            loss.backward()
            optimizer.step()
    assert watch.events == [], lines(watch)


def test_an_fp32_overflow_is_not_told_to_keep_the_module_in_fp32():
    model = ffn(None, torch.float32)
    with torch.no_grad():
        model[2].weight.fill_(1e38)
    with mpdoctor.numerics_watch(model) as watch:
        model(X).sum().backward()
    first = watch.first
    assert (first.module, first.kind, first.phase, first.dtype) == ("2", "overflow", "forward", "float32")
    assert not any(fix.startswith("keep ") or "bf16" in fix for fix in first.fixes), first.fixes
    assert "float32's own range" in first.fix


class Scores(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, scores, keep):
        if self.how == "log of a mask":
            return torch.softmax(scores + keep.to(scores.dtype).log(), -1)
        if self.how == "mask times -1e9":
            return torch.softmax(scores + (1.0 - keep.to(scores.dtype)) * -1e9, -1)
        if self.how == "log of activations":  # log(0) is -inf exactly: nothing left the range
            return torch.relu(scores).log()
        if self.how == "log of activations, used":  # and the -inf it wrote, multiplied by a zero, is a NaN made here
            return torch.relu(scores).log() * (scores > 0).to(scores.dtype)
        return scores * -1e9  # values of either sign times a constant fp16 cannot hold: an overflow


@pytest.mark.parametrize(
    "how, expected",
    [
        ("log of a mask", None),
        ("mask times -1e9", None),
        ("log of activations", None),
        ("log of activations, used", ("", "nan", "forward", 0)),
        ("scores times -1e9", ("", "overflow", "forward", 0)),
    ],
)
def test_masks_are_told_from_overflows_by_their_values(how, expected):
    scores = torch.randn(2, 6, generator=torch.Generator().manual_seed(2)).to(HALF)
    keep = torch.ones(2, 6, dtype=torch.bool)
    keep[0, 4:] = False
    model = Scores(how)
    with mpdoctor.numerics_watch(model) as watch:
        model(scores, keep)
        watch.step()
    assert verdict(watch) == expected, lines(watch)
