"""FLEET001: ranks that sent no report, each named with how far it got; many that never reached the store, as one."""

from __future__ import annotations

from mpdoctor.checks import fleet as rules
from mpdoctor.findings import Finding, FixStep, error
from mpdoctor.fleet.model import RankState
from mpdoctor.fleet.naming import rank_list

UNREADABLE = "its report could not be read"  # a RankState's detail begins so for a rank whose report was garbage
# A RankState's detail begins so for a rank still running when the run was cut short (the launcher's SIGTERM, a
# deadline too short for rank 0's own check): not at fault, so no finding of its own (``cut_short`` says why).
CUT_SHORT = "cut short by"


GROUP_ABSENT = 8  # more ranks than this that never reached the store are one finding, not one each


def never_reached(state: RankState) -> bool:
    """A rank that left nothing in the store: no heartbeat (so no host, no step), no report."""
    return not state.host and not state.last_step and not state.detail.startswith(UNREADABLE)


def missing_all(absent: list[RankState], world_size: int) -> list[Finding]:
    """A finding per rank that did not report; those that never reached the store, when many, as one.

    A rank still running when the run was cut short (``CUT_SHORT``) gets none: ``cut_short`` names it in the one
    finding that says what cut the run short.
    """
    absent = [state for state in absent if not state.detail.startswith(CUT_SHORT)]
    never = [state for state in absent if never_reached(state)]
    if len(never) <= GROUP_ABSENT:
        return [_missing(state, world_size) for state in absent]
    ranks = [state.rank for state in never]
    grouped = rules.RANK_MISSING.stamp(
        error(
            f"{len(ranks)} ranks never reached the store: {clipped(rank_list(ranks))}",
            [f"ranks {clipped(rank_list(ranks))} of {world_size}: missing", never[0].detail],
            [
                FixStep(
                    "Check that those ranks started, and that MASTER_ADDR:MASTER_PORT is reachable from their nodes; "
                    "then run the single-process check on one of them",
                    "mpdoctor check",
                )
            ],
        )
    )
    return [grouped] + [_missing(state, world_size) for state in absent if not never_reached(state)]


def clipped(text: str, limit: int = 400) -> str:
    """A list of rank spans as a title quotes it: thousands of scattered ranks are not repeated whole."""
    if len(text) <= limit:
        return text
    cut = text.rfind(",", 0, limit)
    return text[: cut if cut > 0 else limit] + ", ..."


def _missing(state: RankState, world_size: int) -> Finding:
    where = (
        f" on {state.host}" + (f" (local rank {state.local_rank})" if state.local_rank is not None else "")
        if state.host
        else ""
    )
    since = f" for {state.step_seconds:.0f} s" if state.step_seconds is not None else ""
    if state.detail.startswith(UNREADABLE):  # it reached the store, and what it wrote there is not a report
        step = ", only a value mpdoctor could not read"
    elif not state.last_step:
        step = "; it never reached the store"
    elif state.status == "crashed":
        step = f"; last step: {state.last_step}{since}"
    else:  # the step its heartbeat last announced, in words: "stuck importing torch for 60 s"
        step = f": stuck {state.last_step}{since}"
    verb = "crashed" if state.status == "crashed" else "sent no report"
    return rules.RANK_MISSING.stamp(
        error(
            f"rank {state.rank}{where} {verb}{step}",
            [f"rank {state.rank} of {world_size}: {state.status}", state.detail]
            if state.detail
            else [f"rank {state.rank} of {world_size}: {state.status}"],
            [
                FixStep(
                    f"Run the single-process check on {state.host or 'that node'}, in that rank's environment",
                    "mpdoctor check",
                )
            ],
        )
    )
