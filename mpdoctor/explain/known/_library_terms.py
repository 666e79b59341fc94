"""What the ecosystem's general shapes say in each library's own terms: which library a line names, and the fixes
that library takes.

A general signature (grammar_*.py) recognises a refusal by its shape, whoever raised it. Its fixes are general;
when the line or the traceback names the library (``Signature.details``' ``library`` group, else the innermost
installed package of the traceback: ``explainer.library_of``), ``Signature.library_fixes`` ranks that library's own
way first: a TransformerEngine recipe, torchao's ``module_filter_fn``, a DeepSpeed config key. Each fix here was
checked against the library's source at the version tests/explain_ecosystem pins (the file is named beside it).

Here: the library names, and the fixes for what a low precision takes and needs (grammar_dtype_lists.py,
grammar_refusals.py, grammar_refusals_kernels.py). The fixes for settings a library refuses, a low precision on
the CPU and low-precision accumulation are in _library_settings.py.
"""

from __future__ import annotations

from mpdoctor.explain.signature import fix

# The library a line names, as its users and its own messages spell it (matched with re.IGNORECASE, on the line as
# written). Only names that are not also ordinary words: "accelerate" is named with its backticks or its class.
LIBRARY = (
    r"\b(?P<library>transformer.?engine|torchao|deepspeed|bitsandbytes|peft|ctranslate2|onnxruntime|ultralytics|"
    r"xformers|vllm|megatron|diffusers|transformers|lightning|deepgemm|flash.?attn|tensorrt|`accelerate`|"
    r"accelerator\(|ms-amp|unsloth|sglang|lmdeploy)\b"
)

# Library names (lower-cased, as a line or a package folder spells them) -> the key used below.
TE = r"transformer.?engine|^te$"
TORCHAO = r"torchao"
DEEPSPEED = r"deepspeed"
ACCELERATE = r"accelerate|accelerator\("
LIGHTNING = r"lightning"
TRANSFORMERS = r"^transformers$|^`?transformers`?$"
DIFFUSERS = r"diffusers"
BITSANDBYTES = r"bitsandbytes"
PEFT = r"^peft$"
CTRANSLATE2 = r"ctranslate2|faster_whisper|whisperx"
ONNXRUNTIME = r"onnxruntime|onnxconverter_common|onnxmltools"
ULTRALYTICS = r"ultralytics"
TRITON = r"^triton$"
VLLM = r"vllm"
SGLANG = r"sglang"
LMDEPLOY = r"lmdeploy"
UNSLOTH = r"unsloth"  # unsloth and unsloth_zoo

# A kernel or function that takes only some dtypes (grammar_dtype_lists.dtype-takes-listed-dtypes).
DTYPE_LIST = (
    (
        TORCHAO,
        (
            fix(
                "torchao's float8/MX/NVFP4 kernels take the high-precision side in bf16 (some also fp32), not fp16: "
                "cast the model with `model.to(torch.bfloat16)` before `quantize_(model, config)` or "
                "`convert_to_float8_training(model)`, and keep the layers they do not take out with "
                "`filter_fn=`/`module_filter_fn=lambda mod, fqn: ...`"
            ),
        ),
    ),
    (
        TE,
        (
            fix(
                "TransformerEngine modules keep their parameters in `params_dtype` (fp32, fp16 or bf16; "
                "`te.Linear(..., params_dtype=torch.bfloat16)`), and its fused kernels take the dtypes the message "
                "lists: cast the input to the module's `params_dtype`, or run the step under "
                '`torch.autocast("cuda", dtype=torch.bfloat16)` around `te.autocast(...)`'
            ),
        ),
    ),
    (
        PEFT,
        (
            fix(
                "PEFT's PiSSA/CorDA/MiCA initialisation decomposes the base weights, so it needs them in float32/"
                "float16/bfloat16, not quantized: load the base model unquantized for the init, save the adapter "
                "and the residual model, then load that residual quantized (PEFT's docs: re-quantize after init)"
            ),
        ),
    ),
    (
        BITSANDBYTES,
        (
            fix(
                "bitsandbytes' 8-bit optimizers take fp32, fp16 or bf16 gradients, and `Int8Params`/LLM.int8 take "
                "fp16 inputs: load the model with `torch_dtype=torch.float16` (or bf16 for 4-bit), not float64 or a "
                "quantized copy"
            ),
        ),
    ),
    (
        LIGHTNING,
        (
            fix(
                "Lightning's bitsandbytes int8 modes take `dtype=torch.float16` only: "
                '`BitsandbytesPrecision(mode="int8", dtype=torch.float16)` (nf4/fp4 modes also take bf16)'
            ),
        ),
    ),
    (
        ONNXRUNTIME,
        (
            fix(
                "ONNX Runtime's converters and quantizers take float32 or float16 graphs and scales: convert the "
                "model with `float16.convert_float_to_float16(model, keep_io_types=True)` (onnxconverter-common) "
                "rather than casting tensors to bf16/fp64, and give scales as float32 numpy values"
            ),
        ),
    ),
    (
        CTRANSLATE2,
        (
            fix(
                "CTranslate2's AWQ kernels take float16 activations: convert or load with "
                '`compute_type="float16"` (or `"int8_float16"`), which runs on a CUDA GPU'
            ),
        ),
    ),
    (
        DEEPSPEED,
        (
            fix(
                "DeepSpeed's fused kernels take the dtypes the message lists: enable the matching block of the "
                'DeepSpeed config (`"bf16": {"enabled": true}` or `"fp16": {"enabled": true}`) so the engine casts '
                "the model to it, or turn the fused path off"
            ),
        ),
    ),
    (
        TRITON,
        (
            fix(
                "In the Triton kernel, cast to a dtype the instruction takes before it (`x.to(tl.float32)`, "
                "`out_dtype=tl.float32` for `tl.dot`, then `.to(tl.bfloat16)`)"
            ),
        ),
    ),
)

