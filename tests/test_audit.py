"""`mpdoctor audit PATH`: checkpoints written here in every supported layout, and broken ones.

Safetensors files are written by hand from the format's spec (8-byte header length,
JSON header, data), so the corrupt variants can lie in exactly one way each.
Pickled checkpoints are written by the real torch and read back through
``torch.load(weights_only=True)`` in a child process.
"""

from __future__ import annotations

import json
import pickle
import struct

import jsonschema
import pytest

from helpers import run_cli
from mpdoctor.checkpoint_audit.layout import layout
from mpdoctor.checkpoint_audit.report import SCHEMA_PATH, audit_layout, audit_schema
from mpdoctor.checkpoint_audit.safetensors import AuditError, read_header
from mpdoctor.checkpoint_audit.sources import read
from mpdoctor.probes.budget import Budget

# Without torch these tests skip: audit itself runs without it, these write checkpoints with it.
torch = pytest.importorskip("torch")

CODES = {torch.float16: "F16", torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}


def write_safetensors(path, tensors, tamper=None):
    """A .safetensors file; ``tamper(header_dict)`` may corrupt the header before it is written."""
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        data = bytes(tensor.contiguous().untyped_storage())
        header[name] = {
            "dtype": CODES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    if tamper:
        tamper(header)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    return path


def unet_state(mask_dtype=torch.float16):
    """Incident 3's shape: an fp16 block whose bias stayed fp32."""
    return {
        "down.conv.weight": torch.randn(4, 4, 3, 3).half(),
        "down.conv.bias": torch.randn(4),
        "down.norm.weight": torch.ones(4).half(),
        "mid.attn.to_q.weight": torch.randn(4, 4).half(),
        "mask": torch.zeros(2, dtype=mask_dtype),
        "position_ids": torch.arange(4),
    }


def audit(path):
    """PATH audited as `mpdoctor audit PATH` does: its checkpoints, each judged on its own."""
    import sys

    found = layout(str(path))
    for file in found.files():
        read(file, sys.executable, Budget.from_timeout(60))
    return audit_layout(str(path), found)


def test_safetensors_header_is_read_without_the_data(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", unet_state())
    entries, meta = read_header(str(path))
    assert meta == {"format": "pt"}
    by_name = {e.name: e for e in entries}
    assert by_name["down.conv.weight"].dtype == "float16" and by_name["down.conv.weight"].shape == (4, 4, 3, 3)
    assert by_name["down.conv.bias"].dtype == "float32" and by_name["down.conv.bias"].nbytes == 16
    assert by_name["position_ids"].dtype == "int64"


def test_the_module_that_mixes_dtypes_is_named_with_its_odd_tensor(tmp_path):
    report = audit(write_safetensors(tmp_path / "m.safetensors", unet_state()))
    (mixed,) = report.mixed
    assert mixed.module == "down.conv" and mixed.majority == "float16"
    assert [(o.name, o.dtype) for o in mixed.odd] == [("down.conv.bias", "float32")]
    assert {d.dtype: d.tensors for d in report.dtypes} == {"float16": 4, "float32": 1, "int64": 1}
    assert report.groups == {
        "down": {"float16": 2, "float32": 1},
        "mask": {"float16": 1},
        "mid": {"float16": 1},
        "position_ids": {"int64": 1},
    }
    assert [f.code for f in report.findings] == ["AUDIT002"]


def test_a_uniform_checkpoint_has_no_finding(tmp_path):
    state = {"a.weight": torch.randn(2, 2).half(), "a.bias": torch.randn(2).half(), "ids": torch.arange(3)}
    assert audit(write_safetensors(tmp_path / "m.safetensors", state)).findings == []


@pytest.mark.parametrize("suffix", [".pt", ".bin", ".ckpt"])
def test_pickled_checkpoints_read_through_weights_only(tmp_path, suffix):
    path = tmp_path / f"model{suffix}"
    torch.save({"state_dict": unet_state(), "epoch": 3}, path)
    report = audit(path)
    assert report.files[0].format == "pickle" and report.files[0].error == ""
    # Lightning's layout: the model copy is the state_dict entry, its modules named within it
    assert [m.module for m in report.mixed] == ["down.conv"]
    assert [(c.how, c.entry) for c in report.checkpoints] == [("entry", "state_dict")]


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"weight": Payload()}))
    report = audit(path)
    assert not marker.exists()
    assert "weights_only=True) refused it" in report.files[0].error
    assert [f.code for f in report.findings] == ["AUDIT001"]


def test_sharded_checkpoint_through_its_index(tmp_path):
    state = unet_state()
    names = list(state)
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {n: state[n] for n in names[:3]})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {n: state[n] for n in names[3:]})
    weight_map = {n: f"model-0000{1 if i < 3 else 2}-of-00002.safetensors" for i, n in enumerate(names)}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    torch.save(state, tmp_path / "pytorch_model.bin")  # beside it: another checkpoint, read and judged too
    report = audit(tmp_path)
    assert [(c.name, [f.rsplit("/", 1)[-1] for f in c.files]) for c in report.checkpoints] == [
        ("model.safetensors.index.json", ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]),
        ("pytorch_model.bin", ["pytorch_model.bin"]),
    ]
    assert [m.module for m in report.checkpoints[0].mixed] == ["down.conv"]
    assert [m.module for m in report.mixed] == ["model.safetensors.index.json/down.conv", "pytorch_model.bin/down.conv"]


