"""audit and dtype_trace on real architectures: transformers' and diffusers' own model classes from tiny configs.

T5, BERT, GPT-2, Llama, ViT, Whisper, a UNet2DConditionModel and an AutoencoderKL,
built from configs (no weights downloaded), each once per module. Every case goes
through the three ways a user audits a model: the live module
(``mpdoctor.audit(model)``), the folder ``save_pretrained`` writes (safetensors and
its ``config.json``), and a ``torch.save`` file of its state dict, both alone (no
config: the architecture is unknown) and beside the model's ``config.json``.

- Clean: ``.half()``, ``.bfloat16()`` and ``from_pretrained(..., dtype=...)`` name no
  module; a T5 cast by hand is told that ``wo`` is the module to keep in float32.
- Intended: T5 loaded in float16 keeps ``wo`` in float32 (transformers'
  ``_keep_in_fp32_modules``): AUDIT005, on every path that knows the architecture.
- Injected: a generator casts one module of the model to another dtype; any module
  with floating tensors of its own can be the one. The answer must be exactly that
  module (never a sibling, never its parent), AUDIT004 unless the architecture keeps
  it in float32 on purpose. A deterministic sample per model keeps the time down,
  with the cases issue 43 found wrong always in it.

The pickles of every case are read by one audit of one folder (one child process).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import warnings

import pytest

import mpdoctor
from mpdoctor.checkpoint_audit import kept_fp32_table
from mpdoctor.checkpoint_audit.kept_fp32 import from_config

# Without torch these tests skip: audit itself runs without it, these write checkpoints with it.
torch = pytest.importorskip("torch")

transformers = pytest.importorskip("transformers")
diffusers = pytest.importorskip("diffusers")

IDS = torch.randint(0, 50, (1, 6), generator=torch.Generator().manual_seed(0))


def _builders():
    """name -> (a model in float32, the forward's (args, kwargs) for a dtype)."""
    T = transformers
    from diffusers import AutoencoderKL, UNet2DConditionModel

    def data(dtype, *shape):
        return torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(dtype)

    return {
        "bert": (
            lambda: T.BertModel(
                T.BertConfig(
                    vocab_size=50,
                    hidden_size=16,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    intermediate_size=32,
                    max_position_embeddings=16,
                )
            ),
            lambda dt: ((IDS,), {}),
        ),
        "gpt2": (
            lambda: T.GPT2Model(
                T.GPT2Config(
                    vocab_size=50, bos_token_id=0, eos_token_id=0, n_embd=16, n_layer=2, n_head=2, n_positions=16
                )
            ),
            lambda dt: ((IDS,), {}),
        ),
        "llama": (
            lambda: T.LlamaModel(
                T.LlamaConfig(
                    vocab_size=50,
                    hidden_size=16,
                    intermediate_size=32,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    num_key_value_heads=1,
                    max_position_embeddings=16,
                )
            ),
            lambda dt: ((IDS,), {}),
        ),
        "t5": (
            lambda: T.T5Model(T.T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2)),
            lambda dt: ((IDS,), {"decoder_input_ids": IDS}),
        ),
        "vit": (
            lambda: T.ViTModel(
                T.ViTConfig(
                    image_size=16,
                    patch_size=8,
                    hidden_size=16,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    intermediate_size=32,
                )
            ),
            lambda dt: ((data(dt, 1, 3, 16, 16),), {}),
        ),
        "whisper": (
            lambda: T.WhisperModel(
                T.WhisperConfig(
                    vocab_size=60,
                    d_model=16,
                    encoder_layers=1,
                    decoder_layers=1,
                    encoder_attention_heads=2,
                    decoder_attention_heads=2,
                    encoder_ffn_dim=32,
                    decoder_ffn_dim=32,
                    num_mel_bins=8,
                    max_source_positions=8,
                    max_target_positions=16,
                    pad_token_id=0,
                    bos_token_id=1,
                    eos_token_id=2,
                    decoder_start_token_id=1,
                )
            ),
            lambda dt: ((data(dt, 1, 8, 16),), {"decoder_input_ids": IDS}),
        ),
        "unet": (
            lambda: UNet2DConditionModel(
                sample_size=8,
                in_channels=4,
                out_channels=4,
                layers_per_block=1,
                block_out_channels=(8, 16),
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                cross_attention_dim=8,
                attention_head_dim=2,
                norm_num_groups=4,
            ),
            lambda dt: ((data(dt, 1, 4, 8, 8), torch.tensor([10])), {"encoder_hidden_states": data(dt, 1, 3, 8)}),
        ),
        "vae": (
            lambda: AutoencoderKL(
                in_channels=3,
                out_channels=3,
                down_block_types=("DownEncoderBlock2D",) * 2,
                up_block_types=("UpDecoderBlock2D",) * 2,
                block_out_channels=(8, 16),
                latent_channels=4,
                norm_num_groups=4,
                layers_per_block=1,
            ),
            lambda dt: ((data(dt, 1, 3, 16, 16),), {}),
        ),
    }


