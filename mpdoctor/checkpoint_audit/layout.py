"""Which checkpoints a PATH holds: a folder is several checkpoints unless its files say they are shards of one.

Files are one checkpoint only where they say so, as transformers, diffusers and
huggingface_hub write them (read from their source: ``_add_variant``,
``split_torch_state_dict_into_shards``, diffusers' ``variant_compatible_siblings``):

* an index, ``model.safetensors.index.json`` or ``pytorch_model.bin.index.json`` (with a
  variant ``model.safetensors.index.fp16.json``, legacy ``model.safetensors.fp16.index.json``):
  the files of its ``weight_map``. Two indexes are two checkpoints, both judged;
* shard names without an index: ``model-00001-of-00003.safetensors`` (``-{i:05d}-of-{n:05d}``
  before the extension; with a variant ``model.fp16-00001-of-00002.safetensors``, legacy
  ``model-00001-of-00002.fp16.safetensors``): one checkpoint, and a shard the names promise
  but the folder lacks is an unreadable file of it;
* a diffusers pipeline (``model_index.json``): each component subfolder it names holds that
  component's checkpoints, found by these same rules. A variant
  (``diffusion_pytorch_model.fp16.safetensors`` beside ``diffusion_pytorch_model.safetensors``)
  is another checkpoint of the same component: an alternative to load, not a shard.

Everything else is a checkpoint of its own: ``model.pt`` and its export ``model_fp16.pt``
are two models, and an EMA copy with the same tensor names is another. A transformers
``save_pretrained`` folder is one checkpoint because its files say so (one file, or an
index); its ``config.json`` only tells which modules are kept in float32 (``tree.py``).
Subfolders one level down are looked at the same way (a pipeline's components, a
training run's ``checkpoint-500/``); hidden ones are not. Nothing weight-like is left
out silently: a file no checkpoint reads is ``unread``, with the reason (the training
state transformers' Trainer saves beside the weights, a FIFO named ``*.pt``).

Reads stay in the folder (``Area``): a symbolic link, an index entry (``../x``, ``/etc/x``) or a
``model_index.json`` component that leads out of it is listed unread, not followed, unless the
user names that file. The one exception is huggingface_hub's cache, whose ``snapshots/<rev>/``
files are links into the repository's own ``blobs/``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from mpdoctor.checkpoint_audit.safetensors import AuditError
from mpdoctor.checkpoint_audit.weightfile import PICKLES, SAFETENSORS, WeightFile, json_file
from mpdoctor.portable import files as safe_files

WEIGHTS = SAFETENSORS + PICKLES
_EXT = r"(?P<ext>safetensors|bin|pt|pth|ckpt)"
# model.safetensors.index.json, pytorch_model.bin.index.fp16.json (a variant), model.safetensors.fp16.index.json
# (legacy); any other *.index.json too, as before (a hand-made index).
INDEX = re.compile(r"(?P<base>.+?)(?:\." + _EXT + r"(?:\.(?P<legacy>[^.]+))?)?\.index(?:\.(?P<variant>[^.]+))?\.json\Z")
# model-00001-of-00003.safetensors, model.fp16-00001-of-00002.safetensors, model-00001-of-00002.fp16.safetensors
SHARD = re.compile(r"(?P<base>.+)-(?P<index>\d{5,})-of-(?P<count>\d{5,})(?P<legacy>\.[^.]+)?\." + _EXT + r"\Z")
# The weight names of transformers and diffusers, before a variant: model.fp16.safetensors is model's fp16 variant.
HF_NAMES = ("model", "pytorch_model", "diffusion_pytorch_model", "flax_model", "tf_model")
# What transformers' Trainer saves beside the weights of a checkpoint-N/ folder (trainer.py's *_NAME and
# rng_state_{rank}.pth): training state, not model weights; training_args.bin is a pickled object that
# weights_only=True refuses by design.
TRAINER_STATE = re.compile(r"(training_args\.bin|optimizer\.(pt|bin)|scheduler\.pt|scaler\.pt|rng_state(_\d+)?\.pth)\Z")
MAX_SUBFOLDERS = 200  # a folder of more model folders than this is not one model's: the rest are listed, unread


@dataclass
class Checkpoint:
    """One checkpoint: the files that make it, and what says they belong together."""

    name: str  # as the report names it: a file, an index, a shard pattern, a component (with its file)
    files: list[WeightFile]
    how: str = "file"  # file, index, shard-names, memory, entry (a model copy in a training checkpoint)
    source: str = ""  # the index that lists the files
    component: str = ""
    variant: str = ""
    entry: str = ""  # the training checkpoint's top-level entry holding this model copy (containers.py)
    role: str = ""  # what that entry is: model, EMA copy, another model


@dataclass
class Unread:
    path: str
    why: str


@dataclass
class Layout:
    """What a PATH holds: its checkpoints, the files none of them reads, and what its layout files left out."""

    checkpoints: list[Checkpoint] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # checkpoints beside a pipeline's components
    pipeline: str = ""  # the model_index.json, when there is one
    listed: list[str] = field(default_factory=list)  # the components it names

    def files(self) -> list[WeightFile]:
        return [file for checkpoint in self.checkpoints for file in checkpoint.files]


OUTSIDE = "it leads outside the model folder{how}: not read; name the file itself to audit it"


class Area:
    """Where an audit of a folder may read: the folder (its real path), and the ``blobs/`` of a huggingface_hub
    cache repository when the folder is one of its ``snapshots/<revision>/`` (their files are links into it)."""

    def __init__(self, folder: Path) -> None:
        real = os.path.realpath(folder)
        self.roots = [real]
        up = real
        for _ in range(2):  # snapshots/<rev>/ itself, or a subfolder of it (a pipeline's component)
            up = os.path.dirname(up)
            if os.path.basename(up) == "snapshots" and os.path.isdir(os.path.join(os.path.dirname(up), "blobs")):
                self.roots.append(os.path.join(os.path.dirname(up), "blobs"))
                break

    def holds(self, path: Path) -> bool:
        """Whether ``path``, every link in it followed, is inside the area."""
        real = os.path.realpath(path)
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)

    def why_not(self, path: Path) -> str:
        """Why ``path`` may not be read, in words; empty when it may."""
        if self.holds(path):
            return ""
        return OUTSIDE.format(how=" through a symbolic link" if os.path.islink(path) else "")


def _plain_name(name: str) -> bool:
    """A name that is one entry of a folder: not absolute, no separator, not ``.`` or ``..``."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def _variant_of(base: str) -> str:
    """``fp16`` of ``diffusion_pytorch_model.fp16``: a variant only after a transformers/diffusers weight name."""
    stem, dot, variant = base.partition(".")
    return variant if dot and stem in HF_NAMES and "." not in variant else ""


