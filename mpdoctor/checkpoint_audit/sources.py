"""Which weight files a PATH means, and the tensors each holds.

PATH may be one weight file (.safetensors, or a pickled .pt/.pth/.bin/.ckpt), a
sharded checkpoint's index (``*.index.json``), a transformers model folder, or a
diffusers pipeline folder (``model_index.json`` naming its components). Where a
folder has both, safetensors are read and the pickles beside them left alone.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mpdoctor.checkpoint_audit.progress_text import short as _short
from mpdoctor.checkpoint_audit import zip_bound
from mpdoctor.checkpoint_audit.safetensors import (
    BOMB,
    NO_TEMP,
    NO_TORCH,
    REFUSED,
    AuditError,
    TensorEntry,
    read_header,
)
from mpdoctor.findings import FixStep
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.portable import files as safe_files

if TYPE_CHECKING:
    from mpdoctor.probes.budget import Budget

SAFETENSORS = (".safetensors",)
PICKLES = (".pt", ".pth", ".bin", ".ckpt")
MAX_INDEX = 64 << 20  # an index or model_index.json: a few MB at most for the largest models


@dataclass
class WeightFile:
    """One weight file and what reading it gave."""

    path: str
    component: str = ""  # the diffusers component (unet, text_encoder, ...) it belongs to
    format: str = ""  # safetensors or pickle
    tensors: Sequence[TensorEntry] = field(default_factory=list)  # a TensorTable from the bulk header reader
    error: str = ""
    cause: str = ""  # REFUSED (weights_only refused a pickle), NO_TORCH (nothing to read it with), NO_TEMP, BOMB or ""
    memory: int = 0  # bytes torch.load may hold for it: its size, or what a zip's pickle inflates to when more


def unread_steps(broken: list[WeightFile], path: str) -> list[FixStep]:
    """The fix for files that could not be read, by cause: no torch and a refused pickle are not the file's fault."""
    causes = {file.cause for file in broken}
    steps = []
    if NO_TORCH in causes:
        steps.append(
            FixStep(
                "Read pickled checkpoints with an environment that has torch",
                command=f"mpdoctor audit {shlex.quote(path)} --python /path/to/env/bin/python",
            )
        )
    if REFUSED in causes:
        steps.append(
            FixStep(
                "torch.load(weights_only=True) refused objects that are not tensors (the message names "
                "them; a GLOBAL such as posix.system runs code when unpickled): the file is not truncated. "
                "Load it with weights_only=False only if you trust its source; better, get a safetensors "
                "copy"
            )
        )
    if NO_TEMP in causes:
        steps.append(
            FixStep(
                "Give mpdoctor a writable temporary directory, then rerun",
                command=f"TMPDIR=$HOME/tmp mpdoctor audit {shlex.quote(path)}",
            )
        )
    if BOMB in causes:
        steps.append(
            FixStep(
                "The file inflates far past its size (the message says which entry, to how much): do not load "
                "it; if it should be a checkpoint, get it again from its source, better as safetensors"
            )
        )
    if "" in causes:
        steps.append(FixStep("Re-download or re-save the file; a truncated download is the usual cause"))
    return steps


def _json_file(path: Path, what: str) -> object:
    """A small JSON file (an index, model_index.json), read as files.py reads: regular, bounded, depth-limited."""
    try:
        return safe_files.json_value(safe_files.read_bytes(str(path), MAX_INDEX))
    except safe_files.Refused as exc:
        raise AuditError(f"{path}: not {what}: it is {exc.why}") from None
    except OSError as exc:
        raise AuditError(f"{path}: not {what}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
        raise AuditError(f"{path}: not {what} ({exc})") from None


def _index_shards(index: Path) -> list[Path]:
    data = _json_file(index, "a readable index")
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
    why = safe_files.not_regular(path)
    if why and why != "a directory":  # a FIFO would block the read, a device never end
        raise AuditError(f"{path}: it is {why}, not a weight file or a model folder")
    if root.is_file():
        shards = _index_shards(root) if root.name.endswith(".index.json") else [root]
        return [WeightFile(str(p)) for p in shards]
    pipeline = root / "model_index.json"
    if pipeline.is_file():
        components = _json_file(pipeline, "a readable model_index.json")
        found = []
        for name in sorted(components if isinstance(components, dict) else {}):
            if (root / name).is_dir():
                found += [WeightFile(str(p), component=name) for p in _folder_weights(root / name)]
        return found
    files = [WeightFile(str(p)) for p in _folder_weights(root)]
    if not files:
        raise AuditError(f"{path}: no weight files (.safetensors, .bin, .pt, .pth, .ckpt) in it")
    return files


def read(file: WeightFile, python: str, budget: Budget) -> WeightFile:
    """Fill in the file's tensors, or its error; never raises for a bad file."""
    return read_all([file], python, budget)[0]


def read_all(
    files: list[WeightFile], python: str, budget: Budget, progress: ProgressBoard = SILENT
) -> list[WeightFile]:
    """Fill in every file's tensors, or its error, and return them; never raises for a bad file.

    Safetensors headers are read here, one after the other (milliseconds each);
    the pickles all go to one child of ``python`` (``pickles.py``): one torch
    import for all of them, each file within ``budget.checkpoint`` (the run's, from ``--timeout``).
    ``progress`` gets an "audit" task counting the files, naming the one being read.
    """
    progress.start("audit", "", total=len(files), unit="files")
    pickles, done = [], 0
    for file in files:
        try:
            if file.path.endswith(SAFETENSORS):
                file.format = "safetensors"
                progress.update("audit", _short(os.path.basename(file.path)), completed=done)
                file.tensors, _ = read_header(file.path)
            elif file.path.endswith(PICKLES):
                file.format = "pickle"
                why = safe_files.not_regular(file.path)
                if why:  # torch.load would block on a FIFO, and read a device forever
                    raise AuditError(f"{file.path}: it is {why}, not a regular file: not read")
                if not os.path.isfile(file.path):
                    raise AuditError(f"{file.path}: listed, but missing")
                file.memory = os.path.getsize(file.path)
                if zip_bound.is_zip(file.path):  # what it inflates to, bounded before torch.load sees it
                    file.memory = max(file.memory, zip_bound.memory(zip_bound.check(file.path)))
                pickles.append(file)
                continue
            elif not os.path.exists(file.path):
                raise AuditError(f"{file.path}: listed, but missing")
            else:
                raise AuditError(f"{file.path}: not a weight file mpdoctor reads")
        except AuditError as exc:
            file.error, file.cause = str(exc), exc.cause
        done += 1
        progress.update("audit", completed=done)
    if pickles:
        from mpdoctor.checkpoint_audit.pickles import read_pickles  # a child and its machinery: only for pickles

        read_pickles(pickles, python, budget, progress, done, len(files))
    progress.update("audit", completed=len(files))
    progress.finish("audit", "done")
    return files
