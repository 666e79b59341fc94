"""The ecosystem's general shape for a dtype allow-list: something that takes only some dtypes, listed, one of them a
low precision, refused what it got (see grammar_ecosystem.py for the grammar's other shapes).

Kernels and functions outside torch check their inputs' dtypes against a short list and say so in one of a few
ways, whatever the library:

* a verb of obligation and the list: ``Input tensor must be float32 or bfloat16`` (torchao), ``inp must have BF16
  or FP32 dtype`` (TransformerEngine), ``Expected bf16 or fp16, got ...``, ``requires BF16/FP16/FP32
  activations``, ``Supported dtypes: torch.float32, torch.float16, torch.bfloat16`` (bitsandbytes), ``can only be
  fp8/fp16/bf16/fp32``, ``Please initialize PiSSA under float32, float16, or bfloat16`` (PEFT);
* ``only <list> <noun> is/are supported``: ``Only bf16 activation is supported for torch.bmm``, ``only float32 or
  float16 is supported`` (ONNX Runtime);
* ``supports/handles <list> <noun>``: ``supports bfloat16, float16, and float32 rows`` (DeepSpeed), ``handles
  bfloat16 only``.

The list is read into the title; a lone dtype counts only where the words around it say it is what is taken (``must
be bfloat16.``, ``expected bfloat16, got``). The verbs come first in every pattern, so a log line that only names a
dtype (``dtype float16``) costs nothing.
"""

from __future__ import annotations

from mpdoctor.explain.known import _library_terms as terms
from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.known.grammar_ecosystem import _GENERAL_NOTE
from mpdoctor.explain.signature import Signature, fix

# Dtype words as the libraries write them (lower-cased lines), as alternatives without repeats, so that a list of
# them repeats no repeat (patterns stay linear: test_explain_signatures).
_LOW = r"(?:torch\.bfloat16|torch\.float16|torch\.half|bfloat16|float16|bf16|fp16|half)"
# what may come before the low one in a list: fp32 first (``float32 or bfloat16``), fp8, or a storage dtype
_FIRST = r"(?:torch\.float32|torch\.float|float32|fp32|float|fp8|uint8|int8)"
_ANY = (
    r"(?:torch\.bfloat16|torch\.float16|torch\.float32|torch\.half|torch\.float|bfloat16|float16|float32|bf16|fp16|"
    r"fp32|fp8|mxfp8|half|float|int8|uint8|int32)"
)
_SEP = r"(?:, or |, and |, | or | and |/| & |\|)"
# two or more dtypes, one of them low precision
_LIST = r"(?:" + _FIRST + _SEP + _LOW + r"|" + _LOW + _SEP + _ANY + r")(?:" + _SEP + _ANY + r"){0,3}"
# a lone low dtype, followed by what shows it is the dtype taken (a comma or full stop, "but got", a noun). Spelled
# as the message's own words, not `torch.float16`: that is how a message's hole prints the dtype it was given.
_PLAIN = r"(?:bfloat16|float16|bf16|fp16|half)"
_ONE = (
    _PLAIN + r"(?:[,.;:`)\]]|$| \(| but | got | to | for | instead| only\b| (?:precision|tensors?|inputs?|"
    r"activations?|weights?|outputs?|out dtype|dtype|rows|payloads|hidden states|storage)\b)"
)
# verbs of obligation, with the fillers between them and the dtypes: for a lone dtype...
_MUST_ONE = (
    r"must (?:be |have )?(?:either |of dtype |dtype |a |an |in )?|needs to be (?:a |an |in )?|expected (?:in )?|"
    r"expecting |requires? [a-z_]{1,20} to be |requires? |can only be |only supports? |only supporting |"
    r"only works (?:with|for) |only supported (?:for|with|in) |supports only |any (?:type|dtype) other than "
)
# ...and for a list, also where only a list can follow ("one of [", "supported dtypes:")
_MUST = (
    r"(?:" + _MUST_ONE + r"|must be one of |expected one of \[|only supports? [a-z_ ]{1,24}? in |"
    r"allowed values are \[|supported dtypes(?: are|:) |supported: |initiali[sz]e [a-z0-9_]{1,20} under )"
)
_DTYPE = r"`?(?:dtype=)?(?P<dtype>" + _LIST + r"|" + _PLAIN + r")"

