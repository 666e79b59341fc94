"""A dtype trace as a text table: a row per recorded call, the mismatched calls and the failing one marked."""

from __future__ import annotations

from typing import Optional, Sequence

from mpdoctor.trace.records import Failure, ModuleCall, cell


def table(calls: Sequence[ModuleCall], failure: Optional[Failure], dropped: int, max_calls: int) -> str:
    """The calls as a text table; only mismatched calls and the failing call are marked, then the failure's note."""
    failing = failure.index if failure is not None else None
    rows = [("#", "module", "class", "inputs", "params", "outputs", "autocast", "")]
    for c in calls:
        mark = "<- raised here" if c.index == failing else ("<- mismatch" if c.mismatched else "")
        autocast = "?" if c.autocast is None else (c.autocast_dtype or "on") if c.autocast else "off"
        outputs = "(raised)" if c.raised and not c.finished else cell(c.outputs)
        rows.append(
            (str(c.index), c.label, c.cls, cell(c.inputs), ",".join(c.param_dtypes) or "-", outputs, autocast, mark)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(text.ljust(w) for text, w in zip(row, widths)).rstrip() for row in rows]
    if dropped:
        lines.append(f"... {dropped} more calls not recorded (max_calls={max_calls})")
    if failure is not None:
        lines.append("")
        lines.append(failure.note)
    return "\n".join(lines)