MODELS = ("bert", "gpt2", "llama", "t5", "vit", "whisper", "unet", "vae")
DIFFUSERS = ("unet", "vae")
# A model in the first dtype with one module cast to the second: an fp32 module left in an fp16 model, an fp16
# one in a bf16 model.
SETTINGS = ((torch.float16, torch.float32), (torch.bfloat16, torch.float16))
SAMPLE = 3  # injected modules per model and setting, besides the ones below
# Always in the sample: what issue 43 found wrong (a cast module holding half its parent's elements or more blamed
# a sibling; an accidental fp32 norm in a Llama called intended; T5's wo).
ALWAYS = {
    "gpt2": ["h.1.mlp.c_fc", "wpe"],
    "bert": ["encoder.layer.1.output.dense", "embeddings.word_embeddings", "encoder.layer.0.output.LayerNorm"],
    "llama": ["layers.0.input_layernorm", "norm"],
    "t5": ["encoder.block.0.layer.1.DenseReluDense.wo", "decoder.block.1.layer.2.DenseReluDense.wo"],
    "vit": ["embeddings.patch_embeddings.projection"],
}
NAME = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}


def injectable(model) -> list[str]:
    """Every module with floating tensors of its own: each can be the one cast to another dtype."""
    return [
        name
        for name, module in model.named_modules()
        if any(t.is_floating_point() for t in [*module.parameters(recurse=False), *module.buffers(recurse=False)])
    ]


def sample(name: str, targets: list[str], base) -> list[str]:
    picked = random.Random(f"{name}-{base}").sample(targets, min(SAMPLE, len(targets)))
    return list(dict.fromkeys(ALWAYS.get(name, []) + picked))


def canonical(changed: list[str], names: list[str]) -> list[str]:
    """The answer: the fewest modules holding exactly the changed tensors (the highest that holds only them)."""
    changed_set, held = set(changed), {}
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts)):
            held.setdefault(".".join(parts[:i]), set()).add(name)
    found, covered = [], set()
    for module in sorted(held, key=lambda m: m.count(".")):
        if held[module] <= changed_set and not held[module] & covered:
            found.append(module)
            covered |= held[module]
    return sorted(found + [n for n in changed_set - covered])


def is_norm_by_name(module: str) -> bool:
    leaf = module.rsplit(".", 1)[-1]
    return "norm" in leaf.lower() or bool(re.fullmatch(r"ln(_\w+|\d*)", leaf))


def floating(tensors: dict) -> dict:
    return {k: v for k, v in tensors.items() if v.is_floating_point()}


def save_pretrained(model, folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)
    return folder


def saved_dtypes(folder) -> dict:
    from safetensors import safe_open

    (weights,) = [f for f in os.listdir(folder) if f.endswith(".safetensors")]
    dtypes = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32}
    with safe_open(os.path.join(folder, weights), "pt") as f:
        return {k: dtypes[f.get_slice(k).get_dtype()] for k in f.keys() if f.get_slice(k).get_dtype() in dtypes}


