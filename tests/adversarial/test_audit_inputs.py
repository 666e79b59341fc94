"""`mpdoctor audit` of hostile checkpoints: FIFOs, devices, deep or lying headers, refused pickles.

Before issue 22: a FIFO index blocked forever, a FIFO or device named
``*.safetensors``/``*.pt`` and a deeply nested header ended in exit 3, overlapping
``data_offsets`` were accepted without a word, a refused malicious pickle kept only
torch's first three lines (dropping "unsupported GLOBAL posix.system") and blamed
"a truncated download", ANSI escapes passed through, and an interpreter without
torch was blamed on the file.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
from pathlib import Path

import pytest

from adversarial.running import assert_clean, mpdoctor


def safetensors(path: Path, header: dict, data: bytes = b"") -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def audit_json(path: Path, *args: str, codes=(1,)) -> dict:
    result = mpdoctor("audit", str(path), "--format", "json", *args)
    assert_clean(result, *codes)
    return json.loads(result.stdout)


def unread(report: dict) -> tuple[str, list[str]]:
    """The AUDIT001 finding's evidence (joined) and its fix texts."""
    finding = next(f for f in report["findings"] if f["code"] == "AUDIT001")
    return " ".join(finding["evidence"]), [step["text"] for step in finding["fix"]]


@pytest.mark.parametrize("name", ["model.safetensors.index.json", "model.safetensors", "model.pt"])
def test_a_fifo_given_as_the_checkpoint_is_refused_unread(name, tmp_path):
    os.mkfifo(tmp_path / name)
    result = mpdoctor("audit", str(tmp_path / name))
    assert_clean(result, 2)
    assert "it is a FIFO (named pipe), not a weight file or a model folder" in result.stderr


@pytest.mark.parametrize("name", ["zero.safetensors", "zero.pt"])
def test_a_device_named_like_a_checkpoint_is_refused_unread(name, tmp_path):
    (tmp_path / name).symlink_to("/dev/zero")
    result = mpdoctor("audit", str(tmp_path / name))
    assert_clean(result, 2)
    assert "it is a character device" in result.stderr


@pytest.mark.parametrize("shard", ["a.safetensors", "a.bin"])
def test_a_fifo_shard_listed_in_an_index_is_an_unread_file_not_a_hang(shard, tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
    os.mkfifo(tmp_path / shard)
    evidence, _ = unread(audit_json(tmp_path))
    assert f"{shard}: it is a FIFO (named pipe), not a regular file: not read" in evidence


def test_a_fifo_index_inside_a_folder_is_not_read(tmp_path):
    """A folder's index is picked among its regular files: a FIFO index is passed over, the weights are read."""
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    safetensors(
        tmp_path / "model.safetensors", {"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4
    )
    report = audit_json(tmp_path, codes=(0,))
    assert report["dtypes"][0]["dtype"] == "float16"


@pytest.mark.parametrize("depth", [500, 100_000])
def test_a_deeply_nested_header_is_an_unreadable_file(depth, tmp_path):
    path = tmp_path / "deep.safetensors"
    raw = ('{"w": ' + "[" * depth + "]" * depth + "}").encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    evidence, _ = unread(audit_json(path))
    assert "nested too deeply" in evidence


def test_overlapping_data_offsets_are_an_error_finding(tmp_path):
    path = safetensors(
        tmp_path / "overlap.safetensors",
        {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
        },
        b"\0" * 12,
    )
    evidence, _ = unread(audit_json(path))
    assert "tensors 'a' and 'b' overlap in the data (bytes 4 to 8)" in evidence


def test_a_refused_malicious_pickle_names_the_global_and_blames_no_download(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"weight": Payload()}, protocol=2))  # GLOBAL, as torch.save's pickles use
    evidence, fixes = unread(audit_json(path))
    assert "GLOBAL posix.system" in evidence
    assert not any("truncated download" in text for text in fixes)
    assert any("weights_only=True) refused objects that are not tensors" in text for text in fixes)


def test_ansi_escapes_in_a_refusal_are_stripped(tmp_path):
    """A GLOBAL whose module name carries a colour escape; torch's own message bolds a phrase too."""
    path = tmp_path / "ansi.pt"
    path.write_bytes(b"\x80\x02c\x1b[31mposix\nsystem\n)R.")
    evidence, _ = unread(audit_json(path))
    assert "\x1b" not in evidence
    assert "GLOBAL posix.system" in evidence


def test_a_pickle_audited_without_torch_says_torch_is_missing(fake_venv, tmp_path):
    path = tmp_path / "weights.pt"
    path.write_bytes(pickle.dumps({"weight": [1, 2]}))
    python = fake_venv("no-torch-audit") / "bin" / "python"
    evidence, fixes = unread(audit_json(path, "--python", str(python)))
    assert f"{python} cannot import torch (ModuleNotFoundError: No module named 'torch')" in evidence
    finding_commands = [
        step.get("command") for step in next(f for f in audit_json(path, "--python", str(python))["findings"])["fix"]
    ]
    assert f"mpdoctor audit {path} --python /path/to/env/bin/python" in finding_commands
    assert not any("truncated download" in text for text in fixes)
