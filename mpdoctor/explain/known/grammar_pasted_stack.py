"""The general shapes of what users paste from the stack around torch (issue 38, held-out round 5's learn half;
the dtypes themselves are in grammar_pasted.py): what the stack under the run cannot do, read by shape:

* bf16 autocast on a torch before 1.10, and a traceback that ends in a library's GPU-supports-dtype check;
* a kernel compiler's IR seeing two types where it needs one (``'llvm.fmul' op requires the same type for all
  operands and results``, a Triton ``element_ty ==`` assertion);
* a composable_kernel attention kernel refusing the problem (ROCm FlashAttention), and a failure in a cast node ONNX
  Runtime inserted around an op with no fp16 kernel on its execution provider.

Each says it is the general explanation; a library's own signature ranks above.
"""

from __future__ import annotations

from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

_SOURCE_ORT_CAST = (
    "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/core/optimizer/insert_cast_transformer.cc"
)

SIGNATURES: list[Signature] = [
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
