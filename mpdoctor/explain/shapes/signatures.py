"""What the general reader says for each family: one signature per family, told as the general explanation.

These are read by shape (``reader.py``), never by needles: they answer only when no known signature recognised
the input, and their titles say so. Their causes are what every library's failure of that family has in common;
their fixes are the general ones, with a library's own terms first when the traceback or the line names it
(``Signature.library_fixes``, the same tables the grammar signatures use).
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_settings as settings, _library_terms as terms
from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.shapes.examples import EXAMPLES
from mpdoctor.explain.signature import Signature, fix

_GENERAL = " (the general explanation: read by the message's shape, not from a known wording)"
_SOURCE = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/Dispatch.h"


def _general(family: str, title: str, cause: str, fixes: tuple, checks: tuple = (), library_fixes: tuple = ()):
    examples = EXAMPLES.get(family, ())
    return Signature(
        id=f"general-{family}",
        family=family,
        title=title + _GENERAL,
        needles=(),
        patterns=(),
        cause=cause,
        fixes=fixes,
        checks=checks,
        sources=tuple(dict.fromkeys(source for source, _ in examples)) or (_SOURCE,),
        examples=tuple(message for _, message in examples),
        library_fixes=library_fixes,
        notes="Answered by mpdoctor/explain/shapes/reader.py when no signature with needles recognised the input.",
    )


_FP32_AROUND = fix(
    "Run that step in float32 and cast back; the rest keeps its precision: `y = op(x.float()).to(x.dtype)`, or keep "
    "that module out of the low precision (autocast's `enabled=False` around it, or the library's list of modules "
    "kept in fp32)"
)
_NEWER = fix(
    "Check whether a newer release of the library that raised it supports this dtype (its changelog), and the "
    "versions installed",
    "python -m pip list",
)

SIGNATURES: dict[str, Signature] = {
    s.family: s
    for s in (
        _general(
            "dtype",
            "Two tensors of different precisions met where one dtype is needed: {dtypes}",
            "An operation, a kernel or a runtime received inputs of two dtypes (one of them fp16/bf16/fp8) where it "
            "needs one: a model converted by hand (`.half()`, `.to(torch.bfloat16)`) fed fp32 inputs, a tensor "
            "created inside forward in the default dtype, a gradient or buffer kept in another dtype, or an exported "
            "graph whose inputs were not converted with its weights.",
            (
                fix(
                    "Give both sides one dtype at the point named: cast the odd tensor (`x = x.to(other.dtype)`), or "
                    "convert the inputs the same way as the model (`inputs.half()` for a `.half()` model)"
                ),
                fix(
                    "Or keep the weights in fp32 and run the forward under autocast, which casts each op's inputs "
                    'itself: `with torch.autocast("cuda", dtype=torch.bfloat16): ...`'
                ),
                DTYPE_TRACE,
            ),
            checks=("PREC007",),
        ),
        _general(
            "op-support",
            "An operation has no {dtype} implementation where it ran",
            "The op, kernel or runtime node that raised this has no implementation for that low precision (on this "
            "device or in this version): it is not the model that is wrong, only that one step cannot run in it.",
            (_FP32_AROUND, _NEWER),
            library_fixes=terms.FEATURE,
        ),
        _general(
            "cpu-half",
            "{dtype} was refused on the CPU",
            "The CPU paths of most libraries have no fp16 kernels (and bf16 ones only on recent CPUs); a model or "
            "setting meant for a GPU ran on the CPU: no GPU was visible, or the device was not passed.",
            (
                fix(
                    "Run it on the GPU it was meant for (check that torch sees one), or use float32 on the CPU: "
                    '`model.float()`, the library\'s CPU precision setting (`compute_type="int8"` or `"float32"` '
                    "for CTranslate2, `fp16=False` for whisper, no `--half` for a CPU export)",
                    'python -c "import torch; print(torch.cuda.is_available())"',
                ),
                _FP32_AROUND,
            ),
            checks=("TORCH005", "TORCH009"),
            library_fixes=settings.DEVICE,
        ),
        _general(
            "mps",
            "{dtype} is not supported by the MPS backend for this operation",
            "Apple's MPS backend implements fewer dtypes than CUDA: fp8 not at all, bf16 only on recent macOS, and "
            "some ops only in fp32; MPSGraph also refuses an op whose operands differ in dtype where CUDA would "
            "promote them.",
            (
                fix(
                    "Use float16 or float32 on MPS (no fp8; bf16 needs macOS 14+ and a recent torch), and give an "
                    "op's operands one dtype: `x.to(y.dtype)`"
                ),
                fix(
                    "Let ops MPS lacks run on the CPU instead of failing",
                    "export PYTORCH_ENABLE_MPS_FALLBACK=1",
                ),
            ),
        ),
        _general(
            "hardware",
            "This GPU has no {dtype} support",
            "The precision asked for needs a newer GPU: bf16 and tf32 need compute capability 8.0 (Ampere), fp8 "
            "8.9/9.0 (Ada, Hopper), fp4 10.0 (Blackwell); on ROCm each format needs its gfx architecture. The "
            "library checked the GPU, or the kernel failed on it.",
            (
                fix(
                    "Use a precision this GPU has: fp16 instead of bf16 before Ampere (with a loss scaler), bf16 "
                    "instead of fp8 before Ada/Hopper; `mpdoctor check` measures what each visible GPU really runs",
                    "mpdoctor check --select GPU,PREC",
                ),
            ),
            checks=("GPU002", "GPU003"),
            library_fixes=terms.ARCHITECTURE,
        ),
        _general(
            "kernel-image",
            "A compiled kernel was not built for this GPU's architecture",
            "The library's binary kernels were compiled for other GPU architectures (or need an instruction this GPU "
            "lacks), so the kernel cannot be launched here: a wheel built without this GPU's `sm_XX`/`gfxXXXX`, or a "
            "kernel that targets a newer architecture.",
            (
                fix(
                    "Install a build that includes this GPU's architecture (the wheel for your CUDA/ROCm version), or "
                    'build it with the architecture listed: `TORCH_CUDA_ARCH_LIST="8.6" pip install ...` / '
                    "`PYTORCH_ROCM_ARCH=gfx90a`; `mpdoctor check` names the GPU's capability and the torch build's "
                    "architectures",
                    "mpdoctor check --select TORCH007,PREC002",
                ),
            ),
            checks=("TORCH007", "PREC002"),
        ),
        _general(
            "attention",
            "An attention kernel refused these inputs",
            "Fused attention kernels (FlashAttention, xFormers/cutlass memory-efficient, SDPA's backends) take only "
            "fp16/bf16 inputs, and each needs a GPU generation (FlashAttention 2: Ampere or newer); handed fp32, "
            "another dtype or an older GPU, they refuse, or find no kernel to launch.",
            (
                fix(
                    "Give the attention fp16/bf16 inputs (load with `torch_dtype=torch.bfloat16`, or run it under "
                    "autocast), or choose an implementation that takes what you have: "
                    '`attn_implementation="sdpa"` or `"eager"` in transformers'
                ),
                fix(
                    "On an older GPU, disable the fused kernel (FlashAttention needs compute capability 8.0+)",
                    "mpdoctor check --select PREC006",
                ),
            ),
            checks=("PREC006",),
        ),
        _general(
            "quantization",
            "A quantization method or its kernel refused this dtype",
            "Quantized kernels (GPTQ/AWQ/Marlin, bitsandbytes, fp8/int8 GEMMs, CTranslate2's compute types) take "
            "their activations, scales and outputs in fixed dtypes, often fp16 only or bf16 only; the model's dtype "
            "or a scale tensor's dtype is not the one the method was built for.",
            (
                fix(
                    "Load the model in the dtype the method takes (`torch_dtype=torch.float16` for most GPTQ/AWQ "
                    "kernels, bf16 for fp8 and torchao), and keep scales in it (`scales.to(x.dtype)`)"
                ),
                fix("Or pick a quantization method or compute type this dtype and GPU support"),
            ),
            library_fixes=terms.DTYPE_LIST,
        ),
        _general(
            "compiler",
            "A compiler (Triton, Inductor, a kernel JIT) failed on mixed dtypes",
            "Generated kernels are typed: a Triton/Inductor kernel that mixes fp16/bf16 with fp32 values without a "
            "cast, or a conversion the backend cannot emit for this GPU, fails while the kernel is compiled rather "
            "than when it runs.",
            (
                fix(
                    "Run the failing region eagerly to confirm and move on: `torch.compiler.disable` on the function, "
                    "or `torch._dynamo.config.suppress_errors = True`; then upgrade torch/triton, whose codegen is "
                    "where these are fixed",
                    "python -m pip list | grep -i -E '^(torch|triton) '",
                ),
                fix("In a hand-written Triton kernel, cast one side explicitly: `acc += tl.dot(a, b).to(tl.float32)`"),
            ),
        ),
        _general(
            "framework",
            "A trainer's or converter's precision settings were refused",
            "The precision was set in two places that disagree (a precision flag and a plugin, a config and the "
            "model's dtype, a converter's typing mode and a precision list), or set to a value the library does not "
            "take: the library stops before any kernel runs.",
            (
                fix(
                    "Set the precision once, in the library's own setting, and remove the other (a plugin, a second "
                    "config key, a dtype argument); use a value from the library's list of precisions"
                ),
            ),
            library_fixes=settings.CONFLICTS + settings.SETTINGS,
        ),
        _general(
            "overflow",
            "A value left float16's range: an overflow, or a loss scale collapsed to its floor",
            "float16 holds values up to 65504: a constant such as -1e10 or -inf written into an fp16 tensor (attention "
            "masks, `masked_fill`), activations or gradients that grow past it, or a loss scaler that kept halving "
            "its scale because every step overflowed, until it reached its floor.",
            (
                fix(
                    "Write masking constants in the tensor's own range: `x.masked_fill(mask, torch.finfo(x.dtype).min)` "
                    "instead of -1e10 or -1e9"
                ),
                fix(
                    "When the loss scale collapses: find where values leave the range with mpdoctor's numerics watch "
                    "(`mpdoctor numerics train.py`), keep that module in fp32, lower the learning rate or clip "
                    "gradients, or train in bf16, whose range is fp32's",
                ),
            ),
            checks=("PREC001",),
        ),
        _general(
            "numerics",
            "A low precision produced NaN or infinite values",
            "The model's values overflowed or lost their precision in fp16 (a VAE or UNet in half, an attention "
            "block, a norm), and the NaNs came out as black images, a failed NaN check, or a cast to uint8 of "
            "invalid values.",
            (
                fix(
                    "Run the part that overflows in fp32 (diffusers: `pipe.vae.to(torch.float32)` or "
                    "`upcast_vae()`; web UIs: `--no-half-vae`), or use bf16, whose range is fp32's"
                ),
                fix("Find the first module that produces them: `mpdoctor numerics train.py`"),
            ),
            checks=("PREC003",),
        ),
        _general(
            "scaler",
            "torch's AMP API is missing or a loss scaler was misused",
            "The code uses an AMP entry point (`torch.autocast`, `torch.amp.GradScaler`, bf16 support checks) that "
            "the installed torch does not have, or a GradScaler out of its order: gradients unscaled twice between "
            "updates, or fp16 gradients (a model converted with `.half()`) handed to a scaler that only unscales "
            "fp32 ones.",
            (
                fix(
                    "Keep the model's parameters in fp32 and let autocast run the forward in fp16: a GradScaler "
                    "unscales fp32 gradients only (no `.half()` on a model trained with one); call `unscale_` at "
                    "most once per `update()`"
                ),
                fix(
                    "Or upgrade torch to the version the code was written for, or use the older spelling "
                    "(`torch.cuda.amp.autocast()`, `torch.cuda.amp.GradScaler()`)",
                    'python -c "import torch; print(torch.__version__)"',
                ),
            ),
            checks=("TORCH005",),
            library_fixes=settings.LOSS_SCALE,
        ),
        _general(
            "apex",
            "NVIDIA apex is installed without what the library needs",
            "apex is installed without its compiled extensions (`--cpp_ext`, `--cuda_ext`), or is another package "
            "named apex, so the library that uses it falls back to slow Python paths or fails.",
            (
                fix(
                    "Reinstall apex from NVIDIA's repository with its extensions, against the installed torch",
                    'pip install -v --no-build-isolation --config-settings "--build-option=--cpp_ext" '
                    '--config-settings "--build-option=--cuda_ext" git+https://github.com/NVIDIA/apex',
                ),
                fix("Or uninstall apex where torch's native AMP does the job: most libraries no longer need it"),
            ),
            checks=("APEX001", "APEX002", "APEX003"),
        ),
    )
}

# The notice ``unnamed.py`` gives for NaNs in a text that names no precision: how to tell, not a family decided.
UNNAMED_NON_FINITE = Signature(
    id="general-non-finite-precision-unnamed",
    family="numerics",
    title="NaN or infinite values, and nothing in the text says the run was in fp16 or bf16 (a notice: the text "
    "alone cannot tell whether the precision caused them)",
    needles=(),
    patterns=(),
    cause="Values turned NaN or infinite. In an fp16 or AMP run the most common cause is a value leaving float16's "
    "range (its largest is 65504) in one module, forward or backward; in an fp32 run it is a learning rate too high, "
    "NaNs or infinities in the data, or a log, square root or division of zero. Nothing in the lines read names the "
    "precision the run used, so mpdoctor does not decide which.",
    fixes=(
        fix(
            "If the run uses fp16 or AMP: run it once under mpdoctor's numerics watch, which names the first module "
            "whose values overflow, turn NaN or underflow, forward or backward",
            "mpdoctor numerics train.py",
        ),
        fix(
            "Tell the precision's part in one comparison: run the same steps in bf16 (its range is fp32's) or fp32; "
            "NaNs that go away were the precision's"
        ),
        fix(
            "If they stay in fp32: check the inputs for NaNs (`torch.isfinite(batch).all()`), lower the learning rate, "
            "and let autograd name the op whose backward made the first NaN: "
            "`torch.autograd.set_detect_anomaly(True)`"
        ),
    ),
    checks=(),
    sources=(
        "https://github.com/pytorch/pytorch/blob/main/torch/autograd/anomaly_mode.py",
        "https://github.com/pytorch/pytorch/blob/main/torch/amp/grad_scaler.py",
    ),
    examples=(
        "Loss is nan, stopping training",
        "Epoch 3 | step 1200 | loss: nan | grad_norm: nan",
    ),
    near_misses=(
        "Loss is nan, stopping training (fp16 run, model.half())",
        "ValueError: cannot convert float NaN to integer",
    ),
    notice=True,
    notes="Answered by mpdoctor/explain/shapes/unnamed.py when nothing else was recognised; never a recognised failure.",
)

__all__ = ["SIGNATURES", "UNNAMED_NON_FINITE"]