def test_diffusers_folder_groups_by_component(tmp_path):
    (tmp_path / "model_index.json").write_text(
        json.dumps(
            {
                "_class_name": "StableDiffusionPipeline",
                "unet": ["diffusers", "UNet2DConditionModel"],
                "text_encoder": ["transformers", "CLIPTextModel"],
            }
        )
    )
    (tmp_path / "unet").mkdir()
    (tmp_path / "text_encoder").mkdir()
    write_safetensors(
        tmp_path / "unet" / "diffusion_pytorch_model.safetensors",
        {"conv_in.weight": torch.randn(2, 2).half(), "conv_in.bias": torch.randn(2).half()},
    )
    write_safetensors(tmp_path / "text_encoder" / "model.safetensors", {"embed.weight": torch.randn(3, 2)})
    report = audit(tmp_path)
    assert report.components == {"unet": {"float16": 12}, "text_encoder": {"float32": 24}}
    assert [(c.name, c.component) for c in report.checkpoints] == [("text_encoder", "text_encoder"), ("unet", "unet")]
    assert report.mixed == []
    # each component is judged on its own (no finding); the pipeline notes the fp32 text encoder beside the fp16 unet
    assert [c.findings for c in report.checkpoints] == [[], []]
    assert [f.code for f in report.findings] == ["AUDIT003"]


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:-10])


@pytest.mark.parametrize(
    "case,tamper,message",
    [
        ("offsets past the end", lambda h: h["down.conv.bias"].update(data_offsets=[0, 10**9]), "fall outside"),
        ("size lies", lambda h: h["down.conv.bias"].update(shape=[400]), "needs 1600 bytes"),
        ("unknown dtype", lambda h: h["mask"].update(dtype="F17"), "unknown dtype"),
        ("shape not sizes", lambda h: h["mask"].update(shape=[-1]), "not a list of sizes"),
    ],
)
def test_headers_that_lie_are_errors_not_crashes(tmp_path, case, tamper, message):
    path = write_safetensors(tmp_path / "m.safetensors", unet_state(), tamper)
    with pytest.raises(AuditError, match=message):
        read_header(str(path))


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "too short"),
        (struct.pack("<Q", 10**12) + b"{}", "header claims"),
        (struct.pack("<Q", 5) + b"{nope", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    ],
)
def test_corrupt_files_say_why(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(AuditError, match=message):
        read_header(str(path))


def test_a_truncated_download_is_an_error_finding_and_the_cli_exits_1(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", unet_state())
    _truncate(path)
    result = run_cli("audit", str(path), "--format", "json")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    assert data["files"][0]["error"] and data["findings"][0]["code"] == "AUDIT001"


def test_cli_formats_and_schema(tmp_path):
    assert json.loads(SCHEMA_PATH.read_text()) == audit_schema()  # regenerate: python -m mpdoctor.schema
    path = write_safetensors(tmp_path / "m.safetensors", unet_state())
    data = json.loads(run_cli("audit", str(path), "--format", "json").stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(data)
    assert data["schema_version"] == 1 and data["mixed"][0]["module"] == "down.conv"
    text = run_cli("audit", str(path))
    assert text.returncode == 0 and "down.conv: mostly float16; bias float32" in text.stdout
    markdown = run_cli("audit", str(path), "--format", "markdown").stdout
    assert markdown.startswith("# mpdoctor audit") and "AUDIT002" in markdown


def test_cli_usage_errors(tmp_path):
    missing = run_cli("audit", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
    empty = run_cli("audit", str(tmp_path))
    assert empty.returncode == 2 and "no weight files" in empty.stderr


def test_python_api_audits_a_module_a_state_dict_and_a_path(tmp_path):
    import subprocess
    import sys

    import mpdoctor

    block = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3).half(), torch.nn.GroupNorm(2, 4).half())
    block[0].bias.data = block[0].bias.data.float()  # the fp32 piece of incident 3
    report = mpdoctor.audit(block)
    assert [(m.module, [o.name for o in m.odd]) for m in report.mixed] == [("0", ["0.bias"])]
    assert "mixed: 0: mostly float16; 0.bias float32 [4]" in str(report)
    assert report.to_data()["schema_version"] == 1
    assert mpdoctor.audit(block.state_dict()).mixed == report.mixed
    path = write_safetensors(tmp_path / "m.safetensors", unet_state())
    assert [m.module for m in mpdoctor.audit(path).mixed] == ["down.conv"]
    with pytest.raises(TypeError, match="a module, a state dict or a path"):
        mpdoctor.audit(42)
    # the API is there without importing torch until it is used
    code = "import sys, mpdoctor; mpdoctor.dtype_trace; mpdoctor.audit; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
