"""Precision settings in the frameworks above torch: DeepSpeed's fp16/bf16 blocks against HF TrainingArguments,
the HF Trainer's and accelerate's device requirements for fp16/bf16 (old and new wordings), Lightning's
precision values, and axolotl's config validation. None of these is torch failing: a framework refused a
precision setting before any kernel ran, so the cure is in the configuration."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

MAKE_CUDA_WORK = fix(
    "If this machine has an NVIDIA GPU, make torch see it first: a CPU-only torch build or a "
    "broken CUDA setup makes every framework refuse fp16 (`mpdoctor check` TORCH005/TORCH009)",
    'python -c "import torch; print(torch.cuda.is_available(), torch.version.cuda)"',
)

SIGNATURES: list[Signature] = [
    Signature(
        id="framework-deepspeed-hf-precision-mismatch",
        family="framework",
        title="DeepSpeed's config enables fp16/bf16 but the HF Trainer's arguments do not (or the reverse)",
        needles=("vs hf ",),
        patterns=(r"ds (?:fp16|bf16|bfloat16)\.enabled=(?:True|False|auto) vs hf (?:fp16|bf16)",),
        cause="The HF Trainer fills DeepSpeed's config from TrainingArguments and refuses a config whose "
        "`fp16.enabled`/`bf16.enabled` disagrees with `--fp16`/`--bf16`: the DeepSpeed JSON (often a copied "
        "zero2/zero3 file) turns on a precision the command line leaves off, or the reverse. The other "
        "lines of the same error (`gradient_accumulation_steps`, batch sizes) are not precision problems.",
        fixes=(
            fix(
                'Let the Trainer decide: set the DeepSpeed precision blocks to "auto" '
                '(`"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}`)'
            ),
            fix(
                "Or pass the matching Trainer flag (`--bf16 True` for a bf16 DeepSpeed config, `--fp16 True` for "
                "fp16) and turn the other precision off in the JSON"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/shibing624/MedicalGPT/issues/191",
            "https://github.com/Ucas-HaoranWei/GOT-OCR2.0/issues/134",
            "https://github.com/huggingface/transformers/pull/14569",
        ),
        examples=(
            "ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments "
            "values:\n- ds fp16.enabled=True vs hf fp16|fp16_full_eval+fp16_backend(amp)=False\n"
            "The easiest method is to set these DeepSpeed config values to 'auto'.",
            "[rank0]: - ds bf16.enabled=True vs hf bf16|bf16_full_eval=False",
        ),
        near_misses=(
            # the same error for batch settings (hiyouga/LlamaFactory#201): not a precision mismatch
            "ValueError: Please correct the following DeepSpeed config values that mismatch\nTrainingArguments "
            "values:\n- ds gradient_accumulation_steps=4 vs hf gradient_accumulation_steps",
        ),
    ),
    Signature(
        id="framework-accelerate-deepspeed-precision-conflict",
        family="framework",
        title="accelerate's --mixed_precision contradicts the fp16/bf16 block of the DeepSpeed config file",
        needles=("arg cannot be set to",),
        patterns=(
            r"`--mixed_precision` arg cannot be set to `[a-z0-9_.]{1,20}` when `[a-z0-9_.]{1,20}` is set in "
            r"the DeepSpeed config file",
        ),
        cause="With a DeepSpeed config file, accelerate takes the precision from it; `--mixed_precision` (from "
        "`accelerate config` or the launch command) names another one, so it refuses to guess which wins.",
        fixes=(
            fix(
                "Make the two agree: the same precision in `accelerate config` (mixed_precision) and in the "
                'DeepSpeed JSON, or "auto" in the JSON'
            ),
            fix("Or drop `--mixed_precision` from the launch command and let the DeepSpeed file decide"),
        ),
        checks=(),
        sources=("https://github.com/shibing624/MedicalGPT/issues/288",),
        examples=(
            "是用zero2进行pt时，出现ValueError: `--mixed_precision` arg cannot be set to `bf16` when `fp16` is set in "
            "the DeepSpeed config file.",
        ),
    ),
    Signature(
        id="framework-fp16-and-bf16-both-enabled",
        family="framework",
        title="fp16 and bf16 were both turned on (TrainingArguments or the DeepSpeed config)",
        needles=(
            "at most one of fp16 and bf16",
            "bfloat16 and fp16 modes cannot be simultaneously enabled",
            "bfloat16 and fp16 cannot be enabled at once",
        ),
        patterns=(
            r"At most one of fp16 and bf16 can be True(?: for full eval)?, but not both",
            r"bfloat16 and fp16 modes cannot be simultaneously enabled",
            r"bfloat16 and fp16 cannot be enabled at once",  # DeepSpeed's engine, 0.19
        ),
        cause="A run has one half-precision format: `fp16=True` and `bf16=True` together (a config file with "
        "one and a command-line flag or default with the other), or both `fp16.enabled` and "
        "`bf16.enabled` true in a DeepSpeed JSON.",
        fixes=(
            fix(
                "Keep one: bf16 on Ampere (compute capability 8.0) or newer, fp16 on older GPUs; set the other to "
                'false (or "auto" in DeepSpeed)'
            ),
        ),
        checks=("PREC001",),
        sources=(
            "https://github.com/Eiztrips/ai-responder/issues/7",
            "https://github.com/Snowflake-AI-Research/Arctic-Platform/pull/78",
        ),
        examples=(
            '    raise ValueError("At most one of fp16 and bf16 can be True, but not both")\n'
            "ValueError: At most one of fp16 and bf16 can be True, but not both",
            "Both at once is a DeepSpeed assert (`bfloat16 and fp16 modes cannot be simultaneously enabled`).",
        ),
    ),
    Signature(
        id="framework-hf-trainer-fp16-needs-cuda",
        family="framework",
        title="The HF Trainer refused --fp16/--bf16: torch sees no CUDA device (or another supported one)",
        needles=("can only be used on cuda",),
        patterns=(r"precision training with AMP (?:or APEX )?\(`--(?:fp16|bf16)`[^\n]{0,200}can only be used on CUDA",),
        cause="TrainingArguments checks the device when `--fp16`/`--bf16` is set, and torch has no CUDA device: "
        "a CPU-only torch wheel, a notebook without a GPU runtime, CUDA_VISIBLE_DEVICES hiding every card, "
        "or a Mac (MPS). Older transformers said `can only be used on CUDA devices`; newer ones list NPU, "
        "MLU and XPU devices too.",
        fixes=(
            MAKE_CUDA_WORK,
            fix(
                "On a machine without a CUDA GPU, train without `--fp16`/`--bf16` (bf16 works on CPU in newer "
                "transformers: `--bf16` with `--use_cpu`)"
            ),
        ),
        checks=("TORCH005", "TORCH009", "GPU005"),
        sources=(
            "https://github.com/princeton-nlp/SimCSE/issues/273",
            "https://github.com/neuralmagic/sparseml/issues/1134",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/training_args.py",
        ),
        examples=(
            '  File "D:\\Anaconda3\\lib\\site-packages\\transformers\\training_args.py", line 428, in __post_init__\n'
            '    raise ValueError("Mixed precision training with AMP or APEX (`--fp16`) can only be used on CUDA '
            'devices.")\n'
            "ValueError: Mixed precision training with AMP or APEX (`--fp16`) can only be used on CUDA devices.",
            '    "message": "ValueError: Mixed precision training with AMP or APEX (`--fp16` or `--bf16`) and half '
            'precision evaluation (`--fp16_full_eval` or `--bf16_full_eval`) can only be used on CUDA devices.",',
            "ValueError: FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half precision "
            "evaluation (`--fp16_full_eval`) can only be used on CUDA or MLU devices or NPU devices or certain XPU "
            "devices (with IPEX).",
        ),
        notes="The third example is the newest wording, as transformers' training_args.py raises it.",
    ),
    Signature(
        id="framework-accelerate-fp16-needs-gpu",
        family="framework",
        title="accelerate refused mixed_precision='fp16': torch sees no GPU it can run fp16 AMP on",
        needles=("fp16 mixed precision requires a gpu",),
        patterns=(r"fp16 mixed precision requires a GPU",),
        cause="accelerate (also under the HF Trainer, kohya's sd-scripts and diffusers' training scripts) checks "
        "the device for fp16 AMP. torch sees no CUDA GPU: a CPU-only torch, an AMD card without a ROCm "
        "build, or a Mac, where newer accelerate says `(not 'mps')` (MPS fp16 AMP needs a newer "
        "accelerate and torch).",
        fixes=(
            MAKE_CUDA_WORK,
            fix(
                'Without a CUDA GPU, set mixed precision to "no" (`accelerate config`, or `--mixed_precision no`);'
                " on a Mac, upgrade accelerate and torch, or train in fp32"
            ),
        ),
        checks=("TORCH005", "TORCH009", "GPU005"),
        sources=(
            "https://github.com/bmaltais/kohya_ss/issues/719",
            "https://github.com/huggingface/accelerate/issues/3718",
        ),
        examples=(
            '  File "C:\\Users\\oxooo\\AppData\\Local\\Programs\\Python\\Python310\\lib\\site-packages\\accelerate\\'
            'accelerator.py", line 355, in __init__\n'
            '    raise ValueError(err.format(mode="fp16", requirement="a GPU"))\n'
            "ValueError: fp16 mixed precision requires a GPU",
            "Getting \"fp16 mixed precision requires a GPU (not 'mps').\" error running ASR task recipe",
        ),
    ),
    Signature(
        id="framework-lightning-precision-value",
        family="framework",
        title="Lightning rejected the precision value: '16-mixed'/'bf16-mixed' are Lightning 2.x names",
        needles=("is invalid. allowed precision values", "' is invalid"),
        patterns=(
            r"Precision '?[\w-]{1,16}'? is invalid\. Allowed precision values",
            r"Precision '(?:16|bf16|32|64)-(?:mixed|true)' is invalid",
        ),
        cause="Lightning 2.0 renamed its precision values (`16-mixed`, `bf16-mixed`, `32-true`, `16-true`); code "
        "or a config written for Lightning 2.x runs on an installed 1.x, which only knows 16, 'bf16', 32 "
        "and 64 (or a 1.x value reaches a plugin that wants the new names).",
        fixes=(
            fix(
                "Install the Lightning the project asks for (its requirements file), e.g.",
                "pip install 'pytorch-lightning>=2.0'",
            ),
            fix("Or, staying on Lightning 1.x, use its names: `precision=16` for fp16 mixed, `precision='bf16'`"),
        ),
        checks=(),
        sources=(
            "https://github.com/RVC-Boss/GPT-SoVITS/issues/461",
            "https://github.com/simchowitzlabpublic/nano-world-model/pull/17",
        ),
        examples=(
            "lightning_fabric.utilities.exceptions.MisconfigurationException: Precision '16-mixed' is invalid. "
            "Allowed precision values: ('64', '32', '16', 'bf16', 64, 32, 16)",
            "MisconfigurationException: Precision 'bf16-mixed' is invalid.",
        ),
    ),
    Signature(
        id="framework-lightning-legacy-precision-name",
        family="framework",
        title="Lightning 2.x was given a 1.x precision value (16, 'bf16'): it works, under its 2.x name",
        needles=("is supported for historical reasons, but its usage is discouraged",),
        patterns=(r"is supported for historical reasons, but its usage is discouraged\. Please set your precision to",),
        cause="Lightning 2.0 renamed its precision values: the 1.x `precision=16` is now `'16-mixed'` (fp16 "
        "autocast with a GradScaler), `'bf16'` is `'bf16-mixed'`. The old names still select the same mode, "
        "with this warning on every run; a config written for both versions keeps it.",
        fixes=(
            fix(
                "Pass the 2.x name the warning gives: `Trainer(precision='16-mixed')` (or `'bf16-mixed'`), in "
                "code or in the config file"
            ),
        ),
        checks=(),
        sources=("https://github.com/vturrisi/solo-learn/issues/367",),
        examples=(
            "User warning: 16 is supported for historical reasons, but its usage is discouraged. Please set your "
            "precision to 16-mixed instead!",
        ),
        near_misses=("MisconfigurationException: Precision '16-mixed' is invalid.",),
    ),
    Signature(
        id="framework-lightning-amp-on-cpu",
        family="framework",
        title="Lightning refused native AMP on the CPU (fp16 AMP there needs torch 1.10+ and means bf16)",
        needles=("amp on cpu, but amp is only available on gpu",),
        patterns=(r"AMP on CPU, but AMP is only available on GPU",),
        cause="`Trainer(precision=16)` with `accelerator='cpu'` (or no GPU found, so Lightning fell back to the "
        "CPU): Lightning before 1.5 and torch before 1.10 had no CPU autocast at all; CPU autocast runs "
        "bf16, not fp16.",
        fixes=(
            fix("If a GPU was meant to be used, make torch see it (TORCH005/TORCH009) and pass `accelerator='gpu'`"),
            fix("On the CPU, use `precision='bf16'` (torch 1.10+), or drop `precision=16`"),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/EdwardLeeLPZ/PowerBEV/issues/4",
            "https://github.com/Lightning-AI/pytorch-lightning/pull/10033",
        ),
        examples=(
            "pytorch_lightning.utilities.exceptions.MisconfigurationException: You have asked for native AMP on CPU,"
            " but AMP is only available on GPU.",
            "you have asked for ntive AMP on CPU, but AMP is only available on GPU?",
        ),
        notes="The first example is Lightning's own wording (pytorch_lightning accelerator_connector); the second "
        "is PowerBEV#4's title as the user typed it.",
    ),
    Signature(
        id="framework-axolotl-bf16-needs-ampere",
        family="framework",
        title="axolotl's config validation refused bf16: the GPU it sees is older than Ampere (or none)",
        needles=("bf16 requested, but amp is not supported",),
        patterns=(r"bf16 requested, but AMP is not supported on this GPU",),
        cause="axolotl checks `torch.cuda.is_bf16_supported()` when the config says `bf16: true`. On a pre-Ampere "
        "GPU (V100, T4, RTX 20xx) it is false; it is also false when the check runs where torch sees no "
        "GPU (CPU-only preprocessing, a node whose CUDA_VISIBLE_DEVICES hides the cards), even on an H100.",
        fixes=(
            fix("On a pre-Ampere GPU, set `bf16: false` and `fp16: true` in the config"),
            fix(
                "On Ampere or newer, make torch see the GPU where the check runs "
                '(`python -c "import torch; print(torch.cuda.is_bf16_supported())"`), or set `bf16: auto`'
            ),
        ),
        checks=("PREC001", "PREC005", "GPU003", "TORCH009"),
        sources=("https://github.com/axolotl-ai-cloud/axolotl/pull/766",),
        examples=(
            "When running with CPU and bf16 on, you would get `ValueError: bf16 requested, but AMP is not supported "
            "on this GPU. Requires Ampere series or above.`",
        ),
    ),
    Signature(
        id="framework-deepspeed-params-fp16-while-disabled",
        family="framework",
        title="DeepSpeed's fp16 is off, but the model's parameters are already fp16",
        needles=("fp16 is not enabled but",),
        patterns=(
            r"fp16 is not enabled but (?:dtype on parameters not fp16|one or several model parameters have "
            r"dtype of fp16)",
        ),
        cause="The model was converted (`.half()`, `torch_dtype=torch.float16`) before `deepspeed.initialize`, "
        "while the DeepSpeed config has no `fp16` block (or `enabled: false`): DeepSpeed's fp32 optimizer "
        "path refuses fp16 parameters.",
        fixes=(
            fix(
                'Let DeepSpeed do the conversion: load the model in fp32 and enable `"fp16": {"enabled": true}`'
                " (or bf16) in the config"
            ),
            fix("Or, for fp32 training, do not convert the model to fp16 before `deepspeed.initialize`"),
        ),
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/pull/1024",),
        examples=(
            "AssertionError: The fp16 is not enabled but dtype on parameters not fp16",
            "fp16 is not enabled but one or several model parameters have dtype of fp16",
        ),
        notes="The two wordings are DeepSpeed's before and after PR #1024, quoted in that PR.",
    ),
    Signature(
        id="framework-llamafactory-pure-bf16",
        family="framework",
        title="LLaMA-Factory refused `pure_bf16`: no bf16 GPU, mixed precision also on, or DeepSpeed ZeRO-3",
        needles=("`pure_bf16`",),
        patterns=(
            r"This device does not support `pure_bf16`",
            r"Turn off mixed precision training when using `pure_bf16`",
            r"`pure_bf16` is incompatible with DeepSpeed ZeRO-3",
        ),
        cause="`pure_bf16` trains with the weights themselves in bf16 and no AMP. LLaMA-Factory's argument "
        "validation refuses it on a device without bf16 (a GPU older than Ampere, or torch seeing no GPU), "
        "together with `--fp16`/`--bf16` mixed precision (older versions), and under DeepSpeed ZeRO-3.",
        fixes=(
            fix("On a GPU older than Ampere, drop `pure_bf16` and train with `fp16: true` (mixed precision)"),
            fix(
                "Otherwise keep one precision setting: `pure_bf16: true` without `bf16`/`fp16`, or `bf16: true` "
                "without `pure_bf16`; with DeepSpeed ZeRO-3 use `bf16: true`"
            ),
        ),
        checks=("PREC001", "PREC005", "TORCH009"),
        sources=(
            "https://github.com/hiyouga/LlamaFactory/blob/main/src/llamafactory/hparams/parser.py",
            "https://github.com/hiyouga/LlamaFactory/issues/3346",
        ),
        examples=(
            "ValueError: This device does not support `pure_bf16`.",
            "ValueError: Turn off mixed precision training when using `pure_bf16`.",
            "ValueError: `pure_bf16` is incompatible with DeepSpeed ZeRO-3.",
        ),
        notes="The examples are the messages LLaMA-Factory's hparams/parser.py raises, in its current and older "
        "versions; issue 3346 is the maintainers explaining pure_bf16 against mixed precision.",
    ),
    Signature(
        id="framework-deepspeed-precision-block-rejected",
        family="framework",
        title="DeepSpeed refused its {block} config block: it holds a key that block does not take",
        needles=("for deepspeedbf16config", "for deepspeedfp16config"),
        patterns=(r"validation errors? for deepspeed(?:bf16|fp16)config",),
        details=(r"for (?P<block>DeepSpeed(?:BF16|FP16)Config)",),
        cause="DeepSpeed reads the `bf16` and `fp16` blocks of its JSON config with pydantic models that forbid "
        'unknown keys (`extra="forbid"`, deepspeed/runtime/config_utils.py). The loss-scaling keys '
        "(`loss_scale`, `initial_scale_power`, `loss_scale_window`, `hysteresis`, `min_loss_scale`) belong to "
        "the `fp16` block only: bf16 has fp32's range and takes no loss scale, so a config copied from an fp16 "
        "run and switched to bf16 (or an HF/Accelerate template filling both) is refused. The lines after the "
        "error name each key and say `Extra inputs are not permitted`.",
        fixes=(
            fix(
                'Keep only what the block takes: `"bf16": {"enabled": true}` and move the loss-scale keys into '
                '`"fp16"` (or delete them when fp16 is off)'
            ),
            fix(
                "List what each block accepts in the DeepSpeed installed",
                'python -c "import deepspeed.runtime.precision_config as p; '
                'print(list(p.DeepSpeedBF16Config.model_fields), list(p.DeepSpeedFP16Config.model_fields))"',
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/precision_config.py",
            "https://www.deepspeed.ai/docs/config-json/#bfloat16-training-options",
        ),
        examples=(
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedBF16Config\n"
            "initial_scale_power\n  Extra inputs are not permitted [type=extra_forbidden, input_value=16, "
            "input_type=int]",
        ),
        near_misses=("pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig",),
    ),
]
