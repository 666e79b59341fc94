"""One library's own words each, learned with the ecosystem's general shapes (grammar_ecosystem.py): Ultralytics
exporting fp32 on the CPU, Accelerate's and Lightning's fp8 without TransformerEngine, Lightning's 16-mixed run as bf16
on the CPU, and its model summary sizing a precision it does not know in 32 bits (a notice).
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="cpu-half-ultralytics-half-export",
        family="cpu-half",
        title="Ultralytics exports half precision only on a CUDA device: this export is fp32",
        needles=("half=true only compatible with gpu",),
        patterns=(r"half=true only compatible with gpu",),
        cause="`model.export(half=True)` (`yolo export ... half`) converts the model with `.half()`, which "
        "ultralytics does only on a CUDA device: on the CPU it warns and exports fp32, so the file is not fp16.",
        fixes=(
            fix(
                'Export on the GPU: `model.export(format="onnx", half=True, device=0)` '
                "(`yolo export model=yolov8n.pt format=onnx half=True device=0`)"
            ),
            fix(
                "Without a GPU, export fp32 and convert the ONNX file: "
                "`float16.convert_float_to_float16(onnx.load('m.onnx'), keep_io_types=True)` (onnxconverter-common)"
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/ultralytics/ultralytics/issues/1572",
            "https://github.com/ultralytics/ultralytics/blob/main/ultralytics/engine/exporter.py",
            "https://docs.ultralytics.com/modes/export/",
        ),
        examples=("WARNING ⚠️ half=True only compatible with GPU export, i.e. use device=0",),
    ),
    Signature(
        id="hardware-fp8-needs-transformer-engine",
        family="hardware",
        title="fp8 mixed precision was asked for, but TransformerEngine (or MS-AMP) is not installed",
        needles=(
            "precision requires `transformer_engine`",
            "precision requires transformer_engine",
            "fp8 is not available on this machine",
            "no fp8-compatible backend was installed",
            "is not installed on this machine",
            "fp8_autocast` requires transformer_engine",
        ),
        patterns=(
            r"precision requires `?transformer_engine",
            # accelerate 1.x: the same, once three backends (TE, MS-AMP, torchao) can run fp8
            r"fp8 is not available on this machine",
            r"no fp8-compatible backend was installed",
            r"is not installed on this machine",
            r"fp8_autocast` requires transformer_engine",
        ),
        details=(r"(?P<what>fp8|transformer_engine)",),
        cause="Accelerate's `mixed_precision=\"fp8\"` (an `accelerate config` answer, a trainer's fp8 flag) runs "
        "through NVIDIA TransformerEngine (or MS-AMP, or torchao in newer versions), which is not importable "
        "here; fp8 also needs an Ada (8.9) or Hopper (9.0+) GPU.",
        fixes=(
            fix(
                "If the GPU is not Ada/Hopper, or fp8 was not meant: set `mixed_precision: bf16` in the accelerate "
                "config (or `--mixed_precision bf16`)",
                "accelerate env",
            ),
            fix(
                "On an H100/L40/RTX 40xx, install TransformerEngine for this torch and CUDA",
                "pip install --no-build-isolation transformer_engine[pytorch]",
            ),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/axolotl-ai-cloud/axolotl/issues/760",
            "https://github.com/huggingface/accelerate/pull/1287",
            "https://huggingface.co/docs/accelerate/usage_guides/low_precision_training",
        ),
        examples=(
            "ValueError: Using `fp8` precision requires `transformer_engine` to be installed.",
            "RuntimeError: FP8 is not available on this machine. Please ensure that either Transformer Engine, "
            "MSAMP or torchao is installed.",
        ),
        near_misses=("ValueError: the tokenizer is not installed on this machine",),
    ),
    Signature(
        id="hardware-fp8-lightning-needs-transformer-engine",
        family="hardware",
        title="Lightning's transformer-engine (fp8) precision was asked for, but TransformerEngine is not installed",
        needles=("requirement 'transformer_engine",),
        patterns=(r"requirement 'transformer_engine[^']{0,20}' not met",),
        cause='`Trainer(precision="transformer-engine")` (or `"transformer-engine-float16"`) runs fp8 through '
        "NVIDIA TransformerEngine, which Lightning's precision plugin imports when it is built and which is not "
        "installed here. fp8 also needs an Ada (8.9) or Hopper (9.0+) GPU: on a CPU or an older GPU no install "
        "makes it run.",
        fixes=(
            fix(
                'Without an Ada/Hopper GPU, or if fp8 was not meant: `Trainer(precision="bf16-mixed")` '
                '(`"16-mixed"` on a GPU older than Ampere)'
            ),
            fix(
                "On an H100/L40/RTX 40xx, install TransformerEngine for this torch and CUDA",
                "pip install --no-build-isolation transformer_engine[pytorch]",
            ),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/plugins/precision/"
            "transformer_engine.py",
        ),
        examples=(
            "ModuleNotFoundError: Requirement 'transformer_engine>=0.11.0' not met. HINT: Try running "
            "`pip install -U 'transformer_engine>=0.11.0'`",
        ),
    ),
    Signature(
        id="framework-lightning-summary-precision",
        family="framework",
        title="Lightning's model summary sized the model in 32 bits: a note about the summary, not about the run",
        needles=("not supported by the model summary",),
        patterns=(r"precision [a-z0-9-]{1,30} is not supported by the model summary",),
        rank=1,
        notice=True,
        cause="Lightning's model summary knows the bits of '16-true', '16-mixed', 'bf16-true', '32-true' and "
        "'64-true' only; for another precision setting ('bf16-mixed', 'transformer-engine', a plugin's) it "
        "estimates the model's size in 32 bits and says so. The run itself uses the precision asked for.",
        fixes=(fix("Nothing to fix: only the summary's size estimate is approximate"),),
        checks=(),
        sources=(
            "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/utilities/"
            "model_summary/model_summary.py",
        ),
        examples=(
            "/venv/lib/python3.11/site-packages/lightning/pytorch/utilities/model_summary/model_summary.py:242: "
            "Precision bf16-mixed is not supported by the model summary.  Estimated model size in MB will not be "
            "accurate. Using 32 bits instead.",
        ),
    ),
    Signature(
        id="framework-lightning-fp16-amp-cpu-fallback",
        family="framework",
        title="Lightning ran 16-mixed on the CPU as bf16-mixed (fp16 AMP is not supported there)",
        needles=("but amp with fp16 is not supported on cpu",),
        patterns=(r"but amp with fp16 is not supported on cpu",),
        rank=1,
        cause="`Trainer(precision='16-mixed')` with `accelerator='cpu'` (or no GPU found): torch's CPU autocast "
        "runs bf16, so Lightning switches to `bf16-mixed` and warns. The run continues; if a GPU was meant, "
        "it is not being used.",
        fixes=(
            fix(
                "If a GPU was meant, make torch see it and pass `accelerator='gpu'`",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
            fix("On the CPU, ask for `precision='bf16-mixed'` (or `'32-true'`) and the warning goes"),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/ms-dot-k/Visual-Audio-Memory/issues/4",
            "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
        ),
        examples=(
            "/usr/local/lib/python3.10/dist-packages/pytorch_lightning/trainer/connectors/accelerator_connector.py:"
            "556: You passed `Trainer(accelerator='cpu', precision='16-mixed')` but AMP with fp16 is not supported "
            "on CPU. Using `precision='bf16-mixed'` instead.",
        ),
    ),
]
