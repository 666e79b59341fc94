"""MPD003: devices that mpdoctor itself left unmeasured (its process model, its time limits), never the GPU's fault."""

from __future__ import annotations

from typing import Iterable

from mpdoctor.analysis.kernel_view import kernel_name, label, measured
from mpdoctor.checks import fixes
from mpdoctor.checks._kernels import own_failure
from mpdoctor.checks.registry import DEVICE_NOT_MEASURED, Check
from mpdoctor.findings import Finding, FixStep, warning
from mpdoctor.snapshot import Snapshot


def devices_not_measured(snap: Snapshot, checks: Iterable[Check]) -> list[Finding]:
    """One MPD003 per device that mpdoctor could not measure, when a selected check needs the kernels."""
    if not any("kernels" in c.needs for c in checks):
        return []
    out = []
    for device in measured(snap):
        unstarted = device.status in ("crashed", "timeout", "error") and not device.results
        lost = [] if unstarted else [r for r in device.results if own_failure(r.detail)]
        causes = {own_failure(device.detail)} if unstarted else {own_failure(r.detail) for r in lost}
        causes.discard("")
        if not causes:
            continue
        if unstarted:
            what, evidence = label(device), [f"{device.device}: {device.status}: {device.detail}"]
        else:
            what, evidence = (
                f"{len(lost)} kernel(s) on {label(device)}",
                [f"{kernel_name(r)}: {r.status}: {r.detail}" for r in lost],
            )
        steps = []
        if "time" in causes:
            given = snap.invocation.timeout
            evidence.append(
                f"the device's share of --timeout ({given:g} s) ran out"
                if given
                else "the device's share of the default --timeout ran out"
            )
            steps.append(
                FixStep("Run again with more time", fixes.mpdoctor_check(snap, timeout=fixes.more_time(snap, 180)))
            )
        if "process" in causes:
            evidence.append(
                "torch refuses CUDA in a process forked after its parent touched CUDA: that is "
                "mpdoctor's process model, not the GPU"
            )
            # The run that failed, as the user ran it (--python, --timeout, --kernels, the selection), so the
            # report attached is of the same interpreter and measurement: MPD001's fix, through the one builder.
            steps.append(
                fixes.inspect(
                    "Report this mpdoctor bug with the report attached",
                    fixes.mpdoctor_check(snap, extra=("--format", "markdown", "--output", "mpdoctor-report.md")),
                )
            )
        why = "its time limit ran out" if causes == {"time"} else "mpdoctor's own process model failed"
        out.append(DEVICE_NOT_MEASURED.stamp(warning(f"mpdoctor could not measure {what}: {why}", evidence, steps)))
    return out