class Case:
    """One model state through one path: what the audit must say, and what it said."""

    def __init__(self, model, what, path, expected, intended):
        self.model, self.what, self.path, self.expected, self.intended = model, what, path, expected, intended
        self.odd, self.findings = None, None

    def got(self, odd_modules, findings):
        self.odd, self.findings = odd_modules, findings
        return self

    def wrong(self) -> str:
        names = sorted(o.module for o in self.odd)
        codes = sorted({f.code for f in self.findings})
        accidental = [o.module for o in self.odd if not o.intended]
        problems = []
        if names != self.expected:
            problems.append(f"named {names}, not {self.expected}")
        if any(bool(o.intended) != self.intended for o in self.odd):
            problems.append(f"intended {[(o.module, o.intended) for o in self.odd]}, expected {self.intended}")
        if ("AUDIT004" in codes) != bool(accidental) or (self.expected and not self.intended and not accidental):
            problems.append(f"codes {codes}")
        if {"AUDIT002", "AUDIT003"} & set(codes):
            problems.append(f"codes {codes}: one whole module in another dtype mixes nothing inside a module")
        return f"{self.model} {self.what} via {self.path}: " + "; ".join(problems) if problems else ""


@pytest.fixture(scope="module")
def built():
    """Each model, in float32, built once."""
    torch.manual_seed(0)
    return {name: (build(), inputs) for name, (build, inputs) in _builders().items()}


@pytest.fixture(scope="module")
def audited(built, tmp_path_factory):
    """Every case through every path: model -> [Case]. One audit reads all the pickles."""
    root = tmp_path_factory.mktemp("architectures")
    pickles = root / "pickles"
    cases: dict[str, list[Case]] = {name: [] for name in MODELS}
    pending = []  # (Case, checkpoint name in the pickles folder)
    for name, (model, _) in built.items():
        (pickles / name).mkdir(parents=True)
        (pickles / "bare").mkdir(parents=True, exist_ok=True)
        for index, (what, state, intended_wo) in enumerate(_states(name, model, root)):
            live = floating({**dict(state.named_parameters()), **dict(state.named_buffers())})
            folder = save_pretrained(state, root / f"{name}-{index}")
            if not (pickles / name / "config.json").exists():  # the config save_pretrained writes, for the pickles
                shutil.copy(folder / "config.json", pickles / name / "config.json")
            files = saved_dtypes(folder)
            sd = floating(state.state_dict())
            odd = what.odd
            known, bare = (lambda m: intended_wo(m)), (lambda m: odd == torch.float32 and is_norm_by_name(m))

            def expect(tensors, rule):
                changed = [k for k, v in tensors.items() if (v if isinstance(v, torch.dtype) else v.dtype) == odd]
                answer = canonical(changed, list(tensors))
                return answer, bool(answer) and all(rule(m) for m in answer)

            made = {
                f"{owner}.{buffer}" if owner else buffer
                for owner, module in state.named_modules()
                for buffer in module._non_persistent_buffers_set
            }

            def made_by_the_model(m, live=live, made=made):
                # A buffer the model's code computes in float32 and never saves (a rotary inv_freq): intended, live.
                return all(k in made for k in live if k.startswith(m + ".") or k == m)

            case = Case(name, what.text, "live", *expect(live, lambda m: known(m) or made_by_the_model(m)))
            cases[name].append(case.got(*_audit(state)))
            case = Case(name, what.text, "save_pretrained folder", *expect(files, known))
            cases[name].append(case.got(*_audit(str(folder))))
            torch.save(state.state_dict(), pickles / name / f"case{index:02d}.pt")
            torch.save(state.state_dict(), pickles / "bare" / f"{name}-{index:02d}.pt")
            pending.append(
                (
                    Case(name, what.text, "torch.save file beside config.json", *expect(sd, known)),
                    f"{name}/case{index:02d}.pt",
                )
            )
            pending.append(
                (Case(name, what.text, "torch.save file alone", *expect(sd, bare)), f"bare/{name}-{index:02d}.pt")
            )
            shutil.rmtree(folder)
    report = mpdoctor.audit(str(pickles), timeout=300)
    by_name = {c.name: c for c in report.checkpoints}
    for case, checkpoint in pending:
        found = by_name[checkpoint]
        cases[case.model].append(case.got(found.odd_modules, found.findings))
    return cases


class _What:
    def __init__(self, text, odd=None):
        self.text, self.odd = text, odd