def index_checkpoint(index: Path, name: str, component: str = "", area: "Area | None" = None) -> Checkpoint:
    """The checkpoint an index names; an unreadable index is its one unreadable file (the loader fails on it too).

    A shard it lists outside ``area`` (default: the index's folder), by ``..``, an absolute path or a link, is an
    unreadable file of the checkpoint, not read.
    """
    area = area or Area(index.parent)
    match = INDEX.match(index.name)
    variant = (match.group("variant") or match.group("legacy") or "") if match and match.group("ext") else ""
    try:
        data = json_file(index, "a readable index")
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict):
            raise AuditError(f"{index}: no weight_map in it")
    except AuditError as exc:
        return Checkpoint(name, [WeightFile(str(index), component, error=str(exc))], "index", str(index), component)
    shards = dict.fromkeys(str(v) for v in weight_map.values())
    files = []
    for shard in shards:
        path = index.parent / shard
        why = OUTSIDE.format(how="") if os.path.isabs(shard) or ".." in Path(shard).parts else area.why_not(path)
        files.append(WeightFile(str(path), component, error=f"{path}: listed in {index.name}: {why}" if why else ""))
    return Checkpoint(name, files, "index", str(index), component, variant)


def _group(folder: Path, prefix: str, component: str, layout: Layout, area: Area) -> list[Checkpoint]:
    """The checkpoints of one folder's own files, named ``prefix/...``; files none reads go to ``layout.unread``
    (a link out of ``area`` too)."""
    found: list[Checkpoint] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        layout.unread.append(Unread(str(folder), f"not listed: {exc.strerror or exc}"))
        return found
    indexes, weights = [], []
    for path in entries:
        if not (path.name.endswith(WEIGHTS) or INDEX.match(path.name)) or path.is_dir():
            continue
        outside = area.why_not(path)
        why = "" if outside else safe_files.not_regular(str(path))
        if outside:  # a link to a token file named model.safetensors: its bytes are not the audit's to read
            layout.unread.append(Unread(str(path), outside))
        elif why:  # a FIFO would block the read, a device never end
            layout.unread.append(Unread(str(path), f"it is {why}, not a regular file"))
        elif TRAINER_STATE.match(path.name):
            layout.unread.append(Unread(str(path), "training state saved by transformers' Trainer, not model weights"))
        elif path.name.endswith(WEIGHTS):
            weights.append(path)
        else:
            indexes.append(path)
    claimed: set[str] = set()
    for index in indexes:
        checkpoint = index_checkpoint(index, prefix + index.name, component, area)
        claimed.update(f.path for f in checkpoint.files)
        found.append(checkpoint)
    sharded: dict[tuple, list[tuple[int, Path]]] = {}
    for path in weights:
        if str(path) in claimed:
            continue
        shard = SHARD.match(path.name)
        if shard:
            key = (shard.group("base"), shard.group("count"), shard.group("legacy") or "", shard.group("ext"))
            sharded.setdefault(key, []).append((int(shard.group("index")), path))
        else:
            base = path.name.rsplit(".", 1)[0]
            found.append(Checkpoint(prefix + path.name, [WeightFile(str(path), component)], component=component,
                                    variant=_variant_of(base)))  # fmt: skip
    for (base, count, legacy, ext), shards in sharded.items():
        have = dict(shards)
        files = []
        for number in range(1, int(count) + 1):
            name = f"{base}-{number:0{len(count)}d}-of-{count}{legacy}.{ext}"
            files.append(
                WeightFile(str(have.pop(number)), component)
                if number in have
                else WeightFile(str(folder / name), component, error=f"{folder / name}: missing: its siblings' names say {int(count)} shards")
            )  # fmt: skip
        files += [WeightFile(str(path), component) for _, path in sorted(have.items())]  # numbered past the count
        variant = legacy.lstrip(".") or _variant_of(base)
        found.append(
            Checkpoint(f"{prefix}{base}-*-of-{count}{legacy}.{ext}", files, "shard-names", "", component, variant)
        )
    return found