# A feature with no path in a low precision (grammar_refusals.op-support-low-precision-feature-refused).
FEATURE = (
    (
        TE,
        (
            fix(
                "TransformerEngine: run that module outside fp8 (`with te.autocast(enabled=False):` around it, or "
                "keep it a torch module), or use a recipe that supports it: `DelayedScaling`/`Float8CurrentScaling` "
                "instead of the block-scaled MXFP8/NVFP4 recipes, `fp8_format=Format.HYBRID` (E4M3 forward, E5M2 "
                "backward) rather than pure E5M2; FP8 attention (`fp8_dpa=True`) runs only on the cuDNN "
                "FusedAttention backend (`NVTE_FUSED_ATTN=1`), otherwise set `fp8_dpa=False`; weights created in "
                "fp8 under `te.quantized_model_init(...)` cannot be FSDP-wrapped: create the model outside it"
            ),
        ),
    ),
    (
        TORCHAO,
        (
            fix(
                "torchao: leave that module unconverted, `convert_to_float8_training(model, module_filter_fn=lambda "
                "mod, fqn: fqn not in skip)` or `quantize_(model, config, filter_fn=...)`; a `KernelPreference` that "
                "has no kernel for the mode can be swapped for another (`KernelPreference.EMULATED` runs anywhere, "
                "slowly)"
            ),
        ),
    ),
    (
        ACCELERATE + r"|ms-amp",
        (
            fix(
                "Accelerate: MS-AMP runs with DDP or DeepSpeed ZeRO 0-2 only; under FSDP or ZeRO-3 choose "
                'TransformerEngine or torchao as the fp8 backend (`Accelerator(mixed_precision="fp8", '
                "kwargs_handlers=[TERecipeKwargs()])`, or `AORecipeKwargs()`)"
            ),
        ),
    ),
    (
        LIGHTNING,
        (fix("Lightning: LBFGS cannot run under AMP; train it with `precision='32-true'` (or `'bf16-true'`)"),),
    ),
    (
        TRITON,
        (
            fix(
                "Triton: only `tl.atomic_add` takes fp16/bf16; do `atomic_max`/`atomic_min`/`atomic_xchg`... on an "
                "fp32 buffer (`x.to(tl.float32)`) and cast the result afterwards"
            ),
        ),
    ),
    (
        ONNXRUNTIME,
        (
            fix(
                "ONNX Runtime quantization: keep the refused op in float (`quantize_static(..., "
                "nodes_to_exclude=[...])` or leave its type out of `op_types_to_quantize`), or quantize to int8 "
                "(`QuantType.QInt8`) instead of fp8"
            ),
        ),
    ),
    (
        TRANSFORMERS,
        (
            fix(
                "transformers: load in the dtype its kernel supports (`dtype=torch.float16` for AWQ's CUDA kernels), "
                "or let it dequantize on load (`FineGrainedFP8Config(dequantize=True)`, `Mxfp4Config(dequantize=True)`)"
            ),
        ),
    ),
)

