"""The odd module out: a submodule wholly in another dtype, at every level, intended or not.

Safetensors files are written by hand from the format's spec (8-byte header length,
JSON header, then the data: zeros here, since the audit reads the header only), so
each case says exactly which tensors are in which dtype. Live modules are real
torch modules on the CPU, audited in memory and, saved to a file, from the file.
"""

from __future__ import annotations

import json
import os
import struct

import jsonschema
import pytest

import mpdoctor
from helpers import run_cli
from mpdoctor.checkpoint_audit.report import SCHEMA_PATH
from mpdoctor.checkpoint_audit.tree import NORM_REASON, OddModule, pattern
from mpdoctor.checks.registry import builtin_registry

# Without torch these tests skip: audit itself runs without it, these write checkpoints with it.
torch = pytest.importorskip("torch")
nn = torch.nn

SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "F8_E4M3": 1}
CODE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}


def write(path, tensors):
    """A .safetensors file of ``{name: (dtype code, shape)}``, its data zeros; returns the path."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = SIZE[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


def save(module, path):
    """A live module's parameters and buffers, written as safetensors with their real bytes."""
    header, blobs, offset = {}, [], 0
    for name, tensor in {**dict(module.named_parameters()), **dict(module.named_buffers())}.items():
        data = bytes(tensor.detach().contiguous().untyped_storage())
        header[name] = {
            "dtype": CODE[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    return path


def codes(report):
    return [f.code for f in report.findings]


def finding(report, code):
    (found,) = [f for f in report.findings if f.code == code]
    return found


# ---------------------------------------------------------------- incident 3: an fp32 module in an fp16 UNet


def onetrainer_unet():
    """fp16 everywhere but ``unet.mask_embed`` (fp32, whole), and a bf16 bias in ``unet.up.conv``."""
    return {
        "unet.conv_in.weight": ("F16", [8, 4, 3, 3]),
        "unet.conv_in.bias": ("F16", [8]),
        "unet.mask_embed.weight": ("F32", [4, 3]),
        "unet.mask_embed.bias": ("F32", [4]),
        "unet.down.0.conv.weight": ("F16", [8, 8, 3, 3]),
        "unet.down.0.conv.bias": ("F16", [8]),
        "unet.down.1.conv.weight": ("F16", [8, 8, 3, 3]),
        "unet.down.1.conv.bias": ("F16", [8]),
        "unet.up.conv.weight": ("F16", [8, 8, 3, 3]),
        "unet.up.conv.bias": ("BF16", [8]),
        "unet.position_ids": ("I64", [16]),
    }


def test_a_whole_fp32_submodule_in_an_fp16_unet_is_named_with_its_size(tmp_path):
    report = mpdoctor.audit(write(tmp_path / "unet.safetensors", onetrainer_unet()))
    assert report.odd_modules == [OddModule("unet.mask_embed", "float32", 2, 64, "unet", "float16", "")]
    assert codes(report) == ["AUDIT002", "AUDIT004"]  # the bf16 bias is a mix inside one module, as before
    odd = finding(report, "AUDIT004")
    assert odd.severity == "warning" and odd.name == "module-in-another-dtype"
    assert odd.evidence == ["unet.mask_embed: float32 (2 tensors, 64 B) in a float16 unet"]
    assert [s.text.split(":")[0] for s in odd.fix] == [
        "Cast on load, the whole model in its dtype",
        "Or keep the module in its dtype and cast the input in its forward",
    ]
    # In the model's dtype; no config.json says which library loads it, so both spellings of its loader's argument.
    assert odd.fix[0].text.startswith(
        "Cast on load, the whole model in its dtype: `model.to(torch.float16)`, or with its loader (transformers' "
        "`from_pretrained(..., dtype=torch.float16)` from 4.56 on, `torch_dtype=` before"
    )
    assert odd.fix[1].role == "alternative"
    # AUDIT002's fix too names the model's dtype (float16), not a fixed one.
    assert "`model.to(torch.float16)`" in finding(report, "AUDIT002").fix[0].text
    assert [(s.module, s.dominant) for s in report.subtrees] == [
        ("", "float16"),
        ("unet", "float16"),
        ("unet.up", "float16"),
        ("unet.up.conv", "float16"),
    ]
    assert "odd module out: unet.mask_embed: float32 (2 tensors, 64 B) in a float16 unet" in str(report)


def test_an_odd_module_nested_deep_inside_is_found_against_its_own_subtree(tmp_path):
    tensors = {f"encoder.block.{i}.{part}.weight": ("F16", [16, 16]) for i in range(3) for part in ("attn", "mlp")}
    tensors["encoder.block.1.mlp.fc2.weight"] = ("F32", [16, 16])  # one fp32 leaf, two levels down
    tensors["encoder.pos_embed"] = ("F32", [16])  # a lone tensor of a module that has submodules
    report = mpdoctor.audit(write(tmp_path / "m.safetensors", tensors))
    assert [(o.module, o.dtype, o.within, o.within_dtype) for o in report.odd_modules] == [
        ("encoder.pos_embed", "float32", "encoder", "float16"),
        ("encoder.block.1.mlp.fc2", "float32", "encoder.block.1.mlp", "float16"),
    ]
    assert codes(report) == ["AUDIT004"]  # every difference named: AUDIT003 has nothing left to say


# ---------------------------------------------------------------- Llama: norms kept in fp32, and an fp32 fc2


def llama(layers=4, fc2_fp32=None, mixed_bias=False):
    tensors = {
        "model.embed_tokens.weight": ("BF16", [64, 16]),
        "model.norm.weight": ("BF16", [16]),
        "lm_head.weight": ("BF16", [64, 16]),
    }
    for i in range(layers):
        block = f"model.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            tensors[f"{block}.self_attn.{proj}.weight"] = ("BF16", [16, 16])
        tensors[f"{block}.mlp.fc1.weight"] = ("BF16", [32, 16])
        tensors[f"{block}.mlp.fc2.weight"] = ("F32" if i == fc2_fp32 else "BF16", [16, 32])
        tensors[f"{block}.input_layernorm.weight"] = ("F32", [16])
        tensors[f"{block}.post_attention_layernorm.weight"] = ("BF16", [16])
    if mixed_bias:
        tensors["model.layers.0.self_attn.o_proj.bias"] = ("F32", [16])
    return tensors


def test_norms_kept_in_fp32_are_info_grouped_into_one_line(tmp_path):
    report = mpdoctor.audit(write(tmp_path / "model.safetensors", llama()))
    assert len(report.odd_modules) == 4 and all(o.intended for o in report.odd_modules)
    assert codes(report) == ["AUDIT005"]
    kept = finding(report, "AUDIT005")
    assert kept.severity == "info" and kept.name == "module-kept-in-float32"
    assert kept.evidence == [
        "model.layers.*.input_layernorm: float32 (4 modules, 4 tensors, 256 B), each in a bfloat16 model.layers.*; "
        "a norm, by its name, in a model of no known architecture: mixed-precision setups keep norms in float32 on "
        "purpose (its forward must cast its input)"
    ]


def test_an_fp32_fc2_is_a_warning_and_audit003_does_not_vanish_when_audit002_fires(tmp_path):
    report = mpdoctor.audit(write(tmp_path / "model.safetensors", llama(fc2_fp32=2, mixed_bias=True)))
    assert codes(report) == ["AUDIT002", "AUDIT004", "AUDIT005"]
    assert finding(report, "AUDIT004").evidence == [
        "model.layers.2.mlp.fc2: float32 (1 tensor, 2.0 KB) in a bfloat16 model.layers.2.mlp"
    ]
    # A part that is mostly another dtype, named by no module: AUDIT003 says so, AUDIT002 or not.
    tensors = llama(mixed_bias=True)
    tensors.update({f"vision.blocks.{i}.proj.weight": ("F32", [16, 16]) for i in range(3)})
    tensors["vision.blocks.0.norm.weight"] = ("BF16", [16])
    report = mpdoctor.audit(write(tmp_path / "vlm.safetensors", tensors))
    assert codes(report) == ["AUDIT002", "AUDIT003", "AUDIT004", "AUDIT005"]
    assert finding(report, "AUDIT003").evidence == ["vision: mostly float32 in a bfloat16 model"]
    # inside the fp32 part, the bf16 norm is odd against the part's own dtype
    assert finding(report, "AUDIT004").evidence == [
        "vision.blocks.0.norm: bfloat16 (1 tensor, 32 B) in a float32 vision.blocks.0"
    ]


def test_an_intended_module_must_be_float32_in_a_lower_precision_model(tmp_path):
    tensors = {f"blocks.{i}.proj.weight": ("F32", [16, 16]) for i in range(3)}
    tensors["blocks.1.norm.weight"] = ("F16", [16])  # a norm, but half inside an fp32 model: not on purpose
    report = mpdoctor.audit(write(tmp_path / "m.safetensors", tensors))
    assert [(o.module, o.intended) for o in report.odd_modules] == [("blocks.1.norm", "")]
    assert codes(report) == ["AUDIT004"]


# ---------------------------------------------------------------- _keep_in_fp32_modules from config.json


def t5(wo="F32"):
    tensors = {"shared.weight": ("F16", [64, 16])}
    for i in range(2):
        tensors[f"encoder.block.{i}.layer.0.SelfAttention.q.weight"] = ("F16", [16, 16])
        tensors[f"encoder.block.{i}.layer.1.DenseReluDense.wi.weight"] = ("F16", [32, 16])
        tensors[f"encoder.block.{i}.layer.1.DenseReluDense.wo.weight"] = (wo, [16, 32])
    return tensors


def test_a_module_the_config_keeps_in_fp32_is_info_with_the_reason(tmp_path):
    write(tmp_path / "model.safetensors", t5())
    report = mpdoctor.audit(tmp_path)
    assert codes(report) == ["AUDIT004"]  # no config.json: nothing says `wo` is fp32 on purpose
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["T5ForConditionalGeneration"], "_keep_in_fp32_modules": ["wo"]})
    )
    report = mpdoctor.audit(tmp_path)
    assert codes(report) == ["AUDIT005"]
    # T5's own rule (transformers' T5PreTrainedModel keeps "wo"), known for the class the config names
    reason = "kept in float32 by transformers 5.24.0's T5ForConditionalGeneration (_keep_in_fp32_modules names 'wo')"
    assert {o.intended for o in report.odd_modules} == {reason}
    assert finding(report, "AUDIT005").evidence == [
        f"encoder.block.*.layer.*.DenseReluDense.wo: float32 (2 modules, 2 tensors, 4.0 KB), each in a float16 "
        f"encoder.block.*.layer.*.DenseReluDense; {reason}"
    ]
    # As the loader that wrote it matches: transformers 4 matched whole dotted names, so "wo" does not keep
    # "wout"; transformers 5 searches the name for "wo" anywhere, so it does.
    tensors = t5()
    tensors["encoder.block.0.layer.0.wout.weight"] = ("F32", [4])
    write(tmp_path / "model.safetensors", tensors)
    assert codes(mpdoctor.audit(tmp_path)) == ["AUDIT005"]
    config = {"architectures": ["T5ForConditionalGeneration"], "transformers_version": "4.46.3"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert codes(mpdoctor.audit(tmp_path)) == ["AUDIT004", "AUDIT005"]


@pytest.mark.parametrize("config", ["not json {", "[1, 2]", '{"_keep_in_fp32_modules": "wo"}', "fifo"])
def test_a_config_that_names_nothing_usable_is_ignored_without_hanging(tmp_path, config):
    write(tmp_path / "model.safetensors", t5())
    if config == "fifo":
        os.mkfifo(tmp_path / "config.json")  # opening it to read would block forever
    else:
        (tmp_path / "config.json").write_text(config)
    assert codes(mpdoctor.audit(tmp_path)) == ["AUDIT004"]


# ---------------------------------------------------------------- per component of a diffusers folder


def test_each_component_of_a_pipeline_is_its_own_tree(tmp_path):
    (tmp_path / "model_index.json").write_text(
        json.dumps(
            {
                "_class_name": "StableDiffusionInpaintPipeline",
                "unet": ["diffusers", "UNet2DConditionModel"],
                "text_encoder": ["transformers", "CLIPTextModel"],
            }
        )
    )
    unet = {name[len("unet.") :]: spec for name, spec in onetrainer_unet().items()}
    write(tmp_path / "unet" / "diffusion_pytorch_model.safetensors", unet)
    encoder = {f"text_model.encoder.layers.{i}.mlp.fc1.weight": ("F32", [16, 16]) for i in range(2)}
    encoder.update({f"text_model.encoder.layers.{i}.layer_norm1.weight": ("F16", [16]) for i in range(2)})
    write(tmp_path / "text_encoder" / "model.safetensors", encoder)
    (tmp_path / "text_encoder" / "config.json").write_text(json.dumps({"_keep_in_fp32_modules": ["layer_norm1"]}))
    report = mpdoctor.audit(tmp_path)
    # The fp32 text encoder beside the fp16 unet is two models, not an odd module; inside each, the odd ones.
    assert [(o.module, o.dtype, o.within, o.within_dtype, bool(o.intended)) for o in report.odd_modules] == [
        (
            "text_encoder/text_model.encoder.layers.0.layer_norm1",
            "float16",
            "text_encoder/text_model.encoder.layers.0",
            "float32",
            False,
        ),
        (
            "text_encoder/text_model.encoder.layers.1.layer_norm1",
            "float16",
            "text_encoder/text_model.encoder.layers.1",
            "float32",
            False,
        ),
        ("unet/mask_embed", "float32", "unet", "float16", False),
    ]
    # Each component is a checkpoint judged on its own, its findings under its name; the pipeline as a whole notes
    # the components' different dtypes.
    assert [(c.name, codes(c)) for c in report.checkpoints] == [
        ("text_encoder", ["AUDIT004"]),
        ("unet", ["AUDIT002", "AUDIT004"]),
    ]
    assert codes(report) == ["AUDIT004", "AUDIT002", "AUDIT004", "AUDIT003"]
    assert finding(report, "AUDIT003").evidence == ["text_encoder: mostly float32", "unet: mostly float16"]
    (unet,) = [f for f in report.findings if f.code == "AUDIT004" and f.title.startswith("[unet] ")]
    assert unet.evidence == ["mask_embed: float32 (2 tensors, 64 B) in a float16 model"]


# ---------------------------------------------------------------- a live module, with its buffers


class Rope(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(8), persistent=False)  # not in its state dict


class Inpaint(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(5, 16, 3)
        self.mask_embed = nn.Linear(16, 16)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Conv2d(16, 16, 3), nn.GroupNorm(4, 16)) for _ in range(2))
        self.rope = Rope()


