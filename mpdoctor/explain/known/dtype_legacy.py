"""Dtype mismatches in older torch's words: 1.0-1.5 (``Expected object of scalar type``, ``expected type
torch.cuda.FloatTensor``), and the matmul check that did not yet name its two dtypes. Old code and old
containers still print them."""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import AUTOCAST, CAST_INPUTS, DTYPE_TRACE, FULL, HALF, TENSOR_PREFIX
from mpdoctor.explain.signature import Alternative, Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-legacy-expected-object",
        family="dtype",
        title='torch 1.0-1.5: an op got fp16 and fp32 arguments ("Expected object of scalar type")',
        needles=("expected object of scalar type",),
        patterns=(
            rf"Expected object of scalar type (?:{HALF} but got scalar type {FULL}|{FULL} but got scalar type "
            rf"{HALF})\b",
        ),
        cause="The pre-1.6 TH/THC wording of a dtype mix in `mm`/`bmm`/`addmm`, `index_copy_`, `cat` "
        "(`sequence element`): a tensor created in fp32 (a bias parameter, a mask, a relative-position "
        "term) meets fp16 activations under apex amp O1/O2 or `.half()`. Those torch versions have no "
        "native autocast.",
        fixes=(
            fix(
                "Upgrade torch to 1.6 or newer and replace apex amp / `.half()` with native autocast + "
                "GradScaler, which casts per op and so avoids the mix"
            ),
            fix(
                "On the old torch, cast the stray tensor to the activations' dtype where they meet: "
                "`bias.to(x.dtype)`, `torch.cat([a, b.to(a.dtype)])`"
            ),
            DTYPE_TRACE,
        ),
        checks=("APEX008", "APEX007"),
        sources=(
            "https://github.com/huggingface/transformers/issues/7371",
            "https://github.com/idiap/fast-transformers/issues/62",
            "https://github.com/open-mmlab/mmdetection/issues/1494",
            "https://github.com/pytorch/pytorch/issues/44724",
            "https://github.com/NVIDIA/apex/issues/667",
        ),
        examples=(
            '  File "/root/anaconda/envs/ai/lib/python3.7/site-packages/torch/functional.py", line 292, in einsum\n'
            "    return _VF.einsum(equation, operands)\n"
            "RuntimeError: Expected object of scalar type Float but got scalar type Half for argument #2 'mat2' "
            "in call to _th_bmm",
            "RuntimeError: Expected object of scalar type Float but got scalar type Half for argument #2 'mat2' "
            "in call to _th_bmm_out",
            "RuntimeError: Expected object of scalar type Half but got scalar type Float for argument #4 'mat1'",
            "RuntimeError: Expected object of scalar type Half but got scalar type Float for argument #4 'source' "
            "in call to _th_index_copy_",
            "RuntimeError: Expected object of scalar type Float but got scalar type Half for sequence element 2 in "
            "sequence argument at position #1 'tensors'",
        ),
        near_misses=(
            "Expected object of scalar type Long but got scalar type Int for argument #3 'index' in call to "
            "_th_scatter_",
            "RuntimeError: Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor for "
            "argument #4 'mat1'",
        ),
    ),
    Signature(
        id="dtype-legacy-expected-type",
        family="dtype",
        title='torch 0.4-1.x: an op or in-place update got fp16 and fp32 tensors ("expected type ... HalfTensor")',
        needles=("expected type ", "doesn't match the desired type"),
        patterns=(
            rf"expected type {TENSOR_PREFIX}(?:FloatTensor but got {TENSOR_PREFIX}HalfTensor|HalfTensor but got {TENSOR_PREFIX}FloatTensor)",
            r"expected type CUDA(?:FloatType but got CUDAHalfType|HalfType but got CUDAFloatType)",
            rf"output with type {TENSOR_PREFIX}(?:HalfTensor doesn't match the desired type {TENSOR_PREFIX}FloatTensor|FloatTensor "
            rf"doesn't match the desired type {TENSOR_PREFIX}HalfTensor)",
        ),
        cause="The oldest wording of a dtype mix: an element-wise op or an in-place update (`mul_`, `add_`, "
        "`tensor.data = ...`) between an fp16 tensor and an fp32 one: masks, running statistics or extra "
        "parameters left fp32 in a model converted with `.half()`/`to_fp16()`/apex O2, or the reverse.",
        fixes=(
            fix(
                "Upgrade torch and use native autocast + GradScaler instead of converting the model, so "
                "buffers and masks do not have to follow by hand"
            ),
            fix(
                "On the old torch, cast the odd tensor where they meet: `tensor * mask.to(tensor.dtype)`, "
                "`running_mean.add_(mean.to(running_mean.dtype))`"
            ),
            DTYPE_TRACE,
        ),
        checks=("APEX008", "APEX007"),
        sources=(
            "https://github.com/NVIDIA/apex/issues/168",
            "https://github.com/TimDettmers/sparse_learning/issues/2",
            "https://github.com/tianrengao/SqueezeWave/issues/3",
            "https://github.com/mapillary/inplace_abn/issues/86",
        ),
        examples=(
            '  File "/root/workdir/SparseLearning/sparse_learning/sparselearning/core.py", line 240, in '
            "apply_mask\n"
            "    tensor.data = tensor.data*self.masks[name]\n"
            "RuntimeError: expected type torch.cuda.FloatTensor but got torch.cuda.HalfTensor",
            "RuntimeError: \nexpected type CUDAFloatType but got CUDAHalfType",
            "RuntimeError: output with type torch.cuda.HalfTensor doesn't match the desired type "
            "torch.cuda.FloatTensor",
        ),
        near_misses=(
            "RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor",  # device, not dtype
        ),
    ),
    Signature(
        id="dtype-legacy-expected-backend",
        family="dtype",
        title='torch 1.0-1.2: an op got fp16 and fp32 tensors ("expected backend CUDA and dtype Float but got ... '
        'Half")',
        needles=("but got backend",),
        patterns=(
            r"expected backend (\w{3,4}) and dtype (?:Float but got backend \1 and dtype Half|Half but got "
            r"backend \1 and dtype Float)\b",
        ),
        cause="torch 1.0-1.2's wording of a dtype mix in an element-wise op or an in-place update: a tensor "
        "created in fp32 (anchor grids, masks, positional tables) meets activations from a model converted "
        "with `.half()` (apex O2/O3, fastai `to_fp16()`), or the reverse. A different backend on the two "
        "sides (`CUDA` against `CPU`) is a device mismatch instead, and not this.",
        fixes=(
            fix(
                "Upgrade torch and use native autocast + GradScaler instead of converting the model, so buffers "
                "and constant tensors need no hand casting"
            ),
            fix(
                "On the old torch, cast the stray tensor where they meet: `x.data + self.grid_x.to(x.dtype)`, "
                "and register constant tensors as buffers so `.half()` converts them too"
            ),
            DTYPE_TRACE,
        ),
        checks=("APEX008", "APEX007"),
        sources=("https://github.com/DocF/YOLOv3-Torch2TRT/issues/2",),
        examples=(
            '  File "/data_disk/software/YOLOv3-Torch2TRT/models.py", line 204, in forward\n'
            "    pred_boxes[..., 0] = x.data + self.grid_x\n"
            "RuntimeError: expected backend CUDA and dtype Float but got backend CUDA and dtype Half",
        ),
    ),
    Signature(
        id="dtype-matmul-mismatch-unnamed",
        family="dtype",
        title="A matmul/linear got two different dtypes, and this torch does not say which",
        needles=("mat1 and mat2 must have the same dtype", "self and mat2 must have the same dtype"),
        patterns=(r"(?:mat1 and mat2|self and mat2) must have the same dtype(?!,? but got)",),
        cause='The torch that raised it names no dtypes (newer versions add "but got Half and Float"). In a '
        "mixed-precision run it is almost always an fp16/bf16 tensor meeting an fp32 one in `F.linear`, `addmm` "
        "or `@`: a pipeline or model loaded in fp16 fed fp32 inputs or embeddings, a LoRA/adapter or new head "
        "left in fp32 beside an fp16 base, or a matmul written outside autocast.",
        fixes=(
            AUTOCAST,
            CAST_INPUTS,
            fix(
                "Print the two dtypes where it fails, to be sure which side is off: "
                "`print(input.dtype, weight.dtype)` in the frame the traceback names"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/huggingface/diffusers/issues/1014",
            "https://github.com/huggingface/diffusers/issues/4198",
            "https://github.com/mymusise/ChatGLM-Tuning/issues/214",
        ),
        examples=(
            '  File "/usr/local/lib/python3.8/dist-packages/torch/nn/modules/linear.py", line 114, in forward\n'
            "    return F.linear(input, self.weight, self.bias)\n"
            "RuntimeError: mat1 and mat2 must have the same dtype",
            "RuntimeError: self and mat2 must have the same dtype",
        ),
        near_misses=(
            "RuntimeError: mat1 and mat2 must have the same dtype, but got Long and Float",
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 64x128)",
        ),
        alternatives=(
            Alternative(
                cause="No half precision involved: fp32 met fp64 (numpy data is float64) or an integer tensor",
                tell="`print(input.dtype, weight.dtype)` shows float64 or an integer dtype, and neither is "
                "float16/bfloat16",
                fixes=(
                    fix(
                        "Convert the data to fp32 where it enters the model: `torch.as_tensor(x, dtype=torch.float32)`"
                    ),
                ),
            ),
        ),
        rank=-1,
    ),
]
