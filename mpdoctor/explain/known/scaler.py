"""Family "scaler": torch's GradScaler used against its rules.

Gradients that are fp16 or bf16 instead of fp32, unscale_ twice, its calls out of their order
(scale, backward, unscale_, step, update), a closure it cannot take, an optimizer with no gradients,
a scaler silently disabled. fp16's range itself (a loss scale that collapses) is ``known/overflow.py``.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

BF16_INSTEAD = fix(
    "If the GPU supports bf16 (Ampere or newer), train in bf16 instead: same range as fp32, no loss "
    "scaling (transformers `--bf16`, accelerate `--mixed_precision bf16`, DeepSpeed "
    '`"bf16": {"enabled": true}`)',
    'python -c "import torch; print(torch.cuda.get_device_capability(), '
    'torch.cuda.is_bf16_supported(including_emulation=False))"',
)

SIGNATURES: list[Signature] = [
    # --- scaler: GradScaler's contract broken ---------------------------------------------------------------
    Signature(
        id="scaler-fp16-gradients",
        family="scaler",
        title="GradScaler found fp16 gradients: the trained parameters are in fp16, not fp32",
        needles=("attempting to unscale fp16 gradients",),
        patterns=(r"Attempting to unscale FP16 gradients",),
        cause="GradScaler (torch AMP, and the transformers/accelerate/Lightning `fp16` option built on it) expects "
        "fp32 parameters whose gradients it unscales; autocast does the fp16 compute. Here the trainable "
        "parameters themselves are fp16: the model was `.half()`-ed or loaded with "
        "`torch_dtype=torch.float16`, and then trained (fully, or through LoRA/adapter weights created in "
        "fp16) with fp16 mixed precision on.",
        fixes=(
            fix(
                "Keep the trained parameters in fp32 and let autocast do fp16: load without "
                "`torch_dtype=torch.float16`, or don't call `.half()` on a model you train"
            ),
            fix(
                "With a frozen fp16 base and LoRA/adapters, cast only the trainable parameters to fp32: "
                "`for p in model.parameters(): p.data = p.data.float() if p.requires_grad else p.data`"
            ),
            BF16_INSTEAD,
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/pytorch/issues/74739",
            "https://github.com/huggingface/transformers/issues/23165",
            "https://github.com/huggingface/diffusers/issues/6442",
            "https://github.com/Facico/Chinese-Vicuna/issues/168",
            "https://github.com/Lightning-AI/pytorch-lightning/issues/5140",
            "https://github.com/mk-minchul/AdaFace/issues/127",
        ),
        examples=(
            "ValueError: Attempting to unscale FP16 gradients.",
            '  File "/home/whzhu_st/mypython/lib/python3.8/site-packages/torch/cuda/amp/grad_scaler.py", line 282, '
            "in unscale_\n"
            '    optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, '
            "False)\n"
            '  File "/home/whzhu_st/mypython/lib/python3.8/site-packages/torch/cuda/amp/grad_scaler.py", line 210, '
            "in _unscale_grads_\n"
            '    raise ValueError("Attempting to unscale FP16 gradients.")\n'
            "ValueError: Attempting to unscale FP16 gradients.",
            'ValueError("Attempting to unscale FP16 gradients.")',
        ),
        near_misses=(
            "RuntimeError: \"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for 'BFloat16'",
            "RuntimeError: unscale_() has already been called on this optimizer since the last update().",
        ),
    ),
    Signature(
        id="scaler-bf16-gradients",
        family="scaler",
        title="GradScaler got bf16 gradients: fp16 loss scaling turned on for a bf16 model",
        needles=("_amp_foreach_non_finite_check_and_unscale",),
        patterns=(r"_amp_foreach_non_finite_check_and_unscale_[a-z]{0,8}\" not implemented for 'BFloat16",),
        cause="GradScaler's unscale kernel has no bfloat16 version, and bf16 needs no loss scaling anyway. The "
        "gradients are bf16 because the model (or its trainable adapters) was loaded/cast to bfloat16 while "
        'training was set to fp16 mixed precision (`--fp16`, `fp16=True`, `mixed_precision="fp16"`), which '
        "creates a GradScaler.",
        fixes=(
            fix(
                "Match the mixed-precision setting to the model: use bf16 mixed precision (`--bf16` / "
                "`bf16=True` / `--mixed_precision bf16`), which creates no GradScaler"
            ),
            fix(
                "Or keep fp16 mixed precision and the trainable parameters in fp32 (don't load or cast the "
                "trained weights to bfloat16)"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/pytorch/issues/127176",
            "https://github.com/huggingface/trl/issues/4901",
            "https://github.com/QwenLM/Qwen-VL/issues/372",
            "https://github.com/huggingface/accelerate/pull/1036",
        ),
        examples=(
            "RuntimeError: \"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for 'BFloat16'",
            "NotImplementedError: \"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for 'BFloat16'",
            '"_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for \'BFloat16',
        ),
        near_misses=(
            "ValueError: Attempting to unscale FP16 gradients.",
            "RuntimeError: \"prod_cpu\" not implemented for 'BFloat16'",
        ),
        rank=1,
        notes="rank 1: a generic \"not implemented for 'BFloat16'\" signature may claim the same line.",
    ),
    Signature(
        id="scaler-unscale-twice",
        family="scaler",
        title="GradScaler.unscale_() called twice for one optimizer step",
        needles=("unscale_() has already been called",),
        patterns=(r"unscale_\(\) has already been called on this optimizer since the last update\(\)",),
        cause="`scaler.unscale_(optimizer)` may run once per optimizer between `update()`s. A second call came "
        "from gradient clipping run on every micro-batch of gradient accumulation, or from unscaling by hand "
        "and again through `accelerator.clip_grad_norm_`. transformers 4.30 hit it itself at epoch "
        "boundaries with gradient accumulation (Trainer and accelerate counted steps differently).",
        fixes=(
            fix(
                "With the transformers Trainer, upgrade transformers and accelerate (fixed by "
                "huggingface/transformers#24415, after 4.30)",
                "pip install -U 'transformers>=4.31' accelerate",
            ),
            fix(
                "In your own loop, unscale and clip only on the step that calls `scaler.step()`: under "
                "accelerate, inside `if accelerator.sync_gradients:`"
            ),
            fix("Or set gradient_accumulation_steps to 1 to confirm the accumulation is the trigger"),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/transformers/issues/23935",
            "https://github.com/huggingface/transformers/issues/24449",
            "https://github.com/hiyouga/LlamaFactory/issues/77",
            "https://github.com/huggingface/accelerate/issues/641",
        ),
        examples=(
            "RuntimeError: unscale_() has already been called on this optimizer since the last update().",
            "RuntimeError: unscale_() has already been called on this optimizer since the last update()",
        ),
        near_misses=(
            "RuntimeError: unscale_() is being called after step().",
            "ValueError: Attempting to unscale FP16 gradients.",
        ),
    ),
    Signature(
        id="scaler-call-order",
        family="scaler",
        title="GradScaler called out of its order: unscale_() or step() after step(), before update()",
        needles=("unscale_() is being called after step()", "step() has already been called since the last update()"),
        patterns=(
            r"unscale_\(\) is being called after step\(\)",
            r"step\(\) has already been called since the last update\(\)",
        ),
        cause="GradScaler keeps one state per optimizer per iteration, and each iteration must run "
        "`scaler.scale(loss).backward()`, then at most one `scaler.unscale_(optimizer)` (before clipping), then "
        "`scaler.step(optimizer)`, then `scaler.update()` once every optimizer has stepped. `step()` unscales by "
        "itself, so an `unscale_()` after it is refused, and a second `step()` before `update()` is refused. "
        "The usual causes: `scaler.update()` left out or called only on some iterations (only when the step was "
        "taken, or in a branch that does not run), gradient clipping placed after `scaler.step()`, or "
        "`scaler.step()` called on every micro-batch of gradient accumulation.",
        fixes=(
            fix(
                "Call `scaler.update()` after `scaler.step(optimizer)` on every iteration that stepped, also "
                "when you skip the optimizer step yourself (a gradient-norm guard)"
            ),
            fix(
                "Put each iteration in GradScaler's order: `scaler.scale(loss).backward()`, "
                "`scaler.unscale_(optimizer)`, clip, `scaler.step(optimizer)`, `scaler.update()`"
            ),
            fix(
                "With gradient accumulation, run `backward()` on every micro-batch but `unscale_`, `step` and "
                "`update` only on the one that steps"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/Azure/MS-AMP/pull/45",
            "https://github.com/k2-fsa/icefall/pull/1829",
            "https://github.com/pytorch/pytorch/pull/26512",
            "https://github.com/pytorch/pytorch/blob/main/torch/amp/grad_scaler.py",
        ),
        examples=(
            "RuntimeError: unscale_() is being called after step().",
            '  File "/opt/conda/lib/python3.8/site-packages/torch/cuda/amp/grad_scaler.py", line 321, in step\n'
            '    raise RuntimeError("step() has already been called since the last update().")\n'
            "RuntimeError: step() has already been called since the last update().",
        ),
        near_misses=(
            "RuntimeError: unscale_() has already been called on this optimizer since the last update().",
            "RuntimeError: Closure use is not currently supported if GradScaler is enabled.",
        ),
    ),
    Signature(
        id="scaler-closure",
        family="scaler",
        title="GradScaler.step() was given a closure (LBFGS-style optimizers), which it does not support",
        needles=("closure use is not currently supported if gradscaler is enabled",),
        patterns=(r"Closure use is not currently supported if GradScaler is enabled",),
        cause="`scaler.step(optimizer, closure=...)` is refused: a closure re-runs forward and backward inside "
        "`optimizer.step()`, where GradScaler can neither scale the loss nor unscale the gradients it makes. "
        "Optimizers that need a closure (LBFGS) cannot be used with fp16 loss scaling; frameworks that pass the "
        "training step as a closure by default (skorch, some Lightning and accelerate set-ups) hit it as soon as "
        "fp16 mixed precision is switched on.",
        fixes=(
            fix(
                "Train in bf16 instead: autocast with `dtype=torch.bfloat16` needs no GradScaler, so "
                "`optimizer.step(closure)` works (Ampere or newer GPUs)"
            ),
            fix(
                "Or drop the closure: compute the loss, `scaler.scale(loss).backward()`, then `scaler.step(optimizer)` "
                "with no arguments (not possible for LBFGS)"
            ),
            fix(
                "Or turn loss scaling off for this optimizer: `torch.amp.GradScaler(enabled=False)`, then "
                "`scaler.step(optimizer, closure)` calls `optimizer.step(closure)` as it is (fp16 gradients may "
                "underflow)"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/skorch-dev/skorch/pull/826",
            "https://github.com/pfnet/pytorch-pfn-extras/issues/636",
            "https://github.com/pytorch/pytorch/pull/26512",
        ),
        examples=(
            "RuntimeError: Closure use is not currently supported if GradScaler is enabled.",
            "closure use is not currently supported if gradscaler is enabled",
        ),
        near_misses=(
            "TypeError: step() missing 1 required positional argument: 'closure'",
            "RuntimeError: step() has already been called since the last update().",
        ),
    ),
    Signature(
        id="scaler-step-without-scale",
        family="scaler",
        title="GradScaler.{call}() ran before any scaler.scale(): no loss was scaled this iteration",
        needles=("but _scale is none", "but _growth_tracker is none"),
        patterns=(r"Attempted \w{1,20} but _(?:scale|growth_tracker) is None",),
        details=(r"attempted (?P<call>\w{1,20}) but _",),
        defaults=(("call", "step"),),
        cause="GradScaler creates its scale on the first `scaler.scale(loss)`. Here `{call}()` came first: the "
        "loss went through `loss.backward()` without `scaler.scale(...)`, the scaler used is a different object "
        "from the one that scaled (one created per iteration or per function), or a closure was passed "
        "positionally (`scaler.step(optimizer, closure)`), which GradScaler forwards without scaling anything.",
        fixes=(
            fix(
                "Scale the loss with the same scaler you step with: `scaler.scale(loss).backward()`, then "
                "`scaler.step(optimizer)` and `scaler.update()`; create the scaler once, before the loop"
            ),
            fix(
                "For a closure-based optimizer (LBFGS), GradScaler cannot help: train in bf16 (no scaler) or "
                "construct the scaler with `enabled=False`"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/pytorch/blob/main/torch/amp/grad_scaler.py",
            "https://github.com/pytorch/pytorch/pull/26512",
        ),
        examples=(
            "AssertionError: Attempted step but _scale is None.  This may indicate your script did not use "
            "scaler.scale(loss or outputs) earlier in the iteration.",
            "AssertionError: Attempted unscale_ but _growth_tracker is None.  This may indicate your script did not "
            "use scaler.scale(loss or outputs) earlier in the iteration.",
        ),
        near_misses=(
            "AssertionError: _scale is None in unscale_",
            "RuntimeError: Closure use is not currently supported if GradScaler is enabled.",
        ),
    ),
    Signature(
        id="scaler-no-inf-checks",
        family="scaler",
        title="GradScaler.step() found no gradients in the optimizer's parameters",
        needles=("no inf checks were recorded",),
        patterns=(r"No inf checks were recorded (?:for this optimizer|prior to update)",),
        cause="GradScaler checks the gradients of the optimizer's parameters for inf/nan before stepping. None of "
        "them had a gradient: the optimizer holds other tensors than the ones the loss reached (optimizer "
        "built before the model was moved to the GPU, wrapped or re-created), every parameter in it is "
        "frozen, or the loss is cut off from the graph (built with `torch.tensor(...)`, `.item()`, "
        "`.detach()`).",
        fixes=(
            fix(
                "Create the optimizer after `model.to(device)` and after any wrapping (PEFT, DDP), from "
                "`[p for p in model.parameters() if p.requires_grad]`"
            ),
            fix(
                "Check that the loss reaches the parameters: `loss.requires_grad` must be True and "
                "`p.grad` not None after `backward()`"
            ),
            fix(
                "Don't rebuild the loss from Python numbers (`torch.tensor(w, requires_grad=True)` starts a new "
                "graph); compute it from the model's outputs"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/huggingface/accelerate/issues/328",
            "https://github.com/huggingface/accelerate/issues/1990",
            "https://github.com/open-mmlab/mmsegmentation/issues/3230",
            "https://github.com/EraX-AI/viF5TTS/issues/10",
            "https://github.com/pytorch/pytorch/blob/main/torch/amp/grad_scaler.py",
        ),
        examples=(
            "AssertionError: No inf checks were recorded for this optimizer.",
            '  File ".../torch/cuda/amp/grad_scaler.py", line 336, in step\n'
            '    assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this '
            'optimizer."\n'
            "AssertionError: No inf checks were recorded for this optimizer.",
            '  File "miniconda3/envs/vif5-tts/lib/python3.10/site-packages/torch/amp/grad_scaler.py", line 451, in '
            "step\n"
            '    len(optimizer_state["found_inf_per_device"]) > 0\n'
            "AssertionError: No inf checks were recorded for this optimizer.",
            "AssertionError: No inf checks were recorded prior to update.",
        ),
        near_misses=(
            "ValueError: Attempting to unscale FP16 gradients.",
            "RuntimeError: unscale_() has already been called on this optimizer since the last update().",
        ),
    ),
    Signature(
        id="scaler-disabled-no-cuda",
        family="scaler",
        title="GradScaler disabled itself: torch sees no CUDA GPU, so there is no fp16 training",
        needles=("gradscaler is enabled, but cuda is not available",),
        patterns=(r"GradScaler is enabled, but CUDA is not available\.\s{1,3}Disabling",),
        cause="A CUDA GradScaler was created while `torch.cuda.is_available()` is False, so it turns itself off "
        "(and CUDA autocast does the same): training runs in fp32 on the CPU, slowly, or fails later when "
        "something expects a GPU. Usually a CPU-only torch build, a driver too old for torch's CUDA, or "
        "CUDA_VISIBLE_DEVICES hiding the GPUs.",
        fixes=(
            fix(
                "Check what torch sees",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
            fix(
                "Run `mpdoctor check` to find why CUDA is unavailable (CPU-only wheel, driver, visible devices)",
                "mpdoctor check",
            ),
            fix("On a machine without a GPU, drop the fp16/AMP option rather than relying on it being disabled"),
        ),
        checks=("TORCH009", "TORCH005", "TORCH006", "GPU005", "DRV001"),
        # A notice: a warning, the run goes on in fp32; what failed is CUDA, not the scaler (round 11 labels it no
        # precision failure).
        notice=True,
        sources=(
            "https://github.com/lucidrains/deep-daze/issues/138",
            "https://github.com/AnswerDotAI/RAGatouille/issues/95",
            "https://github.com/aladdinpersson/Machine-Learning-Collection/issues/147",
        ),
        examples=(
            "/home/wsl/miniconda3/envs/RAGatouille/lib/python3.11/site-packages/torch/cuda/amp/grad_scaler.py:125: "
            "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
            "C:\\Users\\hp\\AppData\\Local\\Programs\\Python\\Python310\\lib\\site-packages\\torch\\cuda\\amp\\"
            "grad_scaler.py:118: UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
            "Disabling.",
            "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available. Disabling.",
        ),
        near_misses=(
            "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling",
        ),
        notes="The matching autocast warning (\"User provided device_type of 'cuda', but CUDA is not available\") "
        "is left to the driver/hardware families: it is about CUDA, not the scaler.",
    ),
]
