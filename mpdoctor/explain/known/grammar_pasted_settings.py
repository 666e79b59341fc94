"""The general shapes of what users paste from the stack around torch (issue 38, held-out round 5's learn half;
the dtypes themselves are in grammar_pasted.py): a precision setting a framework or builder refuses, read by shape:

* a precision mode allowed only with some other setting (``bfloat16 mode is only enabled for Zero 1,2,3``);
* a precision value refused (``precision 16 is not supported``);
* a layer precision the builder was not told (``fp16 precision has been set for a layer ..., but fp16 is not
  configured in the builder``);
* an optimizer of one precision mode asked for another's low-precision method (``'DeepSpeedZeroOptimizer' object
  has no attribute 'clear_lp_grads'``).

Each says it is the general explanation; a library's own signature ranks above.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.known.grammar_pasted import _LOW, _LOW_START
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="framework-precision-mode-only-with",
        family="framework",
        title="{library} allows this precision mode only with another setting (the general explanation)",
        needles=(
            "is only enabled for",
            "is only enabled with",
            "is only available for",
            "is only available with",
            "is only allowed",
        ),
        patterns=(_LOW_START + r"[^\n:]{0,40}? is only (?:enabled|available|allowed) (?:for|with|in|when) ",),
        details=(r"(?P<dtype>bfloat16|bf16|float16|fp16|float8|fp8)", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The precision mode is implemented only together with some other setting (a ZeRO stage, a parallelism, "
        "an optimizer, a backend), and the configuration asks for it without that setting.",
        fixes=(fix("Change the other setting to one the message lists, or choose the precision mode it does allow"),),
        library_fixes=(
            (
                terms.DEEPSPEED,
                (
                    fix(
                        'DeepSpeed: bf16 (`"bf16": {"enabled": true}`) runs with ZeRO stages the installed version '
                        'lists: set `"zero_optimization": {"stage": 1}` (or 2, 3), or use `"fp16"` instead'
                    ),
                ),
            ),
        ),
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/issues/1784",),
        examples=(
            "assert not (self.bfloat16_enabled and (self.zero_optimization_stage not in {1, 2, 3})), f'bfloat16 "
            "mode is only enabled for Zero 1,2,3 currently. got {self.zero_optimization_stage}",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-precision-value-not-supported",
        family="framework",
        title="{library} does not take this precision setting's value (the general explanation)",
        needles=("not supported", "not allowed", "not valid"),
        # not Lightning's model summary, which only estimates the size in 32 bits for a precision it does not know
        patterns=(
            r"precision[ =:]{0,3}['\"`]?[a-z0-9-]{1,16}['\"`]? (?:is|are) not (?:supported|allowed|valid)"
            r"(?! by the model summary)",
        ),
        details=(r"precision", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="The precision setting (a trainer's `precision=`, a config's `precision:`) got a value this version's "
        "check does not accept: an integer where it wants a name (16 against '16-mixed'/'fp16'), a name another "
        "version spells differently, or a precision the model was not saved in.",
        fixes=(
            fix(
                "Pass the precision in the spelling the message lists, and as the model was trained or saved: "
                "Lightning 2.x takes '16-mixed', 'bf16-mixed', '32-true' (and 'bf16-true'); NeMo's Megatron "
                "models with `megatron_amp_O2` take the dtype the checkpoint was saved in"
            ),
        ),
        library_fixes=(
            (
                terms.LIGHTNING,
                (fix('Lightning: `Trainer(precision="16-mixed")` or `"bf16-mixed"` (not the integer 16)'),),
            ),
        ),
        checks=(),
        sources=("https://github.com/NVIDIA-NeMo/Speech/issues/6538",),
        examples=(
            "Exception: precision 16 is not supported. Float16Module (megatron_amp_O2) supports only fp16 and bf16.",
        ),
        near_misses=(
            "/venv/lib/python3.11/site-packages/lightning/pytorch/utilities/model_summary/model_summary.py:242: "
            "Precision bf16-mixed is not supported by the model summary.  Estimated model size in MB will not be "
            "accurate. Using 32 bits instead.",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-layer-precision-not-in-builder",
        family="framework",
        title="A layer was given {dtype} but the builder was not told to allow {dtype}",
        needles=("not configured in the builder", "not enabled in the builder", "not set in the builder"),
        patterns=(_LOW_START + r"[^\n]{0,120}? but " + _LOW + r" is not (?:configured|enabled|set) in the builder",),
        details=(r"(?P<dtype>bf16|fp16|fp8|int8|float16|bfloat16)",),
        cause="An engine builder (TensorRT) only builds {dtype} kernels when its config allows that precision. The "
        "network asked for {dtype} on a layer (an fp16 ONNX graph, a layer precision set by a tool or parser), but "
        "the builder config that built it never set the flag.",
        fixes=(
            fix(
                "Allow the precision on the builder config: `config.set_flag(trt.BuilderFlag.FP16)` "
                "(`trtexec --fp16`; polygraphy `--fp16`), or build the network strongly typed "
                "(`NetworkDefinitionCreationFlag.STRONGLY_TYPED`) so the graph's own types decide"
            ),
        ),
        checks=(),
        sources=("https://github.com/onnx/onnx-tensorrt/pull/773",),
        examples=(
            "Error Code 4: Internal Error (fp16 precision has been set for a layer or layer output, but fp16 is not "
            "configured in the builder)",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
    Signature(
        id="framework-optimizer-lacks-precision-method",
        family="framework",
        title="{library}: the optimizer built for one precision mode was asked for another's method",
        needles=("object has no attribute",),
        patterns=(
            r"(?:optimizer|engine|scaler|wrapper)' object has no attribute '[a-z0-9_]{0,30}?"
            r"(?:lp_|_lp|hp_|_hp|fp16|bf16|fp32|half|master|loss_scale)",
        ),
        details=(r"has no attribute '(?P<attribute>[a-z0-9_]{1,60})'", terms.LIBRARY),
        defaults=(("library", "The library"),),
        cause="A training engine picks its optimizer wrapper from the precision settings (an fp16 optimizer with loss "
        "scaling, a bf16 optimizer with fp32 master weights, a ZeRO optimizer), and another part of it (pipeline "
        "parallelism, a trainer's step) expects the other wrapper's `{attribute}`: this combination of precision, "
        "ZeRO stage and parallelism is not supported by the installed version.",
        fixes=(
            fix(
                "Use a combination the library supports: change the precision (fp16 instead of bf16) or the "
                "optimizer setting (ZeRO stage) so that the wrapper the code path expects is built, or upgrade "
                "the library"
            ),
        ),
        library_fixes=(
            (
                terms.DEEPSPEED,
                (
                    fix(
                        "DeepSpeed: pipeline parallelism with bf16 expects its BF16 optimizer: set "
                        '`"zero_optimization": {"stage": 0}` with `"bf16": {"enabled": true}` (or use `"fp16"`), '
                        "or upgrade DeepSpeed",
                        "pip install -U deepspeed",
                    ),
                ),
            ),
        ),
        checks=(),
        sources=("https://github.com/deepspeedai/DeepSpeed/issues/1835",),
        examples=(
            'File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/pipe/engine.py", line 768, in '
            "_exec_backward_pass\n"
            "self.optimizer.clear_lp_grads()\n"
            "AttributeError: 'DeepSpeedZeroOptimizer' object has no attribute 'clear_lp_grads'",
        ),
        rank=-1,
        notes=_GENERAL_NOTE,
    ),
]
