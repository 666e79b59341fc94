"""Loss scaling and fp16 overflow.

Family "scaler": torch's GradScaler used against its rules (gradients that are fp16 or bf16 instead of fp32,
unscale_ twice, an optimizer with no gradients, a scaler silently disabled). Family "overflow": fp16's range
(largest finite value 65504) exceeded, seen as a loss scale that collapses or hits its floor (apex, DeepSpeed,
fairseq), as a Python constant that does not fit in fp16, or as inf/nan activations.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

_BF16_INSTEAD = fix(
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
            _BF16_INSTEAD,
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
    # --- overflow: fp16's range exceeded -----------------------------------------------------------------------
    Signature(
        id="overflow-loss-scale-minimum",
        family="overflow",
        title="The fp16 loss scale hit its minimum and the run stopped: every step overflows",
        needles=("current loss scale already at minimum", "minimum loss scale reached"),
        patterns=(r"Current loss scale already at minimum", r"Minimum loss scale reached"),
        cause="Dynamic loss scaling halves the scale after each step whose gradients overflow. When it reaches "
        "the floor (DeepSpeed `min_loss_scale`, default 1; fairseq `--min-loss-scale`, default 1e-4) and "
        "steps still overflow, the trainer gives up: the inf/nan is not caused by the scaling but by the "
        "fp16 forward/backward itself (activations above 65504, often a model pretrained in bf16, or a "
        "diverging loss from a too-high learning rate or bad data).",
        fixes=(
            _BF16_INSTEAD,
            fix(
                "Lower the learning rate, add warmup and gradient clipping (fairseq's own advice: \"Try "
                'lowering the learning rate, using gradient clipping or increasing the batch size")'
            ),
            fix(
                "Find the layer that overflows: transformers `--debug underflow_overflow` reports the first "
                "module whose activations become inf/nan"
            ),
            fix("Or train in fp32 if neither bf16 nor a lower learning rate helps"),
        ),
        checks=("PREC008", "PREC001", "PREC005"),
        sources=(
            "https://github.com/ymcui/Chinese-LLaMA-Alpaca/issues/534",
            "https://github.com/yangjianxin1/Firefly/issues/68",
            "https://github.com/facebookresearch/fairseq/issues/282",
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/fp16/loss_scaler.py",
            "https://github.com/facebookresearch/fairseq/blob/main/fairseq/optim/fp16_optimizer.py",
            "https://github.com/facebookresearch/fairseq/blob/main/fairseq/optim/amp_optimizer.py",
        ),
        examples=(
            "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
            "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering "
            "the learning rate, using gradient clipping or increasing the batch size.",
            "Exception: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the "
            "learning rate, using gradient clipping or increasing the batch size.",
        ),
        near_misses=(
            "2023-06-13 17:37:40 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 16384.0",
            "[2023-04-28 06:51:30,648] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: 65536, reducing to 32768",
        ),
    ),
    Signature(
        id="overflow-loss-scale-collapsed",
        family="overflow",
        title="The fp16 loss scale has collapsed (to 1 or below): every step overflows and is skipped",
        needles=("reducing loss scale to", "attempted loss scale:"),
        patterns=(
            r"Gradient overflow\.\s{1,3}Skipping step, loss scaler \d{0,3} ?reducing loss scale to "
            r"(?:\d\.?\d{0,20}e-\d{1,3}|0\.\d{1,20})",
            r"Attempted loss scale: 1(?:\.0)?, reducing to 1(?:\.0)?\b",
            r"Attempted loss scale: [0-9.e+-]{1,30}, reducing to (?:\d\.?\d{0,20}e-\d{1,3}|0\.\d{1,20})",
        ),
        cause='A few "Gradient overflow. Skipping step" / "OVERFLOW! ... reducing to" lines at the start are '
        "normal: dynamic loss scaling starts high and halves on overflow. A scale of 1 (DeepSpeed's floor) "
        "or below (apex keeps halving) means even unscaled fp16 gradients are inf/nan: each step is skipped, "
        "the weights never change and the model does not learn. The fp16 forward/backward overflows "
        "(activations above 65504, typical of models pretrained in bf16), or the loss itself is nan.",
        fixes=(
            _BF16_INSTEAD,
            fix(
                "Find where fp16 overflows: transformers `--debug underflow_overflow`, or check the loss and "
                "inputs for nan/inf before backward"
            ),
            fix(
                "Lower the learning rate / add gradient clipping, and make sure the loss is computed in fp32 "
                "(outside autocast)"
            ),
            fix("Or train in fp32"),
        ),
        checks=("PREC008", "PREC001", "PREC005"),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/issues/697",
            "https://github.com/huggingface/transformers/issues/14531",
            "https://github.com/NVIDIA/apex/issues/318",
            "https://github.com/whai362/PVT/issues/94",
            "https://github.com/NVIDIA/apex/blob/master/apex/amp/handle.py",
        ),
        examples=(
            "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 1, reducing to 1",
            "[2021-11-27 00:36:54,800] [INFO] [stage2.py:1628:step] [deepscale] OVERFLOW! Rank 0 Skipping step. "
            "Attempted loss scale: 1, reducing to 1",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 8.165126103939127e-202",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 0.03125",
        ),
        near_misses=(
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 131072.0",
            "[2023-04-28 06:51:30,648] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: 65536, reducing to 32768",
            "[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: 64, reducing to 32",
        ),
        notes="Matched on one line, so it keys on the scale's value, not on how often the line repeats.",
    ),
    Signature(
        id="overflow-half-scalar",
        family="overflow",
        title="A constant too large for fp16 (-1e9, 1e10, 2**30, finfo(float32).min) written into an fp16 tensor",
        needles=("::half without overflow", "::bfloat16 without overflow"),
        patterns=(r"cannot be converted to type (?:struct )?(?:at|c10)::(?:Half|BFloat16) without overflow",),
        cause="A Python number was written into a half-precision tensor (masked_fill with -1e9 for attention "
        "masks, an index assignment like `scores[i, eos] = float(2**30)`, clamp bounds) and it does not fit: "
        "fp16's largest finite value is 65504. The code was written for fp32 and is now run in fp16 (under "
        "autocast, or with the model in `.half()`). bf16 has fp32's range, so only values beyond ~3.4e38 "
        "fail there.",
        fixes=(
            fix(
                "Use a dtype-aware constant: `torch.finfo(scores.dtype).min` instead of -1e9 (or "
                '`float("-inf")` where a fully masked row cannot occur)'
            ),
            fix("If the model is third-party (remote code), update it: e.g. Qwen fixed its float(2**30) the same day"),
            fix(
                'Or run that part in bf16 or fp32 (`with torch.autocast("cuda", enabled=False):` around it, '
                "or the model's bf16 option)"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/NVIDIA/apex/issues/1052",
            "https://github.com/QwenLM/Qwen/issues/32",
            "https://github.com/InternLM/lmdeploy/issues/3152",
            "https://github.com/facebookresearch/mmf/pull/962",
            "https://github.com/pytorch/pytorch/blob/main/c10/util/TypeCast.cpp",
        ),
        examples=(
            '  File "/root/.cache/huggingface/modules/transformers_modules/Qwen/Qwen-7B-Chat/'
            '44e46a0f02169a2c4790fbcccec82cd20f4df717/qwen_generation_utils.py", line 349, in __call__\n'
            "    scores[i, self.eos_token_id] = float(2**30)\n"
            "RuntimeError: value cannot be converted to type at::Half without overflow",
            '  File "/home/wxu/github/docre/code/models/MPR.py", line 169, in forward\n'
            "    scores_mask = scores.masked_fill(~path_mask.unsqueeze(-1),-1e9)\n"
            "RuntimeError: value cannot be converted to type at::Half without overflow: -1e+09",
            "[rank0]: RuntimeError: value cannot be converted to type at::Half without overflow",
            "RuntimeError: value cannot be converted to type c10::Half without overflow",
        ),
        near_misses=(
            "RuntimeError: value cannot be converted to type float without overflow: inf",
            "RuntimeError: expected scalar type Float but found Half",
        ),
        notes="`c10::Half` is the spelling of current torch (c10/util/TypeCast.cpp prints the type's name; "
        "checked with torch 2.13), `at::Half` with a trailing value that of torch 1.x.",
    ),
    Signature(
        id="overflow-activation-inf-nan",
        family="overflow",
        title="transformers' overflow detector found inf/nan activations (fp16 overflow in a layer)",
        needles=("detected inf/nan during batch_number",),
        patterns=(r"Detected inf/nan during batch_number=\d{1,12}",),
        cause="transformers' DebugUnderflowOverflow (`--debug underflow_overflow`) stopped at the first module "
        "whose weights or activations contain inf/nan and printed the frames before it. Under fp16 this is "
        "almost always an activation that exceeded 65504: models pretrained in bf16 (T5, mT5, GPT-Neo, "
        "Pegasus) produce values fp16 cannot hold, so the loss turns nan.",
        fixes=(
            _BF16_INSTEAD,
            fix(
                "Keep the module the report names (usually a feed-forward `wo`/`fc2`) in fp32: run it outside "
                "autocast, or list it in the model's `_keep_in_fp32_modules`"
            ),
            fix("Or train in fp32"),
        ),
        checks=("PREC001", "PREC005"),
        sources=(
            "https://github.com/huggingface/transformers/issues/11076",
            "https://github.com/huggingface/transformers/pull/11274",
            "https://github.com/huggingface/transformers/issues/5651",
        ),
        examples=(
            "Detected inf/nan during batch_number=2\nlast 21 frames:\nabs min  abs max  metadata",
            "Detected inf/nan during batch_number=0",
        ),
        near_misses=(
            "Found inf or nan, current scale is: 128.0, decrease to: 128.0*0.5",
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
        ),
    ),
]
