"""The symptoms of a run a low precision spoiled, in any library's or person's words: fp16's range exceeded, a loss
scale collapsing, NaNs and infinities, output ruined or degraded. Like ``cues.py``, each is a regex over a
lower-cased message that proves nothing alone: ``reader.py`` reads them beside a low precision named.
``scale_collapsed`` reads the one symptom that is a number: the loss scale a scaler's log says it fell to.
"""

from __future__ import annotations

import re

from mpdoctor.explain.shapes.pattern import cue

# fp16's range exceeded: a value that does not fit, a loss scale collapsing to its floor (`overflow detected, setting
# loss scale to: 0.00048`, `Minimum loss scale reached`). A high scale halved once is the scaler doing its job.
OVERFLOW = cue(
    # an underflow alone is any solver's (torchdiffeq's `underflow in dt`): OVERFLOW_WORD reads it beside a precision
    r"without overflow|loss scale (?:already )?at minimum|minimum loss scale|cannot decrease (?:loss )?scale",
    r"loss scale (?:has )?(?:reached|collapsed|underflow)",
    # a scaler at its floor in any trainer's words (`grad_scale is too small, exiting`, Marian's `cost-scaling factor
    # 7.6e-06 is already at minimum`), and fp16's largest value or range named (`cross the boundary 65504`)
    r"(?:grad|loss)[_ ]scale (?:is )?too small|(?:scal\w{0,4}|factor) [^,;]{0,30}already at (?:its )?minimum",
    r"\b65,?504\b|\b6550[34]\.9\d{1,12}\b|超出[^，。,]{0,12}(?:fp16|float16|半精度)[^，。,]{0,6}范围",
    r"(?:out of|outside|exceed\w{0,3}|beyond) (?:the )?(?:fp16|float16|half)(?:'s)? (?:range|max)",
    r"(?:range|max\w{0,4}) of (?:fp16|float16|half)",
)
# The word itself: with a low precision named around it (`Avoid fp16 overflow`, `gradient overflow when training in
# fp16`), the precision's range; DeepSpeed's routine `OVERFLOW! Skipping step` notice is no failure (NOT_PRECISION).
# ASCII letters around, not \b: Chinese writes "半精度overflow" with no word boundary before it.
OVERFLOW_WORD = cue(r"(?<![a-z])(?:overflow(?:s|ed|ing)?|underflows?)(?![a-z])|溢出|下溢")
SCALE_SET_TO = re.compile(r"(?:loss )?scal\w{0,3} to:? ?(\d[\d.e+-]{0,20})|grad scale:? {0,3}(\d[\d.e+-]{0,20})")
# log2 of the scale (guided-diffusion's `decreased lg_loss_scale to -16199.354`): below 3, the scale is below 8.
LOG_SCALE_SET_TO = re.compile(r"lg_loss_scale to:? ?(-?\d[\d.e+-]{0,20})")
# Non-finite values a low precision produced: NaN images, NaN checks, AMP's own check failing.
NUMERICS = cue(
    r"probability tensor contains either|all nan'?s|nans? (?:was|were) produced|produced nans?|invalid value encountered in cast|nan-check",
    r"amp:? checks? failed|not enough precision to represent",
)
# Output a low precision ruined, in people's words (`the encoder outputs garbage` in fp16): with a low precision named.
GARBAGE = cue(
    r"(?:outputs?|gives?|produces?|returns?) (?:\w+ )?garbage|garbage (?:outputs?|results?|values?)|black images?",
    # an image model's ruined output in its users' words: "all resulting images are just black", "black blocks"
    r"(?:images?|frames?|outputs?|results?|pictures?|videos?) (?:\w+ ){0,2}(?:are|is|were|was|turns?|become) "
    r"(?:just |all |completely |entirely |pure |only )?(?:black|green|blank)\b",
    r"\bblack (?:boxe?s|blocks?|squares?|screens?|frames?|pictures?|patches|outputs?|results?)\b",
    r"\bgibberish\b|(?:outputs?|generates?|produces?|returns?) (?:\w+ )?nonsense|nonsense (?:outputs?|text|tokens)",
)
# A run that completes but whose results a low precision spoiled, in people's words: it "doesn't work well", its
# accuracy "drops", the output is "corrupted", while the full precision "works fine". Read only when nothing was
# refused: beside a refusal, "fp32 works fine" only says where the refusal is not.
QUALITY = cue(
    r"(?:does(?:n't| not)|do(?:n't| not)) work (?:well|properly|correctly|as expected)",
    r"(?:fp32|float32|full precision|single precision) (?:works?|is) (?:fine|well|ok|correctly)",
    r"(?<!would )(?:silently )?(?:corrupts|mangles|degrades)\b|(?:accuracy|score|quality|utili[sz]ation) (?:\w+ ){0,2}"
    r"drops?",
    r"(?:wrong|bad|poor|worse|corrupted|garbled|empty|blank|incorrect) (?:\w+ )?(?:results?|outputs?|masks?|images?|"
    r"text|transcripts?|predictions?|labels|detections)",
    r"\b(?:flicker\w*|shaking|jitter\w*|artefacts?|visual artifacts?|distorted|glitch\w*)\b",
    # the same in the other order ("16-bit training results are worse"), and in Chinese: numerically unstable, garbled
    r"\b(?:results?|outputs?|accuracy|performance|quality|scores?|predictions?) (?:\w+ ){0,2}(?:are|is|was|were|gets?|got"
    r"|becomes?|became) (?:much |a lot |far |slightly |significantly )?(?:worse|degraded|poor|wrong|garbled)\b",
    r"数值不稳定|乱码",
    # worse than the full precision, or not right, in people's words
    r"\bnot as (?:good|accurate) as\b|\b(?:worse|less accurate) than\b|(?:doesn't|does not|don't|do not) (?:seem to be|look)"
    r" (?:right|correct)\b|\b(?:huge|large|big|significant) (?:discrepanc\w+|differences?)\b",
    # a detector that runs but finds nothing, a training that never converges ("LM loss remains stuck ... fails to
    # converge"), errors that accumulate ("arithmetic errors" of blockwise bf16 outputs)
    r"\bno (?:objects?|detections?|boxes|faces) (?:are |is |were |was )?detected\b|\bdetects? nothing\b",
    r"\b(?:fails? to|does(?:n't| not)|did(?:n't| not)|never) converge\b|\bdiverg(?:es|ed|ing|ence)\b",
    r"\b(?:arithmetic|rounding|accumulation|accumulated) errors?\b",
    r"\bnumerical (?:errors?|issues?|instabilit\w*|problems?)|(?:acc|accuracy|准确率)[^，。,]{0,8}下降",
    r"precision (?:issues?|problems?|drops?)|(?:loses?|losing|lost) (?:the |its )?precision|(?:significant|large) "
    r"(?:\w+ )?(?:deviation|errors?)|scrambled|full of exclamation marks|精度下降",
    r"\b(?:is|are|was|were|be|becomes?|became|gets?|got|training|train) (?:\w+ )?unstable\b|\bunstable (?:problem|training|loss)"
    r"|\binstabilit(?:y|ies)\b",  # "the unstable problem is due to fp16 attention"
)
# The low precision's run is wrong where the same run without it is right ("without fp16 ... everything is ok"): the
# precision's numerics, even when the writer calls what they see "errors".
WORKS_WITHOUT = cue(
    r"\bwithout (?:the )?(?:fp16|bf16|half|amp|mixed[ -]precision|autocast)\b[^.\n]{0,60}?\b(?:is |are |works? |runs? )?"
    r"(?:ok|fine|correct(?:ly)?|normal(?:ly)?)\b",
    # the trouble absent in full precision: "I haven't this problem with fp32", "it doesn't happen in fp32"
    r"\b(?:haven't|have not|don't have|do not have|no|not) (?:this|the|that|such|any) (?:problem|issue|artifacts?)s? "
    r"(?:with|in|on|using|under) (?:fp32|float32|full precision|single precision)\b",
    r"\b(?:doesn't|does not|didn't|did not) happen (?:with|in|on|using|under) (?:fp32|float32|full precision)\b",
    r"(?:fp32|float32)[^，。,.\n]{0,12}(?:正常|没问题|无问题)",  # "fp32训练loss正常": fp32 trains normally
)
# The GTX 16xx cards (TU116/TU117: GTX 1650, 1660, 1660 Ti/Super) compute float16 wrongly in many models: black or
# green images, NaNs, "!!!!" transcripts. Apps that default to fp16 on every CUDA GPU give those symptoms on these
# cards with no precision named, and the known fix is fp32 there (`--no-half`, `is_half=False`).
FP16_BROKEN_CARD = cue(r"\bgtx ?16[56]0(?: ?(?:ti|super|s)\b)?")
# NaN losses and NaN tensors in a log: with a low precision named around them, the precision's numerics.
NAN_LOSS = cue(r"\bloss\w{0,10}[:= ] ?nan\b|\bnan or inf found|\bgrad_norm[:= ] ?nan\b")
# A NaN or an infinity named in a run that names its low precision (the reader checks the precision).
# ASCII letters around, not \b: a Chinese message writes "出现Nan" with no word boundary before the NaN.
NAN_WORD = cue(r"(?<![a-z])nans?(?![a-z])|(?<![a-z])inf(?:s|inity)?(?![a-z])")
NAN = cue(r"(?<![a-z])nans?(?![a-z])")


