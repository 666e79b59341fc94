"""The ecosystem's error grammar (issue 38): general shapes, read from the libraries' own mined messages.

Every text here is taken from the mined tables (tests/explain_ecosystem/<library>.json: the message a library raises
at a file:line of its pinned version), printed as a failing run prints it (`mine.sample`: `<kind>: <message>`, holes
filled), never typed. Each general shape must explain messages of several libraries with its family, say it is the
general explanation, and stay silent on the mined messages of the same words that are no precision failure (a
dtype a hole prints, an argument check, an internal invariant). Where the traceback runs in a library, its fixes
come first in that library's terms.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.known import all_signatures

HERE = Path(__file__).parent / "explain_ecosystem"
_SPEC = importlib.util.spec_from_file_location("mine_ecosystem", HERE / "mine.py")
mine = sys.modules.get(_SPEC.name)
if mine is None:  # the same module test_explain_ecosystem.py loads, under the same name
    mine = importlib.util.module_from_spec(_SPEC)
    sys.modules[_SPEC.name] = mine
    _SPEC.loader.exec_module(mine)

SIGNATURES = {s.id: s for s in all_signatures()}


def mined(library: str, where: str, starts: str) -> str:
    """The mined message of ``library`` under ``where`` that starts with ``starts``, as a failing run prints it."""
    rows = [
        r for r in mine.load(library)["messages"] if r["where"].startswith(where) and r["message"].startswith(starts)
    ]
    assert rows, (library, where, starts)
    return mine.sample(rows[0]["message"], rows[0]["kind"])


def first(text: str):
    found = explain(text, "test").recognised
    return found[0] if found else None


# (signature, library, where, the message's first words): one shape, the libraries that say it in their own words
SHAPES = [
    (
        "dtype-takes-listed-dtypes",
        "torchao",
        "torchao/prototype/moe_training/",
        "Input tensor must be float32",
    ),
    ("dtype-takes-listed-dtypes", "transformer-engine", "transformer_engine/pytorch/", "inp must have BF16 or FP32"),
    ("dtype-takes-listed-dtypes", "bitsandbytes", "bitsandbytes/backends/cuda/ops.py:", "Unsupported gradient dtype"),
    ("dtype-takes-listed-dtypes", "peft", "peft/tuners/lora/layer.py:", "Please initialize PiSSA under"),
    ("dtype-takes-listed-dtypes", "onnxruntime", "onnxruntime/", "only float32 or float16 is supported"),
    (
        "dtype-takes-listed-dtypes",
        "diffusers",
        "diffusers/models/attention_dispatch.py:",
        "Query, key, and value must be either",
    ),
    ("op-support-low-precision-feature-refused", "transformer-engine", "transformer_engine/", "RoPE is not supported"),
    ("op-support-low-precision-feature-refused", "triton", "triton/language/semantic.py:", "atomic_{op} does not"),
    ("op-support-low-precision-feature-refused", "accelerate", "accelerate/", "MS-AMP is not supported for ZeRO"),
    ("op-support-low-precision-feature-refused", "lightning", "lightning/", "AMP and the LBFGS optimizer"),
    ("op-support-low-precision-feature-refused", "torchao", "torchao/", "dropout_p must be 0.0 for FP8 attention"),
    ("hardware-architecture-required-for-precision", "torchao", "torchao/", "Float8 dynamic quantization requires"),
    ("hardware-architecture-required-for-precision", "triton", "triton/", "fp4_padded requires blackwell"),
    ("hardware-architecture-required-for-precision", "diffusers", "diffusers/", "Loading Nunchaku NVFP4 checkpoints"),
    ("framework-precision-needs-newer-version", "accelerate", "accelerate/", "bf16 mixed precision with MPS device"),
    ("framework-precision-needs-newer-version", "onnxruntime", "onnxruntime/", "onnx model requires opset 13"),
    ("quantization-low-precision-block-sizes", "transformer-engine", "transformer_engine/", "FP8 execution requires"),
    ("quantization-low-precision-block-sizes", "lightning", "lightning/", "Support for FP8 in the linear layers"),
    ("framework-low-precision-backend-missing", "transformers", "transformers/", "NVFP4 quantization requires the"),
    ("framework-low-precision-backend-missing", "torchao", "torchao/", "FP8_FA3 requires the flash-attn package"),
    ("framework-low-precision-backend-missing", "accelerate", "accelerate/", "MS-AMP was not found on your system"),
    ("framework-precision-value-refused", "deepspeed", "deepspeed/", "Invalid communication_data_type"),
    ("framework-precision-value-refused", "ultralytics", "ultralytics/cfg/__init__.py:", "'{k}={v}' is invalid"),
    ("framework-precision-value-refused", "lightning", "lightning/", "Passed `{type(self).__name__}(precision"),
    ("framework-precision-value-refused", "transformer-engine", "transformer_engine/", "fp8_format must be 'E4M3'"),
    (
        "scaler-loss-scale-settings-refused",
        "deepspeed",
        "deepspeed/runtime/precision_config.py:",
        "fp16.loss_scale must",
    ),
    ("scaler-loss-scale-settings-refused", "lightning", "lightning/", "`precision='bf16-mixed'` does not use a scaler"),
    ("framework-precision-options-conflict", "deepspeed", "deepspeed/", "fp16_master_weights_and_gradients and"),
    ("framework-precision-options-conflict", "accelerate", "accelerate/", "Passing in an FP8 configuration requires"),
    ("framework-precision-options-conflict", "transformer-engine", "transformer_engine/", "Recipe mismatch for"),
    ("cpu-half-precision-needs-gpu", "diffusers", "diffusers/pipelines/pipeline_utils.py:", "Pipelines loaded with"),
    ("cpu-half-precision-needs-gpu", "transformers", "transformers/", "No GPU or XPU found. A GPU or XPU is needed"),
    ("cpu-half-precision-needs-gpu", "bitsandbytes", "bitsandbytes/", "FP4 quantization state not initialized"),
    ("quantization-quantized-model-cast", "diffusers", "diffusers/", "`.half()` is not supported for quantized"),
    ("quantization-nothing-quantized", "transformers", "transformers/", "You are loading your model using fp8 but"),
    ("numerics-low-precision-accumulation", "deepspeed", "deepspeed/", "**** BF16 gradient accumulation is not safe"),
    ("numerics-onnx-fp16-validation-failed", "onnxconverter-common", "onnxconverter_common/", "Validation failed for"),
    # a half-only refusal is read in the family of the kernel it names: attention, a quantized kernel, MPS; a fused
    # kernel of no such family stays a dtype one
    ("attention-kernel-half-only", "transformers", "transformers/modeling_utils.py:", "Flash Attention {flash_attn"),
    ("attention-kernel-half-only", "transformer-engine", "transformer_engine/", "Flex Attention only supports"),
    ("quantization-kernel-takes-only-half", "vllm", "vllm/_C", "per_token_group_quant_8bit_packed only supports"),
    ("quantization-kernel-takes-only-half", "diffusers", "diffusers/quantizers/", "You are trying to set torch_dtype"),
    ("quantization-scheme-not-supported", "vllm", "vllm/model_executor/", "FlashInferB12xExperts only supports"),
    ("mps-low-precision-refused", "diffusers", "diffusers/pipelines/", "The DPT-Hybrid model uses batch-norm layers"),
    ("dtype-kernel-takes-only-half", "deepspeed", "deepspeed/ops/", "fused RMSNorm supports bfloat16 and float16"),
]


@pytest.mark.parametrize("signature, library, where, starts", SHAPES, ids=[f"{s[0]}-{s[1]}" for s in SHAPES])
def test_each_shape_explains_every_library_that_says_it(signature, library, where, starts):
    text = mined(library, where, starts)
    found = first(text)
    assert found is not None and found.id == signature, (text, found and found.id)
    assert found.family == SIGNATURES[signature].family
    assert "{" not in found.title, found.title  # what the line names (a dtype, a library) is filled in


# (library, where, the message's first words): the same words, and no precision failure, as the tables judge them
SILENT = [
    ("onnx", "onnx/", "{dtype} is not supported by create_random_int"),  # a hole prints the dtype
    ("torchao", "torchao/", "dtype must be one of {FP8_E4M3_DTYPES}"),
    ("transformers", "transformers/", "`.float()` is not supported for quantized model"),
    ("torch-tensorrt", "", "TensorRT does not support float64 (double) precision"),
    ("transformer-engine", "transformer_engine/", "Current tensor scaling is not supported for fused"),
    ("deepspeed", "deepspeed/", "Blocked attention requires CUDA compute capability"),
    ("torch-mps-rocm", "torch/_inductor/", "flex_attention on MPS does not support captured buffer dtype"),
]


@pytest.mark.parametrize("library, where, starts", SILENT, ids=[s[2][:40] for s in SILENT])
def test_the_same_words_without_a_precision_failure_stay_silent(library, where, starts):
    if not (HERE / f"{library}.json").exists():
        pytest.skip(f"no mined table of {library}")
    text = mined(library, where, starts)
    assert first(text) is None, text


# Messages whose holes, filled as the judge fills them (an fp16/fp32 pair), say what a real precision failure says: no
# grammar signature claims them (their holes print any dtype), and the general reader (explain/shapes) reads what the
# filled text says, as it would for a user whose run printed those dtypes. The judge's SOFT reasons allow it.
FILLED = [
    (
        "transformer-engine",
        "transformer_engine/",
        "Output tensor has invalid dtype (expected {dtype}, got",
        "general-dtype",
    ),
    ("lightning", "lightning/", "`precision={precision})` is not supported in DeepSpeed", "general-framework"),
]


@pytest.mark.parametrize("library, where, starts, general", FILLED, ids=[s[2][:40] for s in FILLED])
def test_filled_holes_are_read_by_the_general_reader_only(library, where, starts, general):
    text = mined(library, where, starts)
    found = first(text)
    assert found is not None and found.id == general, text
    verdict = mine.judge(
        library,
        next(
            r["message"]
            for r in mine.load(library)["messages"]
            if r["where"].startswith(where) and r["message"].startswith(starts)
        ),
        "ValueError",
    )
    assert verdict["verdict"] == "covered", verdict  # a soft reason: no non-failure claimed


# the judge's rules for what the miner took for a gap: each reason, on a mined message, and explain silent on it
RELABELLED = [
    ("transformers", "transformers/", "Logits should have twice the batch size", "'half' as a fraction"),
    ("torchao", "torchao/", "Expecting module to be Float8Linear but found", "a check of an object's class"),
    ("transformer-engine", "transformer_engine/", "NVFP4Tensor has no data!", "an internal invariant"),
    ("torchao", "torchao/", "tp_group is required for nvfp4_col_parallel_linear", "an argument the caller"),
    ("deepspeed", "deepspeed/", "Please use a GPU with compute capability >= 7.0", "a compute-capability check"),
]


@pytest.mark.parametrize("library, where, starts, why", RELABELLED, ids=[r[2][:30] for r in RELABELLED])
def test_the_judge_tells_what_is_no_precision_failure(library, where, starts, why):
    row = next(
        r for r in mine.load(library)["messages"] if r["where"].startswith(where) and r["message"].startswith(starts)
    )
    verdict = mine.judge(library, row["message"], row["kind"])
    assert verdict["verdict"] == "not-precision" and verdict["why"].startswith(why), verdict


def _traceback(package: str, line: str) -> str:
    """A traceback as Python prints it, the failing frame in an installed ``package``."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 41, in <module>\n'
        "    out = model(x)\n"
        f'  File "/opt/conda/lib/python3.11/site-packages/{package}/module.py", line 12, in forward\n'
        "    raise err\n"
        f"{line}\n"
    )


