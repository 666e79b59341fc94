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
"""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.signature import Signature, fix

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
        needles=("only support fp16", "only supports fp16", "only surpport fp16", "only suport fp16"),
        patterns=(r"attention[^\n]{0,20}? only (?:supports?|surpport|suport) fp16 and bf16",),
        cause="A fused attention kernel (FlashAttention and its ports) has only fp16/bf16 code, and the query/"
        "key/value reached it in fp32: the model was loaded in the default float32, training ran without "
        "bf16/fp16 (or outside autocast), or a layer before attention (an upcast LayerNorm, an fp32 adapter) "
        "returned fp32.",
        fixes=(
            fix(
                "Load the model in half precision (`torch_dtype=torch.bfloat16`, fp16 on pre-Ampere GPUs) or run "
                'the step under `torch.autocast("cuda", dtype=torch.bfloat16)`; trainers: `bf16=True`'
            ),
            fix("Or cast right before the kernel: `q, k, v = (t.to(torch.bfloat16) for t in (q, k, v))`"),
            fix('Or use an attention that accepts fp32: `attn_implementation="sdpa"`'),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/Alpha-VLLM/LLaMA2-Accessory/issues/201",
            "https://github.com/Dao-AILab/flash-attention/blob/main/csrc/flash_attn/flash_api.cpp",
        ),
        examples=("RuntimeError：FLashAttention only surpport fp16 and bf16 data type",),
        near_misses=("RuntimeError: FlashAttention only supports Ampere GPUs or newer.",),
        rank=-1,
        notes=_GENERAL_NOTE + " FlashAttention's exact wording is attention.py's signature, which ranks above.",
    ),
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
    Signature(
        id="cpu-half-op-unquoted",
        family="cpu-half",
        title="{op}: an fp16 op without a CPU kernel (torch before 1.7 words it without quotes)",
        needles=("_cpu not implemented for 'half", "_cpu not implemented for 'bfloat16"),
        patterns=(r"_cpu not implemented for '(?:half|bfloat16)'",),  # quoted, it is `_cpu" not implemented`
        details=(r"(?<![a-z0-9_])(?P<op>[a-z0-9_]{1,60}_cpu) not implemented for '(?P<dtype>half|bfloat16)'",),
        cause="A {dtype} tensor reached a CPU kernel ({op}) that has no version for it: torch before 1.7 built "
        "almost no CPU op for Half (x86 CPUs have no fp16 arithmetic), and words the error without quotes. A "
        "`.half()` model, or a step of it such as YOLOv5's conv/bn fusing, ran on the CPU.",
        fixes=(
            fix(
                "On the CPU, compute in float32: `.float()` the model (and its inputs) before the op; YOLOv5: drop "
                "`--half` when the device is the CPU"
            ),
            fix(
                "If a GPU was meant to run it, make torch see it and move the model there",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/ultralytics/yolov5/issues/830",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/Dispatch.h",
        ),
        examples=(
            'yolov5/utils/torch_utils.py", line 119, in fuse_conv_and_bn\n'
            "    w_bn = torch.diag(bn.weight.div(torch.sqrt(bn.eps + bn.running_var)))\n"
            "RuntimeError: sqrt_vml_cpu not implemented for 'Half'",
        ),
        near_misses=("RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",),
        rank=-1,
        notes="The quoted wording is cpu_half.py's and grammar.py's; this one only claims the unquoted form.",
    ),
    Signature(
        id="hardware-amdgpu-no-bf16-instruction",
        family="hardware",
        title="The compiler found no bf16 instruction for this AMD GPU (RDNA 1/2 have no bf16 arithmetic)",
        needles=("cannot select: intrinsic %llvm.amdgcn.",),
        patterns=(r"cannot select: intrinsic %llvm\.amdgcn\.[a-z0-9_.]{0,60}bf16",),
        cause="A kernel compiled for this AMD GPU (a Triton kernel, under Unsloth, vLLM or torch.compile) uses a "
        "bf16 instruction the GPU does not have: RDNA 1/2 (gfx10xx, RX 5000/6000) have no native bf16 "
        "arithmetic, yet ROCm's `torch.cuda.is_bf16_supported()` answers True, so libraries pick bf16. LLVM "
        "aborts the process, often with no Python traceback.",
        fixes=(
            fix("Run in fp16 on this GPU: load with `torch_dtype=torch.float16` (trainers: `fp16=True`, `bf16=False`)"),
            fix(
                "Check the GPU's architecture",
                'python -c "import torch; print(torch.cuda.get_device_properties(0).gcnArchName)"',
            ),
        ),
        checks=("GPU002",),
        sources=(
            "https://github.com/unslothai/unsloth/pull/7682",
            "https://rocm.docs.amd.com/projects/HIP/en/docs-6.3.2/reference/hardware_features.html",
        ),
        examples=("LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.fdot2.bf16.bf16",),
    ),
    Signature(
        id="framework-tensorrt-rtx-precision-flag",
        family="framework",
        title="TensorRT-RTX refuses precision builder flags: its networks take their precision from the model",
        needles=("condition: !config.getflag(builderflag::k",),
        patterns=(r"condition: !config\.getflag\(builderflag::k(?:fp16|bf16|int8|fp8)\)",),
        cause="TensorRT-RTX builds strongly typed networks: every tensor keeps the type the ONNX model gives it, "
        "and the weak-typing builder flags of TensorRT (`BuilderFlag.FP16`, `BF16`, `INT8`, `FP8`) are refused "
        "by the parameter check.",
        fixes=(
            fix("Drop `config.set_flag(trt.BuilderFlag.FP16)` (and `--fp16` from the build command)"),
            fix(
                "To run in fp16, give TensorRT-RTX an fp16 model: `float16.convert_float_to_float16(model, "
                "keep_io_types=True)` (onnxconverter-common), or export the torch model in fp16"
            ),
        ),
        checks=(),
        sources=("https://github.com/NVIDIA/TensorRT-RTX/issues/2", "https://github.com/NVIDIA/TensorRT-RTX"),
        examples=(
            "[06/12/2025-19:58:17] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 3: API Usage Error "
            "(Parameter check failed, condition: !config.getFlag(BuilderFlag::kFP16). )",
        ),
    ),
    Signature(
        id="framework-accelerate-recipe-needs-mixed-precision",
        family="framework",
        title="An Accelerate precision recipe ({recipe}) was passed without mixed_precision='{mp}'",
        needles=("requires setting `mixed_precision=",),
        patterns=(r"object requires setting `mixed_precision='(?:fp8|fp16|bf16)'`",),
        details=(
            r"`(?P<recipe>[a-z0-9_]{1,40}kwargs)` object requires setting `mixed_precision='(?P<mp>[a-z0-9]{2,4})'`",
        ),
        cause="`Accelerator(kwargs_handlers=[{recipe}(...)])` configures {mp} training, but the Accelerator's "
        "`mixed_precision` (its argument, the `accelerate config` file or `--mixed_precision`) is something "
        "else, so Accelerate refuses the pair.",
        fixes=(
            fix('Pass the precision with the recipe: `Accelerator(mixed_precision="{mp}", kwargs_handlers=[...])`'),
            fix("Or drop the {recipe} handler when {mp} is not meant", "accelerate env"),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/accelerate/issues/3086",
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
        ),
        examples=(
            "deepspeed and fp8, ValueError: Passing in a `FP8RecipeKwargs` object requires setting "
            "`mixed_precision='fp8'`.",
        ),
    ),
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
        title="{library} runs {dtype} only on a GPU, and this run has none",
        needles=(
            "requires --use_gpu",
            "is for gpu only",
            "cannot run in cpu",
            "without accelerator",
            "accelerator is not detected",
            "requires a gpu",
            "requires a cuda gpu",
            "is only supported on gpu",
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
        ),
        details=(
            r"(?P<dtype>fp16|float16|half|bf16|bfloat16|fp8|nvfp4|mxfp4|mixed precision|low precision)",
            r"(?P<library>onnxruntime|deepspeed|transformers|accelerate|bitsandbytes|ctranslate2)",
        ),
        defaults=(("library", "The library"),),
        cause="{library} has no CPU path for {dtype} (most CPU kernels have no fp16 arithmetic, fp8/fp4 kernels are "
        "GPU-only), and it found no GPU: a CPU-only torch wheel, no driver, no `--use_gpu`/device given, or "
        "CUDA_VISIBLE_DEVICES empty.",
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
        ),
        near_misses=(
            "ValueError: this sample requires a GPU to be fast",
            "FileNotFoundError: model requires --use_gpu",
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
