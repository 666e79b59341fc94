"""Judge a snapshot: run the selected checks, let superseded findings stand down, triage the rest."""

from __future__ import annotations

from typing import Iterable

from mpdoctor.checks import fixes
from mpdoctor.checks.facts import FACTS
from mpdoctor.checks.registry import CHECK_CRASHED, FACT_NOT_TAKEN, Check, builtin_registry
from mpdoctor.doctor.unmeasured import devices_not_measured
from mpdoctor.findings import Finding, FixStep, info, triage
from mpdoctor.snapshot import Snapshot


def judge(snapshot: Snapshot, select: list[str] = (), ignore: list[str] = ()) -> list[Finding]:
    """Findings of the snapshot checks selected by ``select``/``ignore`` (code prefixes).

    Selection comes first; a finding then stands down only when a *selected* check
    that supersedes it fired (see ``mpdoctor.checks.registry``).
    """
    checks = builtin_registry().select(select, ignore)
    return triage(run_checks(snapshot, checks))


def run_checks(snap: Snapshot, checks: Iterable[Check]) -> list[Finding]:
    """Run the given (selected) snapshot checks; drop what a selected check that fired supersedes.

    A check fired when it produced at least one finding of its own (a crash is not one).
    Supersession is judged on what each check found, so the order they run in does not matter.
    """
    checks = [entry for entry in checks if entry.runs_on_snapshot]
    verdicts = [v for entry in checks for v in entry.verdicts(snap)]
    fired = {v.finding.code for v in verdicts if v.finding.code != CHECK_CRASHED.code}
    return [v.finding for v in verdicts if not fired.intersection(v.superseded_by)] + about_the_run(snap, checks)


def about_the_run(snap: Snapshot, checks: Iterable[Check]) -> list[Finding]:
    """mpdoctor's own findings about how it ran, beside the checks' (MPD002, MPD003)."""
    checks = list(checks)
    return facts_not_taken(snap, checks) + devices_not_measured(snap, checks)


def facts_not_taken(snap: Snapshot, checks: Iterable[Check]) -> list[Finding]:
    """MPD002, once per fact that selected checks need and the snapshot never took.

    A fact whose own check (``Fact.reported_by``) is selected is left to it. Its title says why the fact is
    missing (``Fact.not_taken``); when an option the user gave took it away (``--no-kernels``), the fix says to
    drop that option, and its command does.
    """
    checks = list(checks)
    selected = {c.code for c in checks}
    out = []
    for name, fact in FACTS.items():
        why = fact.not_taken(snap)
        needing = sorted(c.code for c in checks if name in c.needs)
        if not why or not needing or fact.reported_by in selected:
            continue
        codes = ",".join(needing)
        option = fact.taken_away_by(snap)
        if option:  # the user's own option took it away: the fix says to drop it, not only to select
            step = (
                f"Run it again without {option} (it skipped the {name} these checks need), "
                "on the machine and in the directory it describes"
            )
        else:
            step = "Take it again with these checks selected, on the machine and in the directory it describes"
        out.append(
            FACT_NOT_TAKEN.stamp(
                info(
                    f"{len(needing)} selected check(s) could not judge: this snapshot has no {name} ({why})",
                    [f"{name}: {fact.doc}", f"needed by {', '.join(needing)}"],
                    [
                        FixStep(
                            step,
                            fixes.mpdoctor_check(
                                snap,
                                select=codes,
                                kernels=name == "kernels",
                                extra=("--save-snapshot", "snapshot.json"),
                            ),
                        )
                    ],
                )
            )
        )
    return out