def _states(name, model, root):
    """(what, the model in that state, which modules its architecture keeps in float32 for that state)."""
    never = lambda module: False  # noqa: E731
    for base in (torch.float16, torch.bfloat16):
        clean = model.to(base)
        yield _What(f"clean .to({NAME[base]})"), clean, never
        # A T5 in float16 keeps wo in float32, as transformers keeps it: not in bfloat16 (only for float16 loads).
        keeps_wo = (
            (lambda module: module.rsplit(".", 1)[-1] == "wo") if name == "t5" and base == torch.float16 else never
        )
        odd = dict(SETTINGS)[base]
        for target in sample(name, injectable(clean), base):
            clean.get_submodule(target).to(odd)
            yield _What(f"{NAME[base]} with {target} in {NAME[odd]}", odd), clean, keeps_wo
            clean.to(base)
    model.to(torch.float32)
    folder = save_pretrained(model, root / f"{name}-float32")
    for base in (torch.float16, torch.bfloat16):
        keyword = "torch_dtype" if name in DIFFUSERS else "dtype"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = type(model).from_pretrained(folder, **{keyword: base})
        keeps_wo = (
            (lambda module: module.rsplit(".", 1)[-1] == "wo") if name == "t5" and base == torch.float16 else never
        )
        # What the loader leaves in float32 is intended: T5's wo in float16, a buffer the model computes itself.
        odd = torch.float32
        yield _What(f"from_pretrained({keyword}={NAME[base]})", odd), loaded, keeps_wo
    shutil.rmtree(folder)


def _audit(target):
    report = mpdoctor.audit(target)
    return report.odd_modules, report.findings


@pytest.mark.parametrize("name", MODELS)
def test_audit_names_exactly_the_module_that_changed_on_every_path(audited, name):
    cases = audited[name]
    assert len(cases) >= 4 * 6  # clean, injected and loaded cases, each through the four paths
    assert [c.wrong() for c in cases if c.wrong()] == []


def test_the_cases_issue_43_found_wrong(audited):
    def case(model, what, path):
        (found,) = [c for c in audited[model] if c.what == what and c.path == path]
        return found

    paths = ("live", "save_pretrained folder", "torch.save file beside config.json", "torch.save file alone")
    for path in paths:
        # A module holding more than half its parent's elements is named, not its unchanged sibling.
        gpt2 = case("gpt2", "bfloat16 with h.1.mlp.c_fc in float16", path)
        assert [(o.module, o.within, o.within_dtype) for o in gpt2.odd] == [("h.1.mlp.c_fc", "h.1.mlp", "bfloat16")]
        bert = case("bert", "float16 with encoder.layer.1.output.dense in float32", path)
        assert [o.module for o in bert.odd] == ["encoder.layer.1.output.dense"]
        embeddings = case("bert", "bfloat16 with embeddings.word_embeddings in float16", path)
        assert [o.module for o in embeddings.odd] == ["embeddings.word_embeddings"]
    # An fp32 norm in a float16 Llama is an accident: Llama keeps no norm in float32. Only a file that names no
    # architecture takes a norm as kept on purpose, and says it guesses.
    for path in paths[:3]:
        (norm,) = case("llama", "float16 with layers.0.input_layernorm in float32", path).odd
        assert norm.intended == ""
    (guessed,) = case("llama", "float16 with layers.0.input_layernorm in float32", paths[3]).odd
    assert guessed.intended.startswith("a norm, by its name, in a model of no known architecture")
    # T5 loaded in float16 keeps wo in float32 on purpose: AUDIT005 from the files as from the live model.
    for path in paths[:3]:
        loaded = case("t5", "from_pretrained(dtype=float16)", path)
        assert len(loaded.odd) == 4 and all("'wo'" in o.intended for o in loaded.odd)
        assert {f.code for f in loaded.findings} == {"AUDIT005"}


def test_a_t5_cast_by_hand_is_told_which_module_to_keep_in_float32(audited):
    for path in ("live", "save_pretrained folder", "torch.save file beside config.json"):
        (clean,) = [c for c in audited["t5"] if c.what == "clean .to(float16)" and c.path == path]
        (hint,) = clean.findings
        assert hint.code == "AUDIT005" and hint.severity == "info" and "keep them in float32" in hint.title
        assert sorted(line.split(":")[0] for line in hint.evidence) == [
            "decoder.block.*.layer.*.DenseReluDense.wo",
            "encoder.block.*.layer.*.DenseReluDense.wo",
        ]
        assert all("keeps 'wo' in float32" in line for line in hint.evidence)
        # bfloat16 has the range: transformers keeps wo in float32 for float16 loads only, and nothing is said.
        (clean_bf16,) = [c for c in audited["t5"] if c.what == "clean .to(bfloat16)" and c.path == path]
        assert clean_bf16.findings == []


