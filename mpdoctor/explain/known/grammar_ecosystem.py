"""The ecosystem's grammar for refused precision, recognised by shape rather than by one library's wording.

Inference engines, converters and trainers that nobody mined (TensorRT, Paddle-TRT, jetson-inference, whisper
front ends, attention kernels...) refuse a precision in the same three parts: a low-precision dtype word, a verb
of refusal, and what refuses it (the hardware/platform/device, the CPU, a kernel that takes only fp16/bf16):

* ``Half2 support requested on hardware without native FP16 support`` (TensorRT), ``platform does not have FP16
  support`` (jetson-inference), ``the hardware do not support FP16 speed up`` (Paddle-TRT): the device has no
  fast path for that precision;
* ``FP16 is not supported on CPU; using FP32 instead``: the CPU has no kernels for it;
* ``FLashAttention only surpport fp16 and bf16`` (misspelt as users retype it): a kernel that takes only half
  precision was handed fp32.

The explanation names the library when the line or the traceback names it and says it is the general one; the
library signatures (onnx, ctranslate2, fsdp, ...) rank above these, so a known library keeps its own advice.

The signatures learned with these general shapes live beside them, in the order they were learned (``known.MODULES``
keeps it): ecosystem_trainers.py, cpu_half_unquoted.py, ecosystem_toolchains.py and grammar_requirements.py (more
general shapes: a capability, a GPU, a half-only kernel, an unknown setting).
"""

from __future__ import annotations

from mpdoctor.explain.signature import Alternative, Signature, fix

