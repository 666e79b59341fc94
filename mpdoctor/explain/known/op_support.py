"""Ops that autocast refuses or that have no kernel for a half-precision dtype on a device: binary
cross-entropy under autocast, LayerNorm in bf16 on the CPU of torch before 1.10, autocast's promote ops
handed two low precisions, and NumPy, which has no bfloat16 or fp8. The model is fine; one op cannot run in
the precision it was handed."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="op-support-bce-unsafe-autocast",
        family="op-support",
        title="binary_cross_entropy / BCELoss under autocast: torch refuses it (fp16 would lose the loss)",
        needles=("are unsafe to autocast",),
        patterns=(r"binary_cross_entropy and torch\.nn\.BCELoss are unsafe to autocast",),
        cause="Under autocast (AMP, Lightning `precision=16`, HF `--fp16`) the sigmoid before the loss runs in "
        "fp16, and `log(p)` of an fp16 probability near 0 or 1 is -inf, so torch refuses "
        "`F.binary_cross_entropy`/`nn.BCELoss` inside an autocast region on purpose. The fused "
        "`binary_cross_entropy_with_logits` takes the logits and computes it stably in fp32.",
        fixes=(
            fix(
                "Drop the sigmoid and use the logits version: `nn.BCEWithLogitsLoss()` / "
                "`F.binary_cross_entropy_with_logits(logits, target)` (keep the sigmoid only for predictions)"
            ),
            fix(
                'Or compute this loss outside autocast, in fp32: `with torch.autocast("cuda", enabled=False): '
                "loss = F.binary_cross_entropy(prob.float(), target.float())`"
            ),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/Nioolek/PPYOLOE_pytorch/issues/16",
            "https://github.com/SysCV/transfiner/issues/43",
            "https://github.com/Lightning-AI/pytorch-lightning/issues/13871",
        ),
        examples=(
            "RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast.",
            '  File "/export/software/anacondamini/lib/python3.7/site-packages/torch/nn/functional.py", line 2526, '
            "in binary_cross_entropy\n"
            "    input, target, weight, reduction_enum)\n"
            "\n"
            "RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.",
        ),
        near_misses=(
            # the closing lines of the same message name the safe version; alone they are not the failure
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.",
        ),
    ),
    Signature(
        id="op-support-layer-norm-bf16-cpu",
        family="op-support",
        title="bf16 LayerNorm on the CPU: torch before 1.10 has no BFloat16 CPU kernel for it",
        needles=("layernormkernelimpl",),
        patterns=(r"LayerNormKernelImpl\" not implemented for 'BFloat16'",),
        cause="The model runs in bf16 on the CPU (bf16 weights loaded without a GPU, or CUDA silently missing) "
        "with a torch older than 1.10, whose CPU layer_norm kernel has no BFloat16 version (added in torch "
        "1.10). On a GPU without bf16 the model also ends up here when it falls back to the CPU.",
        fixes=(
            fix("Upgrade torch: CPU LayerNorm runs bf16 from 1.10 on", "pip install -U torch"),
            fix("Or run on the CPU in fp32 (`model.float()`), or on a GPU in fp16 if it has no bf16"),
            fix("If a GPU was meant to be used, make torch see it (`mpdoctor check` TORCH005/TORCH009)"),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=("https://github.com/BlinkDL/ChatRWKV/issues/7", "https://github.com/pytorch/pytorch/pull/55210"),
        examples=(
            '  File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 2346, in layer_norm\n'
            "    return torch.layer_norm(input, normalized_shape, weight, bias, eps, torch.backends.cudnn.enabled)\n"
            "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'BFloat16'",
        ),
        near_misses=("RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",),  # cpu-half-layer-norm
    ),
    Signature(
        id="op-support-autocast-promote-two-low-precisions",
        family="op-support",
        title="autocast's type promotion met a low precision it does not run (fp16 and bf16 in one op)",
        needles=("in at::autocast::prioritize",),
        patterns=(r"unexpected floating scalartype in at::autocast::prioritize",),
        # torch's own words (aten/src/ATen/autocast_mode.h): the error of `prioritize`, which picks the widest
        # floating dtype among a promote op's inputs (cat, stack, index_put, addcmul, where...)
        cause="Ops on autocast's promote list (cat, stack, index_put, addcmul, where, ...) run in the widest floating "
        "dtype of their inputs. autocast knows float32, float64 and its own low precision only: an input in the "
        "other low precision (an fp16 tensor under bf16 autocast, a bf16 one under fp16 autocast) has no place in "
        "that order and torch stops. Before torch 1.10, CUDA autocast's promotion knew only Half, so any bf16 "
        "tensor under autocast(dtype=torch.bfloat16) stopped there.",
        fixes=(
            fix(
                "Give the op one low precision: cast the odd tensor to autocast's dtype (or to float32) before it, "
                "e.g. features stored in fp16 under bf16 autocast: `x = x.to(torch.bfloat16)`"
            ),
            fix(
                'Or run that op outside autocast, in float32: `with torch.autocast("cuda", enabled=False): '
                "y = torch.cat([a.float(), b.float()])`"
            ),
            # no command: a bare `pip install -U torch` can swap the build (CUDA for CPU-only or back); `mpdoctor
            # check` names the index of the build installed
            fix("On torch before 1.10 with bf16 autocast, upgrade torch from the index of the build you have"),
        ),
        checks=("TORCH005",),
        sources=(
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h",
            "https://github.com/pytorch/pytorch/issues/132715",
            "https://github.com/karpathy/nanoGPT/issues/235",
        ),
        examples=(
            "RuntimeError: Unexpected floating ScalarType in at::autocast::prioritize",
            "it gave me `'RuntimeError: Unexpected floating ScalarType in at::autocast::prioritize'`.",
        ),
        near_misses=("RuntimeError: promote type is double in at::autocast::prioritize",),
    ),
    Signature(
        id="op-support-numpy-has-no-low-precision",
        family="op-support",
        title="NumPy has no {dtype}: a {dtype} tensor was converted to a NumPy array",
        needles=("got unsupported scalartype ", "of type numpy.void", "not understood", "numpy"),
        patterns=(
            r"got unsupported scalartype (?:bfloat16|float8_|float4_|bits)",
            r"can't convert np\.ndarray of type numpy\.void",
            # NumPy's own refusal of the name (`np.dtype('bfloat16')`), and people saying it
            r"data type ['\"`]?(?:bfloat16|float8_\w{2,10}|float4\w{0,10})['\"`]? not understood",
            r"numpy (?:does not|doesn't) (?:have|support) (?:a |an |the )?(?:bfloat|bf16|float8|fp8)",
            r"numpy has no (?:bfloat|bf16|float8|fp8)",
        ),
        details=(
            r"unsupported scalartype|numpy\.void|not understood|numpy",  # the first must match the line
            r"(?P<dtype>bfloat16|float8_e[0-9a-z]{1,10}|float4_e2m1fn_x2)",
        ),
        defaults=(("dtype", "bfloat16"),),
        # torch's own words (torch/csrc/utils/tensor_numpy.cpp): `.numpy()` of a bf16/fp8 tensor, and
        # `torch.tensor()` of the raw two-byte records (numpy.void) that bf16 data becomes in NumPy
        cause="NumPy has no bfloat16 (nor fp8 or fp4) dtype, so torch cannot hand such a tensor to NumPy: `.numpy()`, "
        "`np.asarray(t)`, a plotting or metrics call, a library's postprocessing, or a weight converter that goes "
        "through NumPy. The other way round, bf16 weights read into NumPy (from a checkpoint or safetensors) become "
        "raw two-byte records (numpy.void) that torch cannot convert back. The model may run fine in {dtype}; "
        "only the hand-over to NumPy fails.",
        fixes=(
            fix(
                "Cast before leaving torch: `t.float().numpy()` (or `t.to(torch.float32).cpu().numpy()`); cast back "
                "after if the values must stay low-precision"
            ),
            fix(
                "For weights read into NumPy as bf16 records, keep them in torch (`safetensors.torch.load_file`, "
                "`torch.load`) or view the raw bytes as bfloat16: `torch.from_numpy(a.view(np.int16)).view("
                "torch.bfloat16)`"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/pytorch/blob/main/torch/csrc/utils/tensor_numpy.cpp",
            "https://github.com/NVIDIA/TensorRT-LLM/issues/730",
            "https://github.com/vllm-project/vllm-metal/pull/690",
            "https://github.com/truera/trulens/pull/662",
        ),
        examples=(
            "TypeError: Got unsupported ScalarType BFloat16",
            "BF16 PEFT adapters fail before registration with `TypeError: data type 'bfloat16' not understood` because "
            "the loader reads their tensors through NumPy.",
            "Cast bfloat to float in as_array\n\nnumpy does not have a bfloat dtype, this casts any bfloat tensors to "
            "float first",
            "TypeError: Got unsupported ScalarType Float8_e4m3fn",
            "TypeError: can't convert np.ndarray of type numpy.void. The only supported types are: float64, float32, "
            "float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool.",
        ),
        near_misses=(
            "TypeError: can't convert np.ndarray of type numpy.object_. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
            "uint16, uint8, and bool.",
        ),
    ),
]
