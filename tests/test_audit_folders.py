"""A folder is several checkpoints unless its files say they are shards of one; each is judged on its own.

Every file here is written by the real torch (``torch.save``) or the real safetensors
library (``save_file``), in the layouts transformers and diffusers write: an index's
``weight_map``, ``-00001-of-00003`` shard names, a ``model_index.json`` with component
subfolders and an fp16 variant. Each folder is audited through the Python API and the
CLI (text and JSON); the folders are built once for the module.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

import mpdoctor
from helpers import run_cli
from mpdoctor.checkpoint_audit.report import SCHEMA_PATH, AuditReport
from mpdoctor.schema.serde import from_data

# Without torch these tests skip: audit itself runs without it, these write checkpoints with it.
torch = pytest.importorskip("torch")
nn = torch.nn
save_file = pytest.importorskip("safetensors.torch").save_file


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Linear(8, 4))


def fp32() -> dict:
    return {k: v.clone() for k, v in model().state_dict().items()}


def fp16() -> dict:
    return {k: v.half() for k, v in fp32().items()}


def shards(state: dict, parts: int) -> list[dict]:
    names = sorted(state)
    return [{n: state[n] for n in names[i::parts]} for i in range(parts)]


def write_sharded(folder, state, parts, stem="model", index=True, skip=()):
    """As transformers' save_pretrained: model-0000i-of-0000n.safetensors and, with ``index``, its index."""
    folder.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    for i, part in enumerate(shards(state, parts), 1):
        name = f"{stem}-{i:05d}-of-{parts:05d}.safetensors"
        weight_map.update(dict.fromkeys(part, name))
        if i not in skip:
            save_file(part, str(folder / name))
    if index:
        (folder / f"{stem}.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("folders")
    made = {}
    # 1. a model and its fp16 export
    made["export"] = root / "export"
    made["export"].mkdir()
    torch.save(fp32(), made["export"] / "model.pt")
    torch.save(fp16(), made["export"] / "model_fp16.pt")
    # 2. a .pt beside a .safetensors
    made["beside"] = root / "beside"
    made["beside"].mkdir()
    save_file(fp16(), str(made["beside"] / "model.safetensors"))
    torch.save(fp32(), made["beside"] / "finetuned.pt")
    # 3. a sharded safetensors set with its index (and a Trainer's state beside it)
    made["indexed"] = write_sharded(root / "indexed", fp16(), 3)
    torch.save({"lr": 1e-4, "note": object.__name__}, made["indexed"] / "training_args.bin")
    # 4. shards without an index, by their names alone; and a set missing one shard
    made["named"] = write_sharded(root / "named", fp16(), 3, index=False)
    made["gap"] = write_sharded(root / "gap", fp16(), 3, index=False, skip=(2,))
    # 5. a diffusers pipeline: an fp16 unet with its fp16 variant, an fp32 text encoder
    made["pipeline"] = root / "pipeline"
    (made["pipeline"] / "unet").mkdir(parents=True)
    (made["pipeline"] / "text_encoder").mkdir()
    (made["pipeline"] / "scheduler").mkdir()
    index = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.42.1"}
    index.update(unet=["diffusers", "UNet2DConditionModel"], text_encoder=["transformers", "CLIPTextModel"])
    index.update(scheduler=["diffusers", "PNDMScheduler"], safety_checker=[None, None])
    (made["pipeline"] / "model_index.json").write_text(json.dumps(index))
    save_file(fp32(), str(made["pipeline"] / "unet" / "diffusion_pytorch_model.safetensors"))
    save_file(fp16(), str(made["pipeline"] / "unet" / "diffusion_pytorch_model.fp16.safetensors"))
    save_file(fp32(), str(made["pipeline"] / "text_encoder" / "model.safetensors"))
    (made["pipeline"] / "scheduler" / "scheduler_config.json").write_text("{}")
    # 6. a model_index.json that names no component, beside weights
    made["unlisted"] = root / "unlisted"
    (made["unlisted"] / "unet").mkdir(parents=True)
    (made["unlisted"] / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
    save_file(fp16(), str(made["unlisted"] / "unet" / "diffusion_pytorch_model.safetensors"))
    # 7. two index files: two sharded checkpoints in one folder
    made["two-indexes"] = write_sharded(root / "two-indexes", fp16(), 2)
    write_sharded(made["two-indexes"], fp32(), 2, stem="ema")
    # 8. an EMA copy with the same tensor names, in another dtype
    made["ema"] = root / "ema"
    made["ema"].mkdir()
    save_file(fp16(), str(made["ema"] / "model.safetensors"))
    save_file(fp32(), str(made["ema"] / "model_ema.safetensors"))
    return made


def names(report):
    return [(c.name, [f.rsplit("/", 1)[-1] for f in c.files], c.how) for c in report.checkpoints]


def cli(path, *args):
    text = run_cli("audit", str(path), *args)
    data = run_cli("audit", str(path), "--format", "json", *args)
    assert "Traceback" not in text.stderr + data.stderr
    report = json.loads(data.stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(report)
    assert text.returncode == data.returncode
    return text, report, data.returncode


def test_a_model_and_its_fp16_export_are_two_clean_checkpoints(folders):
    report = mpdoctor.audit(folders["export"])
    assert names(report) == [("model.pt", ["model.pt"], "file"), ("model_fp16.pt", ["model_fp16.pt"], "file")]
    assert [[d.dtype for d in c.dtypes] for c in report.checkpoints] == [["float32"], ["float16"]]
    assert report.findings == [] and report.mixed == []  # no module "mixes" float32 and float16
    text, data, code = cli(folders["export"])
    assert code == 0 and "AUDIT002" not in text.stdout
    assert "checkpoint model.pt (1 file)" in text.stdout and "checkpoint model_fp16.pt (1 file)" in text.stdout
    assert [c["name"] for c in data["checkpoints"]] == ["model.pt", "model_fp16.pt"]
    assert [f["checkpoint"] for f in data["files"]] == ["model.pt", "model_fp16.pt"]
    assert data["findings"] == []


def test_a_pickle_beside_a_safetensors_is_read_too(folders):
    report = mpdoctor.audit(folders["beside"])
    assert names(report) == [
        ("finetuned.pt", ["finetuned.pt"], "file"),
        ("model.safetensors", ["model.safetensors"], "file"),
    ]
    assert {f.path.rsplit("/", 1)[-1]: (f.format, f.tensors) for f in report.files} == {
        "finetuned.pt": ("pickle", 6),
        "model.safetensors": ("safetensors", 6),
    }
    text, data, code = cli(folders["beside"])
    assert code == 0 and "checkpoint finetuned.pt" in text.stdout
    assert [c["files"][0].rsplit("/", 1)[-1] for c in data["checkpoints"]] == ["finetuned.pt", "model.safetensors"]


def test_a_sharded_set_with_its_index_is_one_checkpoint_and_trainer_state_is_listed_unread(folders):
    report = mpdoctor.audit(folders["indexed"])
    shard_names = [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert names(report) == [("model.safetensors.index.json", shard_names, "index")]
    assert report.findings == [] and sum(d.tensors for d in report.dtypes) == 6
    assert [(u.path.rsplit("/", 1)[-1], u.why) for u in report.unread] == [
        ("training_args.bin", "training state saved by transformers' Trainer, not model weights")
    ]
    text, data, code = cli(folders["indexed"])
    assert code == 0 and "one checkpoint: 3 file(s) listed by model.safetensors.index.json" in text.stdout
    assert "training_args.bin (training state saved by transformers' Trainer" in text.stdout
    assert data["unread"][0]["path"].endswith("training_args.bin")


def test_shards_named_0000N_of_0000M_are_one_checkpoint_without_an_index(folders):
    report = mpdoctor.audit(folders["named"])
    assert names(report) == [
        ("model-*-of-00003.safetensors", [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)], "shard-names")
    ]
    assert report.findings == []
    gap = mpdoctor.audit(folders["gap"])
    (checkpoint,) = gap.checkpoints
    assert [f.error != "" for f in gap.files] == [False, True, False]
    assert "model-00002-of-00003.safetensors: missing: its siblings' names say 3 shards" in gap.files[1].error
    assert [f.code for f in gap.findings] == ["AUDIT001"]
    text, data, code = cli(folders["gap"])
    assert code == 1 and "missing: its siblings' names say 3 shards" in text.stdout


def test_a_diffusers_pipeline_is_a_checkpoint_per_component_and_a_variant_is_an_alternative(folders):
    report = mpdoctor.audit(folders["pipeline"])
    assert [(c.name, c.component, c.variant) for c in report.checkpoints] == [
        ("text_encoder", "text_encoder", ""),
        ("unet/diffusion_pytorch_model.fp16.safetensors", "unet", "fp16"),
        ("unet/diffusion_pytorch_model.safetensors", "unet", ""),
    ]
    assert all(c.findings == [] for c in report.checkpoints)  # the fp16 variant is not merged into the fp32 unet
    assert report.mixed == [] and report.odd_modules == []
    assert [f.code for f in report.findings] == []  # without a variant, both components are fp32
    text, data, code = cli(folders["pipeline"])
    assert code == 0
    assert "variant fp16: an alternative to the unet's other weights, not a shard" in text.stdout
    assert [c["variant"] for c in data["checkpoints"]] == ["", "fp16", ""]


def test_a_model_index_that_names_no_component_beside_weights_is_a_finding(folders):
    report = mpdoctor.audit(folders["unlisted"])
    assert names(report) == [("unet", ["diffusion_pytorch_model.safetensors"], "file")]
    (finding,) = report.findings
    assert finding.code == "AUDIT006" and finding.severity == "warning"
    assert finding.title.startswith("model_index.json names no component with weights, yet the folder holds 1")
    assert "not in a named component: unet" in finding.evidence
    text, data, code = cli(folders["unlisted"])
    assert code == 0 and "warning AUDIT006" in text.stdout and "no problems" not in text.stdout
    assert run_cli("audit", str(folders["unlisted"]), "--fail-on", "warning").returncode == 1
    assert [f["code"] for f in data["findings"]] == ["AUDIT006"]


def test_two_index_files_are_two_checkpoints_both_judged(folders):
    report = mpdoctor.audit(folders["two-indexes"])
    assert [(c.name, c.how, len(c.files)) for c in report.checkpoints] == [
        ("ema.safetensors.index.json", "index", 2),
        ("model.safetensors.index.json", "index", 2),
    ]
    assert [[d.dtype for d in c.dtypes] for c in report.checkpoints] == [["float32"], ["float16"]]
    assert report.findings == []
    text, data, code = cli(folders["two-indexes"])
    assert code == 0 and "2 checkpoints, 4 weight file(s)" in text.stdout


def test_an_ema_copy_with_the_same_names_is_another_checkpoint(folders):
    report = mpdoctor.audit(folders["ema"])
    assert [c.name for c in report.checkpoints] == ["model.safetensors", "model_ema.safetensors"]
    assert report.modules == 6 and report.findings == []  # 3 modules each, not 3 modules in two dtypes
    text, data, code = cli(folders["ema"])
    assert code == 0 and "AUDIT002" not in text.stdout and "AUDIT004" not in text.stdout


def test_the_exit_code_follows_the_worst_finding_across_checkpoints(folders, tmp_path):
    torch.save(fp16(), tmp_path / "good.pt")
    mixed = fp16()
    mixed["0.bias"] = mixed["0.bias"].float()  # a module that mixes dtypes: AUDIT002, a warning
    torch.save(mixed, tmp_path / "mixed.pt")
    (tmp_path / "broken.safetensors").write_bytes(b"\x08")  # an error
    text, data, code = cli(tmp_path)
    assert code == 1
    assert [(c["name"], [f["code"] for f in c["findings"]]) for c in data["checkpoints"]] == [
        ("broken.safetensors", ["AUDIT001"]),
        ("good.pt", []),
        ("mixed.pt", ["AUDIT002"]),
    ]
    assert [f["title"].split("]")[0] for f in data["findings"]] == ["[broken.safetensors", "[mixed.pt"]
    (tmp_path / "broken.safetensors").unlink()
    assert run_cli("audit", str(tmp_path)).returncode == 0
    assert run_cli("audit", str(tmp_path), "--fail-on", "warning").returncode == 1


def test_an_old_reader_reads_a_folder_report(folders):
    """Schema version 1, additive: the fields a v1 reader knew still sum the checkpoints up, and load."""
    _, data, _ = cli(folders["pipeline"])
    assert data["schema_version"] == 1
    old = {k: v for k, v in data.items() if k not in ("checkpoints", "unread")}
    for file in old["files"]:
        del file["checkpoint"]
    loaded = from_data(AuditReport, old)
    assert loaded.checkpoints == [] and len(loaded.files) == 3
    assert sorted(loaded.components) == [
        "text_encoder",
        "unet/diffusion_pytorch_model.fp16.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
    ]
    assert {d["dtype"]: d["tensors"] for d in data["dtypes"]} == {"float32": 12, "float16": 6}
