"""A held-out round of real error messages (tests/explain_heldout/roundN.json), and how explain is judged on it.

Each round was collected from public threads that had taught no signature, labelled with the family a reader
should be given, and measured before anything was learned from it. A round's tests hold what is true now: every
mixed-precision message not in ``known_gaps`` is explained with its family first, every other error stays
unrecognised, a gap that closes must leave the list, and the threads learned from are exactly those recorded
beside the measurement (``learned_when_measured``): one learned later is no longer held out.
"""

from __future__ import annotations

import collections
import hashlib
import json
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL

FOLDER = Path(__file__).parent / "explain_heldout"
SIGNATURES = {s.id: s for s in [*all_signatures(), *GENERAL.values()]}


class Round:
    """One round's messages, split into the mixed-precision ones and the others, with its gaps."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data = json.loads((FOLDER / name).read_text(encoding="utf-8"))
        self.messages = self.data["messages"]
        self.mixed = [e for e in self.messages if e["family"]]
        self.other = [e for e in self.messages if not e["family"]]
        self.gaps = set(self.data["known_gaps"])

    def wrong_families(self) -> list:
        """(source, expected, found) for each mixed-precision message outside the gaps not explained as labelled."""
        checked = [(e, first_family(e["message"])) for e in self.mixed if e["source"] not in self.gaps]
        return [(e["source"], e["family"], found) for e, found in checked if found != e["family"]]

    def closed_gaps(self) -> list:
        return [
            e["source"] for e in self.mixed if e["source"] in self.gaps and first_family(e["message"]) == e["family"]
        ]

    def problems(self) -> list:
        """What is wrong with the set itself: sources, labels, learned marks against the signatures' citations."""
        cited = {source.rstrip("/") for s in SIGNATURES.values() for source in s.sources}
        families = {s.family for s in SIGNATURES.values()}
        found = []
        for entry in self.messages:
            if not entry["source"].startswith("https://github.com/"):
                found.append(("not a GitHub thread", entry["source"]))
            if entry["learned"] != (entry["source"].rstrip("/") in cited):
                found.append(("learned mark disagrees with the signatures' sources", entry["source"]))
            if entry["family"] is not None and entry["family"] not in families:
                found.append(("no such family", entry["family"]))
        learned = {e["source"] for e in self.messages if e["learned"]}
        if learned != set(self.data["learned_when_measured"]):
            found.append(
                (
                    "learned differs from learned_when_measured",
                    sorted(learned ^ set(self.data["learned_when_measured"])),
                )
            )
        if not self.gaps <= {e["source"] for e in self.mixed}:
            found.append(("a known gap is no mixed-precision message", sorted(self.gaps)))
        return found


def split_of(source: str) -> str:
    """The half a thread belongs to, fixed by its URL before measuring: SHA-256 even, "learn"; odd, "held"."""
    return "learn" if int(hashlib.sha256(source.encode()).hexdigest(), 16) % 2 == 0 else "held"


class SplitRound(Round):
    """A round split into a learn and a held half (rounds 5 on), with the checks every such round shares."""

    def composition_problems(self, least_mixed: int, least_other: int) -> list:
        """What is wrong with the round's make-up: too few messages of either kind, a thread or a text twice, one
        library over 6% of the round, a library its `collected` list does not name."""
        found = []
        if len(self.mixed) < least_mixed or len(self.other) < least_other:
            found.append(("too few messages", len(self.mixed), len(self.other)))
        if len({e["source"] for e in self.messages}) != len(self.messages):
            found.append(("a thread twice", None))  # one message per thread
        if len({e["message"] for e in self.messages}) != len(self.messages):
            found.append(("a text twice", None))
        libraries = self.libraries()
        if max(libraries.values()) > 0.06 * len(self.messages):
            found.append(("one library over 6%", libraries.most_common(3)))
        if not set(libraries) <= set(self.data["collected"]["libraries"]):
            found.append(
                ("libraries not in collected", sorted(set(libraries) - set(self.data["collected"]["libraries"])))
            )
        return found

    def wrong_splits(self) -> list:
        return [e["source"] for e in self.messages if e["split"] != split_of(e["source"])]

    def learn_share(self) -> float:
        return sum(e["split"] == "learn" for e in self.messages) / len(self.messages)

    def libraries(self) -> collections.Counter:
        return collections.Counter(e["library"] for e in self.messages)

    def already_in(self, earlier: list) -> list:
        """Sources of this round that an earlier set or a mined table (``earlier``: names in FOLDER, and every
        tests/explain_ecosystem table) holds already: the same thread, or the whole text as JSON writes it."""
        paths = [FOLDER / name for name in earlier] + sorted((FOLDER.parent / "explain_ecosystem").glob("*.json"))
        texts = "\n".join(path.read_text(encoding="utf-8") for path in paths)
        return [
            e["source"]
            for e in self.messages
            if f'"{e["source"]}"' in texts or json.dumps(e["message"], ensure_ascii=False) in texts
        ]

    def whole_round_problems(self) -> list:
        """The last learnings (issue 38, stops 32 and 33) read both halves: once round 8 (then 14) was collected fresh, the
        earlier rounds became older sets to learn from. What it recorded must be what explain does now: the threads
        learned are those the signatures cite, and each half's right answers are its messages outside the gaps;
        what an earlier record said of its held half stays as it was written."""
        latest = self.data["measured_at"]["whole_round_learned"]
        found = []
        if latest["learned_when_measured"] != self.data["learned_when_measured"]:
            found.append(("the latest learning's learned threads differ from learned_when_measured", None))
        for split in ("learn", "held"):
            entries = [e for e in self.messages if e["split"] == split]
            counts = latest[split]
            if (counts["mixed"], counts["other"]) != (
                sum(bool(e["family"]) for e in entries),
                sum(not e["family"] for e in entries),
            ):
                found.append(("counts differ from the set", split))
            right = sum(bool(e["family"]) and e["source"] not in self.gaps for e in entries)
            if counts["mixed_right_family_first"] != right:
                found.append(("right answers recorded differ from the gaps", split))
        return found

    def others(self, false_positives: dict) -> list:
        """The negatives as test parameters; one explain claims today (``false_positives``: source -> why) a strict
        xfail, so the test passes while the false positive lasts and fails (XPASS) the day it is fixed."""
        return [
            pytest.param(e, marks=[pytest.mark.xfail(strict=True, reason=false_positives[e["source"]])])
            if e["source"] in false_positives
            else pytest.param(e)
            for e in self.other
        ]


def first_family(message: str):
    found = explain(message, "held-out").recognised
    return SIGNATURES[found[0].id].family if found else None