# A GPU architecture a low precision needs (grammar_refusals.hardware-architecture-required-for-precision).
ARCHITECTURE = (
    (
        TE,
        (
            fix(
                "TransformerEngine's recipes need: fp8 `DelayedScaling`/`Float8CurrentScaling` compute capability "
                "8.9+ (Ada, Hopper), `Float8BlockScaling` 9.0+ with CUDA 12.9+, `MXFP8BlockScaling` and "
                "`NVFP4BlockScaling` 10.0+ (Blackwell): on an older GPU pick a recipe it runs, or train in bf16 "
                "without `te.autocast`"
            ),
        ),
    ),
    (
        TORCHAO,
        (
            fix(
                "torchao's float8 kernels need compute capability 8.9+ (or MI300), MX/NVFP4 ones 10.0+: on an older "
                "GPU quantize with a config it runs (`Int8WeightOnlyConfig()`, `Int4WeightOnlyConfig()`) or keep bf16"
            ),
        ),
    ),
    # The serving stacks' own dtype switch (vllm/config/model.py ModelDType, sglang's arg_groups/fields/model.py
    # `dtype`, lmdeploy/cli/utils.py `--dtype`): fp16 where the GPU has no bf16
    (
        VLLM,
        (
            fix(
                "vLLM: serve in fp16 on a GPU without bf16 (before Ampere): `vllm serve MODEL --dtype half`, or "
                '`LLM(model=..., dtype="half")`'
            ),
        ),
    ),
    (
        SGLANG,
        (
            fix(
                "SGLang: serve in fp16 on a GPU without bf16 (before Ampere): `--dtype half` on the server's command line"
            ),
        ),
    ),
    (
        LMDEPLOY,
        (
            fix(
                "LMDeploy: run in fp16 on a GPU without bf16 (before Ampere): `--dtype float16` (its choices: auto, "
                "float16, bfloat16)"
            ),
        ),
    ),
    (
        UNSLOTH,
        (
            fix(
                "Unsloth: pick the dtype the GPU has, `FastLanguageModel.from_pretrained(..., dtype=None)` detects "
                "it (fp16 before Ampere), and train with `fp16=not is_bfloat16_supported(), "
                "bf16=is_bfloat16_supported()` (`from unsloth import is_bfloat16_supported`); `float8_training` "
                "needs compute capability 8.9+ (models/float8_training.py), an fp8 KV cache 8.0+ (below, "
                "`float8_kv_cache=False`)"
            ),
        ),
    ),
    (
        TRANSFORMERS,
        (
            fix(
                "transformers: load the fp8/fp4 checkpoint dequantized on this GPU (`FineGrainedFP8Config("
                "dequantize=True)`, `Mxfp4Config(dequantize=True)` as `quantization_config=`), or a bf16 checkpoint"
            ),
        ),
    ),
)

# Tensor sizes a low-precision kernel's blocks need (grammar_refusals_kernels.quantization-low-precision-block-sizes).
BLOCK_SIZES = (
    (
        TE,
        (
            fix(
                "TransformerEngine: give fp8 GEMMs sizes whose leading dims multiply to a multiple of 8 and whose "
                "last dim is a multiple of 16 (pad the sequence or batch), or run the layers that do not fit outside "
                "`te.autocast(enabled=True, recipe=...)`"
            ),
        ),
    ),
    (
        TORCHAO,
        (
            fix(
                "torchao: skip the layers whose sizes do not fit, `convert_to_float8_training(model, "
                "module_filter_fn=lambda mod, fqn: mod.in_features % 16 == 0 and mod.out_features % 16 == 0)` "
                "(the same test as `filter_fn=` for `quantize_`)"
            ),
        ),
    ),
    (
        LIGHTNING,
        (
            fix(
                "Lightning's TransformerEngine precision converts every Linear: pad the inputs so the layer's sizes "
                "are multiples of 8 and 16, or train with `precision='bf16-mixed'`"
            ),
        ),
    ),
)

# A package that provides a low precision's kernels (grammar_refusals_kernels.framework-low-precision-backend-missing).
BACKEND = (
    (
        TORCHAO,
        (
            fix(
                "torchao: without DeepGEMM/MSLK choose another kernel, `KernelPreference.EMULATED` (any device, "
                "slow) or `KernelPreference.TORCH`, in the config's `kernel_preference=`"
            ),
        ),
    ),
    (
        TRANSFORMERS,
        (
            fix(
                "transformers: install what the quantization needs (`pip install kernels` for NVFP4/MXFP4/"
                "fine-grained fp8, `pip install triton` for MXFP4), or load dequantized (`Mxfp4Config(dequantize="
                "True)`, `FineGrainedFP8Config(dequantize=True)`)"
            ),
        ),
    ),
    (
        ACCELERATE + r"|ms-amp",
        (
            fix(
                'Accelerate: choose an fp8 backend that is installed, `Accelerator(mixed_precision="fp8", '
                "kwargs_handlers=[TERecipeKwargs()])` for TransformerEngine or `AORecipeKwargs()` for torchao"
            ),
        ),
    ),
)
