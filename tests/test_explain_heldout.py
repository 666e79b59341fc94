"""`mpdoctor explain` on real messages it was not built from (tests/explain_heldout/messages.json).

The held-out threads are checked not to be cited by any signature, so no signature learned from
them. Mixed-precision failures must be explained by the expected signature (its cause and its
fixes) at 95% or more; real errors that are not mixed-precision failures (out of memory, NCCL
timeouts, shape and device mismatches, integer targets, float64 labels) must stay unrecognised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL

HELD_OUT = json.loads((Path(__file__).parent / "explain_heldout" / "messages.json").read_text(encoding="utf-8"))
MIXED = HELD_OUT["mixed_precision"]
OTHER = HELD_OUT["not_mixed_precision"]
SIGNATURES = {s.id: s for s in [*all_signatures(), *GENERAL.values()]}
MIN_RECOGNISED = 0.95


def explained(message: str) -> list[str]:
    return [item.id for item in explain(message, "held-out").recognised]


def test_the_set_is_held_out_and_well_formed():
    cited = {source.rstrip("/") for s in SIGNATURES.values() for source in s.sources}
    taught = {text for s in SIGNATURES.values() for text in s.examples + s.near_misses}
    assert len(MIXED) >= 60 and len(OTHER) >= 20
    for entry in MIXED + OTHER:
        assert entry["source"].startswith("https://github.com/"), entry
        assert entry["source"].rstrip("/") not in cited, f"{entry['source']} taught a signature: not held out"
        assert entry["message"] not in taught, entry["source"]
    for entry in MIXED:
        assert entry["expect"] in SIGNATURES, entry["expect"]
    # every family the issue names is represented
    families = {SIGNATURES[entry["expect"]].family for entry in MIXED}
    assert {
        "framework",
        "mps",
        "numerics",
        "op-support",
        "compiler",
        "quantization",
        "apex",
        "overflow",
        "dtype",
        "hardware",
    } <= families


def test_mixed_precision_failures_are_explained_with_the_right_cause():
    wrong = []
    for entry in MIXED:
        found = explained(entry["message"])
        if not found or found[0] != entry["expect"]:  # the first explanation is the one a reader acts on
            wrong.append((entry["source"], entry["expect"], found))
    rate = 1 - len(wrong) / len(MIXED)
    assert rate >= MIN_RECOGNISED, f"{rate:.0%} explained right; wrong: {wrong}"


@pytest.mark.parametrize("entry", OTHER, ids=[f"{e['kind']}-{i}" for i, e in enumerate(OTHER)])
def test_other_errors_stay_not_recognised(entry):
    assert explained(entry["message"]) == [], entry["source"]


def test_the_explanation_carries_the_signatures_cause_and_fixes():
    """Right id means right cause and fix: the report is built from that signature, not re-worded."""
    entry = next(e for e in MIXED if e["expect"] == "mps-bf16-unsupported")
    (item,) = explain(entry["message"], "held-out").recognised
    signature = SIGNATURES[item.id]
    assert item.cause == signature.cause and item.fixes == list(signature.fixes)