def test_the_fix_speaks_the_models_dtype_and_its_librarys_words(audited):
    def fix(model, what, path):
        (found,) = [c for c in audited[model] if c.what == what and c.path == path]
        (warning,) = [f for f in found.findings if f.code == "AUDIT004"]
        return warning.fix[0].text

    # transformers 5.24 wrote the config: its from_pretrained takes dtype=, and the model is in bfloat16.
    text = fix("gpt2", "bfloat16 with h.1.mlp.c_fc in float16", "save_pretrained folder")
    assert "`from_pretrained(..., dtype=torch.bfloat16)` (transformers 5.24.0's name for it)" in text
    assert "torch.float16" not in text
    # diffusers' loader still takes torch_dtype.
    unet = next(c for c in audited["unet"] if c.what.startswith("float16 with ") and c.path == "live")
    assert "`from_pretrained(..., torch_dtype=torch.float16)`" in fix("unet", unet.what, "live")
    # No config: the model's own dtype, and both spellings.
    text = fix("gpt2", "bfloat16 with h.1.mlp.c_fc in float16", "torch.save file alone")
    assert "`model.to(torch.bfloat16)`" in text and "dtype=torch.bfloat16)` from 4.56 on, `torch_dtype=` before" in text


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_clean_models_trace_clean(built, name, dtype):
    model, inputs = built[name]
    args, kwargs = inputs(dtype)
    model.to(dtype).eval()
    try:
        with torch.no_grad(), warnings.catch_warnings(), mpdoctor.dtype_trace(model) as trace:
            warnings.simplefilter("ignore")
            model(*args, **kwargs)
    finally:
        model.to(torch.float32)
    assert [str(m) for m in trace.mismatches] == [] and trace.failure is None


# ---------------------------------------------------------------- the libraries' keep-in-fp32 rules


def test_the_table_is_the_installed_libraries_rules():
    # The table was written from these versions (the test extra pins them): a new pin means a new table.
    assert (kept_fp32_table.TRANSFORMERS_VERSION, kept_fp32_table.DIFFUSERS_VERSION) == (
        transformers.__version__,
        diffusers.__version__,
    )
    for name in ("T5ForConditionalGeneration", "UMT5Model", "GptOssForCausalLM", "Blip2Model", "LlamaForCausalLM"):
        cls = getattr(transformers, name)
        keep = sorted(cls._keep_in_fp32_modules or [])
        strict = sorted(cls._keep_in_fp32_modules_strict or [])
        assert kept_fp32_table.TRANSFORMERS.get(name, ([], [])) == (keep, strict)
        assert name in kept_fp32_table.TRANSFORMERS_CLASSES
    for name in ("UNet2DConditionModel", "AutoencoderKL", "WanTransformer3DModel"):
        assert kept_fp32_table.DIFFUSERS.get(name, []) == sorted(getattr(diffusers, name)._keep_in_fp32_modules or [])
        assert name in kept_fp32_table.DIFFUSERS_CLASSES


def test_an_architecture_is_known_by_the_class_its_config_names():
    t5 = from_config({"architectures": ["T5ForConditionalGeneration"], "dtype": "float16"}, "config.json")
    assert (t5.library, t5.known, t5.keep, t5.dtype) == ("transformers", True, ["wo"], "float16")
    llama = from_config({"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}, "config.json")
    assert (llama.known, llama.keep, llama.strict, llama.dtype) == (True, [], [], "bfloat16")
    unet = from_config({"_class_name": "UNet2DConditionModel", "_diffusers_version": "0.42.1"}, "config.json")
    assert (unet.library, unet.known) == ("diffusers", True)
    # Remote code is its own class whatever its name; a class the table does not hold is unknown too.
    remote = from_config({"architectures": ["LlamaForCausalLM"], "auto_map": {"AutoModel": "x.Y"}}, "config.json")
    assert not remote.known
    assert not from_config({"architectures": ["SomethingNewForCausalLM"]}, "config.json").known
    assert from_config({"hidden_size": 16}, "config.json") is None
