"""A training checkpoint is its model copies, each judged on its own, and never its optimizer state.

Real torch training checkpoints, as the trainers write them: a GPT-2 in bfloat16 after
one AdamW step (``{"model", "optimizer", "step"}``; Lightning's ``state_dict`` with
``optimizer_states`` and callbacks; fairseq's ``model`` with ``last_optimizer_state``),
an fp16 model with its fp32 Adam state, a model beside its EMA copy in another dtype
(``ema``; timm's ``state_dict_ema``). AdamW's float32 ``step`` counters beside a
bfloat16 model were "28 modules mixing dtypes" with the fix ``model.to(torch.bfloat16)``,
and fp32 Adam moments made an fp16 model "float16 in a float32 model". All the pickles
are read by one audit of one folder: one child, one torch import.
"""

from __future__ import annotations

import pytest

import mpdoctor
from mpdoctor.probes.remote import checkpoint_loader

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def gpt2(dtype):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)
    return transformers.GPT2LMHeadModel(config).to(dtype)


def trained(model):
    """The model after one AdamW step, and the optimizer's state_dict (float32 step counters, moments)."""
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    model(x, labels=x).loss.backward()
    opt.step()
    return opt.state_dict()


def fp32_adam(state):
    """Adam state in float32 for a model's parameters, as fairseq's and apex O2's fp32 master copies keep it."""
    params = [torch.nn.Parameter(v.float()) for v in state.values() if v.is_floating_point()]
    opt = torch.optim.Adam(params)
    sum(p.sum() for p in params).backward()
    opt.step()
    return opt.state_dict()


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    folder = tmp_path_factory.mktemp("training")
    bf16 = gpt2(torch.bfloat16)
    opt = trained(bf16)
    sd = bf16.state_dict()
    torch.save({"model": sd, "optimizer": opt, "step": 1}, folder / "train.pt")
    torch.save(
        {
            "epoch": 1,
            "global_step": 1,
            "state_dict": {"model." + k: v for k, v in sd.items()},
            "optimizer_states": [opt],
            "lr_schedulers": [],
            "callbacks": {"ModelCheckpoint{'monitor': 'val'}": {"best_model_score": torch.tensor(0.5)}},
            "MixedPrecision": {"scale": torch.tensor(65536.0)},
        },
        folder / "lightning.ckpt",
    )
    fp16 = {k: v.half() for k, v in gpt2(torch.float32).state_dict().items()}
    torch.save(
        {"model": fp16, "last_optimizer_state": fp32_adam(fp16), "optimizer_history": [], "extra_state": {}},
        folder / "fairseq.pt",
    )
    torch.save({"state_dict": fp16, "optimizer_states": [fp32_adam(fp16)]}, folder / "apex_o2.ckpt")
    torch.save({"model": fp16, "ema": {k: v.float() for k, v in fp16.items()}}, folder / "model_ema.pt")
    torch.save(
        {"state_dict": sd, "state_dict_ema": sd, "optimizer": opt, "amp_scaler": {"scale": torch.tensor(2.0)}},
        folder / "timm.pth.tar.pt",
    )
    broken = dict(sd)
    for name in ("transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.bias"):
        broken[name] = broken[name].float()
    torch.save({"model": broken, "optimizer": opt}, folder / "broken.pt")
    torch.save(broken, folder / "flat.pt")  # a state dict of its own: judged whole, as it always was
    torch.save(opt, folder / "optimizer_only.pt")
    report = mpdoctor.audit(str(folder))
    return {c.name: c for c in report.checkpoints}, report


def codes(checkpoint):
    return [f.code for f in checkpoint.findings]


def test_adamw_step_counters_beside_a_bf16_model_are_not_modules(audited):
    checkpoints, report = audited
    train = checkpoints["train.pt"]
    assert codes(train) == []
    assert [d.dtype for d in train.dtypes] == ["bfloat16"]
    assert (train.how, train.entry, train.role) == ("entry", "model", "model")
    assert any(u.path.endswith("train.pt:optimizer") and u.why.startswith("optimizer state") for u in report.unread)


