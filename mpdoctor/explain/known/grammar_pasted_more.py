"""More general shapes of what users paste from the stack around torch (issue 38, held-out round 6's learn half),
read by shape, never by one thread's phrase:

* a runtime told a graph input's type and given another (ONNX Runtime from any host language: ``Unexpected input
  data type. Actual: (tensor(float)) , expected: (tensor(float16))``), one of the two a low precision;
* a minimum compute capability an app or a library states for a low precision (``Minimum capability: 90. Current
  capability: 86`` beside ``fp8``; ``FP8 models require a GPU with Compute Capability 8.9 or higher``);
* a library's kernels built without this GPU's architecture (rocBLAS without the Tensile library of this gfx
  target, an ``Unsupported architecture`` assertion in a kernel runner);
* fp8 tensors that reach an op beside another dtype (``Promotion for Float8 Types is not supported``): stored fp8
  weights or scales used without dequantizing them;
* torch 1.x's CPU-half wording (``_thnn_conv2d_forward not supported on CPUType for Half``);
* an inference builder that finds no format of a plugin or layer for the network's data types (TensorRT);
* a packed 4-bit weight (a column of bytes) reaching a plain matmul.

Each says it is the general explanation; a library's own signature ranks above.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.known.kernel_image import ARCH_CHECKS
from mpdoctor.explain.signature import Signature, fix

# A low precision named on the line (lower-cased), as apps and libraries spell it.
_LOW_NAMED = (
    r"(?P<dtype>nvfp4|mxfp[468]|fp8|float8(?:_e[0-9a-z]{1,10})?|fp4|float4|e4m3|e5m2|bfloat16|bf16|float16|fp16|"
    r"int8 tensor cores|half(?![a-z]))"
)
_SOURCE_ORT_TYPES = "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/core/framework/utils.cc"

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-runtime-input-type-unexpected",
        family="dtype",
        title="{library}: the model's input is {b} and it was fed {a} (the general explanation)",
        needles=("input data type",),
        patterns=(
            # ONNX Runtime, from Python, C#, Java or C++: the graph's declared input type against the fed one
            r"(?:unexpected|invalid|wrong|mismatched) input data type[^\n]{0,30}?actual:? ?\(?tensor\(",
        ),
        # two different floating types, one low: "Actual: (tensor(int64)), expected: (tensor(int32))" is no precision
        details=(
            r"actual:? ?\(?tensor\((?P<a>[a-z0-9]{4,10})\)[^\n]{0,20}?expected:? ?\(?tensor\((?P<b>[a-z0-9]{4,10})\)",
            terms.LIBRARY,
        ),
        defaults=(("library", "ONNX Runtime"),),
        cause="An exported model declares the type of each input, and the session was fed another: a model "
        "exported or converted in fp16 (`--half`, onnxconverter-common's `convert_float_to_float16`) takes float16 "
        "inputs, while the code feeding it builds float32 arrays (or the other way round: half inputs to an fp32 "
        "export, as a `half=True` predict does). The runtime does not cast graph inputs.",
        fixes=(
            fix(
                "Feed the type the model declares, {b}: `x.astype(np.{b})` in Python, a tensor of that type in "
                "C#/Java; read it from the session (`sess.get_inputs()[0].type`)"
            ),
            fix(
                "Or, where a model converted to fp16 is fed float32, convert it so that its inputs and outputs stay "
                "float32 (`convert_float_to_float16(model, keep_io_types=True)`), or export in fp32"
            ),
            fix("With Ultralytics, pass `half=True` only to a model exported with `half=True`, and `half=False` else"),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/hsysfan/YOLOv5-Seg-OnnxRuntime/issues/4",
            "https://github.com/Passer1072/RookieAI_yolov8/issues/56",
            _SOURCE_ORT_TYPES,
        ),
        examples=(
            "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: '[ErrorCode:InvalidArgument] Unexpected input data type. "
            "Actual: (tensor(float)) , expected: (tensor(float16))'",
            "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT "
            ": Unexpected input data type. Actual: (tensor(float16)) , expected: (tensor(float))",
        ),
        near_misses=(
            "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : "
            "RUNTIME_EXCEPTION : Non-zero status code returned while running Conv node. Name:'/patch_embed/stages/"
            "stages.0/blocks/blocks.0/mlp/fc1",
        ),
        rank=-1,
        notes=_GENERAL_NOTE + " Types in ONNX's spelling (`tensor(float)` is fp32); the two must differ and one be "
        "low precision, so an int32/int64 input mismatch stays silent.",
    ),
    Signature(
        id="hardware-capability-minimum-for-precision",
        family="hardware",
        title="{library} runs {dtype} only from compute capability {needed}; this GPU is older",
        needles=("minimum capability", "minimum compute capability", "with compute capability", "capability of at"),
        patterns=(
            r"minimum (?:compute )?capability(?: is)?:? ?[0-9]",
            r"(?:require|requires|need|needs|with) (?:a |an )?(?:gpu|gpus|device|card|nvidia gpu) with (?:a )?"
            r"compute capability (?:of )?(?:at least )?[0-9]",
            r"compute capability of at least [0-9]",
        ),
        # the refusal must be about a low precision on the line: a capability minimum of anything else is not
        details=(
            _LOW_NAMED,
            r"(?:minimum (?:compute )?capability(?: is)?:? ?|compute capability (?:of )?(?:at least )?)"
            r"(?P<needed>[0-9][0-9.]{0,4})",
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"), ("needed", "newer than this GPU's")),
        cause="{library} checks the GPU's compute capability before running {dtype} and this GPU is older: fp8 "
        "matmuls need 8.9 (Ada: RTX 40xx, L4, L40) or 9.0 (Hopper: H100; printed `90` by vLLM), fp4/NVFP4 10.0 "
        "(Blackwell), bf16 and FlashAttention 2 need 8.0 (Ampere). The refusal is about the GPU, not the install.",
        fixes=(
            fix("Check what the GPU is", "nvidia-smi --query-gpu=name,compute_cap --format=csv"),
            fix(
                "On this GPU use a precision it runs: a bf16/fp16 checkpoint instead of the fp8/fp4 one, or the "
                "library's weight-only fallback where it has one (a newer vLLM runs fp8 weights on Ampere via Marlin)"
            ),
            fix("Or run on a GPU that has it (fp8: L4/L40/H100; fp4: B200)"),
        ),
        checks=("GPU002", "GPU003"),
        sources=(
            "https://github.com/vllm-project/vllm/issues/4327",
            "https://github.com/1038lab/ComfyUI-QwenVL/issues/28",
            "https://developer.nvidia.com/cuda-gpus",
        ),
        examples=(
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 90. "
            "Current capability: 86.",
            "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). Your GPU's "
            "capability is 8.6. Please select a non-FP8 model.",
        ),
        near_misses=(
            "AssertionError: Unsupported compute capability. Supported: 9.x, 10.x",
            "INFO:__main__:GPU Device Capability: 8",
        ),
        rank=-1,
        notes=_GENERAL_NOTE + " A minimum stated as a number after `minimum capability` or `a GPU with compute "
        "capability`; hardware-capability-required-for-precision reads `compute capability >= X`.",
    ),
    Signature(
        id="kernel-image-library-built-without-this-gpu",
        family="kernel-image",
        title="{library} was built without kernels for this GPU's architecture",
        needles=("tensilelibrary", "unsupported architecture", "unsupported gpu architecture", "unsupported sm"),
        patterns=(
            # rocBLAS looks for the Tensile kernels of the GPU's gfx target and finds no file
            r"(?:cannot|could not|can't|unable to) (?:read|load|find|open) [^\n]{0,200}?tensilelibrary",
            r"tensilelibrary[^\n]{0,60}?(?:no such file|not found|does not exist)",
            # a kernel runner's own check of the architecture it was compiled for
            r"assertion failed: unsupported (?:gpu )?architecture",
            # a TensorRT plugin's kernels without this SM: "Assertion failed: Unsupported SM."
            r"assertion failed: unsupported sm\b",
            r"unsupported (?:gpu )?architecture[^\n]{0,200}?(?:kernels?/|fmha|attention|gemm|cutlass)",
        ),
        details=(r"(?P<library>rocblas|hipblaslt|tensorrt.llm|tensorrt|flash.?attn|xformers|vllm)?",),
        defaults=(("library", "The library"),),
        cause="GPU libraries ship compiled kernels for a list of architectures (gfx targets on ROCm, SM versions "
        "on CUDA). This GPU's is not in the list of the installed build: rocBLAS has no TensileLibrary file for "
        "the gfx target (consumer and older AMD GPUs are often left out of ROCm wheels), or a kernel runner "
        "(TensorRT-LLM's fused fp16 attention, a TensorRT plugin: `Assertion failed: Unsupported SM`) was compiled "
        "without this SM. The fp16/bf16 kernels are the ones that go first.",
        fixes=(
            fix(
                "On AMD, see the GPU's gfx target; an unlisted one can often run as the nearest listed one "
                "(`HSA_OVERRIDE_GFX_VERSION=10.3.0` for RDNA2-class, `11.0.0` for RDNA3)",
                "rocminfo | grep -m1 gfx",
            ),
            fix(
                "Install or build the library for this architecture (TensorRT-LLM: "
                "`build_wheel.py --cuda_architectures` with this GPU's SM)"
            ),
            fix("Or run on a GPU the build lists"),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/ROCm/rocBLAS/issues/1339",
            "https://github.com/NVIDIA/TensorRT-LLM/issues/95",
            "https://github.com/NVIDIA/TensorRT/issues/1487",
        ),
        examples=(
            "rocBLAS error: Cannot read /home/bc250/Desktop/stable-diffusion-webui/venv/lib/python3.10/site-packages/"
            "torch/lib/rocblas/library/TensileLibrary.dat: No such file or directory",
            "  what():  [TensorRT-LLM][ERROR] Assertion failed: Unsupported architecture (/src/tensorrt_llm/cpp/"
            "tensorrt_llm/kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp:87)",
            "Half2 support requested on hardware without native FP16 support, performance will be nagatively "
            "affected.\nAssertion failed: Unsupported SM.",
        ),
        near_misses=("AssertionError: Unsupported compute capability. Supported: 9.x, 10.x",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-float8-not-dequantized",
        family="quantization",
        title=(
            "fp8 tensors met another dtype in an ordinary op ({a} and {b}): stored fp8 values used without "
            "dequantizing them"
        ),
        needles=("promotion for float8",),
        patterns=(r"promotion for float8 types is not supported",),
        # torch names the two dtypes in either order: `promote Float8_e4m3fn and BFloat16`, `promote Float and Float8_e5m2`
        details=(
            r"promote (?P<a>float8_e[0-9a-z]{1,10}) and (?P<b>[a-z0-9_]{4,20})|promote (?P<b2>[a-z0-9_]{4,20}) and "
            r"(?P<a2>float8_e[0-9a-z]{1,10})",
        ),
        defaults=(("a", "float8"), ("b", "another dtype")),
        cause="torch does not promote fp8 with any other dtype: fp8 is a storage format, multiplied only through "
        "scaled matmuls (`torch._scaled_mm`, a library's fp8 linear) or after dequantizing (`w.to(torch.bfloat16) "
        "* scale`). Weights or scales loaded from an fp8 checkpoint (or quantized to fp8) reached a plain op beside "
        "bf16/fp32 activations: a code path (a draft model, an adapter, a custom layer, a compiled graph) that the "
        "quantization method does not cover.",
        fixes=(
            fix(
                "Dequantize where the fp8 tensor enters plain code: `w.to(x.dtype) * w_scale` (or the library's "
                "dequantize helper), or route it through the library's fp8 linear"
            ),
            fix(
                "Or turn off the feature that takes the uncovered path (speculative decoding, a LoRA on the fp8 "
                "layer), or load a bf16 checkpoint"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/Kosinkadink/ComfyUI-AnimateDiff-Evolved/issues/461",
            "https://github.com/sgl-project/sglang/issues/38817",
            "https://github.com/pytorch/pytorch/blob/main/c10/core/ScalarType.cpp",
        ),
        examples=(
            "RuntimeError: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and "
            "BFloat16",
        ),
        near_misses=("RuntimeError: prelu: Type promoting not supported. Got Half and Float",),
        rank=0,
        notes=_GENERAL_NOTE + " Ranks above dtype-two-dtypes-meet: an fp8 operand is a quantized value, not a "
        "tensor left in another precision.",
    ),
    Signature(
        id="cpu-half-legacy-cputype",
        family="cpu-half",
        title="{op} has no {dtype} kernel on the CPU (torch 1.x wording)",
        needles=("cputype for",),
        patterns=(r"not (?:supported|implemented) (?:on|for) cputype for (?:half|bfloat16)",),
        details=(
            r"cputype for (?P<dtype>half|bfloat16)",
            r"error: (?P<op>[a-z_][a-z0-9_]{0,60}) (?:is )?not (?:supported|implemented) (?:on|for) cputype",
        ),
        defaults=(("op", "An op"),),
        cause="torch 1.x named the CPU backend `CPUType`: {op} had no {dtype} kernel there (convolutions, most "
        "matmuls and norms were fp32-only on the CPU). A model or input converted with `.half()` ran on the CPU: "
        "a script written for CUDA (`--half`, YOLO's `model.half()`) with no GPU visible, or the device left at "
        "its default.",
        fixes=(
            fix(
                "Use fp16 only on CUDA: `if device.type != 'cpu': model.half()` (YOLO scripts: drop `--half` on the "
                "CPU)",
                'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"',
            ),
            fix("On the CPU run in fp32, or bf16 autocast on a torch recent enough to have CPU bf16 kernels"),
        ),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=("https://github.com/pytorch/pytorch/issues/23377",),
        examples=("RuntimeError: _thnn_conv2d_forward not supported on CPUType for Half",),
        near_misses=("# since Focal Loss is not supported on CPU",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="dtype-builder-no-format-for-data-types",
        family="dtype",
        title="{library}'s builder has no implementation of a layer for the network's data types",
        needles=("formats consistent with", "implementation consistent with", "implementations consistent with"),
        patterns=(
            r"(?:could not|couldn't|cannot|can't|unable to) find any (?:supported )?(?:formats?|implementations?) "
            r"consistent with (?:the )?(?:input/output|input|output) data ?types?",
        ),
        details=(r"(?P<library>tensorrt|plugin_v2|plugin)?",),
        defaults=(("library", "The inference engine"),),
        cause="A layer or plugin of the network has kernels for some data types only (an RMSNorm or attention "
        "plugin in fp16/bf16 but not fp32, or the reverse), and the engine was built with another precision for "
        "it: the builder finds no format of that layer for the input/output types it is given.",
        fixes=(
            fix(
                "Build in a precision the plugin has (TensorRT-LLM: `--dtype float16`, and the plugin's own dtype "
                "flag such as `--gpt_attention_plugin float16` matching it)"
            ),
            fix(
                "Or set that layer's precision and output type explicitly (`layer.precision`, "
                "`layer.set_output_type`) with strongly typed/obey-precision flags, or drop the plugin for that layer"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/NVIDIA/TensorRT-LLM/issues/896",
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/work-with-plugins.html",
        ),
        examples=(
            "ChatGLMHeadModel/layers/0/pre_norm/PLUGIN_V2_Rmsnorm_0: could not find any supported formats consistent "
            "with input/output data types",
        ),
        near_misses=(
            "[E] 10: [optimizer.cpp::nvinfer1::builder::cgraph::LeafCNode::computeCosts::3728] Error Code 10: "
            "Internal Error (Could not find any implementation for node {ForeignNode[onnx::MatMul_1081 + (Unnamed "
            "Layer* 40) [Shuffle]...Div_158]}.)",
        ),
        rank=-1,
        notes=_GENERAL_NOTE + " `Could not find any implementation for node` (tactics, workspace memory) is not it: "
        "this one names the data types.",
    ),
    Signature(
        id="quantization-packed-weight-in-plain-matmul",
        family="quantization",
        title="A packed 4-bit weight ({packed}) reached a plain matmul without being dequantized",
        needles=("mat1 and mat2 shapes",),
        patterns=(
            r"mat1 and mat2 shapes cannot be multiplied \([0-9]{1,7}x[0-9]{1,7} and (?:1x[0-9]{6,10}|[0-9]{6,10}x1)\)",
        ),
        details=(r"and (?P<packed>1x[0-9]{6,10}|[0-9]{6,10}x1)\)",),
        cause="bitsandbytes stores a 4-bit weight packed, two values a byte, as one column of uint8 (a 4096x4096 "
        "layer becomes 8388608x1). Code that runs `F.linear(x, layer.weight)` on it directly, instead of the "
        "quantized layer's forward, multiplies by that column: an adapter library too old or too new for the "
        "installed bitsandbytes (PEFT's LoRA wrapper without the Linear4bit path), a custom layer, or a model "
        "moved or cast after quantization.",
        fixes=(
            fix(
                "Upgrade PEFT, bitsandbytes and transformers together (the LoRA wrapper must know Linear4bit)",
                "pip install -U peft bitsandbytes transformers",
            ),
            fix(
                "In custom code dequantize first: `bnb.functional.dequantize_4bit(w, w.quant_state)`, or call the "
                "quantized layer itself"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/taishan1994/qlora-chinese-LLM/issues/2",
            "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/bitsandbytes/nn/modules.py",
        ),
        examples=("RuntimeError: mat1 and mat2 shapes cannot be multiplied (1536x4096 and 1x8388608)",),
        near_misses=("RuntimeError: mat1 and mat2 shapes cannot be multiplied (154x768 and 1024x320)",),
        rank=-1,
        notes=_GENERAL_NOTE + " A weight that is a single row or column of a million-odd values is a packed one.",
    ),
]