def inpaint():
    model = Inpaint().half()
    model.mask_embed.float()
    for block in model.blocks:
        block[1].float()  # the norms kept in fp32
    model.rope.inv_freq = model.rope.inv_freq.float()
    return model


def test_a_live_module_gives_the_analysis_its_saved_file_gives(tmp_path):
    model = inpaint()
    live = mpdoctor.audit(model)
    saved = mpdoctor.audit(save(model, tmp_path / "m.safetensors"))
    shape = [(o.module, o.dtype, o.tensors, o.bytes, o.within, o.within_dtype) for o in live.odd_modules]
    assert shape == [(o.module, o.dtype, o.tensors, o.bytes, o.within, o.within_dtype) for o in saved.odd_modules]
    assert shape == [
        ("mask_embed", "float32", 2, 1088, "", "float16"),
        ("blocks.0.1", "float32", 2, 128, "blocks.0", "float16"),
        ("blocks.1.1", "float32", 2, 128, "blocks.1", "float16"),
        ("rope", "float32", 1, 32, "", "float16"),
    ]
    # The same modules, and one difference: the live module knows its classes, so its GroupNorms (named
    # "1" in a Sequential) are norms kept on purpose; the saved file has only that name, which says nothing.
    assert [o.intended for o in live.odd_modules] == [
        "",
        *["a norm (GroupNorm), in a model of no known architecture: " + NORM_REASON] * 2,
        "",
    ]
    assert [o.intended for o in saved.odd_modules] == ["", "", "", ""]
    # A state dict leaves the non-persistent buffer out; the live module does not.
    assert "rope" not in [o.module for o in mpdoctor.audit(model.state_dict()).odd_modules]


