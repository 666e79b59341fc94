"""The general shapes of what users paste from the stack around torch (issue 38, held-out round 5's learn half):
not the libraries' raise strings but what reaches a terminal, read by shape. Here the dtypes themselves:

* tensors that must share one dtype and do not (``query and key must have the same dtype``, ``output tensor must
  have the same type as input tensor``, ``Mismatched dtypes: ...``, ``expected storage to be of type float32, but
  is of type bfloat16``), whatever the dtypes' holes print;
* a collective that cannot carry a low precision (``Input tensor data type is not supported for NCCL process
  group: BFloat16``, ``Unconvertible NCCL type BFloat16``);
* a quantization method refusing the activation dtype (``torch.bfloat16 is not supported for quantization method
  awq``, ``Blockwise quantization only supports 16/32-bit floats, but got torch.bfloat16``).

The same round's precision settings a framework refuses are in grammar_pasted_settings.py, and what the stack
under the run cannot do (an old torch, the GPU, a kernel compiler, a ROCm or ONNX Runtime kernel) in
grammar_pasted_stack.py. Each says it is the general explanation; a library's own signature ranks above.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

# A low precision as a collective, a quantization method or a builder names it (lower-cased lines); where a pattern
# starts with it, each spelling is at least four literal characters.
_LOW = r"(?:bfloat16|bf16|float16|fp16|half|float8|fp8)"
_LOW_START = r"(?:bfloat16|bf16|float16|fp16|half|float8|fp8 |fp8_|torch\.bfloat16|torch\.float16)"
# No integer, boolean, complex or fp64 dtype named on the line: "self.dtype = Int and source.dtype = Float" is no
# mixed-precision failure (a lookahead from the line's start: it consumes nothing).
_NO_OTHER_DTYPE = (
    r"^(?![^\n]{0,300}?(?:\bint(?:8|16|32|64)?\b|\blong\b|\bbool\b|\bbyte\b|\bshort\b|\buint8\b|\bcomplex|"
    r"\bdouble\b|float64))"
)
_SOURCE_C10D = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/NCCLUtils.hpp"

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-tensors-must-share-a-dtype",
        family="dtype",
        title="{library}: tensors that must share one dtype got two (the general explanation)",
        needles=(
            "same dtype",
            "same communication dtype",
            "same data type",
            "same scalar type as",
            "same type as",
            "dtype mismatch",
            "data type mismatch",
            "mismatched",
            "identical dtypes",
            "dtypes must match",
            "dtype must match",
            "dtype should match",
            "dtype does not match",
            "to be of type",
        ),
        patterns=(
            r"(?:must |should | to )(?:all )?have (?:the )?same (?:communication )?(?:dtype|data type)",
            r"(?:tensor|tensors) have the same dtype",
            r"(?:tensor|tensors|input|inputs|output|outputs|weight|bias|query| key|value) must have the same "
            r"(?:type|scalar type) as",
            # "dtype mismatch: ...", not a library's own bookkeeping ("FP8 dtype mismatch in copy_from_storage")
            r"(?:dtype|data type) mismatch(?:[:,] | for | between | \(|$)",
            r"mismatched (?:output )?(?:dtypes|data types)",
            r"dtype (?:must|should) match [a-z_ `]{0,40}?[ `]dtype\b",
            r"dtype does not match ",
            r"to have identical dtypes",
            r"dtypes must match",
            # two dtypes named: `expected storage to be of type float32, but is of type bfloat16`
            r"expected [^\n]{0,60}?to be of type [^\n]{0,40}?but (?:is|got|was) ",
        ),
        details=(_NO_OTHER_DTYPE, terms.LIBRARY),
        defaults=(("library", "A library"),),
        cause="An op, kernel or collective takes its tensors in one dtype (query/key/value of an attention kernel, "
        "input and output of a collective, a weight and its input, a model's stored weights and its compute type) "
        "and got two. Usually part of the model or its inputs stayed in fp32 while the rest is fp16/bf16 (a buffer, "
        "mask or cache created without a dtype, an adapter or norm kept in fp32, gradients gathered in another "
        "dtype than the parameters), or a model converted to one dtype is run with a setting that expects another.",
        fixes=(
            fix(
                "Cast the odd tensor to the others' dtype where they meet (`k = k.to(q.dtype)`), or create it in "
                "that dtype (`torch.zeros(..., dtype=x.dtype)`); outside autocast nothing casts them for you"
            ),
            fix(
                "If the model was converted by hand (`.half()`, `.to(torch.bfloat16)`), convert its inputs and added "
                "parts (adapters, heads, caches) the same way, or load it in fp32 and run it under autocast"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/pytorch/issues/112717",
            "https://github.com/OpenNMT/CTranslate2/pull/1800",
            "https://github.com/Dao-AILab/flash-attention/blob/main/csrc/flash_attn/flash_api.cpp",
        ),
        examples=(
            "RuntimeError: output tensor must have the same type as input tensor ",
            "    results_batch = generator.generate_batch(\n"
            "                    ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "ValueError: expected storage to be of type float32, but is of type bfloat16",
        ),
        near_misses=("Must flatten tensors with uniform `requires_grad` when `use_orig_params=False`",),
        rank=-2,
        notes=_GENERAL_NOTE + " The mined tables' messages name the dtypes only as holes (`{q.dtype}`); the words "
        "'must have the same dtype' are the failure whatever the holes print. `to be of type` needs two different "
        "dtypes, one low, named after it.",
    ),
    Signature(
        id="op-support-collective-low-precision",
        family="op-support",
        title="The distributed backend cannot carry {dtype} tensors (NCCL/Gloo without that dtype)",
        needles=("process group:", "unconvertible", "not supported", "does not support", "doesn't support"),
        patterns=(
            r"not supported for (?:nccl|gloo|mpi|ucc)? ?process group: " + _LOW,
            r"unconvertible (?:nccl|gloo|mpi|ucc) type " + _LOW,
            r"(?:nccl|gloo)[^\n]{0,60}?(?:does not support|doesn't support|not supported)"
            r"[^\n]{0,40}?" + _LOW,
        ),
        details=(r"(?P<dtype>bfloat16|bf16|float16|fp16|half|float8|fp8)",),
        cause="A collective (all-reduce of DDP/FSDP gradients, a send/recv of pipeline activations) was handed "
        "{dtype} tensors, and the communication library torch was built with has no such type: NCCL carries "
        "bfloat16 from 2.10 (older torch builds bundle older NCCL), Gloo and MPI have no or few low-precision "
        "reductions, and a torch built without the bf16 mapping refuses it before NCCL is called.",
        fixes=(
            fix(
                "See which NCCL torch uses (bf16 needs NCCL 2.10 or newer); a newer torch brings one",
                'python -c "import torch; print(torch.__version__, torch.cuda.nccl.version())"',
            ),
            fix(
                "Or communicate in fp32: keep the gradients' reduce dtype fp32 (FSDP: "
                "`MixedPrecision(reduce_dtype=torch.float32)`; DDP: fp32 parameters under autocast), or cast the "
                "tensor before the collective and back after (`t32 = t.float(); dist.all_reduce(t32); "
                "t.copy_(t32)`)"
            ),
            fix("On the CPU use fp32 with Gloo: its reductions are fp32 ones"),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/pytorch/issues/53439",
            "https://github.com/NVIDIA/nccl/issues/677",
            _SOURCE_C10D,
        ),
        examples=(
            "RuntimeError: Input tensor data type is not supported for NCCL process group: BFloat16",
            '[1,1]<stderr>:  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", '
            "line 911, in irecv\n"
            "[1,1]<stderr>:    return pg.recv([tensor], src, tag)[1,1]<stderr>:\n"
            "[1,1]<stderr>:RuntimeError: Unconvertible NCCL type BFloat16",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="quantization-method-refuses-dtype",
        family="quantization",
        title="{library}'s quantization does not take {dtype} (the general explanation)",
        needles=("not supported", "only support", "does not support"),
        patterns=(
            _LOW_START + r"[^\n]{0,2} is not supported for quantization",
            r"quantization[^\n]{0,60}?(?:only supports?|not supported|does not support)[^\n]{0,60}?(?:but got |for )"
            r"[^\n]{0,10}?" + _LOW,
        ),
        details=(r"(?P<dtype>bfloat16|bf16|float16|fp16|half|float8|fp8)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The quantization method's kernels take the unquantized side (activations, scales, the weights "
        "before packing) only in some dtypes, and the model was loaded or cast to {dtype}: AWQ/GPTQ kernels of "
        "vLLM take float16 only, old bitsandbytes quantized blockwise only fp16/fp32 weights.",
        fixes=(
            fix(
                "Load the model in a dtype the method lists (float16 for AWQ/GPTQ kernels; fp16/fp32 for an old "
                "bitsandbytes): `dtype=torch.float16` when loading, `--dtype half` for vLLM"
            ),
            fix(
                "Or upgrade the quantization library: newer releases add the dtype (bitsandbytes quantizes bf16 "
                "blockwise; vLLM's Marlin kernels take bf16)",
                "pip install -U bitsandbytes",
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/vllm-project/vllm/issues/1941",
            "https://github.com/zjunlp/DeepKE/issues/591",
            "https://github.com/vllm-project/vllm/issues/12794",
        ),
        examples=(
            '  File "/work/vllm-github/vllm/model_executor/model_loader.py", line 84, in get_model\n'
            "    raise ValueError(\n"
            "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
            "[torch.float16]",
            "ValueError: Blockwise quantization only supports 16/32-bit floats, but got torch.bfloat16",
            # the warning above it is explained too, after it (matcher: the error that ended the run comes first)
            "WARNING 02-06 00:09:44 cpu_executor.py:327] float16 is not supported on CPU, casting to bfloat16.\n"
            "ValueError: torch.bfloat16 is not supported for quantization method gptq. Supported dtypes: "
            "[torch.float16]",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
]
