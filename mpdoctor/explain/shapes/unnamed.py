"""NaN or infinite values in a text that names no precision: a notice with the way to tell, never a verdict.

"Loss is nan, stopping training" is the most common thing a broken fp16 run prints, and a broken fp32 run prints it
too (a learning rate too high, NaNs in the data, a log of zero). The held-out sets hold both in about equal numbers:
of their messages that show NaNs, name no precision and are recognised by nothing else, 30 are labelled the
precision's numerics and 23 no precision failure at all (the learned rounds, counted in issue 38's stop 37; the
sealed rounds, counted without reading them, hold more of the second). So explain does not call it a precision
failure. It still tells the user how to find out in one run: the notice below, given only when nothing else was
recognised, the input does not end on another failure, and nothing in its last lines names a low precision, a
precision setting, autocast or a loss scaler (when one is named, ``reader.py`` decides).
"""

from __future__ import annotations

from mpdoctor.explain.shapes import cues, symptoms
from mpdoctor.explain.shapes.pattern import cue
from mpdoctor.explain.shapes.vocabulary import written_low

LINES = 20  # the input's last lines where the non-finite values must be shown: the run's end, not its history

# A run's values turned non-finite, in a log's or a person's words (`loss: nan`, `Loss is nan, stopping training`,
# `NaN detected in latents`, `the output contains NaN`, `probability tensor contains either inf, nan or element < 0`).
NON_FINITE = cue(
    symptoms.NAN_LOSS.pattern,
    symptoms.NUMERICS.pattern,
    r"\b(?:loss|losses|outputs?|gradients?|grads?|logits|latents|activations?|predictions?|weights?|values?|tensors?"
    r"|results?|features?|scores?|images?)\b (?:\w+ ){0,2}(?:is|are|was|were|becomes?|became|contains?|has|have|turns?"
    r"(?: in)?to|goes to|went to|filled with|full of) (?:all |only |a |an )?(?:nan|inf)s?\b",
    r"\bnan (?:loss|losses|values?|gradients?|grads?|outputs?|logits|predictions?)\b|(?:nan|inf) (?:detected|found)\b",
    r"\b(?:detected|found|produced|got|getting|get) (?:a |an )?(?:nan|inf)s?\b|\bnon-?finite (?:loss|values?|gradients?)",
    r"出现\s?nan|变成\s?nan|为\s?nan",  # Chinese: "NaN appears", "becomes NaN", "is NaN"
)


# A loss scaler runs only beside fp16 (`GradScaler is enabled`, DeepSpeed's `loss_scaler.py`, `dynamic loss scale`).
_SCALER = cue(r"grad_?scaler|loss[_ ]?scal")


def named_precision(text: str) -> bool:
    """Whether ``text`` (lower-cased) names a low precision, a precision setting, autocast or a loss scaler."""
    return bool(
        written_low(text)
        or cues.SETTING.search(text)
        or cues.AMP_RUN.search(text)
        or cues.RUN_IN_LOW.search(text)
        or _SCALER.search(text)
    )


def non_finite_line(lines: list[str]) -> tuple[int, str] | None:
    """(index in ``lines``, the words) of the last of the last LINES lines that shows a run's values non-finite, when
    none of those lines names a precision; else None."""
    start = max(0, len(lines) - LINES)
    tail = [line.lower() for line in lines[start:]]
    if named_precision("\n".join(tail)):
        return None
    for offset in range(len(tail) - 1, -1, -1):
        hit = NON_FINITE.search(tail[offset])
        if hit:
            return start + offset, hit.group(0)
    return None


__all__ = ["LINES", "NON_FINITE", "named_precision", "non_finite_line"]
