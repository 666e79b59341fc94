"""Family "overflow": fp16's range (largest finite value 65504) exceeded.

Seen as a loss scale that collapses or hits its floor (apex, DeepSpeed, fairseq), as a
Python constant that does not fit in fp16, or as inf/nan activations.
"""

from __future__ import annotations

from mpdoctor.explain.known.scaler import BF16_INSTEAD
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
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
            BF16_INSTEAD,
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
        title="The fp16 loss scale has collapsed (to a few units or below): every step overflows and is skipped",
        needles=("reducing loss scale to", "attempted loss scale:", "setting loss scale to:"),
        patterns=(
            # apex: below 1, or down to 4, 2 or 1 from its 65536 start (fourteen halvings in a row: even a scale of a
            # few units overflows, so the fp16 gradients themselves are inf/nan)
            r"Gradient overflow\.\s{1,3}Skipping step, loss scaler \d{0,3} ?reducing loss scale to "
            r"(?:\d\.?\d{0,20}e-\d{1,3}|0\.\d{1,20}|[124]\.0(?![0-9]))",
            # fairseq's dynamic scaler: halved below 1 on every step, on its way to --min-loss-scale
            r"overflow detected, setting loss scale to: (?:\d\.?\d{0,20}e-\d{1,3}|0\.\d{1,20})",
            r"Attempted loss scale: 1(?:\.0)?, reducing to 1(?:\.0)?\b",
            r"Attempted loss scale: [0-9.e+-]{1,30}, reducing to (?:\d\.?\d{0,20}e-\d{1,3}|0\.\d{1,20})",
        ),
        cause='A few "Gradient overflow. Skipping step" / "OVERFLOW! ... reducing to" lines at the start are '
        "normal: dynamic loss scaling starts high and halves on overflow. A scale of 1 (DeepSpeed's floor) "
        "or below (apex keeps halving) means even unscaled fp16 gradients are inf/nan: each step is skipped, "
        "the weights never change and the model does not learn. The fp16 forward/backward overflows "
        "(activations above 65504, typical of models pretrained in bf16), or the loss itself is nan.",
        fixes=(
            BF16_INSTEAD,
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
            "https://github.com/NVIDIA/apex/issues/493",
            "https://github.com/whai362/PVT/issues/94",
            "https://github.com/NVIDIA/apex/blob/master/apex/amp/handle.py",
            "https://github.com/facebookresearch/fairseq/issues/1895",
        ),
        examples=(
            "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 1, reducing to 1",
            "2020-03-23 11:41:18 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: "
            "0.00048828125",
            "[2021-11-27 00:36:54,800] [INFO] [stage2.py:1628:step] [deepscale] OVERFLOW! Rank 0 Skipping step. "
            "Attempted loss scale: 1, reducing to 1",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 8.165126103939127e-202",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 0.03125",
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4.0\n"
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 2.0\n"
            "Validation loss 8416:  0.711720  ",
        ),
        near_misses=(
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 131072.0",
            "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 256.0.",
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
            BF16_INSTEAD,
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
