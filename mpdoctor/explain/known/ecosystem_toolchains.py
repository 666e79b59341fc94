"""One library's own words each, learned with the ecosystem's general shapes (grammar_ecosystem.py): LLVM finding no
bf16 instruction for an AMD GPU, TensorRT-RTX refusing precision builder flags, an Accelerate precision recipe
without the matching ``mixed_precision``.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
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
]