@pytest.mark.parametrize(
    "package, words",
    [
        ("transformer_engine", "TransformerEngine: run that module outside fp8"),
        ("torchao", "torchao: leave that module unconverted"),
        ("triton", "Triton: only `tl.atomic_add` takes fp16/bf16"),
    ],
)
def test_the_traceback_names_the_library_and_its_own_fix_comes_first(package, words):
    line = mined("transformer-engine", "transformer_engine/", "The backward of moe_permute does not support FP8")
    found = first(_traceback(package, line))
    assert found.id == "op-support-low-precision-feature-refused"
    assert found.title.startswith(f"{package} has no FP8 path") and "(the general explanation)" in found.title
    assert found.fixes[0].text.startswith(words), found.fixes[0].text
    # without a traceback the library is not known, and the general fixes come first
    alone = first(line)
    assert alone.title.startswith("The library has no FP8 path")
    assert alone.fixes[0].text == SIGNATURES[found.id].fixes[0].text.replace("{dtype}", "FP8")


def test_a_library_named_in_the_line_gets_its_fix_without_a_traceback():
    line = mined("accelerate", "accelerate/", "`accelerate` + `MS-AMP` + `FSDP` is not supported")
    found = first(line)
    assert found.id == "op-support-low-precision-feature-refused"
    assert found.fixes[0].text.startswith("Accelerate: MS-AMP runs with DDP or DeepSpeed ZeRO 0-2 only")


