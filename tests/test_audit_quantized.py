"""Quantized checkpoints are judged as quantized, never as modules to `.to()` away; and the dtypes safetensors knows.

A real Llama from a tiny config, saved by ``save_pretrained``, rewritten in the layouts
the quantizers write (read from their key names): DeepSeek-V3/Qwen FP8 (float8_e4m3fn
``*_proj.weight`` with a float32 ``weight_scale_inv``, ``quantization_config`` in
config.json), compressed-tensors/FBGEMM fp8 (``weight_scale``, ``input_scale``),
bitsandbytes 4-bit (uint8 ``weight`` with ``weight.absmax``, ``weight.quant_map``,
``weight.quant_state.bitsandbytes__nf4``) and 8-bit (int8 ``weight``, ``SCB``), GPTQ/AWQ
(int32 ``qweight``/``qzeros``, float16 ``scales``). Before, fp8 was "mostly
float8_e4m3fn; weight_scale_inv float32" with the fix ``model.to(torch.float8_e4m3fn)``.
"""

from __future__ import annotations

import json
import struct

import pytest

import mpdoctor
from mpdoctor.checkpoint_audit.safetensors import AuditError, read_header

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")


def llama_folder(folder, rewrite, quantization=None):
    """A tiny bf16 Llama saved by save_pretrained, its proj weights rewritten by ``rewrite(name, tensor) -> dict``."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=100,
    )  # fmt: skip
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    path = folder / "model.safetensors"
    state = safetensors_torch.load_file(path)
    out = {}
    for name, tensor in state.items():
        out.update(rewrite(name, tensor) if name.endswith("proj.weight") else {name: tensor})
    path.unlink()
    safetensors_torch.save_file(out, path)
    if quantization is not None:
        data = json.loads((folder / "config.json").read_text())
        data["quantization_config"] = quantization
        (folder / "config.json").write_text(json.dumps(data))
    return folder


def fp8_block(name, tensor):
    return {name: tensor.to(torch.float8_e4m3fn), name + "_scale_inv": torch.ones(1, 1)}


def fp8_compressed(name, tensor):
    module = name[: -len(".weight")]
    return {
        name: tensor.to(torch.float8_e4m3fn),
        module + ".weight_scale": torch.ones(tensor.shape[0], 1, dtype=torch.bfloat16),
        module + ".input_scale": torch.ones(1),
    }


def bnb_4bit(name, tensor):
    n = tensor.numel() // 2
    return {
        name: torch.zeros(n, 1, dtype=torch.uint8),
        name + ".absmax": torch.ones(tensor.numel() // 64),
        name + ".quant_map": torch.linspace(-1, 1, 16),
        name + ".quant_state.bitsandbytes__nf4": torch.zeros(64, dtype=torch.uint8),
    }


def bnb_8bit(name, tensor):
    module = name[: -len(".weight")]
    return {name: torch.zeros(tensor.shape, dtype=torch.int8), module + ".SCB": torch.ones(tensor.shape[0])}


def gptq(name, tensor):
    module, (rows, cols) = name[: -len(".weight")], tensor.shape
    return {
        module + ".qweight": torch.zeros(cols // 8, rows, dtype=torch.int32),
        module + ".qzeros": torch.zeros(1, rows // 8, dtype=torch.int32),
        module + ".scales": torch.ones(1, rows, dtype=torch.float16),
        module + ".g_idx": torch.zeros(cols, dtype=torch.int32),
    }


CASES = {
    "fp8 block, config": (fp8_block, {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
    "fp8 block, no config": (fp8_block, None, "weight_scale_inv"),
    "fp8 compressed-tensors": (fp8_compressed, {"quant_method": "compressed-tensors"}, "compressed-tensors"),
    "fp8 per-channel, no config": (fp8_compressed, None, "float8_e4m3fn weights with scales"),
    "bitsandbytes 4-bit": (bnb_4bit, {"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes 4-bit"),
    "bitsandbytes 4-bit, no config": (bnb_4bit, None, "bitsandbytes 4-bit"),
    "bitsandbytes 8-bit, no config": (bnb_8bit, None, "bitsandbytes 8-bit"),
    "gptq": (gptq, {"quant_method": "gptq", "bits": 4}, "gptq"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_quantized_model_is_told_as_quantized_never_cast(tmp_path, case):
    rewrite, quantization, method = CASES[case]
    report = mpdoctor.audit(str(llama_folder(tmp_path, rewrite, quantization)))
    assert [f.code for f in report.findings] == ["AUDIT007"], [f.title for f in report.findings]
    (finding,) = report.findings
    assert finding.severity == "info" and method in finding.title and "rest of the model is bfloat16" in finding.title
    assert "14 module(s)" in finding.title  # 7 projections in each of 2 layers
    assert report.mixed == [] and report.odd_modules == []
    assert "Never cast" in finding.fix[0].text


def test_an_accident_in_a_quantized_model_is_still_named(tmp_path):
    """The rest of the model is judged: an fp32 final norm in the fp8 Llama is AUDIT004, in a bfloat16 model."""
    folder = llama_folder(tmp_path, fp8_block, CASES["fp8 block, config"][1])
    path = folder / "model.safetensors"
    state = safetensors_torch.load_file(path)
    state["model.norm.weight"] = state["model.norm.weight"].float()
    safetensors_torch.save_file(state, path)
    report = mpdoctor.audit(str(folder))
    assert [f.code for f in report.findings] == ["AUDIT004", "AUDIT007"]
    assert [(o.module, o.within_dtype) for o in report.odd_modules] == [("model.norm", "bfloat16")]
    assert "torch.bfloat16" in report.findings[0].fix[0].text


def test_a_scale_beside_half_weights_is_no_quantization(tmp_path):
    """A float32 `scale` beside a float16 weight, no quantized dtype, no config: a module mixing dtypes, as before."""
    path = tmp_path / "m.safetensors"
    safetensors_torch.save_file(
        {
            "a.weight": torch.ones(4, 4, dtype=torch.float16),
            "a.scale": torch.ones(4),
            "b.weight": torch.ones(4, 4).half(),
        },
        path,
    )
    report = mpdoctor.audit(str(path))
    assert [f.code for f in report.findings] == ["AUDIT002"]
    assert [m.module for m in report.mixed] == ["a"]


def test_an_empty_tensor_is_in_no_dtype(tmp_path):
    path = tmp_path / "m.safetensors"
    safetensors_torch.save_file(
        {"a.weight": torch.zeros(0, 4), "b.weight": torch.ones(4, 4, dtype=torch.float16)}, path
    )
    report = mpdoctor.audit(str(path))
    assert report.findings == [] and report.odd_modules == []
    assert {d.dtype for d in report.dtypes} == {"float32", "float16"}  # still counted


def raw_safetensors(path, entries):
    header = json.dumps({name: {"dtype": d, "shape": s, "data_offsets": o} for name, (d, s, o) in entries.items()})
    data = max(o[1] for _, _, o in entries.values())
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + b"\0" * data)
    return str(path)


def test_the_dtypes_safetensors_knows_are_read(tmp_path):
    """F4 (float4_e2m1fn_x2, two to a byte), F6, F8_E8M0, the fnuz fp8s: as safetensors 0.8 reads them."""
    from safetensors import safe_open

    path = tmp_path / "f4.safetensors"
    packed = torch.zeros(4, 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    safetensors_torch.save_file({"a.weight": packed, "b.weight": torch.ones(2, dtype=torch.float16)}, path)
    with safe_open(str(path), "pt") as f:
        assert f.get_tensor("a.weight").dtype == torch.float4_e2m1fn_x2
    tensors, _ = read_header(str(path))
    assert {(t.name, t.dtype, t.shape, t.nbytes) for t in tensors} == {
        ("a.weight", "float4_e2m1fn_x2", (4, 4), 8),
        ("b.weight", "float16", (2,), 4),
    }
    assert mpdoctor.audit(str(path)).findings == []
    others = {
        "f6": ("F6_E2M3", [4], [0, 3]),
        "f6b": ("F6_E3M2", [8], [3, 9]),
        "e8m0": ("F8_E8M0", [4], [9, 13]),
        "fnuz": ("F8_E4M3FNUZ", [2], [13, 15]),
        "fnuz2": ("F8_E5M2FNUZ", [2], [15, 17]),
        "c": ("C64", [1], [17, 25]),
    }
    read = read_header(raw_safetensors(tmp_path / "others.safetensors", others))[0]
    assert [(t.name, t.dtype, t.nbytes) for t in read] == [
        ("f6", "float6_e2m3fn", 3),
        ("f6b", "float6_e3m2fn", 6),
        ("e8m0", "float8_e8m0fnu", 4),
        ("fnuz", "float8_e4m3fnuz", 2),
        ("fnuz2", "float8_e5m2fnuz", 2),
        ("c", "complex64", 8),
    ]


@pytest.mark.parametrize(
    "entry, message",
    [
        (("F4", [3], [0, 2]), "end inside a byte"),  # 12 bits: safetensors refuses it
        (("F4", [4, 4], [0, 16]), "needs 8 bytes, the header gives it 16"),
        (("E8M0", [4], [0, 4]), "unknown dtype 'E8M0'"),  # not a name safetensors 0.8 knows
    ],
)
def test_sub_byte_sizes_are_checked_as_safetensors_checks_them(tmp_path, entry, message):
    with pytest.raises(AuditError, match=message):
        read_header(raw_safetensors(tmp_path / "bad.safetensors", {"a": entry}))
