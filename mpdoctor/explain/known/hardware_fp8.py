"""FP8 on a GPU without it: torch._scaled_mm/torchao, Transformer Engine and Triton refuse before Ada
(compute capability 8.9) or Hopper (9.0). The precision the card has is bf16 or fp16."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-fp8-scaled-mm",
        family="hardware",
        title="An FP8 matmul (torch._scaled_mm, torchao float8) on a GPU older than Ada (8.9) / Hopper (9.0)",
        needles=("_scaled_mm is only supported on", "float8 dynamic activation quantization is only supported"),
        patterns=(
            r"torch\._scaled_mm is only supported on (?:CUDA )?devices with compute capability",
            r"Float8 dynamic activation quantization is only supported on CUDA>=8\.9",
        ),
        cause="FP8 matrix multiplies need FP8 tensor cores: compute capability 8.9 (Ada: RTX 40xx, L4, L40) or "
        "9.0+ (Hopper, Blackwell), or an AMD MI300. `torch._scaled_mm` checks this and raises on Ampere "
        "(A100, RTX 30xx) and older; torchao's float8 dynamic-activation quantization asserts the same (its "
        "'CUDA>=8.9' means compute capability, not the CUDA version). In ComfyUI the usual trigger is an "
        "`fp8_e4m3fn_fast` weight dtype or 'fp8 fast mode', which computes in FP8 instead of only storing it.",
        fixes=(
            fix(
                "Store weights in FP8 but compute in fp16/bf16: in ComfyUI pick `fp8_e4m3fn` (not `..._fast`) or "
                "turn off fp8 fast mode; in torchao use a weight-only config (`Int8WeightOnlyConfig`, "
                "`Int4WeightOnlyConfig`) instead of Float8 dynamic activation"
            ),
            fix(
                "Or load an fp16/bf16 (or int8/int4) checkpoint instead of the FP8 one, e.g. drop vLLM/SGLang "
                "`--quantization fp8`"
            ),
            fix("Check the GPU's compute capability", "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/118703",
            "https://github.com/pytorch/pytorch/pull/118881",
            "https://github.com/Comfy-Org/ComfyUI/issues/5036",
            "https://github.com/kijai/ComfyUI-HunyuanVideoWrapper/issues/98",
            "https://github.com/vllm-project/vllm/pull/36854",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/Blas.cpp",
        ),
        examples=(
            "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or "
            "8.9, or ROCm MI300+",
            "RuntimeError: torch._scaled_mm is only supported on devices with compute capability >= 9.0)",
            "AssertionError: Float8 dynamic activation quantization is only supported on CUDA>=8.9 and MI300+",
        ),
        near_misses=(
            "RuntimeError: torch._grouped_mm is only supported on CUDA devices with compute capability = 9.0",
        ),
        notes="Until February 2024 (pytorch#118881) `_scaled_mm` accepted only 9.0, so an RTX 4090 failed with the "
        "'>= 9.0)' wording. torchao's check also misfires on AMD MI355 (not matched by its MI300 test). "
        "`torch._grouped_mm` (the near-miss) is a bf16 MoE kernel that needs Hopper: not an FP8 failure.",
    ),
    Signature(
        id="hardware-fp8-transformer-engine",
        family="hardware",
        title="Transformer Engine refused FP8 (fp8_autocast) on this GPU or CUDA",
        needles=("required for fp8 execution", "required for mxfp8 execution"),
        patterns=(
            r"Device compute capability [^\n]{1,40}required for (?:MX)?FP8 execution",
            r"(?:CublasLt|Cuda) version [^\n]{1,40}required for FP8 execution on Ada",
        ),
        cause="`te.fp8_autocast(enabled=True)` checks FP8 support once and asserts with the reason: FP8 needs "
        "compute capability 8.9 (Ada) or 9.0+ (Hopper), so an A100 or RTX 3090 (8.x) is refused; on Ada it "
        "also needs CUDA 12.1+ and cuBLASLt 12.1.3+; MXFP8 recipes need Blackwell (10.0+). Models and "
        "trainers built on TE with FP8 turned on hit it when run on older GPUs.",
        fixes=(
            fix(
                "Run without FP8 on this GPU: `te.fp8_autocast(enabled=False)` (or the framework's fp8 option "
                "off), training in bf16"
            ),
            fix("On an Ada GPU refused for the CUDA or cuBLASLt version, install a CUDA 12.1+ build of torch and TE"),
            fix("Otherwise use an H100/H200 or RTX 40xx/L40-class GPU for FP8"),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/NVIDIA/TransformerEngine/issues/1159",
            "https://github.com/NVIDIA/TransformerEngine/issues/15",
            "https://github.com/NVIDIA/TransformerEngine/pull/129",
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/pytorch/fp8.py",
        ),
        examples=(
            "   with te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe):\n"
            " assert fp8_available, reason_for_no_fp8\n"
            "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.",
            "AssertionError: Device compute capability 9.x required for FP8 execution.",
            "Cuda version 12.1 or higher required for FP8 execution on Ada.",
            "Device compute capability 10.0 or higher required for MXFP8 execution.",
        ),
        near_misses=(
            "AssertionError: Float8 dynamic activation quantization is only supported on CUDA>=8.9 and MI300+",
        ),
        notes="'9.x required' is TE before 0.7 (Ada support came with NVIDIA/TransformerEngine#129). ROCm TE says "
        "'gfx942 or higher required for FP8 execution', which the first pattern also matches.",
    ),
    Signature(
        id="hardware-fp8-triton-fp8e4nv",
        family="hardware",
        title="A Triton kernel needs fp8e4nv (torch.float8_e4m3fn), which this GPU does not have",
        needles=("fp8e4nv",),
        patterns=(
            r"type fp8e4nv not supported in this architecture",
            r"fp8e4nv data type is not supported on CUDA arch",
        ),
        cause="Triton compiles `float8_e4m3fn` as `fp8e4nv`, which it supports only from compute capability 8.9 "
        "(Ada, Hopper); on Ampere (A100, A10, RTX 30xx) and older it offers only fp8e4b15/fp8e5. vLLM and "
        "SGLang FP8 checkpoints (DeepSeek-V3/R1, Qwen3-FP8), their FP8 MoE and quantisation kernels, FP8 KV "
        "caches, and torch.compile'd casts to float8_e4m3fn all go through such kernels.",
        fixes=(
            fix("Use the bf16/fp16 (or AWQ/GPTQ int4/int8) variant of the model on this GPU instead of the FP8 one"),
            fix(
                "If it comes from torch.compile (a `triton_poi_fused__to_copy` kernel in the error), run that "
                "model without torch.compile, or keep its weights out of float8_e4m3fn"
            ),
            fix(
                "For FP8, use a GPU of compute capability 8.9 or newer",
                "nvidia-smi --query-gpu=name,compute_cap --format=csv",
            ),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/vllm-project/vllm/issues/17581",
            "https://github.com/vllm-project/vllm/issues/15336",
            "https://github.com/sgl-project/sglang/issues/5871",
            "https://github.com/kvcache-ai/ktransformers/issues/851",
            "https://github.com/triton-lang/triton/blob/main/python/triton/language/semantic.py",
        ),
        examples=(
            'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes are '
            "('fp8e4b15', 'fp8e5')\")",
            "!!! Exception during processing !!! CompilationError: at 1:0:\n"
            "def triton_poi_fused__to_copy_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"
            "^\n"
            'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes are '
            "('fp8e4b15', 'fp8e5')\")",
            "AssertionError: fp8e4nv data type is not supported on CUDA arch < 89",
        ),
        near_misses=(
            'ValueError("type fp8e5b16 not supported in this architecture. The supported fp8 dtypes are '
            "('fp8e4b15', 'fp8e4nv', 'fp8e5')\")",
        ),
        notes="The near-miss is the reverse case: a GPU that has fp8e4nv asked for an AMD-only fp8 flavour.",
    ),
]
