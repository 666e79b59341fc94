"""Apple's MPS backend and the dtypes it lacks: bf16 before macOS 14 (or on Intel Macs), float64 never, and
single ops without a half-precision MPS kernel. The model or pipeline asked for a dtype the Mac cannot run.

Also what MPSGraph says, in its compiler's words, when the model hands one op two dtypes: that is a dtype mismatch of
the model's tensors (family dtype), not a kernel compiler's own type error."""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.signature import Signature, fix

FP16_ON_MPS = fix(
    "Load the model in fp16 instead of bf16 on a Mac: `torch_dtype=torch.float16` (or "
    '`model.to("mps", torch.float16)`); fall back to `torch.float32` if it produces NaNs'
)

# Half precision as a message writes it (lower-cased): bf16, fp16, half, or bfloat16/float16 not printed as
# `torch.float16`, which is how a message's hole prints whatever dtype it was handed (`does not support captured
# buffer dtype {cap_dtype}`), not a refusal of that precision.
_HALF_WORD = r"(?:bf16|fp16|half|bfloat16(?<!torch\.bfloat16)|float16(?<!torch\.float16)(?<!bfloat16))"

SIGNATURES: list[Signature] = [
    Signature(
        id="mps-bf16-unsupported",
        family="mps",
        title="bf16 on Apple MPS: this macOS/torch (or an Intel Mac) has no bfloat16 on the GPU",
        needles=(
            "bfloat16 is not supported on mps",
            "convert bfloat16 to the mps backend",
            "mps bfloat16 is only supported on macos",
        ),
        patterns=(
            r"BFloat16 is not supported on MPS",
            r"Trying to convert BFloat16 to the MPS backend but it does not have support for that dtype",
            r"MPS BFloat16 is only supported on MacOS 14 or newer",
        ),
        cause="The model or pipeline was loaded with `torch_dtype=torch.bfloat16` (many checkpoints default to it) "
        "and moved to `mps`. Apple's Metal added bfloat16 in macOS 14 (Sonoma), and torch uses it only from "
        "2.3 on Apple-silicon Macs; older torch says `Trying to convert BFloat16 to the MPS backend`, newer "
        "torch on macOS 13 or an Intel/AMD Mac says `BFloat16 is not supported on MPS`.",
        fixes=(
            FP16_ON_MPS,
            fix(
                "Or upgrade to macOS 14+ with torch 2.3+ on an Apple-silicon Mac, where bf16 runs on MPS",
                "pip install -U torch",
            ),
        ),
        checks=("PREC001",),
        sources=(
            "https://github.com/oobabooga/textgen/issues/5216",
            "https://github.com/pytorch/pytorch/issues/78168",
            "https://github.com/pytorch/torchchat/issues/616",
            "https://github.com/pytorch/pytorch/pull/119641",
        ),
        examples=(
            "TypeError: BFloat16 is not supported on MPS",
            "TypeError: Trying to convert BFloat16 to the MPS backend but it does not have support for that dtype.",
            '    File "/opt/homebrew/Caskroom/miniconda/base/lib/python3.12/site-packages/torch/nn/modules/module.py",'
            " line 1159, in convert\n"
            "      return t.to(\n"
            "  TypeError: MPS BFloat16 is only supported on MacOS 14 or newer",
        ),
    ),
    Signature(
        id="mps-float64-unsupported",
        family="mps",
        title="float64 on Apple MPS: the Metal backend has no double precision",
        needles=("mps framework doesn't support float64",),
        patterns=(r"Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64",),
        cause="A tensor (usually numpy data, which defaults to float64, or a `.double()` in the code) was moved to "
        "`mps`, or an `mps` tensor converted to float64. MPS has no float64 at all, on any macOS.",
        fixes=(
            fix(
                'Convert to float32 before moving to the Mac\'s GPU: `torch.from_numpy(a).float().to("mps")`, or '
                "`np.asarray(a, dtype=np.float32)`"
            ),
            fix("Where float64 is really needed (a numerically sensitive step), do that step on the CPU"),
        ),
        checks=(),
        sources=("https://github.com/pytorch/pytorch/issues/122602",),
        examples=(
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
            "Please use float32 instead.",
        ),
    ),
    Signature(
        id="mps-op-no-half-kernel",
        family="mps",
        title="An op has no bf16/fp16 kernel on MPS in this torch",
        needles=('_mps" not implemented for',),
        patterns=(r"_mps\" not implemented for '(?:BFloat16|Half)'",),
        cause="bf16 (or fp16) itself works on this Mac, but one op used by the model has no MPS kernel for it in "
        "the installed torch (torch adds MPS half kernels op by op).",
        fixes=(
            FP16_ON_MPS,
            fix(
                "Upgrade torch (newer releases add MPS kernels), or set PYTORCH_ENABLE_MPS_FALLBACK=1 to run the "
                "missing op on the CPU",
                "pip install -U torch",
            ),
        ),
        checks=(),
        sources=("https://github.com/lllyasviel/stable-diffusion-webui-forge/pull/1264",),
        examples=("RuntimeError: \"arange_mps\" not implemented for 'BFloat16'",),
    ),
    Signature(
        id="mps-low-precision-refused",
        family="mps",
        title="This op has no {dtype} path on Apple MPS in this torch (the general explanation)",
        needles=(
            "supported on mps",
            "supported on the mps",
            "supported by mps",
            "supported by the mps",
            "mps does not support",
            "mps doesn't support",
            "mps backend does not support",
            "mps backend doesn't support",
        ),
        # a refused low precision whose place is MPS: "ConvTranspose 3D with BF16 or FP16 types is not supported on
        # MPS". The place decides the fixes (the Mac's dtypes, torch's MPS fallback), so it outranks the op-support
        # reading of the same refusal (grammar_refusals.op-support-low-precision-feature-refused)
        patterns=(
            _HALF_WORD + r"[^\n:]{0,120}?\bnot (?:yet )?supported (?:on|by) (?:the )?mps",
            r"mps (?:backend )?(?:does not|doesn't) (?:yet )?support [^\n]{0,60}?" + _HALF_WORD,
        ),
        details=(r"(?P<dtype>" + _HALF_WORD + ")",),
        cause="torch's MPS backend implements ops dtype by dtype, and this one refuses {dtype} on the Mac's GPU in "
        "the installed torch (3-D transposed convolution in fp16/bf16, for one): the model or the pipeline runs in "
        "half precision on `mps`, or autocast handed the op half precision.",
        fixes=(
            fix(
                "Run that op (or the model) in float32 on MPS: `.float()` its module and input, or load the model with "
                "`torch_dtype=torch.float32`; keep half precision for the rest if it runs"
            ),
            fix(
                "Or upgrade torch (MPS gains half-precision ops release by release), or set "
                "PYTORCH_ENABLE_MPS_FALLBACK=1 to run ops MPS lacks on the CPU",
                "pip install -U torch",
            ),
        ),
        checks=("PREC001",),
        sources=(
            "https://github.com/pytorch/pytorch/issues/160332",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/mps/operations/Convolution.mm",
        ),
        examples=(
            '  File "/Users/REDACTED/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 1344, in '
            "forward\n"
            "    return F.conv_transpose3d(\n"
            "           ^^^^^^^^^^^^^^^^^^^\n"
            "RuntimeError: ConvTranspose 3D with BF16 or FP16 types is not supported on MPS",
        ),
        near_misses=(
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
            "Please use float32 instead.",
            "NotImplementedError: Conv3D is not supported on MPS",
        ),
        rank=-1,
    ),
    Signature(
        id="dtype-mpsgraph-operands-differ",
        family="dtype",
        title="An op on Apple MPS got operands of two dtypes (MPSGraph: requires the same element type)",
        needles=("requires the same element type for all operands", "requires the same type for all operands"),
        # MPSGraph compiles the model's own ops: an `mps.*` op meeting f16 and f32 is the model's tensors in two
        # dtypes, not a kernel compiler's type error (compiler-ir-needs-one-type, Triton's IR)
        patterns=(r"'mps\.[a-z0-9_]{1,40}' op requires the same (?:element )?type for all operands",),
        cause="On `mps`, torch runs the model's ops as an MPSGraph, which checks that an op's operands share one "
        "element type before it runs. One operand is fp16 (or bf16) and the other fp32 (the note below the error "
        "shows them: `tensor<...xf32>, tensor<...xf16>`): part of the model, a buffer or the input was left in "
        "float32 while the rest was cast to half precision (a node or pipeline casting its weights, not its "
        "inputs), or the reverse.",
        fixes=(
            fix(
                "Give both sides one dtype: cast the input to the model's dtype (`x = x.to(next(model.parameters())"
                ".dtype)`), or run the model in float32 on the Mac (ComfyUI: the node's precision fp32, or "
                "`--force-fp32`)"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=("https://github.com/kijai/ComfyUI-DepthAnythingV2/issues/25",),
        examples=(
            "(mpsFileLoc): /AppleInternal/Library/BuildRoots/d187755d-b9a3-11ef-83e5-aabfac210453/Library/Caches/"
            "com.apple.xbs/Sources/MetalPerformanceShadersGraph/mpsgraph/MetalPerformanceShadersGraph/Core/Files/"
            "MPSGraphUtilities.mm:233:0: error: 'mps.add' op requires the same element type for all operands and "
            "results",
        ),
        near_misses=(
            "error: 'llvm.fmul' op requires the same type for all operands and results\n"
            "Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
        ),
    ),
]
