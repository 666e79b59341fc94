"""Ranks in words: "0-3, 5", "ranks 0-13, 15 (15 ranks on 4 nodes)", "rank 14 on node-c"."""

from __future__ import annotations

from typing import Iterable


def rank_list(ranks: Iterable[int]) -> str:
    """0 1 2 3 5 -> "0-3, 5"."""
    ranks = sorted(set(ranks))
    spans: list[str] = []
    start = previous = None
    for rank in ranks + [None]:
        if start is not None and rank == previous + 1:
            previous = rank
            continue
        if start is not None:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = rank
    return ", ".join(spans)


def who(ranks: list[int], hosts: list[str]) -> str:
    """ "ranks 0-13, 15 (15 ranks on 4 nodes)" or "rank 14 on node-c"."""
    if len(ranks) == 1:
        return f"rank {ranks[0]} on {hosts[0]}" if hosts and hosts[0] else f"rank {ranks[0]}"
    nodes = len(set(hosts))
    return f"ranks {rank_list(ranks)} ({len(ranks)} ranks on {nodes} node{'s' if nodes != 1 else ''})"
