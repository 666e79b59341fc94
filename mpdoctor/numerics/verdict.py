"""The verdict of a numerics watch as text: what ``str(watch)`` prints.

The first event, where and with which op, its fixes ranked and whether re-running the step with one applied
verified it; the events after it; what GradScaler did; the ops that could not be read; and the modules with the
least headroom below their dtype's max.
"""

from __future__ import annotations

from typing import Any

from mpdoctor.numerics.events import scaler_summary


def verdict_text(watch: Any) -> str:
    """The verdict of ``watch`` as text: the first event with its fixes, the others, the scaler, the headroom."""
    lines = []
    first = watch.first
    if first is None and not watch.ops_seen:
        lines.append("numerics: no floating-point op ran under the watch (no model was called): nothing to judge")
    elif first is None:
        lines.append(
            f"numerics: no overflow, NaN or underflow in {watch.step_index or 1} step(s), {watch.ops_seen} ops watched"
        )
    else:
        lines.append(f"numerics: first {first.kind} in the {first.phase}, step {first.step}: {first.where}")
        lines.append(f"  op {first.op} ({first.dtype}): {first.detail}")
        for rank, fix in enumerate(first.fixes, 1):
            lines.append(f"  fix {rank}: {fix}")
        lines.append(f"  {first.verification.text if first.verification else watch.unverified_text(first)}")
        if len(watch.events) > 1:
            lines.append(f"  then {len(watch.events) - 1} more event(s):")
            for event in watch.events[1:11]:
                lines.append(f"    {event.line()}")
            if len(watch.events) > 11:
                lines.append(f"    ... {len(watch.events) - 11} more (watch.events)")
    summary = scaler_summary(watch.scaler)
    if summary:
        lines.append(summary)
    if watch.skipped:
        lines.append(f"{watch.skipped} op(s) not judged: their tensors cannot be read (sparse, subclassed)")
    for problem in watch.problems[:3]:
        lines.append(f"a step's statistics could not be read, that step is not judged: {problem}")
    tight = sorted(watch.headroom.items(), key=lambda item: item[1])[:5]
    if tight:
        shown = ", ".join(f"{name or '(root)'} {bits:g}" for name, bits in tight)
        lines.append(f"headroom (bits below the dtype's max, least first): {shown}")
    return "\n".join(lines)