def test_lightning_checkpoint_judges_its_state_dict_only(audited):
    checkpoints, report = audited
    lightning = checkpoints["lightning.ckpt"]
    assert codes(lightning) == [] and [d.dtype for d in lightning.dtypes] == ["bfloat16"]
    assert lightning.entry == "state_dict" and set(lightning.groups) == {"model"}
    whys = {u.path.rsplit(":", 1)[-1]: u.why for u in report.unread if "lightning.ckpt" in u.path}
    assert whys["optimizer_states"].startswith("optimizer state")
    assert whys["callbacks"].startswith("training state")
    assert whys["MixedPrecision"].startswith("loss-scaler state")


@pytest.mark.parametrize("name", ["fairseq.pt", "apex_o2.ckpt"])
def test_fp32_adam_state_does_not_make_an_fp16_model_float32(audited, name):
    checkpoint = audited[0][name]
    assert codes(checkpoint) == []
    assert [d.dtype for d in checkpoint.dtypes] == ["float16"]
    assert not any("float32" in step.text for f in checkpoint.findings for step in f.fix)


def test_an_ema_copy_is_its_own_model(audited):
    checkpoints, _ = audited
    model, ema = checkpoints["model_ema.pt:model"], checkpoints["model_ema.pt:ema"]
    assert codes(model) == [] and [d.dtype for d in model.dtypes] == ["float16"]
    assert codes(ema) == [] and [d.dtype for d in ema.dtypes] == ["float32"] and ema.role == "EMA copy"
    timm = checkpoints["timm.pth.tar.pt:state_dict_ema"]
    assert timm.role == "EMA copy" and codes(timm) == []
    assert "timm.pth.tar.pt:state_dict" in checkpoints


def test_a_model_copy_is_still_judged(audited):
    """Its optimizer is left out, not the model: an fp32 c_fc in the bf16 model is named, within the copy."""
    broken = audited[0]["broken.pt"]
    assert codes(broken) == ["AUDIT004"]
    assert [o.module for o in broken.odd_modules] == ["transformer.h.0.mlp.c_fc"]
    assert "bfloat16" in broken.findings[0].fix[0].text


def test_a_flat_state_dict_is_read_as_before(audited):
    flat = audited[0]["flat.pt"]
    assert (flat.how, flat.entry) == ("file", "")
    assert [o.module for o in flat.odd_modules] == ["transformer.h.0.mlp.c_fc"]


def test_an_optimizer_state_dict_alone_is_no_model(audited):
    checkpoints, report = audited
    assert codes(checkpoints["optimizer_only.pt"]) == [] and checkpoints["optimizer_only.pt"].dtypes == []
    assert any(u.path.endswith("optimizer_only.pt") and u.why.startswith("optimizer state") for u in report.unread)


def test_deepspeed_and_gan_entries_are_told_apart():
    sd = {"w": torch.ones(2, dtype=torch.float16)}
    state = {
        "module": sd,
        "optimizer": None,
        "lr_scheduler": {"last": torch.tensor(1.0)},
        "frozen_param_fragments": {"x": torch.ones(1)},
        "param_shapes": [{"w": torch.Size([2])}],
        "global_steps": 3,
    }
    data = checkpoint_loader.listing(state, torch)
    assert data["copies"] == [["module", "model"]] and [t[0] for t in data["tensors"]] == ["w"]
    assert [s[:2] for s in data["skipped"]] == [
        ["lr_scheduler", "learning-rate scheduler state"],
        ["frozen_param_fragments", "training state"],
    ]
    gan = checkpoint_loader.listing({"generator": sd, "discriminator": sd, "optimizer_G": {"s": sd}}, torch)
    assert gan["copies"] == [["generator", "model"], ["discriminator", "model"]]
    assert gan["skipped"] == [["optimizer_G", "optimizer state", 1, 4]]
    # A state dict, even one with a submodule called "model", is one model, named as it was.
    flat = checkpoint_loader.listing({"model.w": sd["w"], "step": torch.tensor(1.0)}, torch)
    assert flat["copies"] == [["", "model"]] and [t[0] for t in flat["tensors"]] == ["model.w", "step"]
