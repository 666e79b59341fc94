"""mpdoctor numerics on transformers' real model classes, built from tiny configs (no weights downloaded).

T5 computes its relative-position buckets as ``log(distance / max_exact)`` for every distance, 0 included, and
drops the -inf that log(0) gives with ``torch.where``: a healthy model, in any dtype, that writes a -inf on purpose
in every forward. A watch that took that -inf for an overflow accused every T5 of one, and in an fp16 T5 whose
feed-forward really overflows (the T5-in-fp16 failure of transformers#9295) it named the log first and the real
overflow only among "more events".
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import mpdoctor  # noqa: E402


def tiny_t5(dtype):
    torch.manual_seed(0)
    config = transformers.T5Config(
        d_model=64,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        d_kv=16,
        vocab_size=200,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    return transformers.T5ForConditionalGeneration(config).to(dtype)


def train(model, steps: int = 2):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    losses = []
    with mpdoctor.numerics_watch(model) as watch:
        for _ in range(steps):
            x = torch.randint(1, 200, (2, 16), generator=gen)
            loss = model(input_ids=x, labels=x).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return watch, losses


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_a_healthy_t5_is_accused_of_nothing(dtype):
    watch, losses = train(tiny_t5(dtype))
    assert all(torch.isfinite(torch.tensor(losses))), losses
    assert [e for e in watch.events if e.kind in ("overflow", "nan")] == [], [e.line() for e in watch.events]


def test_an_fp16_t5_whose_feed_forward_overflows_is_named_there_first():
    model = tiny_t5(torch.float32)
    with torch.no_grad():  # the second encoder block's feed-forward grows past 65504, as large pretrained T5s do
        ff = model.encoder.block[1].layer[1].DenseReluDense
        ff.wi.weight.mul_(300)
        ff.wo.weight.mul_(300)
    model = model.half()
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(1, 200, (2, 16), generator=gen)
    with mpdoctor.numerics_watch(model) as watch:
        model(input_ids=x, labels=x).loss.backward()
    first = watch.first
    assert first is not None, "no event"
    assert (first.kind, first.phase) == ("overflow", "forward"), [e.line() for e in watch.events]
    assert first.module.startswith("encoder.block.1.layer.1.DenseReluDense"), [e.line() for e in watch.events]
    assert not any(e.op in ("log", "log2", "log10") for e in watch.events), [e.line() for e in watch.events]


def test_near_zero_biases_cast_by_autocast_are_no_underflow():
    """Biases a few steps from zero-init (|b| ~1e-6) become fp16 subnormals when autocast casts them: nothing of them
    is lost that mattered (the output is bit-identical with them set to zero, computed here), so the forward cast
    is no underflow. A scaled healthy step under fp16 autocast reports nothing."""
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
    with torch.no_grad():
        model[0].bias.uniform_(-1e-6, 1e-6)
        model[2].bias.uniform_(-1e-6, 1e-6)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        kept = model(x)
        biases = [model[0].bias.clone(), model[2].bias.clone()]
        model[0].bias.zero_()
        model[2].bias.zero_()
        assert torch.equal(kept, model(x))  # the flushed biases changed nothing
        model[0].bias.copy_(biases[0])
        model[2].bias.copy_(biases[1])
    scaler = torch.amp.GradScaler("cpu")
    with mpdoctor.numerics_watch(model) as watch:
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(x)
        scaler.scale(torch.nn.functional.cross_entropy(out.float(), y)).backward()
    assert watch.events == [], [e.line() for e in watch.events]
