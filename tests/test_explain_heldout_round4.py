"""`mpdoctor explain` on held-out round 4 (tests/explain_heldout/round4.json): 91 real messages from the libraries
around torch (ONNX Runtime and the fp16 converters, TensorRT, CTranslate2/faster-whisper/whisper, FSDP,
FlashAttention, vLLM/TGI/Triton, Lightning/Accelerate, MPS/ROCm, Ultralytics, apex).

Collected from public threads that had taught no signature, and labelled with the family a reader should be given.
Measured before anything was learned from them: 13 of 66 mixed-precision messages explained with the right family
first, 0 of 25 other errors recognised. 17 threads then taught signatures, after which 45 of the 49 mixed-precision
messages of the other threads got their family (0 of 25 others recognised); the 4 missed then taught one each
(``learned``, listed in ``learned_when_measured``). What the tests hold is in tests/heldout.py.
"""

from __future__ import annotations

import pytest

from heldout import FOLDER, Round, first_family

ROUND = Round("round4.json")


def test_the_set_is_what_it_says():
    assert ROUND.problems() == []
    assert len(ROUND.mixed) >= 60 and len(ROUND.other) >= 20
    assert len({e["source"] for e in ROUND.messages}) == len(ROUND.messages)  # one message per thread
    earlier = "\n".join((FOLDER / name).read_text(encoding="utf-8") for name in ("messages.json", "round3.json"))
    assert not [e["source"] for e in ROUND.messages if f'"{e["source"]}"' in earlier]  # held out from them too


def test_mixed_precision_messages_get_their_family_first():
    wrong = ROUND.wrong_families()
    assert not wrong, wrong


def test_the_known_gaps_are_still_gaps():
    closed = ROUND.closed_gaps()
    assert not closed, f"explained now: take them out of known_gaps in round4.json: {closed}"


@pytest.mark.parametrize("entry", ROUND.other, ids=[f"other-{i}" for i in range(len(ROUND.other))])
def test_other_errors_stay_not_recognised(entry):
    assert first_family(entry["message"]) is None, (entry["source"], entry["cause"])
