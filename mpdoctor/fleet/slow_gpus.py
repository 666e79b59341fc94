"""FLEET: a GPU measured far slower than the same model elsewhere in the job (the ranks' kernel timings)."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict

from mpdoctor.checks import fleet as rules
from mpdoctor.findings import Finding, FixStep, warning
from mpdoctor.fleet.model import RankReport
from mpdoctor.fleet.naming import rank_list

SLOW_RATIO = 1.5  # a GPU is slow at >= 1.5x the median time of its model's peers, as a geometric mean over kernels
MIN_SHARED_KERNELS = 2  # ...over at least this many kernels both measured, so one noisy timing is not enough


def slow_gpus(reports: list[RankReport]) -> list[Finding]:
    """Devices whose kernels take >= SLOW_RATIO x the median of the same model elsewhere (geometric mean)."""
    by_model: dict[str, list[tuple[str, str, dict[str, float]]]] = defaultdict(list)
    owners: dict[tuple[str, str], list[int]] = defaultdict(list)
    for report in reports:
        for device, times in report.fingerprint.kernels.items():
            name = report.fingerprint.kernel_devices.get(device, "")
            by_model[name].append((report.host or report.label, device, times))
        if report.fingerprint.device:
            owners[(report.host or report.label, report.fingerprint.device)].append(report.rank)
    out = []
    for model, devices in sorted(by_model.items()):
        if len(devices) < 2:
            continue
        # Each key's times across the model, sorted once: a device's peers are these without its own time.
        by_key: dict[str, list[float]] = defaultdict(list)
        for _, _, times in devices:
            for key, seconds in times.items():
                by_key[key].append(seconds)
        for values in by_key.values():
            values.sort()
        for host, device, times in devices:
            ratios = {}
            for key, seconds in times.items():
                peers = by_key[key]
                if len(peers) > 1 and seconds > 0:
                    ratios[key] = seconds / _median_without(peers, seconds)
            if len(ratios) < MIN_SHARED_KERNELS:
                continue
            mean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
            if mean < SLOW_RATIO:
                continue
            ranks = owners.get((host, device), [])
            whose = f" (rank {rank_list(ranks)})" if ranks else ""
            worst = sorted(ratios.items(), key=lambda kv: -kv[1])[:5]
            out.append(
                rules.SLOW_GPU.stamp(
                    warning(
                        f"{device} on {host}{whose} ({model or 'unnamed'}) is {mean:.1f}x slower than the same model "
                        f"on {len(devices) - 1} other device(s)",
                        [f"{key}: {ratio:.2f}x the peers' median" for key, ratio in worst]
                        + [
                            f"threshold: {SLOW_RATIO}x as a geometric mean over {len(ratios)} kernels both measured "
                            "(no per-kernel uncertainty in this snapshot version)"
                        ],
                        [
                            FixStep(
                                f"Look at {device}'s clocks, temperature and other processes on {host}",
                                "nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE",
                            )
                        ],
                    )
                )
            )
    return out


def _median_without(ordered: list[float], value: float) -> float:
    """The median of the sorted ``ordered`` with one occurrence of ``value`` left out, without copying it."""
    gone = bisect.bisect_left(ordered, value)
    n = len(ordered) - 1

    def at(i: int) -> float:
        return ordered[i + 1] if i >= gone else ordered[i]

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2
