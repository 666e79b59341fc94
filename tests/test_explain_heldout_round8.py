"""`mpdoctor explain` on sealed round 8 (tests/explain_heldout/round8.json): 98 real messages from the threads of 53
libraries and applications (mmdetection, ColossalAI, unsloth, kohya, LLaMA-Factory, espnet, fairseq, detectron2,
transformers, diffusers, timm...), collected at the start of issue 38's stop 32, before anything of that stop was
written, from threads no signature cites and no earlier set or mined table holds, labelled before measuring.

Sealed: nothing is learned from it. Whoever changes explain reads only its counts (`measured_at`, one record per
measurement: ea72e7f before the stop's work, then each later commit named), never its messages; no signature may cite
its threads. `known_gaps` lists the mixed-precision messages the last measurement did not explain with their family
(written by the measuring script, not read), so these tests fail when explain changes what it says on the set: a
closed gap or a new one is a new measurement to record, not a rule to write.
"""

from __future__ import annotations

from heldout import SplitRound, first_family

ROUND = SplitRound("round8.json")
# The measurement the tests hold explain to now (a key of measured_at).
LATEST = "047a506"


def test_the_set_is_what_it_says():
    assert ROUND.problems() == []
    assert len(ROUND.mixed) >= 60 and len(ROUND.other) >= 35
    assert len({e["source"] for e in ROUND.messages}) == len(ROUND.messages)  # one message per thread
    assert len({e["message"] for e in ROUND.messages}) == len(ROUND.messages)  # and no text twice
    libraries = ROUND.libraries()
    assert max(libraries.values()) <= 0.06 * len(ROUND.messages), libraries.most_common(3)
    assert set(libraries) == set(ROUND.data["collected"]["libraries"])


def test_the_split_is_fixed_by_the_url():
    assert ROUND.wrong_splits() == []
    assert 0.35 <= ROUND.learn_share() <= 0.65


def test_held_out_from_the_earlier_sets():
    earlier = ["messages.json", "round3.json", "round4.json", "round5.json", "round6.json", "round7.json"]
    assert ROUND.already_in(earlier) == []


def test_sealed_nothing_learned():
    assert ROUND.data["learned_when_measured"] == []
    assert not [e["source"] for e in ROUND.messages if e["learned"]]  # problems() holds these to the citations


def test_the_measurements_are_recorded():
    measured = ROUND.data["measured_at"]
    assert {"ea72e7f", LATEST} <= set(measured)
    for record in measured.values():
        assert (record["mixed"], record["other"]) == (len(ROUND.mixed), len(ROUND.other))
        wrong = record["mixed_silent"] + record["mixed_wrong_family"]
        assert wrong == record["mixed"] - record["mixed_right_family_first"]
        assert (
            sum(record[s]["mixed_right_family_first"] for s in ("learn", "held")) == record["mixed_right_family_first"]
        )
    latest = measured[LATEST]
    assert len(ROUND.gaps) == latest["mixed"] - latest["mixed_right_family_first"]


def test_explain_says_what_the_latest_measurement_recorded():
    assert ROUND.wrong_families() == []  # every mixed-precision message outside the gaps: its family first
    assert ROUND.closed_gaps() == []  # and none of the gaps explained: either is a new measurement to record
    claimed = sum(first_family(e["message"]) is not None for e in ROUND.other)
    assert claimed == ROUND.data["measured_at"][LATEST]["other_recognised"]
