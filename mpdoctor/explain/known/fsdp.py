"""FSDP (FullyShardedDataParallel) refusing to flatten parameters of two dtypes into one FlatParameter.

FSDP1 flattens every parameter of a wrapped unit into one 1-D ``FlatParameter``, which has one dtype
(``_validate_tensors_to_flatten`` in ``torch/distributed/fsdp/_flat_param.py``). A model loaded in bf16 with
adapters, norms or Mamba/SSM parameters left in fp32 (PEFT/LoRA, QLoRA's quant storage) fails when it is wrapped.
FSDP2 (``fully_shard``) has no FlatParameter but the same rule for the trainable parameters of one group
(``FSDPParamGroup._init_mp_dtypes`` in ``torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py``).
"""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.signature import Signature, fix

_SOURCE_FLAT_PARAM = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/fsdp/_flat_param.py"
_SOURCE_MP = "https://pytorch.org/docs/stable/fsdp.html#torch.distributed.fsdp.MixedPrecision"
_SOURCE_FSDP2 = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py"
_SOURCE_QLORA = "https://huggingface.co/docs/peft/accelerate/fsdp#use-peft-qlora-and-fsdp-for-finetuning-large-models-on-multiple-gpus"

SIGNATURES: list[Signature] = [
    Signature(
        id="fsdp-flat-param-mixed-dtypes",
        family="dtype",
        title="FSDP cannot flatten parameters of two dtypes into one FlatParameter",
        needles=("flatten tensors with uniform dtype", "flatparameter` requires uniform dtype"),
        patterns=(r"flatten tensors with uniform dtype but got", r"flatparameter` requires uniform dtype but got"),
        cause="FSDP (FullyShardedDataParallel, also under Accelerate, HF Trainer, LLaMA-Factory, axolotl, TRL) "
        "flattens all parameters of each wrapped unit into one FlatParameter of a single dtype. Some parameters "
        "of one unit are in another dtype: LoRA/PEFT adapters or a value head created in fp32 on a model loaded "
        "in bf16/fp16, layers a model keeps in fp32 on purpose (norms, Mamba/SSM `A_log`/`D`), or QLoRA's "
        "4-bit weights whose storage dtype is not the compute dtype. FSDP's own MixedPrecision does the "
        "casting; the parameters themselves must agree.",
        fixes=(
            fix(
                "Give every parameter one dtype before wrapping, and let FSDP cast for compute: load or cast the "
                "model to fp32 (`model.to(torch.float32)`, or after get_peft_model) and pass "
                "`FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, "
                "reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16))` (Accelerate/Trainer: "
                "`mixed_precision: bf16` with the model loaded in fp32)"
            ),
            fix(
                "Or load everything in bf16 and cast the added parts to it: "
                "`for p in model.parameters(): p.data = p.data.to(torch.bfloat16)` before the trainer wraps it"
            ),
            fix(
                "With QLoRA + FSDP, store the 4-bit weights in the compute dtype so they flatten with the rest: "
                "`BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16, "
                "bnb_4bit_quant_storage=torch.bfloat16)`, and `torch_dtype=torch.bfloat16` when loading"
            ),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/huggingface/peft/issues/484",
            "https://github.com/hiyouga/LlamaFactory/issues/3853",
            _SOURCE_FLAT_PARAM,
            _SOURCE_MP,
            _SOURCE_QLORA,
        ),
        examples=(
            '[rank0]:   File "/home/guest/.local/lib/python3.10/site-packages/torch/distributed/fsdp/_flat_param.py",'
            " line 770, in _validate_tensors_to_flatten\n"
            "[rank0]:     raise ValueError(\n"
            "[rank0]: ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32",
            "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float16",
            "ValueError: `FlatParameter` requires uniform dtype but got torch.float16 and torch.float32",
        ),
        near_misses=("Must flatten tensors with uniform requires_grad when use_orig_params=False",),
        notes="The dtype words are not required: users retype the message ('torch.bloat16', axolotl#1482). "
        "Mixed requires_grad (frozen parameters, the near-miss) is FSDP's other flattening rule, fixed by "
        "`use_orig_params=True`; it is not a precision failure.",
    ),
    Signature(
        id="fsdp2-uniform-param-dtype",
        family="dtype",
        title="FSDP2 (fully_shard) needs its trainable parameters in one dtype",
        needles=("fsdp expects uniform",),
        patterns=(r"fsdp expects uniform (?:original parameter|reduce) dtype",),
        cause="`fully_shard` groups the parameters of each module it wraps and all-gathers and reduces them together; "
        "the trainable ones (frozen parameters are not counted) must share one original dtype, and one reduce "
        "dtype. Some are fp32 and others bf16/fp16: adapters or a head added in fp32 to a model loaded in bf16, "
        "norms kept in fp32. The casting for compute belongs to its MixedPrecisionPolicy, not to the parameters.",
        fixes=(
            fix(
                "Keep the trainable parameters in one dtype (fp32) and let FSDP2 cast for compute: "
                "`model.to(torch.float32)` before `fully_shard(module, mp_policy=MixedPrecisionPolicy("
                "param_dtype=torch.bfloat16, reduce_dtype=torch.float32))`"
            ),
            fix(
                "Or cast the added parts to the model's dtype before wrapping: "
                "`for p in model.parameters(): p.data = p.data.to(torch.bfloat16)`; frozen parameters may keep "
                "another dtype"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(_SOURCE_FSDP2, "https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html"),
        examples=(
            "AssertionError: FSDP expects uniform original parameter dtype but got {torch.float32, torch.bfloat16}",
        ),
        notes="The example is torch 2.13's message (_fsdp_param_group.py) with its hole filled, as "
        "tests/explain_ecosystem's table holds it; `FSDP expects uniform reduce dtype` is its neighbour.",
    ),
]
