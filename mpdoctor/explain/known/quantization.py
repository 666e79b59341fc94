"""Quantized and low-precision-stored weights: bitsandbytes' compute dtype (4-bit layers computing in fp32,
8-bit matmuls casting bf16 inputs to fp16), and int8/fp8 storage weights that reach an ordinary matmul
without being dequantized or upcast."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="quantization-bnb-4bit-compute-fp32",
        family="quantization",
        title="bitsandbytes 4-bit layers compute in fp32 while the model runs in fp16/bf16: slow",
        needles=("input type into linear4bit is",),
        patterns=(
            r"Input type into Linear4bit is torch\.(?:float16|bfloat16), but bnb_4bit_compute_(?:type|dtype)"
            r"=torch\.float32",
        ),
        cause="`BitsAndBytesConfig(load_in_4bit=True)` leaves `bnb_4bit_compute_dtype` at its default, float32, so "
        "each 4-bit layer dequantizes to fp32 and runs a slow fp32 matmul although its input is fp16/bf16. "
        "Nothing fails; inference and QLoRA training are several times slower than they should be.",
        fixes=(
            fix(
                "Set the compute dtype to the model's dtype: `BitsAndBytesConfig(load_in_4bit=True, "
                "bnb_4bit_compute_dtype=torch.bfloat16)` (torch.float16 on GPUs older than Ampere)"
            ),
        ),
        checks=("PREC001",),
        sources=(
            "https://github.com/h2oai/h2ogpt/pull/682",
            "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/2077",
        ),
        examples=(
            "UserWarning: Input type into Linear4bit is torch.float16, but bnb_4bit_compute_type=torch.float32 "
            "(default). This will lead to slow inference or training speed.",
        ),
    ),
    Signature(
        id="quantization-bnb-int8-casts-bf16",
        family="quantization",
        title="bitsandbytes 8-bit matmul casts bf16 inputs to fp16 (LLM.int8 has no bf16 path)",
        needles=("matmul8bitlt: inputs will be cast from",),
        patterns=(r"MatMul8bitLt: inputs will be cast from [a-z0-9_.]{1,20} to float16",),
        cause="`load_in_8bit=True` (LLM.int8) computes its matmuls in fp16. A model run in bf16 (`--bf16`, "
        "`torch_dtype=torch.bfloat16`) or fp32 has every 8-bit layer's input cast to fp16 and back: the "
        "warning is harmless for accuracy in most models, but values beyond fp16's range overflow there.",
        fixes=(
            fix("Run 8-bit models in fp16 (`torch_dtype=torch.float16`, `--fp16`), the dtype LLM.int8 computes in"),
            fix("Or, to stay in bf16, quantize to 4-bit with `bnb_4bit_compute_dtype=torch.bfloat16` instead of 8-bit"),
        ),
        checks=(),
        sources=("https://github.com/hiyouga/LlamaFactory/issues/2132",),
        examples=(
            "/usr/local/lib/python3.8/dist-packages/bitsandbytes/autograd/_functions.py:322: UserWarning: "
            "MatMul8bitLt: inputs will be cast from torch.bfloat16 to float16 during quantization",
        ),
    ),
    Signature(
        id="quantization-weight-reached-plain-matmul",
        family="quantization",
        title="An int8- or fp8-stored weight reached an ordinary matmul without being dequantized",
        needles=("to have the same dtype, but got:", "must have the same dtype, but got"),  # dtype-matmul-mismatch's
        patterns=(
            r"(?:mat1 and mat2|self and mat2) must have the same dtype, but got (?:Half|BFloat16|Float) and "
            r"(?:Char|Byte|Float8_e4m3fn|Float8_e5m2)\b",
            r"to have the same dtype, but got: (?:(?:struct )?c10::(?:Half|BFloat16)|float) != "
            r"(?:signed char|unsigned char|(?:struct )?c10::Float8_e4m3fn|(?:struct )?c10::Float8_e5m2)",
        ),
        cause="The weight is stored quantized: int8 (`Char`, bitsandbytes `load_in_8bit`), uint8 (`Byte`, packed "
        "4-bit) or fp8 (`Float8_e4m3fn` checkpoints), and some code used it directly in `F.linear`/`@` "
        "instead of going through the quantized layer, which would dequantize or upcast it first. Remote "
        "model code that reads `layer.weight` itself (CogVLM/CogAgent vision experts), an image path "
        "outside the quantized modules, or a loader/node too old for fp8 checkpoints does this.",
        fixes=(
            fix(
                "Leave the modules that read their weights directly unquantized: "
                '`BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=["vision", ...])`, or load the '
                "model without 8-bit"
            ),
            fix(
                "For an fp8 checkpoint, use a loader that upcasts fp8 weights (update the node/library), or load "
                "the fp16/bf16 version of the weights"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/transformers/issues/28856",
            "https://github.com/xorbitsai/inference/issues/737",
            "https://github.com/kijai/ComfyUI-ControlNeXt-SVD/issues/7",
        ),
        examples=(
            "When using AutoModelForCausalLM, THUDM/cogagent-vqa-hf and load_in_8bit I get this error : self and "
            "mat2 must have the same dtype, but got Half and Char",
            "RuntimeError: [address=0.0.0.0:37195, pid=525824] expected mat1 and mat2 to have the same dtype, but "
            "got: c10::Half != signed char",
            "RuntimeError: mat1 and mat2 must have the same dtype, but got Half and Float8_e4m3fn",
        ),
        near_misses=("RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half",),
    ),
    Signature(
        id="quantization-dequantized-weight-dtype",
        family="quantization",
        title="A quantized layer dequantized its weights to another dtype than the model's activations",
        needles=("expected scalar type", "have the same dtype"),
        patterns=(
            r"expected scalar type (?:float|half|bfloat16) but found (?:float|half|bfloat16)",
            r"(?:mat1 and mat2|self and mat2|m1 and m2) (?:to )?(?:must )?have the same dtype",
        ),
        cause="The mismatch happened inside a quantization library's layer (its frame is in the traceback): the "
        "layer dequantizes its packed weights to its own compute dtype (float16 for AutoAWQ's and many GPTQ "
        "kernels, HQQ's `compute_dtype`, bitsandbytes' `bnb_4bit_compute_dtype`) and meets activations in the "
        "model's dtype (often bfloat16), or the other way round.",
        fixes=(
            fix(
                "Give the quantization the model's dtype: `bnb_4bit_compute_dtype=torch.bfloat16` (bitsandbytes), "
                "`compute_dtype=torch.bfloat16` (HQQ), or load the model in the dtype its kernels need "
                "(`torch_dtype=torch.float16` for AWQ/GPTQ kernels that are fp16-only)"
            ),
            fix("Or cast the activations into the layer's dtype where they enter it (`x.to(layer_dtype)`)"),
        ),
        checks=(),
        sources=(
            "https://github.com/dropbox/hqq/issues/7",
            "https://github.com/QwenLM/Qwen3-VL/issues/1048",
        ),
        examples=(
            '  File "../.venv/lib/python3.10/site-packages/hqq/core/quantize.py", line 217, in forward_pytorch\n'
            "    out   = torch.matmul(x, W_est.t())\n"
            "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Half",
        ),
        near_misses=(
            "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Half",
        ),
        # the frame of a quantization library's own layer: the same words elsewhere are a plain mismatch
        frames=(
            r"/(?:hqq|awq|auto_gptq|gptqmodel|bitsandbytes|optimum/quanto|quanto|exllamav2|vptq|aqlm|eetq|"
            r"compressed_tensors|torchao/quantization|torchao/prototype)/",
        ),
        rank=1,
    ),
]