# Needles: what every match holds, and a log line that only names a dtype ("dtype float16") does not. A list holds a
# low dtype beside a separator ("float32 or bfloat16", "fp16/bf16"); a lone dtype follows the last word of its verb
# ("must be bfloat16", "requires bf16", "only works for bfloat16", "`dtype=torch.float16`").
_PLAIN_WORDS = ("bfloat16", "float16", "bf16", "fp16", "half")
_NEEDLES = tuple(
    sorted(
        {low + sep for low in _PLAIN_WORDS for sep in (", ", " or ", "/", " & ", "|", " and ")}
        | {sep + low for low in _PLAIN_WORDS for sep in (", ", "or ", "/", "& ", "|", "and ")}
        | {
            verb + low
            for low in _PLAIN_WORDS
            for verb in (
                "be ",
                "have dtype ",
                "of dtype ",
                "expected ",
                "expected in ",
                "requires ",
                "require ",
                "supports ",
                "support ",
                "supporting ",
                "only ",
                "handles ",
                "works for ",
                "works with ",
                "supported for ",
                "supported with ",
                "supported in ",
            )
        }
        | {"dtype=" + low for low in _PLAIN_WORDS}
        | {"dtype=torch.float16", "dtype=torch.bfloat16", "or torch.", ", torch.", "/torch."}
    )
)

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-takes-listed-dtypes",
        family="dtype",
        title="{library} takes only {dtype} here, and got another dtype (the general explanation)",
        needles=_NEEDLES,
        patterns=(
            _MUST + r"`?(?:dtype=)?" + _LIST,
            r"(?:" + _MUST_ONE + r")`?(?:dtype=)?" + _ONE,
            r"only (?:precisions )?`?(?:" + _LIST + r"|" + _PLAIN + r")[a-z_ ]{0,30}? (?:is|are) supported",
            r"(?:supports?|handles?|accepts) `?(?:" + _LIST + r"|" + _PLAIN + r")(?: only\b| (?:tensors?|inputs?|"
            r"activations?|outputs?|rows|payloads|weights?|hidden states|storage)\b)",
        ),
        details=(
            r"(?:" + _MUST + r"|only (?:precisions )?|(?:supports?|handles?|accepts) )" + _DTYPE,
            terms.LIBRARY,
        ),
        defaults=(("library", "The library"),),
        cause="{library}'s kernel or function has code only for {dtype}, and a tensor or argument reached it in "
        "another dtype. A kernel written for half precision (fp16/bf16 only) got fp32: the model was loaded in the "
        "default float32, or the step ran outside autocast. A kernel for bf16 (or bf16/fp32: most fp8, MX and "
        "NVFP4 quantization kernels, Hopper/Blackwell paths) got fp16 from a `.half()` model or fp16 autocast. One "
        "that takes fp32/fp16/bf16 got float64, or an int8/4-bit quantized weight (an adapter's initialisation on a "
        "quantized model).",
        fixes=(
            fix(
                "Give it one of the dtypes it lists: load or cast the model to it (`torch_dtype=torch.bfloat16` / "
                "`model.to(torch.bfloat16)`), or run the step under autocast of that dtype; before an fp8/fp4 "
                "quantization that takes bf16, keep the model in bf16, not fp16"
            ),
            fix("For an argument (`out_dtype=`, `dtype=`, a config's dtype), pass one of the values it lists"),
            DTYPE_TRACE,
        ),
        library_fixes=terms.DTYPE_LIST,
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/ao/blob/main/torchao/prototype/mx_formats/kernels.py",
            "https://github.com/NVIDIA/TransformerEngine/blob/main/transformer_engine/pytorch/utils.py",
            "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/bitsandbytes/backends/cuda/ops.py",
            "https://github.com/huggingface/peft/blob/main/src/peft/tuners/lora/layer.py",
        ),
        examples=(
            "AssertionError: Input tensor must be float32 or bfloat16",
            "TypeError: inp must have BF16 or FP32 dtype, but got torch.float16",
            "ValueError: Unsupported gradient dtype: torch.float64. Supported dtypes: torch.float32, torch.float16, "
            "torch.bfloat16",
            "AssertionError: Only bf16 activation is supported for torch.bmm",
            "ValueError: Query, key, and value must be either bfloat16 or float16.",
            "TypeError: Please initialize PiSSA under float32, float16, or bfloat16. Subsequently, re-quantize the "
            "residual model to help minimize quantization errors.",
        ),
        near_misses=(
            # a list without a low precision, and a list of what is compared, are not this
            "AssertionError: col_stats must be float32, got torch.float16",
            "ValueError: swiglu expects gate and up to have the same dtype, got torch.float16 and torch.float32",
            "ERR: torch.float16 is not supported by cpu If device is `cpu`, use float32 or float64",
        ),
        rank=-3,
        notes=_GENERAL_NOTE + " Below dtype-kernel-takes-only-half and the attention kernels' signatures, whose "
        "wordings it also reads.",
    ),
]
