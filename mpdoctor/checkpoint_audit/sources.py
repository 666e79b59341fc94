"""Which weight files a PATH means, and the tensors each holds.

PATH may be one weight file (.safetensors, or a pickled .pt/.pth/.bin/.ckpt), a
sharded checkpoint's index (``*.index.json``), a transformers model folder, or a
diffusers pipeline folder (``model_index.json`` naming its components). Where a
folder has both, safetensors are read and the pickles beside them left alone.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mpdoctor.checkpoint_audit.safetensors import AuditError, TensorEntry, read_header

SAFETENSORS = (".safetensors",)
PICKLES = (".pt", ".pth", ".bin", ".ckpt")


@dataclass
class WeightFile:
    """One weight file and what reading it gave."""

    path: str
    component: str = ""  # the diffusers component (unet, text_encoder, ...) it belongs to
    format: str = ""  # safetensors or pickle
    tensors: list[TensorEntry] = field(default_factory=list)
    error: str = ""


def _index_shards(index: Path) -> list[Path]:
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AuditError(f"{index}: not a readable index ({exc})") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise AuditError(f"{index}: no weight_map in it")
    shards = dict.fromkeys(str(v) for v in weight_map.values())
    return [index.parent / shard for shard in shards]


def _folder_weights(folder: Path) -> list[Path]:
    """A model folder's weights: its index if it has one, else its safetensors, else its pickles."""
    names = sorted(p for p in folder.iterdir() if p.is_file())
    indexes = [p for p in names if p.name.endswith(".index.json")]
    safe_indexes = [p for p in indexes if ".safetensors." in p.name]
    if safe_indexes or indexes:
        return _index_shards((safe_indexes or indexes)[0])
    safe = [p for p in names if p.suffix in SAFETENSORS]
    return safe or [p for p in names if p.suffix in PICKLES]


def weight_files(path: str) -> list[WeightFile]:
    """The files PATH stands for, each tagged with its component."""
    root = Path(path)
    if not root.exists():
        raise AuditError(f"{path}: no such file or directory")
    if root.is_file():
        shards = _index_shards(root) if root.name.endswith(".index.json") else [root]
        return [WeightFile(str(p)) for p in shards]
    pipeline = root / "model_index.json"
    if pipeline.is_file():
        try:
            components = json.loads(pipeline.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise AuditError(f"{pipeline}: not readable ({exc})") from None
        found = []
        for name in sorted(components if isinstance(components, dict) else {}):
            if (root / name).is_dir():
                found += [WeightFile(str(p), component=name) for p in _folder_weights(root / name)]
        return found
    files = [WeightFile(str(p)) for p in _folder_weights(root)]
    if not files:
        raise AuditError(f"{path}: no weight files (.safetensors, .bin, .pt, .pth, .ckpt) in it")
    return files


def read(file: WeightFile, python: str, timeout: float) -> WeightFile:
    """Fill in the file's tensors, or its error; never raises for a bad file."""
    try:
        if file.path.endswith(SAFETENSORS):
            file.format = "safetensors"
            file.tensors, _ = read_header(file.path)
        elif file.path.endswith(PICKLES):
            file.format = "pickle"
            file.tensors = _read_pickle(file.path, python, timeout)
        elif not os.path.exists(file.path):
            raise AuditError(f"{file.path}: listed, but missing")
        else:
            raise AuditError(f"{file.path}: not a weight file mpdoctor reads")
    except AuditError as exc:
        file.error = str(exc)
    return file


def _read_pickle(path: str, python: str, timeout: float) -> list[TensorEntry]:
    """torch.load(weights_only=True) in a child of ``python``, within ``Budget.checkpoint`` of ``--timeout``."""
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.child import remote_argv, run_child

    if not os.path.isfile(path):
        raise AuditError(f"{path}: listed, but missing")
    with tempfile.TemporaryDirectory(prefix="mpdoctor-audit-") as tmp:
        out = os.path.join(tmp, "tensors.json")
        limit = Budget.from_timeout(timeout).checkpoint
        result = run_child(remote_argv(python, "checkpoint_loader", path, out), limit)
        try:
            data = json.loads(Path(out).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise AuditError(f"{path}: torch.load {result.describe()}") from None
    if not data.get("ok"):
        raise AuditError(f"{path}: torch.load(weights_only=True) refused it: {data.get('type')}: "
                         f"{data.get('message')}")
    return [TensorEntry(str(name), str(dtype), tuple(shape), int(nbytes), path)
            for name, dtype, shape, nbytes in data.get("tensors", [])]
