"""`mpdoctor explain` on held-out round 7 (tests/explain_heldout/round7.json): 36 real messages from the threads of 20
libraries and applications users run beside torch (ONNX/ONNX Runtime/TensorRT, DeepSpeed, vLLM, xFormers, Triton,
torch.compile, torchao's neighbours bitsandbytes/PEFT/transformers, TransformerEngine, Lightning, MPS and ROCm, ComfyUI,
kohya).

Collected from public threads that had taught no signature and were in no earlier held-out set (rounds 3 to 6) nor in
tests/explain_ecosystem, labelled before measuring. Smaller than the rounds before it (28 mixed-precision messages, 8
others): the collection ran out of its time. Measured on a clean export of 01ea972 before anything was learned from it:
15 of 28 mixed-precision messages explained with the right family first (10 silent, 3 given another family), 1 of 8
other errors claimed; the learn half 9 of 15, the held half 6 of 13 (`measured_at.before` holds the per-library figures).
Each thread carries a `split` fixed by the SHA-256 of its URL, so a later session can learn from the 'learn' half only
and still report the 'held' half as unseen. What the tests hold is in tests/heldout.py.
"""

from __future__ import annotations

import pytest

from heldout import SplitRound, first_family

ROUND = SplitRound("round7.json")

# Negatives explain claims today: source -> why it is a real false positive (a strict xfail: SplitRound.others).
FALSE_POSITIVES: dict[str, str] = {}


def test_the_set_is_what_it_says():
    assert ROUND.problems() == []
    assert len(ROUND.mixed) >= 28 and len(ROUND.other) >= 8
    assert len({e["source"] for e in ROUND.messages}) == len(ROUND.messages)  # one message per thread
    assert len({e["message"] for e in ROUND.messages}) == len(ROUND.messages)  # and no text twice
    libraries = ROUND.libraries()
    assert max(libraries.values()) <= 0.12 * len(ROUND.messages), libraries.most_common(3)
    assert set(libraries) == set(ROUND.data["collected"]["libraries"])


def test_the_split_is_fixed_by_the_url():
    assert ROUND.wrong_splits() == []
    assert 0.35 <= ROUND.learn_share() <= 0.65


def test_held_out_from_the_earlier_sets():
    # no thread, and no whole message text, that an earlier set or a mined table holds
    assert ROUND.already_in(["messages.json", "round3.json", "round4.json", "round5.json", "round6.json"]) == []


def test_the_measurement_is_recorded():
    measured = ROUND.data["measured_at"]
    before = measured["before"]
    assert measured["commit"] == "01ea972"
    assert (before["mixed"], before["other"]) == (len(ROUND.mixed), len(ROUND.other))
    assert before["mixed_silent"] + before["mixed_wrong_family"] == before["mixed"] - before["mixed_right_family_first"]
    # learned from after it was measured (both halves, stop 32): known_gaps are what that learning left
    assert ROUND.whole_round_problems() == []
    per_library = before["per_library"]
    assert sum(p["mixed_right"] for p in per_library.values()) == before["mixed_right_family_first"]
    assert sum(p["other_claimed"] for p in per_library.values()) == before["other_recognised"]
    assert sum(p["mixed"] + p["other"] for p in per_library.values()) == len(ROUND.messages)
    assert before["other_recognised"] == 1  # ComfyUI #6612, a CPU-only torch: a notice since stop 34, not claimed
    for split in ("learn", "held"):
        entries = [e for e in ROUND.messages if e["split"] == split]
        assert before[split]["mixed"] == sum(bool(e["family"]) for e in entries)
        assert before[split]["other"] == sum(not e["family"] for e in entries)
    assert sum(before[s]["mixed_right_family_first"] for s in ("learn", "held")) == before["mixed_right_family_first"]


def test_mixed_precision_messages_get_their_family_first():
    wrong = ROUND.wrong_families()
    assert not wrong, wrong


def test_the_known_gaps_are_still_gaps():
    closed = ROUND.closed_gaps()
    assert not closed, f"explained now: take them out of known_gaps in round7.json: {closed}"


@pytest.mark.parametrize("entry", ROUND.others(FALSE_POSITIVES), ids=[f"other-{i}" for i in range(len(ROUND.other))])
def test_other_errors_stay_not_recognised(entry):
    assert first_family(entry["message"]) is None, (entry["source"], entry["cause"])
