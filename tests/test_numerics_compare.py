"""mpdoctor.numerics_compare on real torch (CPU): each module's own error against an fp32 reference of the same step."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import mpdoctor  # noqa: E402
from mpdoctor.numerics import numerics_compare  # noqa: E402
from mpdoctor.numerics.compare import TOLERANCE_UNITS  # noqa: E402


class HandLayerNorm(nn.Module):
    """A LayerNorm written as E[x^2] - E[x]^2 in the input's dtype: in bf16, features with a large mean (Whisper's
    encoder, an un-centred residual stream) lose every significant bit of their variance. Silent: never inf."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = (x * x).mean(-1, keepdim=True) - mean * mean
        return (x - mean) * torch.rsqrt(variance + 1e-5) * self.weight + self.bias


class Encoder(nn.Module):
    def __init__(self, offset: float) -> None:
        super().__init__()
        self.conv = nn.Linear(16, 32)
        self.offset = offset
        self.ln = HandLayerNorm(32)
        self.proj = nn.Sequential(nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 8))

    def forward(self, x):
        return self.proj(self.ln(self.conv(x) + self.offset))


def encoder(offset: float) -> Encoder:
    torch.manual_seed(0)
    return Encoder(offset)


X = torch.randn(4, 10, 16, generator=torch.Generator().manual_seed(1))


def test_bf16_drift_names_the_norm_not_the_modules_that_inherit_its_error():
    model = encoder(offset=30.0)
    report = numerics_compare(model, X, dtype=torch.bfloat16, loss=lambda out: out.pow(2).sum())
    first = report.first
    assert (first.kind, first.module, first.phase, first.dtype) == ("drift", "ln", "forward", "bfloat16")
    assert "variance" in first.fix
    # Downstream modules got the norm's error as input in the whole-model run, but their own error is small.
    u = report.unit_roundoff
    for name in ("proj.0", "proj.1", "proj.2", "conv"):
        assert report.errors[name]["forward"] < report.tolerances[name], name
        assert report.errors[name]["forward"] < 3 * u
    assert report.errors["ln"]["forward"] > 10 * report.tolerances["ln"]
    assert report.errors["ln"]["backward"] is not None and report.output_error > report.tolerances["ln"]
    assert "first drift in the forward: ln (HandLayerNorm)" in str(report)
    # The first fix, re-run on the same step: the norm kept in fp32 takes most of the model's error away.
    assert report.fixed_output_error < report.output_error / 4 and "verified: with ln kept in fp32" in first.detail


def test_the_same_norm_without_the_offset_is_within_what_bf16_explains():
    report = numerics_compare(encoder(offset=0.0), X, dtype=torch.bfloat16)
    assert report.first is None, str(report)
    assert all(v["backward"] is None for v in report.errors.values())  # no loss: forward only


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_healthy_transformer_reports_nothing_and_each_error_is_about_one_unit_of_roundoff(dtype):
    torch.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), 2)
    model.eval()
    x = torch.randn(2, 12, 32, generator=torch.Generator().manual_seed(2))
    weights = torch.randn(2, 12, 32, generator=torch.Generator().manual_seed(3))
    report = numerics_compare(model, x, dtype=dtype, loss=lambda out: (out * weights).sum())
    assert report.first is None, str(report)
    u = report.unit_roundoff
    assert u == torch.finfo(dtype).eps / 2
    assert max(v["forward"] for v in report.errors.values()) < 4 * u
    assert all(t >= TOLERANCE_UNITS * u for t in report.tolerances.values())
    assert report.errors["layers.0.linear1"]["backward"] < 4 * u


def test_a_low_precision_model_is_compared_against_fp32_without_being_changed():
    model = encoder(offset=30.0).to(torch.bfloat16)
    before = {n: p.clone() for n, p in model.state_dict().items()}
    report = mpdoctor.numerics_compare(model, X.to(torch.bfloat16), dtype=torch.bfloat16)
    assert report.first.module == "ln"
    after = model.state_dict()
    assert all(after[n].dtype == torch.bfloat16 and torch.equal(after[n], before[n]) for n in before)


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        numerics_compare(lambda x: x, X)
    with pytest.raises(TypeError, match="floating torch.dtype"):
        numerics_compare(encoder(0.0), X, dtype=torch.int8)


def test_gradients_below_fp16s_range_are_underflow_with_the_scaler_fix_not_drift():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 32))
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(2))
    report = numerics_compare(model, x, dtype=torch.float16, loss=lambda out: out.sum() * 1e-9)
    first = report.first
    assert (first.kind, first.phase, first.module) == ("underflow", "backward", "2")  # the last layer: backward's first
    assert "GradScaler" in first.fix
    assert numerics_compare(model, x, dtype=torch.bfloat16, loss=lambda out: out.sum() * 1e-9).first is None


def test_dropout_and_batchnorm_in_training_mode_compare_like_for_like_and_change_nothing():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    model.train()
    before = {n: t.clone() for n, t in model.state_dict().items()}
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(4))
    rng = torch.get_rng_state()
    report = numerics_compare(model, x, dtype=torch.bfloat16, loss=lambda out: out.pow(2).sum())
    assert report.first is None, str(report)  # the same dropout mask in the reference and the low run
    assert report.errors["3"]["forward"] < 2 * report.unit_roundoff
    assert torch.equal(torch.get_rng_state(), rng)  # the caller's next draws are the ones it would have had
    assert all(torch.equal(model.state_dict()[n], t) for n, t in before.items())  # running stats untouched
