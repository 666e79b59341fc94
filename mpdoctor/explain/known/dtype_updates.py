"""Dtype mismatches in writes and updates: index_put/scatter/masked_scatter, the loss backward and
optimizer steps (``Found dtype``, ``lerp``), and embeddings fed half-precision token ids. Autocast
does not cover in-place writes, so most cures here are a cast at the right place."""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE, FULL, FULL_CPP, HALF, HALF_CPP, TENSOR_PREFIX
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-index-put-scatter",
        family="dtype",
        title="An indexed write (index_put/scatter/masked_scatter) got a source in another precision",
        needles=(
            "index put requires the source and destination dtypes match",
            "expected self.dtype to be equal to src.dtype",
            "expected self and source to have same dtypes",
        ),
        patterns=(
            rf"Index put requires the source and destination dtypes match, got (?:{HALF} for the destination and "
            rf"(?:{HALF}|{FULL})|{FULL} for the destination and {HALF}) for the source",
            r"scatter(?:_cuda_)?\(\): Expected self\.dtype to be equal to src\.dtype",
            rf"masked_scatter_?: expected self and source to have same dtypes but got ?(?:{HALF} and {FULL}|{FULL} and "
            rf"{HALF})\b",
        ),
        cause="In-place indexed writes never promote: `out[idx] = src`, `index_put_`, `scatter_`/`scatter_add_`/"
        "`scatter_reduce_` and `masked_scatter_` need `src` in the destination's dtype. Under autocast a "
        "buffer allocated with `x.dtype` (fp16) receives the fp32 output of a softmax/linear, or an fp32 "
        "buffer receives an fp16 activation. The scatter message does not name the dtypes; check which of "
        "the two is fp16.",
        fixes=(
            fix(
                "Cast the source to the destination's dtype at the write: `out[idx] = src.to(out.dtype)`, "
                "`out.scatter_add_(dim, index, src.to(out.dtype))` (autocast does not cover in-place writes)"
            ),
            fix(
                "Or allocate the destination in the dtype the computation produces: `torch.zeros(..., dtype=src.dtype)`"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/hiyouga/LlamaFactory/issues/3807",
            "https://github.com/continue-revolution/sd-webui-animatediff/issues/168",
            "https://github.com/zai-org/VisionReward/issues/7",
            "https://github.com/cvg/glue-factory/issues/76",
            "https://github.com/pytorch/rl/issues/1703",
        ),
        examples=(
            "llava - RuntimeError: Index put requires the source and destination dtypes match, got Half for the "
            "destination and Float for the source.",
            "[Bug]: RuntimeError: Index put requires the source and destination dtypes match, got Float for the "
            "destination and Half for the source.",
            "Index put requires the source and destination dtypes match, got BFloat16 for the destination and "
            "Float for the source.",
            "RuntimeError: scatter(): Expected self.dtype to be equal to src.dtype",
            "RuntimeError: masked_scatter_: expected self and source to have same dtypes but gotHalf and Float",
        ),
        near_misses=(
            # float64 source into a float32 tensor (pytorch#63935): a numpy/double slip, not precision
            "RuntimeError: Index put requires the source and destination dtypes match, got Float for the "
            "destination and Double for the source.",
        ),
    ),
    Signature(
        id="dtype-found-dtype-expected",
        family="dtype",
        title="A loss, its backward or an optimizer update met fp16/bf16 and fp32 tensors",
        needles=("found dtype", "expected dtype"),
        patterns=(
            rf"Found dtype (?:{HALF} but expected {FULL}|{FULL} but expected {HALF})\b",
            rf"expected dtype (?:{HALF} but got dtype {FULL}|{FULL} but got dtype {HALF})\b",
        ),
        cause="An element-wise kernel that does not promote types (`binary_cross_entropy`, `mse_loss` backward, "
        "`lerp`, the foreach/fused optimizer updates) got an fp16/bf16 tensor and an fp32 one: typically "
        "the prediction comes out of autocast in fp16 while the target is fp32, or parameters are fp16 "
        "(`.half()`, DeepSpeed/Lightning `precision=16`) while the optimizer or its state is fp32. torch "
        "1.5 worded it `expected dtype Float but got dtype Half`.",
        fixes=(
            fix(
                "Compute the loss in fp32, outside autocast: `loss = loss_fn(pred.float(), target.float())`; for "
                "BCE under autocast use `F.binary_cross_entropy_with_logits` on the logits, which autocast runs "
                "in fp32"
            ),
            fix(
                "In an optimizer step, keep parameters fp32 and let autocast+GradScaler do the fp16 work, "
                "instead of `.half()` on the model: autocast, not a cast of the parameters, is the cure"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007", "PREC008"),
        sources=(
            "https://github.com/Megvii-BaseDetection/YOLOX/issues/731",
            "https://github.com/Stability-AI/stable-audio-tools/issues/198",
            "https://github.com/Lightning-AI/pytorch-lightning/issues/16303",
            "https://github.com/nestordemeure/ManifoldMixupV2/issues/1",
        ),
        examples=(
            "RuntimeError: Found dtype Float but expected Half",
            "deepspeed not support? RuntimeError: Found dtype Float but expected Half",
            "RuntimeError: Found dtype Half but expected Float in optimizer",
            "RuntimeError: expected dtype Float but got dtype Half",
        ),
        near_misses=(
            "RuntimeError: expected dtype Double but got dtype Float",  # float64 model, fp32 target: pytorch#36553
            "RuntimeError: expected dtype c10::Half for `end` but got dtype float",  # dtype-lerp-end
        ),
    ),
    Signature(
        id="dtype-lerp-end",
        family="dtype",
        title="lerp (an EMA or Adam moment update) got a tensor in another precision than its state",
        needles=("end` but got dtype", "for end but got dtype"),
        patterns=(
            rf"expected dtype (?:{HALF_CPP} for `?end`? but got dtype (?:{FULL_CPP}|{HALF_CPP})|{FULL_CPP} for `?end`? but "
            rf"got dtype {HALF_CPP})\b",
        ),
        cause="`torch.lerp`/`Tensor.lerp_` does not promote: `exp_avg.lerp_(grad, 1 - beta1)` in Adam/AdamW and "
        "many custom optimizers (Prodigy, Muon, schedule-free), and EMA updates `ema.lerp_(param, w)`, "
        "need both tensors in one dtype. fp16/bf16 parameters (and so gradients) against optimizer state "
        "or an EMA copy kept in fp32, or state reloaded in another dtype than the parameters, raise this.",
        fixes=(
            fix(
                "Keep the trained parameters in fp32 and get the speed from autocast; an fp32 optimizer state "
                "then matches its gradients"
            ),
            fix(
                "Or, when the parameters must stay bf16/fp16, cast at the update: "
                "`state.lerp_(grad.to(state.dtype), 1 - beta)`, and keep an EMA copy in the parameters' dtype "
                "or upcast them: `ema.lerp_(p.detach().float(), w)`"
            ),
            fix("After loading an optimizer checkpoint, make sure its state dtypes match the parameters again"),
            DTYPE_TRACE,
        ),
        checks=(),
        sources=(
            "https://github.com/LoganBooker/prodigy-plus-schedule-free/issues/10",
            "https://github.com/HomebrewML/HeavyBall/issues/26",
            "https://github.com/zichongli5/NorMuon/issues/7",
        ),
        examples=(
            "RuntimeError: expected dtype c10::Half for `end` but got dtype float",
            "RuntimeError: expected dtype float for `end` but got dtype c10::BFloat16",
            "`RuntimeError: expected dtype float for end but got dtype c10::BFloat16. `",
        ),
        near_misses=(
            "RuntimeError: \"lerp_cuda\" not implemented for 'Half'",  # no fp16 kernel (old torch), not a mix
        ),
    ),
    Signature(
        id="dtype-embedding-half-indices",
        family="dtype",
        title="Token ids were cast to fp16/bf16 along with the float inputs and reached an embedding",
        needles=("'indices' to have",),
        patterns=(
            rf"Expected tensor for argument #1 'indices' to have (?:one of the following scalar types: "
            rf"Long, Int|scalar type Long); but got {TENSOR_PREFIX}{HALF}Tensor",
        ),
        cause="An embedding's indices must be int64/int32. A blanket `.half()`/`.to(torch.float16)`/"
        "`.to(torch.bfloat16)` over a whole batch dict (input_ids, labels, attention masks) or a collator "
        "that casts everything to the model's dtype turned the token ids into fp16, which also corrupts "
        "ids above 2048 before the check fires.",
        fixes=(
            fix(
                "Cast only floating tensors to the model dtype and leave ids alone: "
                "`{k: v.to(dtype) if v.is_floating_point() else v for k, v in batch.items()}`"
            ),
            fix("Better, do not cast inputs at all and run under autocast, which never touches integer tensors"),
            DTYPE_TRACE,
        ),
        checks=(),
        sources=("https://github.com/Comfy-Org/ComfyUI/issues/7370", "https://github.com/QwenLM/Qwen3/issues/44"),
        examples=(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
            "got torch.cuda.HalfTensor instead (while checking arguments for embedding)",
            "multi gpu dpo training have an error：Expected tensor for argument #1 'indices' to have one of the "
            "following scalar types: Long, Int; but got torch.cuda.HalfTensor instead (while checking arguments for",
        ),
        near_misses=(
            # fp32/int32 ids: a data-loading type slip, not a precision cast
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
            "got torch.FloatTensor instead (while checking arguments for embedding)",
            "RuntimeError: Expected tensor for argument #1 'indices' to have scalar type Long; but got "
            "torch.cuda.IntTensor instead (while checking arguments for embedding)",
        ),
    ),
]
