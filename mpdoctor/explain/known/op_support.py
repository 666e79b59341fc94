"""Ops that autocast refuses or that have no kernel for a half-precision dtype on a device: binary
cross-entropy under autocast, and LayerNorm in bf16 on the CPU of torch before 1.10. The model is fine;
one op cannot run in the precision it was handed."""

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
]