def test_every_mined_table_keeps_its_library_fixes_in_known_libraries():
    """Each library a shape has its own fixes for is one the tables mine (or one its users run beside them)."""
    for signature in SIGNATURES.values():
        for pattern, steps in signature.library_fixes:
            assert steps and all(step.text for step in steps), signature.id
            assert signature.fixes_for_library("") == (), signature.id  # no library named: no library fix


@pytest.mark.parametrize(
    "library, where, starts, words",
    [
        ("unsloth-zoo", "unsloth_zoo/", "Unsloth: Your GPU is too old for float8 KV cache", "Unsloth: pick the dtype"),
        ("sglang", "sglang/", "the device has no FP4 support", None),
    ],
)
def test_the_general_reader_names_the_library_its_failure_names(library, where, starts, words):
    """A general reading with no traceback: the library its own words name ("Unsloth: ...") gets its fix first."""
    found = first(mined(library, where, starts))
    assert found.id == "general-hardware"
    if words:
        assert found.fixes[0].text.startswith(words), found.fixes[0].text
    else:  # a line that names no library: the general fixes
        assert found.fixes[0].text.startswith("Use a precision this GPU has")
    # in a traceback through the serving stack's own files, its own switch comes first
    stack = first(_traceback("vllm", mined(library, where, starts)))
    assert stack.fixes[0].text.startswith("vLLM: serve in fp16"), stack.fixes[0].text