def test_a_live_models_own_keep_in_fp32_list_is_read(tmp_path):
    model = inpaint()
    model._keep_in_fp32_modules = ["mask_embed"]
    report = mpdoctor.audit(model)
    assert [(o.module, o.intended) for o in report.odd_modules if o.module == "mask_embed"] == [
        ("mask_embed", "kept in float32 by Inpaint._keep_in_fp32_modules (_keep_in_fp32_modules names 'mask_embed')")
    ]


# ---------------------------------------------------------------- big models stay small; --all lists them all


def test_repeated_blocks_are_one_line_and_all_lists_each(tmp_path):
    tensors = {}
    for i in range(40):
        tensors[f"h.{i}.attn.weight"] = ("F16", [16, 16])
        tensors[f"h.{i}.fc2.weight"] = ("F32", [16, 16])
        tensors[f"h.{i}.fc1.weight"] = ("F16", [32, 16])
    path = write(tmp_path / "m.safetensors", tensors)
    text = run_cli("audit", str(path))
    assert text.returncode == 0, text.stderr  # warnings do not fail the default --fail-on error
    assert "h.*.fc2: float32 (40 modules, 40 tensors, 40.0 KB), each in a float16 h.*" in text.stdout
    assert "h.17.fc2" not in text.stdout and "`--all` lists every module" in text.stdout
    full = run_cli("audit", str(path), "--all")
    assert full.returncode == 0 and "h.17.fc2: float32 (1 tensor, 1.0 KB) in a float16 h.17" in full.stdout
    assert sum("fc2: float32 (1 tensor" in line for line in full.stdout.splitlines()) == 40
    markdown = run_cli("audit", str(path), "--all", "--format", "markdown").stdout
    assert (
        "## Odd modules out, each" in markdown
        and "`h.39.fc2: float32 (1 tensor, 1.0 KB) in a float16 h.39`" in markdown
    )
    data = json.loads(run_cli("audit", str(path), "--format", "json").stdout)  # JSON: always all of them
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(data)
    assert len(data["odd_modules"]) == 40 and data["odd_modules"][0] == {
        "module": "h.0.fc2",
        "dtype": "float32",
        "tensors": 1,
        "bytes": 1024,
        "within": "h.0",
        "within_dtype": "float16",
        "intended": "",
    }


def test_pattern_folds_only_whole_numeric_names():
    assert pattern("model.layers.17.input_layernorm") == "model.layers.*.input_layernorm"
    assert pattern("unet/down_blocks.0.resnets.1.conv2") == "unet/down_blocks.*.resnets.*.conv2"
    assert pattern("0.1") == "*.*" and pattern("norm1.layer2") == "norm1.layer2"


def test_the_new_findings_are_stamped_with_their_registered_rules(tmp_path):
    report = mpdoctor.audit(write(tmp_path / "model.safetensors", llama(fc2_fp32=0)))
    for found in report.findings:
        entry = builtin_registry().get(found.code)
        assert (found.name, found.family) == (entry.name, "audit")
    assert {f.code for f in report.findings} == {"AUDIT004", "AUDIT005"}
