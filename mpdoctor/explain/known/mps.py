"""Apple's MPS backend and the dtypes it lacks: bf16 before macOS 14 (or on Intel Macs), float64 never, and
single ops without a half-precision MPS kernel. The model or pipeline asked for a dtype the Mac cannot run."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

FP16_ON_MPS = fix(
    "Load the model in fp16 instead of bf16 on a Mac: `torch_dtype=torch.float16` (or "
    '`model.to("mps", torch.float16)`); fall back to `torch.float32` if it produces NaNs'
)

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
]
