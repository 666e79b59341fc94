"""Compilers that cannot emit half-precision code for the GPU: Triton (under torch.compile/Inductor,
unsloth, lmdeploy, LightLLM kernels) writing bf16 PTX for a GPU older than Ampere. Eager torch emulates
bf16 on those cards; a compiled kernel cannot. fp8 on pre-Ada GPUs is in hardware_fp8.py."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="compiler-triton-bf16-needs-sm80",
        family="compiler",
        title="Triton generated bf16 code for a GPU older than Ampere: ptxas rejects it",
        needles=("target sm_80", "unsupported conversion from bf16"),
        patterns=(
            r"Feature '[^'\n]{0,40}bf16[^'\n]{0,20}' ?requires ?\.target sm_80",
            r"Unsupported conversion from bf16 to f(?:16|32)",
        ),
        cause="A Triton kernel (torch.compile/Inductor, unsloth, lmdeploy or LightLLM's own kernels) was compiled "
        "for bf16 tensors on a GPU of compute capability below 8.0 (V100, T4, RTX 20xx, GTX 10xx). Eager "
        "torch emulates bf16 there, so `torch.cuda.is_bf16_supported()` can say True, but the PTX "
        "instructions Triton emits for bf16 (`cvt.bf16.f32`, `.bf16` arithmetic) need sm_80. torch 2.4 and "
        "later skip Inductor for bf16 graphs on such GPUs with a warning; other libraries' own Triton "
        "kernels still fail.",
        fixes=(
            fix(
                "Run the model in fp16 on this GPU: `torch_dtype=torch.float16` (unsloth: `dtype=torch.float16`; "
                "lmdeploy/LightLLM: `--dtype float16`)"
            ),
            fix(
                "Or keep bf16 but skip compilation on this GPU (no `torch.compile`, or "
                "`torch._dynamo.config.suppress_errors = True` to fall back to eager)"
            ),
            fix(
                "Or use an Ampere or newer GPU for bf16; on a mixed box check which card `cuda:0` is",
                "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
            ),
        ),
        checks=("PREC005", "PREC001", "GPU002"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/118581",
            "https://github.com/hitz-zentroa/GoLLIE/issues/5",
            "https://github.com/Tractables/pyjuice/issues/20",
            "https://github.com/pytorch/pytorch/pull/129288",
        ),
        examples=(
            "RuntimeError: Internal Triton PTX codegen error: \n"
            "ptxas /tmp/compile-ptx-src-f5ac42, line 48; error   : Feature '.bf16' requires .target sm_80 or higher\n"
            "ptxas /tmp/compile-ptx-src-f5ac42, line 48; error   : Feature 'cvt with .f32.bf16' requires .target "
            "sm_80 or higher",
            "ptxas /tmp/compile-ptx-src-38da7f, line 92; error   : Feature 'cvt with .bf16' requires .target sm_80 "
            "or higher",
            "Unsupported conversion from bf16 to f16\n\nUNREACHABLE executed at /project/lib/Conversion/"
            "TritonGPUToLLVM/ElementwiseOpToLLVM.cpp:816!",
        ),
        near_misses=(
            # the same ptxas wording for an fp8 feature on a pre-Ada GPU: hardware-fp8-* explains those
            "ptxas /tmp/compile-ptx-src-f5ac42, line 48; error   : Feature 'cvt.rn.satfinite.e4m3x2.f32' requires "
            ".target sm_89 or higher",
        ),
        notes="The near-miss is adapted: ptxas's wording with the fp8 conversion it reports on pre-Ada GPUs; it is "
        "not quoted from a thread.",
    ),
    Signature(
        id="compiler-triton-dot-dtype-mismatch",
        family="compiler",
        title="A Triton kernel's tl.dot got fp16/bf16 on one side and fp32 on the other",
        needles=("and second input (", "lhs and rhs must have the same dtype"),
        patterns=(
            r"First input \((?:fp16|bf16|fp32)\) and second input \((?:fp16|bf16|fp32)\) must have the "
            r"same dtype",
            # older Triton's words for the same check, without the dtypes
            r"lhs and rhs must have the same dtype!",
        ),
        cause="A hand-written Triton kernel (FlashAttention variants, unsloth, custom attention masks) loads its "
        "operands in the dtype of the tensors it is given, and `tl.dot` needs both in one dtype. It was "
        "written for fp16/bf16 inputs and got fp32 ones (a model left in fp32, a GPU without bf16 where a "
        "library fell back to fp32), or the kernel creates one operand in a fixed dtype.",
        fixes=(
            fix(
                "Inside the kernel, cast the operand that arithmetic promoted (an fp16 tile divided by a Python "
                "float becomes fp32): `tl.dot(a, b.to(tl.float16))`, or `.to(a.dtype)`"
            ),
            fix(
                "Call the kernel with the dtype it was written for: `q, k, v = (t.to(torch.float16) for t in "
                "(q, k, v))` (bf16 on Ampere or newer), or load the model in that dtype"
            ),
            fix(
                "On a GPU without bf16 (T4, V100), pick the library's fp16 path explicitly instead of letting it "
                "fall back to fp32 (e.g. unsloth `dtype=torch.float16`)"
            ),
        ),
        checks=("PREC005",),
        sources=(
            "https://github.com/timothelaborie/text_classification_scripts/issues/5",
            "https://github.com/triton-lang/triton/issues/2060",
        ),
        examples=(
            "trainer_stats = trainer.train() meet problem AssertionError: First input (fp16) and second input (fp32) "
            "must have the same dtype! The above exception was the direct cause of the following exception:",
            '>       assert lhs.dtype == rhs.dtype, "lhs and rhs must have the same dtype!"\n'
            "E       AssertionError: lhs and rhs must have the same dtype!",
        ),
    ),
    Signature(
        id="compiler-triton-loop-carried-dtype",
        family="compiler",
        title="A Triton kernel's loop variable changed precision inside the loop (fp16 in, fp32 out)",
        needles=("loop-carried variable",),
        patterns=(
            r"Loop-carried variable \w{1,60} has initial type <[^>\n]{0,60}(?:fp16|bf16)> but is re-assigned to "
            r"<[^>\n]{0,60}fp32>",
            r"Loop-carried variable \w{1,60} has initial type <[^>\n]{0,60}fp32> but is re-assigned to "
            r"<[^>\n]{0,60}(?:fp16|bf16)>",
        ),
        cause="Triton compiles a loop with one type per loop-carried variable. The variable starts as an fp16/bf16 "
        "tile (loaded from half-precision input, or made with that dtype) and arithmetic in the loop promotes it "
        "to fp32: a Python float or int in `tl.where`, `pow`, a division, or an fp32 accumulator added to it.",
        fixes=(
            fix(
                "Keep the accumulator in fp32 from the start, the usual choice: "
                "`acc = tl.zeros([BLOCK], dtype=tl.float32)`, and cast once after the loop"
            ),
            fix("Or cast back inside the loop: `var = (var * scale).to(var.dtype)` where it is re-assigned"),
        ),
        checks=(),
        sources=("https://github.com/triton-lang/triton/issues/1891",),
        examples=(
            "AssertionError('Loop-carried variable var has initial type <[32768], fp16> but is re-assigned to "
            "<[32768], fp32> in loop! Please make sure that the type stays consistent.')",
        ),
        near_misses=(
            "AssertionError('Loop-carried variable i has initial type <int32> but is re-assigned to <int64> in loop!')",
        ),
    ),
]
