"""The ecosystem's general shapes in each library's own terms (see _library_terms.py, which has the library names
and why these tables exist): the fixes a library takes for its precision settings (grammar_settings.py), for a low
precision asked of the CPU (grammar_requirements.py) and for gradients accumulated in a low precision. Each fix was
checked against the library's source at the version tests/explain_ecosystem pins.
"""

from __future__ import annotations

from mpdoctor.explain.known._library_terms import (
    ACCELERATE,
    BITSANDBYTES,
    CTRANSLATE2,
    DEEPSPEED,
    DIFFUSERS,
    LIGHTNING,
    ONNXRUNTIME,
    TE,
    TRANSFORMERS,
    ULTRALYTICS,
)
from mpdoctor.explain.signature import fix

# A precision setting's value (grammar_settings.framework-precision-value-refused).
SETTINGS = (
    (
        ACCELERATE,
        (
            fix(
                "Accelerate: `mixed_precision` takes `no`, `fp16`, `bf16` or `fp8` (`accelerate launch "
                "--mixed_precision bf16`, the config file, `ACCELERATE_MIXED_PRECISION`); an fp8 recipe's "
                '`fp8_format` takes "HYBRID", "E4M3" or "E5M2" (`TERecipeKwargs(fp8_format="HYBRID")`)',
                "accelerate env",
            ),
        ),
    ),
    (
        LIGHTNING,
        (
            fix(
                "Lightning: `precision=` takes '16-mixed', 'bf16-mixed', '32-true', '16-true', 'bf16-true', "
                "'64-true' or 'transformer-engine' (a plugin may take fewer: the message lists them)"
            ),
        ),
    ),
    (
        DEEPSPEED,
        (
            fix(
                'DeepSpeed\'s config: `"communication_data_type"` takes "fp16", "bf16" or "fp32"; '
                '`"torch_autocast": {"enabled": true, "dtype": "bfloat16"}` takes bfloat16/bf16, float16/fp16/half '
                "or float32"
            ),
        ),
    ),
    (
        TE,
        (
            fix(
                "TransformerEngine: formats are `recipe.Format.HYBRID` (E4M3 forward, E5M2 backward) or "
                "`Format.E4M3` (`DelayedScaling(fp8_format=Format.HYBRID)`); the recipes are `DelayedScaling`, "
                "`Float8CurrentScaling`, `Float8BlockScaling`, `MXFP8BlockScaling` and `NVFP4BlockScaling`; "
                "the `NVTE_*` environment variables take the values the message lists"
            ),
        ),
    ),
    (
        BITSANDBYTES,
        (
            fix(
                "bitsandbytes: `bnb_4bit_quant_type` is 'nf4' or 'fp4', `bnb_4bit_compute_dtype` a torch dtype "
                '(`torch.bfloat16`), as in `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", '
                "bnb_4bit_compute_dtype=torch.bfloat16)`"
            ),
        ),
    ),
    (
        ULTRALYTICS,
        (
            fix(
                "Ultralytics: `amp=` takes True, False, 'fp16', 'bf16' or 'fp32'; an fp16 export is `quantize=16` "
                "on a format that supports it"
            ),
        ),
    ),
)

# fp16 loss scaling (grammar_settings.scaler-loss-scale-settings-refused).
LOSS_SCALE = (
    (
        DEEPSPEED,
        (
            fix(
                'DeepSpeed\'s config, dynamic loss scaling: `"fp16": {"enabled": true, "loss_scale": 0, '
                '"initial_scale_power": 16, "loss_scale_window": 1000, "hysteresis": 2, "min_loss_scale": 1}` '
                '(a fixed scale is a positive number in `"loss_scale"`); a bf16 run uses `"bf16": {"enabled": true}` '
                "and has no loss scale"
            ),
        ),
    ),
    (
        LIGHTNING,
        (
            fix(
                "Lightning: drop the `scaler=` you pass with `precision='bf16-mixed'` (bf16 needs none), or use "
                "`precision='16-mixed'` if fp16 with a scaler was meant"
            ),
        ),
    ),
)

# Contradicting precision options (grammar_settings.framework-precision-options-conflict).
CONFLICTS = (
    (
        DEEPSPEED,
        (
            fix(
                'DeepSpeed\'s config: enable one of `"fp16"` and `"bf16"`; `"bf16_master_weights_and_grads"` and '
                '`"bf16_optimizer_states"` (in the `"bf16"` block) need ZeRO stage 1, 2 or 3, and the optimizer '
                "states need the master weights option too"
            ),
        ),
    ),
    (
        DEEPSPEED,
        (
            fix(
                "DeepSpeed ignores a `torch.autocast` around `engine(...)`: turn it on in the config instead, "
                '`"torch_autocast": {"enabled": true, "dtype": "bfloat16"}`, or use its `"bf16"`/`"fp16"` blocks'
            ),
        ),
    ),
    (
        ACCELERATE,
        (
            fix(
                'Accelerate: fp8 recipe handlers go with `Accelerator(mixed_precision="fp8", kwargs_handlers=[...])`; '
                "`downcast_bf16` only with `mixed_precision='bf16'` on a TPU"
            ),
        ),
    ),
    (
        ONNXRUNTIME,
        (
            fix(
                "ONNX Runtime's transformers converters: `--float16`/`-p fp16` and int8 go with `--optimize_onnx` "
                "(and fp16 with `--use_gpu`)"
            ),
        ),
    ),
)

# A low precision that runs only on a GPU, on the CPU (grammar_requirements.cpu-half-precision-needs-gpu).
DEVICE = (
    (
        DIFFUSERS,
        (
            fix(
                'diffusers: move the pipeline to the GPU (`pipe.to("cuda")`, or `pipe.enable_model_cpu_offload()` '
                "when it does not fit), or on the CPU load it without `torch_dtype=torch.float16` (float32)"
            ),
        ),
    ),
    (
        TRANSFORMERS,
        (
            fix(
                'transformers: load fp8/fp4 checkpoints onto the GPU (`device_map="cuda"`), with no CPU or disk '
                "entries in the device map; on the CPU load them dequantized (`FineGrainedFP8Config(dequantize=True)` "
                "as `quantization_config=`)"
            ),
        ),
    ),
    (
        ONNXRUNTIME,
        (
            fix(
                "ONNX Runtime's transformers optimizer: fp16 goes with the GPU, `python -m "
                "onnxruntime.transformers.optimizer ... --float16 --use_gpu` (`optimize_model(..., use_gpu=True)`); "
                "for the CPU keep the model float32"
            ),
        ),
    ),
    (
        CTRANSLATE2,
        (
            fix(
                'CTranslate2/faster-whisper on the CPU: `compute_type="int8"` (or `"float32"`); '
                '`"float16"`/`"int8_float16"` need `device="cuda"`'
            ),
        ),
    ),
)

# Gradients accumulated in a low precision (grammar_settings.numerics-low-precision-accumulation).
ACCUMULATION = (
    (
        DEEPSPEED,
        (
            fix(
                'DeepSpeed: accumulate in fp32 with `"data_types": {"grad_accum_dtype": "fp32"}` in the config '
                '(with `"bf16": {"enabled": true}`)'
            ),
        ),
    ),
)
