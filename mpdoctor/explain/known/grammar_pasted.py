"""The general shapes of what users paste from the stack around torch (issue 38, held-out round 5's learn half):
not the libraries' raise strings but what reaches a terminal, read by shape:

* tensors that must share one dtype and do not (``query and key must have the same dtype``, ``output tensor must
  have the same type as input tensor``, ``Mismatched dtypes: ...``, ``expected storage to be of type float32, but
  is of type bfloat16``), whatever the dtypes' holes print;
* a collective that cannot carry a low precision (``Input tensor data type is not supported for NCCL process
  group: BFloat16``, ``Unconvertible NCCL type BFloat16``);
* a quantization method refusing the activation dtype (``torch.bfloat16 is not supported for quantization method
  awq``, ``Blockwise quantization only supports 16/32-bit floats, but got torch.bfloat16``);
* a precision mode allowed only with some other setting (``bfloat16 mode is only enabled for Zero 1,2,3``), a
  precision value refused (``precision 16 is not supported``), a layer precision the builder was not told
  (``fp16 precision has been set for a layer ..., but fp16 is not configured in the builder``), an optimizer of one
  precision mode asked for another's low-precision method (``'DeepSpeedZeroOptimizer' object has no attribute
  'clear_lp_grads'``);
* bf16 autocast on a torch before 1.10, and a traceback that ends in a library's GPU-supports-dtype check;
* a kernel compiler's IR seeing two types where it needs one (``'llvm.fmul' op requires the same type for all
  operands and results``, a Triton ``element_ty ==`` assertion);
* a composable_kernel attention kernel refusing the problem (ROCm FlashAttention), and a failure in a cast node ONNX
  Runtime inserted around an op with no fp16 kernel on its execution provider.

Each says it is the general explanation; a library's own signature ranks above.
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
_SOURCE_ORT_CAST = (
    "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/core/optimizer/insert_cast_transformer.cc"
)

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
        ),
        examples=(
            '  File "/work/vllm-github/vllm/model_executor/model_loader.py", line 84, in get_model\n'
            "    raise ValueError(\n"
            "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
            "[torch.float16]",
            "ValueError: Blockwise quantization only supports 16/32-bit floats, but got torch.bfloat16",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-precision-mode-only-with",
        family="framework",
        title="{library} allows this precision mode only with another setting (the general explanation)",
        needles=(
            "is only enabled for",
            "is only enabled with",
            "is only available for",
            "is only available with",
            "is only allowed",
        ),
        patterns=(_LOW_START + r"[^\n:]{0,40}? is only (?:enabled|available|allowed) (?:for|with|in|when) ",),
        details=(r"(?P<dtype>bfloat16|bf16|float16|fp16|float8|fp8)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The precision mode is implemented only together with some other setting (a ZeRO stage, a parallelism, "
        "an optimizer, a backend), and the configuration asks for it without that setting.",
        fixes=(fix("Change the other setting to one the message lists, or choose the precision mode it does allow"),),
        library_fixes=(
            (
                terms.DEEPSPEED,
                (
                    fix(
                        'DeepSpeed: bf16 (`"bf16": {"enabled": true}`) runs with ZeRO stages the installed version '
                        'lists: set `"zero_optimization": {"stage": 1}` (or 2, 3), or use `"fp16"` instead'
                    ),
                ),
            ),
        ),
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/issues/1784",),
        examples=(
            "assert not (self.bfloat16_enabled and (self.zero_optimization_stage not in {1, 2, 3})), f'bfloat16 "
            "mode is only enabled for Zero 1,2,3 currently. got {self.zero_optimization_stage}",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-precision-value-not-supported",
        family="framework",
        title="{library} does not take this precision setting's value (the general explanation)",
        needles=("not supported", "not allowed", "not valid"),
        patterns=(r"precision[ =:]{0,3}['\"`]?[a-z0-9-]{1,16}['\"`]? (?:is|are) not (?:supported|allowed|valid)",),
        details=(r"precision", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The precision setting (a trainer's `precision=`, a config's `precision:`) got a value this version's "
        "check does not accept: an integer where it wants a name (16 against '16-mixed'/'fp16'), a name another "
        "version spells differently, or a precision the model was not saved in.",
        fixes=(
            fix(
                "Pass the precision in the spelling the message lists, and as the model was trained or saved: "
                "Lightning 2.x takes '16-mixed', 'bf16-mixed', '32-true' (and 'bf16-true'); NeMo's Megatron "
                "models with `megatron_amp_O2` take the dtype the checkpoint was saved in"
            ),
        ),
        library_fixes=(
            (
                terms.LIGHTNING,
                (fix('Lightning: `Trainer(precision="16-mixed")` or `"bf16-mixed"` (not the integer 16)'),),
            ),
        ),
        checks=(),
        sources=("https://github.com/NVIDIA-NeMo/Speech/issues/6538",),
        examples=(
            "Exception: precision 16 is not supported. Float16Module (megatron_amp_O2) supports only fp16 and bf16.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-layer-precision-not-in-builder",
        family="framework",
        title="A layer was given {dtype} but the builder was not told to allow {dtype}",
        needles=("not configured in the builder", "not enabled in the builder", "not set in the builder"),
        patterns=(_LOW_START + r"[^\n]{0,120}? but " + _LOW + r" is not (?:configured|enabled|set) in the builder",),
        details=(r"(?P<dtype>bf16|fp16|fp8|int8|float16|bfloat16)",),
        cause="An engine builder (TensorRT) only builds {dtype} kernels when its config allows that precision. The "
        "network asked for {dtype} on a layer (an fp16 ONNX graph, a layer precision set by a tool or parser), but "
        "the builder config that built it never set the flag.",
        fixes=(
            fix(
                "Allow the precision on the builder config: `config.set_flag(trt.BuilderFlag.FP16)` "
                "(`trtexec --fp16`; polygraphy `--fp16`), or build the network strongly typed "
                "(`NetworkDefinitionCreationFlag.STRONGLY_TYPED`) so the graph's own types decide"
            ),
        ),
        checks=(),
        sources=("https://github.com/onnx/onnx-tensorrt/pull/773",),
        examples=(
            "Error Code 4: Internal Error (fp16 precision has been set for a layer or layer output, but fp16 is not "
            "configured in the builder)",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-optimizer-lacks-precision-method",
        family="framework",
        title="{library}: the optimizer built for one precision mode was asked for another's method",
        needles=("object has no attribute",),
        patterns=(
            r"(?:optimizer|engine|scaler|wrapper)' object has no attribute '[a-z0-9_]{0,30}?"
            r"(?:lp_|_lp|hp_|_hp|fp16|bf16|fp32|half|master|loss_scale)",
        ),
        details=(r"has no attribute '(?P<attribute>[a-z0-9_]{1,60})'", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="A training engine picks its optimizer wrapper from the precision settings (an fp16 optimizer with loss "
        "scaling, a bf16 optimizer with fp32 master weights, a ZeRO optimizer), and another part of it (pipeline "
        "parallelism, a trainer's step) expects the other wrapper's `{attribute}`: this combination of precision, "
        "ZeRO stage and parallelism is not supported by the installed version.",
        fixes=(
            fix(
                "Use a combination the library supports: change the precision (fp16 instead of bf16) or the "
                "optimizer setting (ZeRO stage) so that the wrapper the code path expects is built, or upgrade "
                "the library"
            ),
        ),
        library_fixes=(
            (
                terms.DEEPSPEED,
                (
                    fix(
                        "DeepSpeed: pipeline parallelism with bf16 expects its BF16 optimizer: set "
                        '`"zero_optimization": {"stage": 0}` with `"bf16": {"enabled": true}` (or use `"fp16"`), '
                        "or upgrade DeepSpeed",
                        "pip install -U deepspeed",
                    ),
                ),
            ),
        ),
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/issues/1835",),
        examples=(
            'File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/pipe/engine.py", line 768, in '
            "_exec_backward_pass\n"
            "self.optimizer.clear_lp_grads()\n"
            "AttributeError: 'DeepSpeedZeroOptimizer' object has no attribute 'clear_lp_grads'",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="hardware-bf16-autocast-before-torch-1-10",
        family="hardware",
        title="bf16 mixed precision refused: this torch predates bf16 autocast (1.10)",
        needles=("install torch", "requires torch", "requires pytorch", "needs torch"),
        patterns=(
            r"(?:bfloat16|bf16)[^\n]{0,60}? (?:requires|must install|needs) (?:py)?torch (?:>= ?|greater or equal "
            r"to |greater than or equal to )1\.1[0-9]",
        ),
        cause="bf16 autocast came with torch 1.10, and a GPU runs it natively from Ampere (compute capability 8.0). "
        "The trainer checked the installed torch (and the device) before training and refused bf16.",
        fixes=(
            fix('Use fp16 mixed precision instead (Lightning: `precision=16`; Accelerate: `mixed_precision="fp16"`)'),
            fix(
                "Or upgrade torch (1.10 or newer) on a GPU of compute capability 8.0 or newer, and check it",
                'python -c "import torch; print(torch.__version__, torch.cuda.get_device_capability())"',
            ),
        ),
        checks=("PREC001", "PREC005", "GPU002"),
        sources=("https://github.com/Megvii-BaseDetection/BEVDepth/issues/14",),
        examples=(
            "`To use bfloat16 with native amp you must install torch greater or equal to 1.10.` in `trainer = "
            "pl.Trainer.from_argparse_args(args, callbacks=[ema_callback])`",
        ),
        near_misses=("ValueError: bf16 mixed precision with MPS device requires a Pytorch >= 2.6.0",),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="hardware-gpu-dtype-check-in-traceback",
        family="hardware",
        title="The traceback ends in a check whether the GPU supports the model's dtype",
        needles=("gpu_supports", "device_supports", "cuda_supports", "hardware_supports"),
        patterns=(
            r"(?:check|verify|validate|assert)_?(?:if_|whether_)?(?:the_)?(?:gpu|device|cuda|hardware)_supports?_"
            r"(?:the_)?(?:dtype|bf16|bfloat16|fp16|half|fp8)",
        ),
        cause="A library checks, before loading, whether the GPU runs the dtype the model asks for (bf16 needs compute "
        "capability 8.0, fp8 8.9) and raised; the message itself may be cut from what was pasted. A model whose "
        "config says bfloat16 on a T4, V100 or RTX 20xx is the usual case.",
        fixes=(
            fix(
                'Ask for fp16 on a GPU older than Ampere: vLLM `--dtype half` (`LLM(..., dtype="half")`), '
                "transformers `dtype=torch.float16`"
            ),
            fix(
                "See the GPU's compute capability",
                'python -c "import torch; print(torch.cuda.get_device_name(), torch.cuda.get_device_capability())"',
            ),
        ),
        checks=("PREC001", "GPU002", "GPU003"),
        sources=("https://github.com/netease-youdao/QAnything/issues/233",),
        examples=(
            "qanything-container-local | 2024-04-09 15:39:17 | ERROR | stderr |   File "
            '"/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 231, in _check_if_gpu_supports_dtype',
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="compiler-ir-needs-one-type",
        family="compiler",
        title="A kernel compiler met two types where its IR needs one (fp16 meeting fp32 inside a kernel)",
        needles=(
            "requires the same type for all operands",
            "requires the same element type for all operands",
            "element_ty ==",
        ),
        patterns=(
            r"op requires the same (?:element )?type for all operands",
            r"\.element_ty == [a-z_.]{0,30}dtype",
        ),
        cause="Inside a Triton (or other MLIR-based) kernel an op got operands of two types, or an accumulator of "
        "another type than the output dtype asked for: fp16/bf16 values meeting fp32 ones (a `tl.exp` or `tl.dot` "
        "that returns fp32, an accumulator in fp16 while `out_dtype` defaults to fp32). The kernel's types are "
        "fixed when it compiles, so nothing casts them.",
        fixes=(
            fix(
                "Make the operands one type inside the kernel: upcast with `x.to(tl.float32)` before the op (and "
                "cast the result back when storing), or pass `out_dtype=` to `tl.dot` matching the accumulator"
            ),
            fix("Or call the kernel with fp32 inputs, or upgrade Triton: newer versions lower more fp16 ops"),
        ),
        checks=(),
        sources=(
            "https://github.com/triton-lang/triton/issues/10341",
            "https://github.com/triton-lang/triton/issues/1360",
        ),
        examples=(
            " assert acc.type.shape == ret_ty.shape and acc.type.element_ty == out_dtype",
            "error: 'llvm.fmul' op requires the same type for all operands and results\n"
            "Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="attention-ck-kernel-refuses-problem",
        family="attention",
        title="ROCm's composable_kernel attention refused the problem (GPU, dtype or head size it has no kernel for)",
        needles=("does not support this problem",),
        patterns=(r"(?:attention|fmha_|_fmha)[a-z0-9_]{0,60}<[^\n]{0,200}?> does not support this problem",),
        cause="ROCm's FlashAttention runs composable_kernel (CK) kernels built for GPUs with matrix cores (MI200/MI300, "
        "gfx90a/gfx942, and some RDNA3), in fp16/bf16 and the head sizes they were instantiated for. On another "
        "GPU (MI50/MI60 gfx906, consumer cards), or with fp32 inputs or another head size, no kernel instance fits.",
        fixes=(
            fix(
                "Use PyTorch's SDPA instead of flash attention on this GPU (transformers: "
                '`attn_implementation="sdpa"` or `"eager"`)'
            ),
            fix("Or run attention in fp16/bf16 on a GPU the CK kernels support (MI200/MI300)"),
        ),
        checks=("GPU002",),
        sources=("https://github.com/ROCm/flash-attention/issues/29",),
        examples=(
            "RuntimeError: DeviceGroupedMultiheadAttentionForward_Xdl_CShuffle_V2<256, 128, 128, 32, 8, 8, 128, 128, "
            "32, 2, Default, ASpecDefault, B0SpecDefault, B1SpecDefault, CSpecDefault, MaskUpperTriangleFromTopLeft> "
            "does not support this problem",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="cpu-half-ort-inserted-cast-failed",
        family="cpu-half",
        title="ONNX Runtime failed in a cast it inserted around an op with no fp16 kernel on its execution provider",
        needles=("insertedprecisionfreecast",),
        patterns=(r"insertedprecisionfreecast",),
        cause="ONNX Runtime wraps each op its execution provider has no fp16 kernel for (most ops on the CPU EP) in "
        "fp16-to-fp32 casts it names `InsertedPrecisionFreeCast_...`; an fp16 model on the CPU runs through many of "
        "them, and a failure in one (a shape, a fusion, a buffer reuse) is the fp16 model meeting an EP that does "
        "not compute in fp16.",
        fixes=(
            fix(
                "On the CPU use an fp32 or int8/int4 model rather than an fp16 one (onnxruntime-genai's builder: "
                "`-p int4 -e cpu`; or convert with onnxconverter-common's `keep_io_types=True` only for GPU use)"
            ),
            fix("Or run the fp16 model on an EP with fp16 kernels: `providers=['CUDAExecutionProvider']`"),
        ),
        checks=(),
        sources=("https://github.com/microsoft/onnxruntime-genai/issues/2009", _SOURCE_ORT_CAST),
        examples=(
            "[E:onnxruntime:onnxruntime-genai, sequential_executor.cc:572 ExecuteKernel] Non-zero status code returned "
            "while running Cast node. Name:'InsertedPrecisionFreeCast_/model/layers.1/attn/v_proj/repeat_kv/Reshape_4/"
            "output_0' Status Message: /onnxruntime_src/onnxruntime/core/framework/op_kernel.cc:83 virtual OrtValue* "
            "onnxruntime::OpKernelContext::OutputMLValue(int, const onnxruntime::TensorShape&) status.IsOK() was false. "
            "Shape mismatch attempting to re-use buffer. {1,1,1536} != {1,25,1536}. Validate usage of dim_value "
            "(values should be > 0) and dim_param (all values with the same string should equate to the same size) in "
            "shapes in the model.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
]
