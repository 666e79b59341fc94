"""Read the failure that ended a run by its shape, when no known signature recognised it.

A library nobody mined still tells a precision failure in a few parts: the dtypes it names (``vocabulary.py``),
a refusal or a mismatch, and what refuses (an attention kernel, a quantization method, MPS, the CPU, the GPU's
capability, a compiler, a trainer's precision setting; ``cues.py``), or the symptoms of a run it spoiled
(``symptoms.py``). ``read`` takes the failure that ended the input (``blocks.py``: its last failure lines, never a
log's earlier chatter) and decides its family from those parts, in the order below: the most specific context
first, a bare refusal of a low precision last.

It reads at most ``TAIL`` characters of the input's end, so it costs the same on any log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mpdoctor.explain.matcher import is_error_line
from mpdoctor.explain.ruled_out import precision_ruled_out
from mpdoctor.explain.shapes import cues, symptoms
from mpdoctor.explain.shapes.blocks import BLOCKS, block_of, failure_blocks, is_failure
from mpdoctor.explain.shapes.vocabulary import dtypes, is_low, written_low

TAIL = 65_536  # characters of the input's end that are read
_CLAUSE_END = re.compile(r"[,;]|\. ")
DTYPE_NEAR = 40  # characters after "requires", "must be", "not implemented for" where the refused dtype is named


@dataclass
class Reading:
    """What the general reader made of the failure: its family, the lines it read, and what they named."""

    family: str
    lines: list[tuple[int, str]]  # (0-based index in the lines given to ``read``, the line)
    dtypes: list[str] = field(default_factory=list)
    cue: str = ""  # the words that decided the family, as the message wrote them


def read(lines: list[str]) -> Reading | None:
    """The family of the failure that ends ``lines`` (the input's last lines, cleaned), or None."""
    run_in_low = None  # whether the log says its run switched into a low precision: read once, when a block asks
    for found in failure_blocks(lines)[:BLOCKS]:
        block = block_of(lines, found)
        if run_in_low is None:
            run_in_low = any(cues.RUN_IN_LOW.search(line.lower()) for line in lines)
        verdict = None if _checks_a_class(block.written) else decide(block.text, block.above, block.parts, run_in_low)
        if verdict:
            family, cue = verdict
            return Reading(family, found, dtypes(block.text), cue)
        if cues.NOT_PRECISION.search(block.text) and is_failure(block.text):
            return None  # the run ended on another failure; a precision word above it was in passing
    return None


# An error raised with its own name (`KeyError: 'messages'`, `torch.OutOfMemoryError`): a crash's last words
# (`Aborted (core dumped)`, `Segmentation fault`) name none, they follow the failure above them.
_RAISED = re.compile(r"\b[a-z0-9_]*(?:error|exception)\b")
# An exception raised, in any words (`KeyError`, `traceback`, 报错 "reports an error"): a failure, not a run whose
# output is wrong ("strange errors on the right half" of an image is its output)
_RAISED_ANY = re.compile(r"\b[a-z0-9_]+(?:error|exception)\b|traceback|报错|错误")


def ended_elsewhere(lines: list[str]) -> int | None:
    """The index of the line where ``lines`` end on another failure than a precision's (a ``KeyError`` after a
    warning about fp16, an out-of-memory error), or None when they do not, or do not say."""
    blocks = failure_blocks(lines)
    if not blocks:
        return None
    block = block_of(lines, blocks[0])
    if not (is_error_line(block.text) and _RAISED.search(block.text) and cues.NOT_PRECISION.search(block.text)):
        return None
    return None if decide(block.text, block.above, [block.text]) else block.first


# `expected X, got SomeClass`: what was checked is an object's class (a quantizer, a method, a module), not a dtype.
_GOT_CLASS = re.compile(r"\b(?:got|found|received):? (?:<class ')?(?:[\w.]+\.)?(?P<name>[A-Z][a-z0-9]+[A-Z]\w*)")


def _checks_a_class(written: str) -> bool:
    """Whether the message (as written, cased) ends its check on a class name that is no dtype."""
    return any(not dtypes(hit.group("name").lower()) for hit in _GOT_CLASS.finditer(written))


def _refused_dtype(text: str) -> re.Match | None:
    """A refusal that names its dtype right after it: ``requires bf16``, ``not implemented for 'Half'``."""
    for pattern in (cues.WEAK_REFUSAL, cues.NOT_IMPLEMENTED_FOR):
        for hit in pattern.finditer(text):
            if dtypes(_CLAUSE_END.split(text[hit.end() : hit.end() + DTYPE_NEAR], 1)[0]):
                return hit
    for hit in cues.REQUIRED_AFTER.finditer(text):
        before = text[max(0, hit.start() - DTYPE_NEAR) : hit.start()].split()
        if before and dtypes(before[-1]):  # the dtype itself is required, not something of it ("fp8 data")
            return hit
    return None


# torch's dispatch names its kernels by device: `"addmm_impl_cpu_"`, `"slow_conv2d_cpu"`, CUDA's `"..._cuda"`. A kernel
# with no fp16/bf16 implementation that is not CUDA's is the CPU's: CUDA has them for nearly every op.
_KERNEL_NAME = re.compile(
    r"[\"'`]?(?P<kernel>[a-z0-9_:.]{2,80})[\"'`]?\s{0,2}(?:is )?not implemented for|(?P<cputype>cputype)"
)


def _cpu_kernel(text: str) -> bool:
    hit = _KERNEL_NAME.search(text)
    return bool(hit) and (bool(hit.group("cputype")) or "cuda" not in (hit.group("kernel") or ""))


def _refused_near(text: str, what: re.Pattern) -> bool:
    """A requirement of the GPU (`requires a GPU with Compute Capability 8.9`, `Minimum capability: 90`)."""
    for hit in cues.WEAK_REFUSAL.finditer(text):
        if what.search(text[hit.end() : hit.end() + DTYPE_NEAR]):
            return True
    return bool(cues.MINIMUM.search(text))


def _innermost_frame_is(above: str, library: re.Pattern) -> bool:
    """Whether the last frame line of the lines above a message is in ``library``'s files."""
    frames = _FRAME_IN_TEXT.findall(above)
    return bool(frames) and bool(library.search(frames[-1]))


_FRAME_IN_TEXT = re.compile(r'file "[^"\n]{1,1000}", line')


def _hardware_refuses(text: str) -> bool:
    """A refusal whose subject or object is the GPU or device ("the target device or backend do not support
    efficient int8_float16 computation", "only supported on devices with compute capability >= 9.0"): the
    hardware's, whichever format (a quantized one included) it refuses."""
    for pattern in (cues.REFUSAL, cues.WEAK_REFUSAL):
        for hit in pattern.finditer(text):
            if cues.HARDWARE_LIMIT.search(text[max(0, hit.start() - DTYPE_NEAR) : hit.end() + DTYPE_NEAR]):
                return True
    return bool(cues.MINIMUM.search(text))


def _gpu_lacks_low(m: Message) -> bool:
    """A low floating precision (fp8 and fp4 quantized formats included) that the GPU itself refuses: the hardware's,
    not the quantization method's. An integer kernel's capability floor (`tinygemm int4 ... compute capability 8.0`)
    stays the method's."""
    return bool(m.low) and _hardware_refuses(m.text)


def _same_line(lines: list[str], setting: re.Pattern, *why: re.Pattern) -> bool:
    """Whether one of the message's lines holds a precision setting and what is wrong with it: a log's notice of
    the precision it runs in ("Using 16bit native Automatic Mixed Precision") is no setting refused by the
    warning on the line above it."""
    return any(setting.search(line) and any(reason.search(line) for reason in why) for line in lines)


def decide(
    text: str, above: str = "", lines: list[str] | None = None, run_in_low: bool = False
) -> tuple[str, str] | None:
    """(family, the cue that decided it) for one lower-cased message, or None when it is no precision failure.
    ``above``: the lines just above it (its traceback's frames, a log's location line), which can say where it
    ran (MPS, the CPU, an attention kernel, a compiler) but never make it a precision failure. ``lines``: the
    message's lines, lower-cased (``text`` is them joined); by default ``text`` is one line. ``run_in_low``: the
    log says elsewhere that its run switched into a low precision (``cues.RUN_IN_LOW``), which makes its NaNs and
    overflows the precision's as a low precision named just above them does.

    Three phases, in order: shapes whose own words outrank the words of other failures (a loss scale collapsing
    while "skipping" steps, apex's extensions "not found"); then, unless the message is another failure
    (``cues.NOT_PRECISION``), shapes that need no dtype named; then the shapes of a low precision named."""
    if precision_ruled_out(text):
        return None  # the writer ran without the low precision and it still failed
    text, above = spaced(text), spaced(above)
    message = Message(text, above, [text] if lines is None else [spaced(line) for line in lines], run_in_low)
    if cues.NOT_PRECISION.search(text):
        return _before_words_in_passing(message)
    return _before_words_in_passing(message) or _without_a_dtype(message) or _of_a_low_precision(message)


# A dtype object printed right after a refusal of dtypes is the one refused, not a hole in any message
# ("Unsupported dtype for wav: torch.bfloat16").
_REFUSED_PRINTED = re.compile(
    r"(?:un-?supported|invalid|unexpected|unknown) (?:d(?:ata ?)?type|datatype)[^.\n]{0,30}?torch\.(bfloat16|float16|half)\b"
)
# A precision wondered about, not named as the run's: a question that guesses at it.
_HEDGED = re.compile(
    r"(?:potentially|possibly|perhaps|maybe|might be|could be|may be)[^.?!\n]{0,60}\?|"
    r"\b(?:is|could|might) (?:it|this) (?:be )?(?:related to|caused by|due to)[^.?!\n]{0,60}\?"
)
# Chinese and Japanese text runs into Latin words without a space ("报错为expected scalar type"): a space between
# them lets the cues' word boundaries see the Latin word.
_CJK_LATIN = re.compile(r"(?<=[\u3040-\u30ff\u4e00-\u9fff])(?=[a-z0-9])|(?<=[a-z0-9])(?=[\u3040-\u30ff\u4e00-\u9fff])")


def spaced(text: str) -> str:
    """``text`` with a space wherever CJK characters and Latin letters or digits touch."""
    return _CJK_LATIN.sub(" ", text)


class Message:
    """One failure's lower-cased text, what it names and what it says, computed once for the phases below."""

    def __init__(self, text: str, above: str, lines: list[str], run_in_low: bool = False) -> None:
        self.text, self.above, self.lines, self.run_in_low = text, above, lines, run_in_low
        self.names = dtypes(text)
        distinct = list(dict.fromkeys(self.names))
        # two different dtypes, one of them low, meeting: whatever spelling, that is a mismatch's own words
        self.pair = len(distinct) >= 2 and any(is_low(name) for name in distinct)
        # a low precision named alone must be written as a library writes it, not as a hole prints a dtype object,
        # nor wondered about ("Potentially related to half precision? Will investigate.")
        self.low = written_low(_HEDGED.sub(" ", text)) or _REFUSED_PRINTED.findall(text)
        self.refused = cues.REFUSAL.search(text) or _refused_dtype(text)
        self.mismatch = cues.MISMATCH.search(text)

    def found(self, pattern: re.Pattern) -> str:
        hit = pattern.search(self.text)
        return hit.group(0) if hit else ""

    def near(self, pattern: re.Pattern) -> str:
        """In the message, else in the lines above it."""
        hit = pattern.search(self.text) or pattern.search(self.above)
        return hit.group(0) if hit else ""


def _before_words_in_passing(m: Message) -> tuple[str, str] | None:
    """Shapes read before the words of other failures, whose words they share."""
    collapsed = symptoms.scale_collapsed(m.text)
    if collapsed:
        return "overflow", collapsed  # a scaler "skipping" steps down to its floor
    if _innermost_frame_is(m.above, cues.APEX_FRAME) and _RAISED.search(m.text):
        return "apex", "apex"  # raised inside apex: its own check of how it was called
    if m.found(cues.APEX_BUILD) and not m.found(cues.PRECISION_OFF):
        return "apex", m.found(cues.APEX_BUILD)  # "no module named": apex's own extensions
    if m.found(cues.BLOCK_SIZE) and m.low:
        return "quantization", m.found(cues.BLOCK_SIZE)  # the shape words of a kernel's blocks
    if m.found(cues.SETTING_MISSING):
        return "framework", m.found(cues.SETTING_MISSING)  # "unexpected keyword": a precision argument a version lacks
    if m.found(cues.ATTENTION_OWN):
        return "attention", m.found(cues.ATTENTION_OWN)  # an attention kernel's own refusal, shapes and all
    if m.found(cues.ATOMIC_OVERLOAD) and m.low:
        return "hardware", m.found(cues.ATOMIC_OVERLOAD)  # CUDA declares half/bf16 atomicAdd only for newer targets
    if m.found(cues.NO_OP_KERNEL) and m.low:
        return "op-support", m.found(cues.NO_OP_KERNEL)  # a kernel registry without the op for the dtype
    if m.found(cues.UNDEFINED_INTRINSIC):
        return "compiler", m.found(cues.UNDEFINED_INTRINSIC)  # the build's target has no such bf16/fp16 intrinsic
    return None


_ONLY_SUPPORTED = re.compile(r"\bonly\b[^.;\n]{0,60}\b(?:is|are) (?:currently )?supported|\brequired for\b")
_OF_TYPES = re.compile(r"\b(?:d(?:ata ?)?types?|signature|precisions?)\b")


def _without_a_dtype(m: Message) -> tuple[str, str] | None:
    """Shapes that need no dtype named: NaNs and overflows, a scaler's order, settings, apex, kernels' needs."""
    precision_named = m.low or cues.SETTING.search(m.text) or cues.AMP_RUN.search(m.text)
    if m.found(symptoms.OVERFLOW):
        return "overflow", m.found(
            symptoms.OVERFLOW
        )  # the range named (`without overflow`, `underflow`): before its NaNs
    named_by_setting = written_low(m.above) or cues.SETTING.search(m.above) or m.run_in_low
    if m.found(symptoms.NAN_LOSS) and (precision_named or named_by_setting):
        return _non_finite(m, symptoms.NAN_LOSS)  # NaN losses in a run that names its low precision
    named_above = written_low(m.above) or cues.SETTING.search(m.above) or cues.AMP_RUN.search(m.above) or m.run_in_low
    if m.found(symptoms.OVERFLOW_WORD) and (precision_named or named_above):
        return "overflow", m.found(symptoms.OVERFLOW_WORD)  # `fp16 overflow`: the range, NaNs or not
    if m.found(symptoms.NAN_WORD) and (precision_named or named_above) and not m.found(cues.SCALER):
        return _non_finite(m, symptoms.NAN_WORD)  # NaNs in a run that names its low precision, here or just above
    # a low precision run, named or switched on (`fp16_mode`); a setting's words alone ("precision: f32") are none
    low_run = m.low or cues.AMP_RUN.search(m.text)
    if m.found(symptoms.GARBAGE) and low_run:
        return "numerics", m.found(symptoms.GARBAGE)  # output a low precision ruined
    ruined = m.found(symptoms.GARBAGE) or m.found(symptoms.QUALITY) or m.found(symptoms.NAN_WORD)
    if ruined and m.near(symptoms.FP16_BROKEN_CARD) and not (m.refused or _RAISED_ANY.search(m.text)):
        return "numerics", m.near(symptoms.FP16_BROKEN_CARD)  # a GTX 16xx's fp16, the app's default on it
    # a mismatch needs its two dtypes here: "I got wrong output when fp16_mode is True" names one
    # (the spoiled results' own words, "numerical error with float16", are no failure raised)
    spoiled = m.found(symptoms.QUALITY) and not is_failure(symptoms.QUALITY.sub(" ", m.text))
    if spoiled and low_run and not (m.refused or m.mismatch and m.pair):
        return "numerics", m.found(symptoms.QUALITY)  # a run that completes, spoiled by its precision
    if m.found(symptoms.WORKS_WITHOUT) and m.low and not (m.refused or m.mismatch or _RAISED_ANY.search(m.text)):
        return "numerics", m.found(symptoms.WORKS_WITHOUT)  # wrong in the low precision, right without it
    if m.found(cues.NOT_QUANTIZED):
        return "quantization", m.found(cues.NOT_QUANTIZED)  # a toolchain that takes quantized models only
    if (
        m.found(cues.QUANTIZATION)
        and {"fp8", "fp4"} & set(m.low)
        and (cues.WEAK_REFUSAL.search(m.text) or _ONLY_SUPPORTED.search(m.text))
        and not _gpu_lacks_low(m)
    ):
        # an fp8/fp4 quantized format's own needs (`a_scale required for FP8 w8a8`, `NVFP4 MoE requires activation
        # scales`, `Only nvfp4 quantization is currently supported`): the quantization method's, not a dtype's
        return "quantization", m.found(cues.QUANTIZATION)
    if (
        {"fp8", "fp4"} & set(m.low)
        and m.found(cues.QUANT_SCALE)
        and m.found(cues.SCALE_MISSING)
        and not m.found(cues.QUANT_TENSOR_INTERNALS)
        and not _gpu_lacks_low(m)
    ):
        return "quantization", m.found(cues.QUANT_SCALE)  # an fp8/fp4 format without the scales it is stored with
    if m.found(cues.PACKAGE_NEEDED) and m.low and not _gpu_lacks_low(m):
        return "framework", m.found(cues.PACKAGE_NEEDED)  # the package (or version) with the precision's kernels
    for pattern, family in (
        (cues.SCALER_MISUSE, "scaler"),
        (symptoms.NUMERICS, "numerics"),
        (cues.AMP_API, "scaler"),
        (cues.KERNEL_IMAGE, "kernel-image"),
    ):
        if m.found(pattern):
            return family, m.found(pattern)
    if m.found(cues.CPU) and m.low and m.refused and cues.DTYPE_ARGUMENT.search(m.found(cues.SETTING)):
        return "cpu-half", m.found(cues.CPU)  # a model loaded in fp16 refused on the CPU: the CPU's, not a setting's
    if not m.found(cues.AGREEMENT) and _same_line(m.lines, cues.SETTING, cues.CONFLICT, cues.REFUSAL, cues.NEEDS_GPU):
        # a precision setting refused (its value, the device it needs) or contradicting another: no dtype need be
        # named, and the setting's own words (`--fp16`, `precision='16-mixed'`) are its dtype. Tensors whose dtypes
        # must agree are a mismatch of tensors whatever setting ran them (below)
        return "framework", m.found(cues.SETTING)
    if m.found(cues.APEX) and (m.refused or m.mismatch or m.low):
        return "apex", m.found(cues.APEX)
    if m.found(cues.QUANTIZATION) and m.refused and (m.names or m.found(cues.INTEGER)) and not _gpu_lacks_low(m):
        return "quantization", m.found(cues.QUANTIZATION)  # a method refusing a dtype, integer ones included
    if (
        m.found(cues.ATTENTION)
        and (m.refused or cues.WEAK_REFUSAL.search(m.text))
        and (written_low(m.above) or m.found(cues.HARDWARE) or m.found(cues.NOT_IMPLEMENTED_ERROR))
    ):
        return "attention", m.found(cues.ATTENTION)  # a fused attention kernel refusing the GPU, or the run's dtype
    if (m.found(cues.AGREEMENT) or m.mismatch and m.pair) and m.low and m.found(cues.QUANTIZATION_METHOD):
        return "quantization", m.found(cues.QUANTIZATION_METHOD)  # two dtypes meeting inside a quantized model
    if (m.found(cues.AGREEMENT) or m.mismatch and m.pair) and m.low and m.found(cues.INTEGER):
        return "quantization", m.found(cues.INTEGER)  # an integer (int8, Char) weight meeting a float one
    # tensors that must agree, unless the dtypes it names are all full precision (Double and Float: NumPy's float64
    # meeting a float32 network is no mixed-precision failure); XLA's "mixed precision is disallowed" is its own rule
    full_only = len(set(m.names)) >= 2 and not any(is_low(name) for name in m.names)
    full_only = full_only and "precision" not in m.found(cues.AGREEMENT)
    if m.found(cues.AGREEMENT) and not m.found(cues.NOT_FLOATING) and not full_only:
        if m.near(cues.ATTENTION):
            return "attention", m.near(cues.ATTENTION)  # FlashAttention's `query and key must have the same dtype`
        if m.near(cues.COMPILER):
            return "compiler", m.near(cues.COMPILER)  # a kernel language's operands (Triton's tl.dot, lhs and rhs)
        return "dtype", m.found(cues.AGREEMENT)  # tensors whose dtypes must agree: whatever the dtypes' holes print
    if "fp64" in m.names and m.refused and m.near(cues.MPS):
        return "mps", m.near(cues.MPS)  # MPS has no float64
    if "fp64" in m.names and m.refused and m.found(cues.HARDWARE):
        return "hardware", m.found(cues.HARDWARE)  # a GPU without fp64 (Intel Arc): a precision it lacks
    if m.found(cues.CONFLICT) and len(set(m.low)) >= 2 and not m.mismatch:
        return "framework", m.found(cues.CONFLICT)  # two low precisions asked for at once (`bf16 and fp16 ... both`)
    if m.found(cues.ORT_NO_KERNEL):
        return "op-support", m.found(cues.ORT_NO_KERNEL)  # ONNX Runtime: no kernel for the node's input types
    if m.refused and not m.low and _OF_TYPES.search(m.text) and written_low(m.above) and not m.found(cues.NOT_FLOATING):
        # a refusal of types that names none, or only full ones ("only float and double dtypes are implemented",
        # "no loop matching the specified signature"), under the low precision the lines above ran in
        return "op-support", m.refused.group(0)
    if not m.names and _hardware_refuses(m.text) and written_low(m.above) and not m.near(cues.ATTENTION):
        # a GPU's capability refused in no dtype's words (`this kernel is only supported on sm90 or newer`) under the
        # low precision the lines above run ("fp8 models on Ampere"): the hardware's
        return "hardware", m.found(cues.HARDWARE_LIMIT)
    return None


def _non_finite(m: Message, pattern: re.Pattern) -> tuple[str, str]:
    """Non-finite values in a low-precision run: infinities alone are fp16's range exceeded (a loss of `inf`, each
    batch skipped), so overflow; any NaN is the precision's numerics (a NaN has many causes, an inf one)."""
    if symptoms.NAN.search(m.text):
        return "numerics", m.found(pattern)
    return "overflow", m.found(pattern)


def _of_a_low_precision(m: Message) -> tuple[str, str] | None:
    """Shapes of a low precision named (a lone dtype as a hole prints it is none): the most specific context
    first (a scaler, an attention kernel, a quantization method, MPS, a compiler, the GPU), then two dtypes
    meeting, then a low precision refused on the CPU or anywhere."""
    if not (m.low or m.pair):
        return None  # fp32 against fp64 is no mixed-precision failure
    refused_or_mismatch = m.refused or m.mismatch
    if m.found(cues.SCALER) and refused_or_mismatch:
        return "scaler", m.found(cues.SCALER)
    if m.near(cues.ATTENTION) and refused_or_mismatch and not m.found(cues.NOT_FLOATING):
        return "attention", m.near(cues.ATTENTION)
    if m.found(cues.QUANTIZATION) and (m.refused or m.mismatch and m.pair) and not _gpu_lacks_low(m):
        return "quantization", m.found(cues.QUANTIZATION)
    if m.near(cues.MPS) and refused_or_mismatch:
        return "mps", m.near(cues.MPS)
    if m.found(cues.COMPILER) and (refused_or_mismatch or _refused_near(m.text, cues.HARDWARE)):
        return "compiler", m.found(cues.COMPILER)  # the compiler's own words: its target refuses what it emitted
    if m.found(cues.HARDWARE) and m.low and (m.refused or _refused_near(m.text, cues.HARDWARE)):
        return "hardware", m.found(cues.HARDWARE)
    if m.near(cues.COMPILER) and refused_or_mismatch:
        return "compiler", m.near(cues.COMPILER)
    if m.low and (m.refused and (m.found(cues.CPU) or _cpu_kernel(m.text)) or m.found(cues.NEEDS_GPU)):
        return "cpu-half", m.found(cues.CPU) or m.found(cues.NEEDS_GPU) or "a CPU kernel"
    if m.pair and refused_or_mismatch and not m.found(cues.NOT_FLOATING):
        return "dtype", (m.mismatch or m.refused).group(0)
    if m.low and m.refused and m.near(cues.CPU):
        return "cpu-half", m.near(cues.CPU)
    if m.low and m.refused:
        return "op-support", m.refused.group(0)
    return None


__all__ = ["Reading", "decide", "read"]