# A low-precision word as logs write it (lower-cased): fp16, float16, half2, bf16, bfloat16, fp8, int8.
_LOW = r"(?:half2?|fp16|float16|bf16|bfloat16|fp8|float8|16-bit float)"
# What names the library in a line: a bracketed logger prefix, or a product name.
_LIBRARY = (
    r"\[(?P<library>tensorrt|trt|ctranslate2|paddle|onnxruntime|openvino|ncnn|mnn)\]",
    r"(?P<library>tensorrt|paddle(?:paddle)?|onnxruntime|openvino|jetson|tflite|ncnn|mnn|coreml|deepstream)",
)
_GENERAL_NOTE = (
    "The general explanation: recognised by the shape of the message (a low-precision word, a refusal, the "
    "hardware), not by one library's wording."
)

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-low-precision-refused",
        family="hardware",
        title="{library} says this hardware has no fast {dtype} (the general explanation)",
        needles=(
            "without native",
            "not have fp16",
            "not have bf16",
            "not have half",
            "not have fast",
            "not have native",
            "not support fp16",
            "not support fp8",
            "not support bf16",
            "not support half",
            "not support fast",
            "not support native",
            "n't have fp16",
            "n't support fp16",
        ),
        patterns=(
            r"hardware without native " + _LOW,
            # "<the device> does not have / support <a low precision>", for each thing that can lack it
            *(
                subject + r"(?:does not|doesn't|do not) (?:have|support) (?:fast |native )?" + _LOW
                for subject in ("platform ", "device ", " gpu ", "card ", "hardware ")
            ),
        ),
        details=(r"(?P<dtype>" + _LOW + r")", *_LIBRARY),
        defaults=(("library", "The library"),),
        cause="{library} was asked for reduced precision ({dtype}) on a device without a fast path for it: NVIDIA "
        "GPUs run fp16 fast from compute capability 5.3/6.0 (Jetson, P100) and 7.0+ with tensor cores, but not "
        "Maxwell or most Pascal GeForce/Quadro/P40 cards (sm_52, sm_61); bf16 needs 8.0+ (Ampere); fp8 8.9+. "
        "Most engines then fall back to fp32 and warn (the result is right, only slower), some refuse.",
        fixes=(
            fix(
                "Build or run in fp32 on this GPU: drop the fp16/half flag (TensorRT: no `--fp16`/"
                "`BuilderFlag.FP16`; Paddle: `precision=Precision.Float32`), or move to a GPU with tensor cores"
            ),
            fix(
                "Check what the GPU is",
                "nvidia-smi --query-gpu=name,compute_cap --format=csv",
            ),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/NVIDIA/TensorRT/issues/218",
            "https://github.com/PaddlePaddle/Paddle/issues/33740",
            "https://docs.nvidia.com/deeplearning/tensorrt/support-matrix/index.html#hardware-precision-matrix",
        ),
        examples=(
            "[TensorRT] WARNING: Half2 support requested on hardware without native FP16 support, performance will "
            "be negatively affected.",
            "I0623 15:40:04.192951 25583 engine.cc:80] You specify FP16 mode, but the hardware do not support FP16 "
            "speed up, use FP32 instead.",
        ),
        near_misses=(
            "hardware does not support tiling Y",
            "Cannot scan device when device is already been scanning, or existing hardware does not support bluetooth",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="cpu-half-precision-refused",
        family="cpu-half",
        title="{library} cannot run {dtype} on the CPU (the general explanation)",
        needles=("not supported on cpu", "not supported on the cpu", "is unsupported on cpu"),
        patterns=(r"not supported on (?:the )?cpu", r"unsupported on (?:the )?cpu"),
        # the refused thing must be a low precision: "sparse tensors are not supported on CPU" is not
        details=(
            r"(?P<dtype>" + _LOW + r")[^\n]{0,40}? (?:is|are) (?:not supported|unsupported) on (?:the )?cpu",
            r"(?P<library>whisper)",
            *_LIBRARY,
        ),
        defaults=(("library", "The library"),),
        cause="{library} was asked for {dtype} while running on the CPU, where it has no kernels (or no fast ones) "
        "for it, and it switched to fp32 or stopped. Usually the run was meant for a GPU: a CPU-only torch "
        "wheel, no driver, or the device left at its default. openai-whisper warns `FP16 is not supported on "
        "CPU; using FP32 instead` and transcribes in fp32.",
        fixes=(
            fix(
                "If a GPU was meant to run it, make torch see it: install a CUDA build of torch and pass the device "
                '(`whisper.load_model(name, device="cuda")`)',
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
            fix(
                "On the CPU, ask for fp32 and the warning goes: `model.transcribe(audio, fp16=False)` "
                "(`--fp16 False` on whisper's command line); elsewhere drop the fp16/half option"
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/foges/whisper-dictation/issues/9",
            "https://github.com/openai/whisper/blob/main/whisper/transcribe.py",
        ),
        examples=(
            "/whisper-dictation/venv/lib/python3.8/site-packages/whisper/transcribe.py:114: UserWarning: FP16 is "
            'not supported on CPU; using FP32 instead\n  warnings.warn("FP16 is not supported on CPU; using FP32 '
            'instead")',
        ),
        near_misses=("# since Focal Loss is not supported on CPU",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="attention-kernel-half-only",
        family="attention",
        title="An attention kernel that only takes fp16/bf16 was handed another dtype (the general explanation)",
        needles=(
            "only support",
            "only surpport",
            "only suport",
            *(f"only {low}" for low in ("fp16", "bf16", "float16", "bfloat16", "half")),
        ),
        # a half-only refusal (grammar_requirements.dtype-kernel-takes-only-half) whose subject is attention: the
        # kernel family decides the fixes (its dtype, or another attention backend), so it outranks the dtype reading.
        # transformers: "Flash Attention 2 only supports torch.float16 and torch.bfloat16 dtypes"; TransformerEngine:
        # "Flex Attention only supports FP16/BF16 tensors"; users retyping it: "only surpport fp16 and bf16"
        patterns=(
            r"(?:attention|attn)[^\n]{0,60}? only (?:supports?|surpport|suport) (?:torch\.)?(?:fp16|bf16|float16|"
            r"bfloat16|half)",
            r"(?:attention|attn)[^\n]{0,60}? only (?:fp16|bf16|float16|bfloat16|half)[^\n]{0,30}? (?:is|are) supported",
            # the words the other way round: "Flash Attention supports only fp16 and bf16 data type"
            r"(?:attention|attn)[^\n]{0,60}? (?:supports?|surpport|suport|accepts?) only (?:torch\.)?(?:fp16|bf16|"
            r"float16|bfloat16|half)",
        ),
        cause="A fused attention kernel (FlashAttention 2/3 and its ports, TransformerEngine's fused and flex "
        "attention) has only fp16/bf16 code and does not cast, and the query/key/value reached it in fp32: the model "
        "was loaded in the default float32, training ran without bf16/fp16 (or outside autocast), or a layer before "
        "attention (an upcast LayerNorm, an fp32 adapter) returned fp32. transformers checks the model's dtype when "
        '`attn_implementation="flash_attention_2"` is asked for: older releases raise `ValueError: Flash Attention '
        "2.0 only supports torch.float16 and torch.bfloat16 dtypes. You passed torch.float32`, newer ones log `... "
        "but the current dype in <Model> is torch.float32` when the model is loaded.",
        fixes=(
            fix(
                "Load the model in half precision (`torch_dtype=torch.bfloat16`, `dtype=` in transformers 5; fp16 on "
                'pre-Ampere GPUs) or run the step under `torch.autocast("cuda", dtype=torch.bfloat16)`; trainers: '
                "`bf16=True`"
            ),
            fix("Or cast right before the kernel: `q, k, v = (t.to(torch.bfloat16) for t in (q, k, v))`"),
            fix('Or use an attention that accepts fp32: `attn_implementation="sdpa"`'),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/Alpha-VLLM/LLaMA2-Accessory/issues/201",
            "https://github.com/Dao-AILab/flash-attention/blob/main/csrc/flash_attn/flash_api.cpp",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_utils.py",
            "https://github.com/huggingface/transformers/issues/41875",
            "https://github.com/rllm-org/rllm/issues/11",
            "https://github.com/open-compass/VLMEvalKit/issues/1139",
        ),
        examples=(
            "RuntimeError：FLashAttention only surpport fp16 and bf16 data type",
            "Flash Attention 2 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in "
            "T5GemmaForConditionalGeneration is torch.float32.",
            "Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in "
            "Qwen2ForCausalLM is torch.float32.",
            "ValueError: Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes. You passed "
            "torch.float32, this might lead to unexpected behaviour.",
        ),
        near_misses=(
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
            # a mask's dtypes, not the kernel's precision
            "AssertionError: attention_mask only supports bool or float masks",
        ),
        alternatives=(
            Alternative(
                cause="Only transformers' load-time warning: the weights are fp32 on purpose (FSDP or DeepSpeed mixed "
                "precision, a Trainer with `bf16=True`) and the forward runs under autocast, so attention gets bf16 "
                "and nothing fails",
                tell="The warning alone, in a run that goes on, is this one and harmless; a ValueError when loading, or "
                "flash-attn's own `FlashAttention only support fp16 and bf16 data type` at the first forward, is fp32 "
                "reaching the kernel",
            ),
        ),
        rank=-1,
        notes=_GENERAL_NOTE + " FlashAttention's exact wording is attention.py's signature, which ranks above.",
    ),
]
