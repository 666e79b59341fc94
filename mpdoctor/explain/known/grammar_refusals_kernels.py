"""The ecosystem's general shapes for what a low precision's kernels need (see grammar_ecosystem.py; the feature,
GPU and torch a low precision needs are in grammar_refusals.py). Mined from the libraries beside torch
(tests/explain_ecosystem), read by shape:

* ``... divisible by 16`` / ``a multiple of 128`` beside fp8/fp4: the block sizes of low-precision kernels;
* ``... requires the `kernels` package``, ``deep_gemm is not installed``, ``requires Triton``: the package that
  provides the low-precision kernels is missing or built for another torch.

Each names the library from the line or the traceback and says it is the general explanation; a library's own
signature, and the other general shapes, rank above.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.known.grammar_refusals import _DTYPE
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="quantization-low-precision-block-sizes",
        family="quantization",
        title="{library}'s {dtype} kernels need sizes in multiples of their block (the general explanation)",
        needles=(
            "divisible by",
            "multiple of",
            "must be even for fp4",
            "block_size=",
            "x128 ",
            "not compatible for",
            "not compatible with fp",
        ),
        patterns=(
            r"divisible by ?[{(0-9a-z]",
            # "Tensor dimensions are not compatible for FP8 execution: (2048 % 8 != 0, 767 % 16 != 0)"
            r"(?:dimensions|dims|shapes|sizes) (?:are |is )?not compatible (?:for|with) (?:fp8|float8|fp4|nvfp4|mxfp)",
            r"multiple of ?[{(0-9a-z]",
            r"must be even for fp4 packing",
            r"requires block_size ?= ?[0-9]{2,3}",
            r"x128 (?:blocks|lhs scales|rhs scales)",
        ),
        # the line must name a low precision: a size check of anything else is a shape error
        details=(_DTYPE, terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="Low-precision matmuls run on tensor cores in tiles: fp8 GEMMs (cuBLASLt, TransformerEngine) need the "
        "flattened leading dimensions to be multiples of 8 and the last of 16; block-scaled formats (MXFP8, NVFP4, "
        "DeepGEMM's 128x128 fp8 blocks) need multiples of their block (16, 32, 128), and packed fp4 keeps two "
        "values a byte. A layer, a token count or a shard of this run has a size that does not fit, so {library} "
        "refuses {dtype} for it (or warns and slows down).",
        fixes=(
            fix(
                "Pad the sizes to the multiple (sequence length or token count, hidden and intermediate sizes, the "
                "per-rank shard), or choose a world size that splits them into whole blocks"
            ),
            fix("Or keep the layers whose sizes do not fit in bf16 and run only the others in {dtype}"),
        ),
        library_fixes=terms.BLOCK_SIZES,
        checks=(),
        sources=(
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/pytorch/utils.py",
            "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/plugins/precision/transformer_engine.py",
            "https://docs.nvidia.com/cuda/cublas/index.html#cublasltmatmul",
            "https://github.com/NVIDIA/TransformerEngine/issues/688",
        ),
        examples=(
            "ValueError: FP8 execution requires the product of all dimensions except the last to be divisible by 8 "
            "and the last dimension to be divisible by 16, but got tensor with dims=[7, 1024]",
            "RuntimeError: NVFP4 only supports weight shape with last 2 dims divisible by 16, got torch.Size([100, 30])",
            "AssertionError: Start index 3 must be even for FP4 packing",
            "AssertionError: Tensor dimensions are not compatible for FP8 execution: (2048 % 8 != 0, 767 % 16 != 0)",
        ),
        near_misses=(
            "ValueError: Logits should have twice the batch size of the input ids, the first half of batches "
            "corresponding to the conditional inputs, and the second half of batches corresponding to the "
            "unconditional inputs. Got batch size 4 for the logits and 4 for the input ids.",
        ),
        rank=-2,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-low-precision-backend-missing",
        family="framework",
        title="{library}'s {dtype} path needs a package missing here or built for another torch (the general explanation)",
        needles=(
            "is not installed",
            "could not be imported",
            "failed to import",
            "kernel unavailable",
            "failed to load the",
            "was not found on your system",
            "is required for",
            "to be available",
            "requires the `",
            "requires the flash-attn",
            "requires triton",
            "requires kernels",
            "requires fbgemm",
            "requires accelerate",
            "requires torch to be installed",
            "requires pytorch to be installed",
            "is missing required",
            "does not expose",
            "missing required",
            "your version of `",
        ),
        patterns=(
            r"is not installed",
            r"could not be imported",
            r"failed to import one of its",
            r"kernel unavailable",
            r"failed to load the [a-z0-9 -]{1,40}kernel",
            r"was not found on your system",
            r"is required for [^\n]{0,60}?\. install ",
            r"requires [a-z0-9_]{2,20} to be available",
            r"requires the `[a-z0-9_-]{2,30}` package",
            r"requires the flash-attn package",
            r"requires triton",
            r"requires kernels",
            r"requires fbgemm",
            r"requires accelerate",
            r"requires (?:py)?torch to be installed",
            r"kernel is missing required",
            r"does not expose `",
            r"your version of `[a-z0-9_-]{1,30}` does not support",
        ),
        # the line must name a low precision or a low-precision backend
        details=(_DTYPE, terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="{library} runs {dtype} through an optional package that provides its kernels (`kernels` from the "
        "Hub, Triton, fbgemm-gpu, DeepGEMM, MSLK, flash-attn 3, MS-AMP, torch itself for a conversion), and that "
        "package is not installed here, or it is but was built for another torch or CUDA and does not import.",
        fixes=(
            fix(
                "Install the package the message names, built for this torch and CUDA (`pip install kernels`, "
                "`pip install triton`, `pip install fbgemm-gpu`; DeepGEMM and MSLK from their repositories), and "
                "see what is installed",
                'python -c "import torch; print(torch.__version__, torch.version.cuda)"',
            ),
            fix(
                "Or take a path that does not need it: dequantize to bf16 on load, another backend for the precision "
                "(the message often names one), or bf16 instead of {dtype}"
            ),
        ),
        library_fixes=terms.BACKEND,
        checks=("STACK001",),
        sources=(
            "https://github.com/huggingface/transformers/blob/main/src/transformers/quantizers/quantizer_mxfp4.py",
            "https://github.com/pytorch/ao/blob/main/torchao/prototype/moe_training/kernels/",
        ),
        examples=(
            "ImportError: NVFP4 quantization requires the `kernels` package. Install a compatible version "
            "(0.11.0 <= version < 0.12), for example with `pip install kernels==0.11.0`.",
            "ImportError: DeepGEMM backend selected for FP8 blockwise MoE grouped GEMM, but optional dependency "
            "`deep_gemm` is not installed. Install DeepGEMM from https://github.com/deepseek-ai/DeepGEMM or select "
            "KernelPreference.EMULATED.",
            "ImportError: MS-AMP was not found on your system. Please ensure that MS-AMP is available or choose "
            "`'te'` as the backend for FP8 mixed precision training.",
        ),
        near_misses=(
            "ValueError: bitsandbytes is not installed but it seems that the model has been loaded in 4bit precision, "
            "something went wrong make sure to install bitsandbytes with `pip install bitsandbytes`.",
        ),
        rank=-2,
        notes=_GENERAL_NOTE + " hardware-fp8-needs-transformer-engine is Accelerate's own wording for fp8.",
    ),
]
