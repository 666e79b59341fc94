"""The notice for NaNs in a text that names no precision (mpdoctor/explain/shapes/unnamed.py).

Its texts are real: held-out messages read from the learned rounds' files by their threads (never retyped), and a
KeyError raised here by Python. The notice must tell the user how to find out, stay a notice (never a recognised
failure, so it costs no negative), and keep out of the way when the text names a precision, ends on another failure,
or a known failure is recognised.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.shapes import UNNAMED_NON_FINITE
from mpdoctor.explain.shapes.unnamed import LINES, named_precision, non_finite_line

FOLDER = Path(__file__).parent / "explain_heldout"
SEALED = {"round8.json", "round16.json", "round19.json", "round21.json", "round22.json", "round23.json", "round25.json"}


def held(round_name: str, source: str) -> str:
    """The message of one thread in a learned round."""
    data = json.loads((FOLDER / round_name).read_text(encoding="utf-8"))
    return next(e["message"] for e in data["messages"] if e["source"] == source)


def unnamed_notices(text: str) -> list:
    return [n for n in explain(text, "test").notices if n.id == UNNAMED_NON_FINITE.id]


# (round, thread): NaNs shown, no precision named; labelled the precision's numerics or no precision failure
NAN_WITHOUT_PRECISION = [
    ("round11.json", "https://github.com/Alpha-VL/FastConvMAE/issues/3"),  # numerics (an fp16 run)
    ("round12.json", "https://github.com/LTH14/mar/issues/69"),  # numerics (an fp16 run)
    ("round9.json", "https://github.com/HuangJunJie2017/BEVDet/issues/265"),  # numerics (mmcv fp16)
    ("round12.json", "https://github.com/pytorch/ignite/issues/201"),  # no precision failure: lr=100000
    ("round17.json", "https://github.com/PaddlePaddle/PaddleNLP/issues/919"),  # no precision failure
]


@pytest.mark.parametrize(
    "round_name,source", NAN_WITHOUT_PRECISION, ids=lambda v: v.split("/")[3] if v.startswith("http") else v
)
def test_nans_in_a_text_that_names_no_precision_get_the_notice_and_no_verdict(round_name, source):
    report = explain(held(round_name, source), "test")
    assert report.recognised == []  # whichever the label, explain decides no family: it cannot tell
    (notice,) = [n for n in report.notices if n.id == UNNAMED_NON_FINITE.id]
    assert notice.family == "numerics" and notice.lines
    commands = [f.command for f in notice.fixes if f.command]
    assert "mpdoctor numerics train.py" in commands  # how to find out, in one run


def test_a_precision_named_is_the_readers_to_decide():
    text = held("round9.json", "https://github.com/Haiyang-W/DSVT/issues/31")  # NaN losses, no precision named
    assert unnamed_notices(text)
    named = text + "\nTraining with --fp16"
    report = explain(named, "test")
    assert [r.family for r in report.recognised][:1] == ["numerics"]
    assert not unnamed_notices(named) and named_precision(named.lower())


def test_a_run_that_ended_on_another_failure_gets_no_notice():
    nan = held("round11.json", "https://github.com/Alpha-VL/FastConvMAE/issues/3")
    try:
        {}["pixel_values"]
    except KeyError:
        crash = traceback.format_exc()
    assert unnamed_notices(nan)
    assert not unnamed_notices(nan + "\n" + crash)


def test_nans_far_above_the_end_are_history_not_the_end():
    nan = held("round11.json", "https://github.com/Alpha-VL/FastConvMAE/issues/3")
    later = [f"[epoch {i}] eval done in {i}.2s" for i in range(LINES)]
    assert non_finite_line([nan, *later[: LINES - 2]]) is not None
    assert non_finite_line([nan, *later]) is None


def test_signature_examples_and_near_misses():
    for text in UNNAMED_NON_FINITE.examples:
        assert unnamed_notices(text), text
    for text in UNNAMED_NON_FINITE.near_misses:
        assert not unnamed_notices(text), text


def test_the_notice_is_never_given_beside_a_recognised_failure_in_any_round():
    """Over every held-out message: the notice only where nothing is recognised and no precision is named (the
    sealed rounds run too, their messages never printed)."""
    given = 0
    for path in sorted(FOLDER.glob("round*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8"))["messages"]:
            report = explain(entry["message"], "test")
            if any(n.id == UNNAMED_NON_FINITE.id for n in report.notices):
                given += 1
                assert not report.recognised, path.name if path.name in SEALED else entry["source"]
    assert given > 20  # it does reach the messages it was written for


def test_json_lists_it_under_notices():
    from mpdoctor.render.explain import render_json

    data = json.loads(render_json(explain("Loss is nan, stopping training", "test")))
    assert data["recognised"] == []
    assert [n["id"] for n in data["notices"]] == [UNNAMED_NON_FINITE.id]