def _subfolders(root: Path, layout: Layout, skip: set[str], area: Area) -> list[Path]:
    try:
        folders = [
            p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".") and p.name not in skip
        ]
    except OSError:
        return []
    for outside in [p for p in folders if not area.holds(p)]:
        layout.unread.append(Unread(str(outside), area.why_not(outside)))
        folders.remove(outside)
    for extra in folders[MAX_SUBFOLDERS:]:
        layout.unread.append(Unread(str(extra), f"not looked into: more than {MAX_SUBFOLDERS} subfolders"))
    return folders[:MAX_SUBFOLDERS]


def _named(checkpoints: list[Checkpoint], owner: str) -> list[Checkpoint]:
    """A component's or subfolder's one checkpoint is called by its name alone; several, each by its file too."""
    if len(checkpoints) == 1:
        checkpoints[0].name = owner
    return checkpoints


def layout(path: str) -> Layout:
    """The checkpoints PATH stands for; raises AuditError for a PATH that is no checkpoint at all."""
    root = Path(path)
    if not root.exists():
        raise AuditError(f"{path}: no such file or directory")
    why = safe_files.not_regular(path)
    if why and why != "a directory":  # a FIFO would block the read, a device never end
        raise AuditError(f"{path}: it is {why}, not a weight file or a model folder")
    found = Layout()
    if root.is_file():  # the user named it: read, wherever a link leads (an index's shards stay by it)
        if INDEX.match(root.name):
            checkpoint = index_checkpoint(root, root.name)
            if checkpoint.files[0].error and checkpoint.files[0].path == str(root):  # the index the user named
                raise AuditError(checkpoint.files[0].error)
        else:
            checkpoint = Checkpoint(
                root.name, [WeightFile(str(root))], variant=_variant_of(root.name.rsplit(".", 1)[0])
            )
        found.checkpoints.append(checkpoint)
        return found
    area = Area(root)
    pipeline = root / "model_index.json"
    listed: list[str] = []
    if pipeline.is_file() and area.holds(pipeline):
        components = json_file(pipeline, "a readable model_index.json")
        found.pipeline = str(pipeline)
        names = components if isinstance(components, dict) else {}
        for name in sorted(str(name) for name in names if not str(name).startswith("_")):
            if not _plain_name(name) or not area.holds(root / name):  # "..", "/etc", a link out: not followed
                if os.path.isdir(root / name) if _plain_name(name) else True:
                    why = "a component that leads outside the model folder: not read"
                    found.unread.append(Unread(f"{pipeline}: {name}", why))
            elif (root / name).is_dir():
                listed.append(name)
        found.listed = listed
        for name in listed:
            found.checkpoints += _named(_group(root / name, f"{name}/", name, found, area), name)
    elif pipeline.is_file():
        found.unread.append(Unread(str(pipeline), area.why_not(pipeline)))
    others = _group(root, "", "", found, area)
    for folder in _subfolders(root, found, set(listed), area):
        others += _named(_group(folder, f"{folder.name}/", "", found, area), folder.name)
    if found.pipeline:
        found.outside = [c.name for c in others]
    found.checkpoints += others
    if not found.checkpoints and not found.unread:
        raise AuditError(f"{path}: no weight files (.safetensors, .bin, .pt, .pth, .ckpt) in it")
    return found