LOW_SCALE = 8.0  # a loss scale set this low has collapsed: each halving was an overflow the model did not outgrow


def scale_collapsed(text: str) -> str:
    """The loss scale a scaler's log says it set, when it fell below LOW_SCALE ("" otherwise)."""
    values = []
    for hit in SCALE_SET_TO.finditer(text):
        try:
            values.append(float((hit.group(1) or hit.group(2)).rstrip(".")))
        except ValueError:
            continue
    for hit in LOG_SCALE_SET_TO.finditer(text):
        try:
            values.append(2.0 ** min(64.0, float(hit.group(1).rstrip("."))))
        except (ValueError, OverflowError):
            continue
    overflowed = "overflow" in text or "nan" in text or "inf" in text
    return f"loss scale set to {values[-1]:g}" if values and values[-1] < LOW_SCALE and overflowed else ""


__all__ = [
    "OVERFLOW",
    "OVERFLOW_WORD",
    "SCALE_SET_TO",
    "LOG_SCALE_SET_TO",
    "LOW_SCALE",
    "scale_collapsed",
    "NUMERICS",
    "GARBAGE",
    "QUALITY",
    "WORKS_WITHOUT",
    "FP16_BROKEN_CARD",
    "NAN_LOSS",
    "NAN_WORD",
    "NAN",
]
