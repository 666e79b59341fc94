"""The ecosystem's general shapes for precision settings a library refuses before anything runs (see
grammar_ecosystem.py): a value it does not know, fp16 loss-scale settings, and options that contradict each other.

* a value: ``Invalid communication_data_type. Supported data types: ['fp16', 'bf16', 'fp32']`` (DeepSpeed), ``Valid
  'amp' values are True, False, 'fp16', 'bf16', or 'fp32'`` (Ultralytics), ``Precision must be '16-mixed' or
  'bf16-mixed'`` (Lightning), ``Unsupported FP8 recipe``, ``fp8_format must be 'E4M3' or 'E5M2'``
  (TransformerEngine), ``quant_type must be 'nf4' or 'fp4'`` (bitsandbytes);
* loss scaling: ``fp16.loss_scale must be >= 0``, ``DeepSpeed LAMB optimizer requires dynamic loss scaling``,
  ``precision='bf16-mixed' does not use a scaler`` (Lightning);
* a contradiction: ``fp16_master_weights_and_gradients and bf16_master_weights_and_gradients are mutually
  exclusive``, ``bf16_optimizer_states requires bf16_master_weights_and_grads``, ``... conflicts with the enabled
  precision mode``, ``Passing in an FP8 configuration requires setting `mixed_precision='fp8'```.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_settings as settings_terms
from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

# A precision value as a setting spells it, quoted: 'fp16', 'bf16-mixed', 'e4m3'...
_QUOTED = (
    r"'(?:fp16|bf16|fp8|fp4|fp32|float16|bfloat16|16-mixed|bf16-mixed|16-true|bf16-true|mxfp8|mxfp4|nvfp4|e4m3|"
    r"e5m2|float8e4m3)'"
)
# What the line names as the refused precision (details, case-insensitive): one of these is always there.
_VALUE = (
    r"(?P<value>'(?:fp16|bf16|fp8|fp4|float16|bfloat16|16-mixed|bf16-mixed|mxfp8|mxfp4|nvfp4|e4m3|e5m2|float8e4m3)'|"
    r"fp8|fp4|nvfp4|mxfp|float8|fp16|bf16|precision|autocast|communication_data_type|mixed_precision|ms-amp)"
)
# What the title names (details, case-insensitive): the setting, where the line spells it.
_WHAT = (
    r"(?P<what>communication_data_type|dtype for torch autocast|mixed_precision\w{0,30}|fp8_format|fp8 recipe|"
    r"fp8 dtype|float8_dtype|fp4 format|nvfp4\w{0,30}|quant_type|compute_dtype|quant_storage|torch_dtype|"
    r"backward_dtype|forward_dtype|expert_dtype|precision|amp|dtype)"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="framework-precision-value-refused",
        family="framework",
        title="{library} does not take this value for a precision setting ({what}) (the general explanation)",
        needles=(
            "invalid precision",
            "invalid communication_data_type",
            "invalid dtype for torch autocast",
            "unknown fp8 ",
            "unsupported fp8 ",
            "unsupported fp4 ",
            "unsupported float8_dtype",
            "unsupported nvfp4 ",
            "must be one of",
            "must be in ",
            "must be [",
            *(f"must be {digit}" for digit in range(10)),
            "must be a valid string",
            "values are",
            "supported data types",
            "use '",
            "must be '",
            "only '",
            "for ms-amp",
            "for torch autocast",
            ": unsupported ",
            ": invalid ",
            "float16 value",
            "supported for '",
            "compatible with non-",
        ),
        patterns=(
            r"invalid (?:precision|communication_data_type|dtype for (?:torch )?autocast)",
            r"(?:unknown|unsupported) (?:fp8 (?:recipe|dtype|format)|fp4 format|float8_dtype|nvfp4 [a-z0-9 ]{0,20}mode)",
            # a setting's value (not the GPU's architecture: `unsupported SM version for FP8` is the hardware's)
            r"(?:invalid|unknown|unsupported) (?!sm |arch|gpu|compute|device)[a-z_ ]{0,30}? for (?:ms-amp|fp8|fp16|bf16|torch "
            r"autocast|autocast)",
            r"(?:bf16|fp16)[a-z_]{0,20}: (?:invalid|unknown|unsupported) ",
            r"invalid [a-z_]{2,30}\. [^\n]{0,30}?(?:float16|fp16|bfloat16|bf16) value",
            r"(?:must be (?:one of|in|a valid string) |values are |supported data types: |must be )[^\n]{0,40}?"
            + _QUOTED,
            r"use " + _QUOTED,
            r"(?:fp8_|nvfp4|mxfp|fp4_|float8_|mixed_precision)[a-z0-9_]{0,30}`? must be (?:one of|in |'|\[|[0-9])",
            r"only '(?:bf16|fp16|fp8|fp4|mxfp8|mxfp4|nvfp4|e4m3|e5m2)'(?:(?:, | and |, and )"
            r"'(?:bf16|fp16|fp8|fp4|mxfp8|mxfp4|nvfp4|e4m3|e5m2)'){0,3} (?:are|is) (?:supported for|compatible with)",
            r"(?: is supported| are supported) for '(?:nvfp4|mxfp4|mxfp8|fp8|fp4)'",
            r"(?: is supported| are supported) for [a-z_]{1,30} for '(?:nvfp4|mxfp4|mxfp8|fp8|fp4)'",
        ),
        details=(_VALUE, _WHAT, terms.LIBRARY),
        defaults=(("library", "The library"), ("what", "its precision option")),
        cause="{library} checks a precision option's value before it runs anything: a mixed-precision mode, a dtype "
        "given as a string, an fp8/fp4 format or recipe, a 4-bit quantization type, a communication or autocast "
        "dtype in a config file. The value given is not one it takes: a typo, another library's spelling "
        "(`16-mixed` is Lightning's, `fp16` Accelerate's and DeepSpeed's, `torch.float16` a Python object, `E4M3` a "
        "TransformerEngine `Format`), a value from another version, or an environment variable set for another tool.",
        fixes=(
            fix("Use one of the values the message lists (it prints them beside the refusal)"),
            fix("Look for the value where it comes from: a config file, an environment variable, a launcher flag"),
        ),
        library_fixes=settings_terms.SETTINGS,
        checks=(),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py",
            "https://github.com/ultralytics/ultralytics/blob/main/ultralytics/cfg/__init__.py",
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/common/recipe/__init__.py",
        ),
        examples=(
            "ValueError: Invalid communication_data_type. Supported data types: ['fp16', 'bf16', 'fp32']. Got: fp8",
            "ValueError: 'amp=half' is invalid. Valid 'amp' values are True, False, 'fp16', 'bf16', or 'fp32'.",
            "AssertionError: fp8_format must be 'E4M3' or 'E5M2' for amax",
            "ValueError: Unsupported FP8 recipe",
        ),
        near_misses=(
            # a refusal that names no precision value
            "RuntimeError: dtype not supported",
            "ValueError: Optimizer states with non-default dtypes are not supported",
        ),
        rank=-1,
        notes=_GENERAL_NOTE + " framework-precision-setting-unknown is Accelerate's own `mixed_precision` wording.",
    ),
    Signature(
        id="scaler-loss-scale-settings-refused",
        family="scaler",
        title="{library} refused its fp16 loss-scale settings (the general explanation)",
        needles=(
            "loss_scale must be",
            "loss_scale_window must be",
            "min_loss_scale must be",
            "loss scaling parameters must be",
            "requires dynamic loss scaling",
            "loss scale overriding only supported",
            "does not use a scaler",
            "does not use a grad scaler",
        ),
        patterns=(
            r"loss_scale must be",
            r"loss_scale_window must be",
            r"min_loss_scale must be",
            r"loss scaling parameters must be",
            r"requires dynamic loss scaling",
            r"loss scale overriding only supported",
            r"bf16[^\n]{0,30}? does not use a (?:grad )?scaler",
        ),
        details=(r"(?P<what>loss|scal)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="Loss scaling belongs to fp16 training: the loss is multiplied so small gradients do not underflow, "
        'either by a fixed positive, finite factor or dynamically (DeepSpeed: `"loss_scale": 0`), halved on '
        "overflow within a positive window down to a positive minimum; some optimizers (DeepSpeed's LAMB) take only "
        "the dynamic scale. bf16 keeps fp32's exponent range and takes no loss scale at all, so a scaler handed to a "
        "bf16 run (Lightning's `bf16-mixed`, overriding the scale of a bf16 optimizer) is refused.",
        fixes=(
            fix(
                "For fp16, give the scale settings their allowed values (dynamic scaling is the usual choice); for "
                "bf16, drop the loss scaler: `scaler = torch.amp.GradScaler(enabled=(dtype == torch.float16))`"
            ),
        ),
        library_fixes=settings_terms.LOSS_SCALE,
        checks=("AMP003",),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/precision_config.py",
            "https://www.deepspeed.ai/docs/config-json/#fp16-training-options",
            "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/plugins/precision/amp.py",
        ),
        examples=(
            "ValueError: fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)",
            "AssertionError: DeepSpeed Lamb optimizer requires dynamic loss scaling",
            "ValueError: `precision='bf16-mixed'` does not use a scaler, found <torch.amp.grad_scaler.GradScaler "
            "object at 0x7f0>.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-precision-options-conflict",
        family="framework",
        title="{library} was given precision options that cannot go together (the general explanation)",
        needles=(
            "are mutually exclusive",
            "_optimizer_states requires",
            "_master_weights_and_grads requires",
            "is only supported with zero stage",
            "requires bfloat16 to be enabled",
            "requires fp16 to be enabled",
            "conflicts with the enabled precision mode",
            "cannot enable both torch autocast",
            "cannot enable both autocast",
            "when using `mixed_precision=",
            "requires setting `mixed_precision=",
            "with zero-offload requires",
            "requires --",
            "is enabled outside",
            "provided in",
            "can be specified",
            "recipe mismatch for",
            "not performed within",
            "initialized with fp8 buffers",
            "or both torch.",
            "should not be specified when",
            "cannot specify both",
        ),
        patterns=(
            r"(?:fp16|bf16)_[a-z0-9_]{1,40} and (?:fp16|bf16)_[a-z0-9_]{1,40} are mutually exclusive",
            r"(?:fp16|bf16)_[a-z0-9_]{1,40} requires (?:fp16|bf16)_[a-z0-9_]{1,40}",
            r"(?:fp16|bf16)_[a-z0-9_]{1,40} is only supported with zero stage",
            r"requires (?:bfloat16|bf16|fp16|float16) to be enabled",
            r"conflicts with the enabled precision mode",
            r"cannot enable both (?:torch )?autocast and",
            r"when using `mixed_precision='(?:fp8|fp16|bf16)'`",
            r"requires setting `mixed_precision='(?:fp8|fp16|bf16)'`",
            r"(?:fp16|bf16)_[a-z0-9_]{1,40} with zero-offload requires",
            # a precision flag that needs another flag: "fp16/int8 requires --optimize_onnx"
            r"(?:fp16|bf16|int8|fp16/int8) requires --[a-z_]{2,30}",
            r"autocast is enabled outside [^\n]{0,30}but disabled within",
            r"(?:fp16|bf16) provided in [a-z_]{1,30} is [^\n]{0,30}, but (?:fp16|bf16) provided in",
            r"only one of [a-z_]{1,30} and [a-z_]{1,30} can be specified",
            # TransformerEngine: a weight made under one recipe, run under another (or outside autocast)
            r"recipe mismatch for '",
            r"but the forward pass was not performed within (?:te\.)?autocast",
            r"buffers is (?:not )?initialized with fp8 buffers",
            r"to be both torch\.[a-z0-9]{4,10} or both torch\.",
            r"should not be specified when [a-z0-9_]{1,30} is provided",
            r"cannot specify both [a-z0-9_]{1,30} and [a-z0-9_]{1,30}",
        ),
        details=(r"(?P<what>fp16|bf16|bfloat16|float16|fp8|autocast|precision|tf32|recipe)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="{library} was given precision options that contradict each other, or one without the other it needs: "
        "fp16 and bf16 master weights at once, bf16 optimizer states without bf16 master weights, a precision "
        "option on a ZeRO stage or an offload that does not take it, a parameter dtype unlike the enabled fp16/bf16 "
        "mode, torch autocast beside quantized weights, an fp8 recipe without fp8 mixed precision. It stops before "
        "training.",
        fixes=(
            fix("Turn on the option the message says is needed, or turn off one of the two that contradict"),
            fix("Look for both where they come from: the config file, the launcher's flags, the trainer's arguments"),
        ),
        library_fixes=settings_terms.CONFLICTS,
        checks=(),
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py",
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
        ),
        examples=(
            "AssertionError: fp16_master_weights_and_gradients and bf16_master_weights_and_gradients are mutually "
            "exclusive.",
            "AssertionError: bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
            "ValueError: Passing in an FP8 configuration requires setting `mixed_precision='fp8'`.",
            "AssertionError: Cannot enable both torch autocast and zero quantized weights",
        ),
        near_misses=("ValueError: precision set through both strategy class and plugins, choose one",),
        rank=-2,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="numerics-low-precision-accumulation",
        family="numerics",
        title="{library} warns that accumulating gradients in {dtype} loses precision (the general explanation)",
        needles=("accumulation is not safe", "accumulation is not recommended"),
        patterns=(r"(?:bf16|fp16|bfloat16|float16)[a-z ]{0,30} accumulation is not (?:safe|recommended)",),
        details=(r"(?P<dtype>bf16|fp16|bfloat16|float16)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="Gradients are summed over the accumulation steps in {dtype}: bf16 keeps 8 bits of mantissa (fp16 "
        "10), so once the running sum is large, each small step's gradient is rounded away, and over many steps "
        "the update drifts from what fp32 accumulation gives.",
        fixes=(
            fix(
                "Accumulate gradients in fp32 (keep fp32 master gradients), or use fewer accumulation steps with a "
                "larger micro-batch"
            ),
        ),
        library_fixes=settings_terms.ACCUMULATION,
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/engine.py",),
        examples=(
            "**** BF16 gradient accumulation is not safe numerically with large number of accumulation steps, "
            "proceed with caution *****",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
]
