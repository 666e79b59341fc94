"""More of the ecosystem's general shapes (see grammar_ecosystem.py): what a low precision requires, recognised by
shape rather than by one library's wording: a GPU of a given compute capability, a GPU at all, a kernel that
takes only half precision, a precision setting the library does not know.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_settings as settings_terms
from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-capability-required-for-precision",
        family="hardware",
        title="{library} needs a newer GPU for {dtype}: it requires compute capability {needed}",
        needles=("compute capability >=", "compute capability of", "compute capability >"),
        patterns=(r"compute capability (?:>=|>|of) ?[(\w]",),
        # the line must name a low precision (or a fused kernel of one): a capability check of anything else is not
        details=(
            r"(?P<dtype>fp8|float8|fp4|nvfp4|mxfp4|mxfp8|bf16|bfloat16|fp16|float16|half|int8 tensor cores|"
            r"flash ?attention\w{0,3}|tensor cores)",
            r"compute capability (?:>=|>|of) ?(?P<needed>\(?[0-9][0-9., ]{0,6}\)?)",
            r"(?P<library>transformers|accelerate|deepspeed|vllm|transformer.engine|torchao|bitsandbytes|xformers)",
        ),
        defaults=(("library", "The library"), ("needed", "newer than this GPU's")),
        cause="{library} checked the GPU's compute capability before running {dtype} and this GPU is older: fp8 "
        "matmuls need 8.9 (Ada: RTX 40xx, L4, L40) or 9.0 (Hopper: H100), fp4/NVFP4 10.0 (Blackwell), bf16 and "
        "FlashAttention 2 need 8.0 (Ampere: A100, RTX 30xx), tensor-core fp16 7.0 (Volta). Some libraries then "
        "fall back (dequantize to bf16, use another kernel) and warn; others stop.",
        fixes=(
            fix("Check what the GPU is", "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
            fix(
                "On this GPU use a precision it runs: bf16 or fp16 weights instead of an fp8/fp4 checkpoint, fp16 "
                'instead of bf16 before Ampere, `attn_implementation="sdpa"` instead of FlashAttention 2'
            ),
            fix("Or run on a GPU that has it (fp8: L4/L40/H100; fp4: B200)"),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/huggingface/transformers/blob/main/src/transformers/quantizers/quantizer_finegrained_fp8.py",
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
            "https://developer.nvidia.com/cuda-gpus",
        ),
        examples=(
            "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 9.0 (e.g H100)",
            "UserWarning: The current device has compute capability of (8, 6) which is insufficient for FP8 mixed "
            "precision training (requires a GPU Hopper/Ada Lovelace or higher, compute capability of 8.9 or "
            "higher). Will use FP16 instead.",
        ),
        near_misses=("RuntimeError: Blocked attention requires CUDA compute capability >= 8.0",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="cpu-half-precision-needs-gpu",
        family="cpu-half",
        title="{library} runs {dtype} only on a GPU, and this run put it on the CPU",
        needles=(
            "requires --use_gpu",
            "is for gpu only",
            "cannot run in cpu",
            "without accelerator",
            "accelerator is not detected",
            "requires a gpu",
            "requires a cuda gpu",
            "is only supported on gpu",
            # the ecosystem's wordings of the same (tests/explain_ecosystem): a model or pipeline on the CPU
            "is needed for",
            "requires a cuda `device_map`",
            "cannot run with `cpu`",
            "device_map that contains a cpu",
            "device_map that contains a disk",
            "does not support cpu",
            "implementation in cpu",
            "model on cpu and have a",
            "requires cuda tensors",
            "inference on cpu requires",
            "--use_gpu",
            "does not seem to be correctly installed",
            "please call .cuda() or .to(device)",
        ),
        patterns=(
            # CTranslate2's C++ ops: "FP16 LayerNorm is only supported on GPU"
            r"is only supported on gpu",
            r"requires --use_gpu",
            r"is for gpu only",
            r"cannot run in cpu",
            r"without accelerator",
            r"accelerator is not detected, cannot perform low precision",
            r"requires a gpu",
            r"requires a cuda gpu",
            r"(?: gpu| xpu|accelerator)[a-z /]{0,20} (?:is|are) needed for",
            r"requires a cuda `?device_map",
            r"cannot run with `?cpu`? device",
            r"device_map that contains a (?:cpu|disk)",
            r"does not support cpu (?:or disk )?offload",
            r"implementation in cpu",
            r"model on cpu and have a (?:cuda|gpu|xpu)",
            r"requires cuda tensors",
            r"inference on cpu requires",
            r"requires [a-z_ -]{0,30}--use_gpu",
            r"does not seem to be correctly installed",
            # bitsandbytes quantizes a 4-bit layer when it is moved to the GPU
            r"please call \.cuda\(\) or \.to\(device\)",
        ),
        details=(
            r"(?P<dtype>fp16|float16|half|bf16|bfloat16|fp8|nvfp4|mxfp4|fp4|mixed precision|low precision)",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"),),
        library_fixes=settings_terms.DEVICE,
        cause="{library} has no CPU path for {dtype} (most CPU kernels have no fp16 arithmetic, fp8/fp4 kernels are "
        "GPU-only), and the model or this step is on the CPU: no GPU was found (a CPU-only torch wheel, no driver, "
        'CUDA_VISIBLE_DEVICES empty), or none was asked for (no `--use_gpu`, no `device_map`/`.to("cuda")`, a '
        "device map that puts layers on the CPU or disk).",
        fixes=(
            fix(
                "If a GPU was meant to run it, make torch see it and pass the device (`--use_gpu` for ONNX Runtime's "
                "converters, `device_map=\"cuda\"`, `accelerator='gpu'`)",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
            fix(
                "On the CPU, run in fp32: drop the fp16/`-p fp16`/fp8 option (CTranslate2 and faster-whisper: "
                '`compute_type="int8"` or `"float32"` on the CPU)'
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/python/tools/transformers/models/gpt2/convert_to_onnx.py",
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/engine.py",
        ),
        examples=(
            "AssertionError: fp16 requires --use_gpu",
            "SystemError: Cannot use fp16 without accelerator.",
            "RuntimeError: FP16 LayerNorm is only supported on GPU",
            "Pipelines loaded with `dtype=torch.float16` cannot run with `cpu` device. It is not recommended to move "
            "them to `cpu` as running them will fail. Please make sure to use an accelerator to run the pipeline in "
            "inference, due to the lack of support for`float16` operations on this device in PyTorch. Please, remove "
            "the `dtype=torch.float16` argument, or use another device for inference.",
            "RuntimeError: No GPU or XPU found. A GPU or XPU is needed for FP8 quantization.",
            "AssertionError: fp16 requires --optimize_onnx --use_gpu",
        ),
        near_misses=(
            "ValueError: this sample requires a GPU to be fast",
            "FileNotFoundError: model requires --use_gpu",
            "ValueError: You can't train a model that has been loaded in 8-bit or 4-bit precision with CPU or disk "
            "offload. If you want train the 8-bit or 4-bit model in CPU, please install bitsandbytes with multi-backend",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="dtype-kernel-takes-only-half",
        family="dtype",
        title="A fused kernel that takes only some precisions ({dtype}) got another dtype (the general explanation)",
        needles=(
            "only support",
            "only supports",
            "only fp16",
            "only bf16",
            "only bfloat16",
            "only float16",
            "supports bfloat16",
            "supports float16",
            "requires fp16 or",
            "requires bf16 or",
            "requires bfloat16",
            "requires float16",
        ),
        patterns=(
            r"only supports? (?:fp16|bf16|float16|bfloat16|torch\.float16|torch\.bfloat16|half)",
            r"only (?:fp16|bf16|float16|bfloat16|half)(?: and (?:fp16|bf16|float16|bfloat16|fp32|float32))? (?:is|are) supported",
            r"supports (?:bfloat16|float16)(?:, (?:bfloat16|float16))? and (?:float16|bfloat16|float32) (?:rows|tensors|inputs)",
            r"requires (?:fp16|bf16|float16|bfloat16)(?: or (?:fp16|bf16|float16|bfloat16))? (?:activations|hidden states|inputs|tensors)",
        ),
        details=(
            r"(?P<dtype>(?:fp16|bf16|float16|bfloat16|half)(?:,? (?:and|or) (?:fp16|bf16|float16|bfloat16|fp32|float32))*)",
            r"(?P<library>deepspeed|transformers|flash.?attn|xformers|apex|triton|vllm|bitsandbytes)",
        ),
        defaults=(("library", "The library"),),
        cause="A fused kernel (a fused optimizer, RMSNorm/RoPE, an attention or GEMM kernel) has code only for "
        "{dtype}, and the tensor reached it in another dtype: fp32 when the model was loaded in the default "
        "float32 or the step ran outside autocast, or bf16 where only fp16 exists.",
        fixes=(
            fix(
                "Give the kernel the dtype it takes: load the model in it (`torch_dtype=torch.bfloat16`), or run the "
                'step under `torch.autocast("cuda", dtype=torch.bfloat16)`; trainers: `bf16=True`'
            ),
            fix("Or switch the fused path off for fp32 runs (the library's non-fused/eager option)"),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/ops/adam/fused_adam.py",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/finegrained_fp8.py",
        ),
        examples=(
            "RuntimeError: FusedAdam only support fp16, bf16 and fp32.",
            "RuntimeError: fused RMSNorm supports bfloat16 and float16 tensors, but weight has dtype torch.float32.",
            "NotImplementedError: Only fp16 and bf16 are supported",
        ),
        near_misses=("This tokenizer only supports fast mode", "ValueError: only float32 inputs are supported"),
        rank=-2,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-precision-setting-unknown",
        family="framework",
        title="The precision setting's value is not one the library knows",
        needles=(
            "mixed_precision mode:",
            "mixed precision:",
            "mixed_precision` should be one of",
            "mixed precision policy:",
        ),
        patterns=(
            r"mixed_precision mode: ",
            r"invalid mixed precision(?: policy)?: ",
            r"mixed_precision` should be one of",
        ),
        cause="The mixed-precision option got a value outside its list: Accelerate takes `no`, `fp16`, `bf16` or "
        "`fp8` (its config file, `--mixed_precision`, `ACCELERATE_MIXED_PRECISION`), a typo or another "
        "library's spelling (`16-mixed`, `float16`, `True`) is refused before anything runs.",
        fixes=(
            fix(
                "Use one of the values the error lists, e.g. `--mixed_precision bf16`; see what Accelerate reads",
                "accelerate env",
            ),
        ),
        checks=(),
        sources=("https://github.com/huggingface/accelerate/blob/main/src/accelerate/utils/dataclasses.py",),
        examples=("ValueError: Unknown mixed_precision mode: float16. Choose between ['no', 'fp8', 'fp16', 'bf16']",),
        near_misses=("ValueError: Unknown mode: float16",),
    ),
]
