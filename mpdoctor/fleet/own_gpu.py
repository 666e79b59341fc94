"""FLEET008: ranks whose LOCAL_RANK selects no GPU of their own, and GPUs that two ranks of one node select."""

from __future__ import annotations

from collections import defaultdict

from mpdoctor.checks import fleet as rules
from mpdoctor.findings import Finding, FixStep, warning
from mpdoctor.fleet.model import RankReport
from mpdoctor.fleet.naming import rank_list, who


def without_own_gpu(reports: list[RankReport]) -> list[Finding]:
    """Ranks whose LOCAL_RANK selects no visible GPU, and GPUs that two ranks of one node select."""
    out = []
    short = [r for r in reports if r.fingerprint.device_problem]
    if short:
        out.append(
            rules.NO_GPU_OF_ITS_OWN.stamp(
                warning(
                    f"{who([r.rank for r in short], [r.host for r in short])}: LOCAL_RANK selects no GPU of its own",
                    [
                        f"rank {r.rank} on {r.host or r.label} (local rank {r.local_rank}): {r.fingerprint.device_problem}"
                        for r in short[:20]
                    ]
                    + ([f"and {len(short) - 20} more"] if len(short) > 20 else []),
                    [
                        FixStep(
                            "Start as many ranks per node as it has visible GPUs, e.g.",
                            "torchrun --nproc-per-node gpu ...",
                        ),
                        FixStep("Or give each rank one GPU and select cuda:0 in the script (srun --gpus-per-task=1)"),
                    ],
                )
            )
        )
    by_gpu: dict[tuple[str, str], list[RankReport]] = defaultdict(list)
    for report in reports:
        if report.fingerprint.device_uuid and not report.fingerprint.device_problem:
            by_gpu[(report.host, report.fingerprint.device_uuid)].append(report)
    for (host, uuid), sharing in sorted(by_gpu.items()):
        if len(sharing) < 2:
            continue
        ranks = [r.rank for r in sharing]
        out.append(
            rules.NO_GPU_OF_ITS_OWN.stamp(
                warning(
                    f"ranks {rank_list(ranks)} on {host} select the same GPU ({uuid})",
                    [f"rank {r.rank} (local rank {r.local_rank}): {r.fingerprint.device} = {uuid}" for r in sharing],
                    [
                        FixStep(
                            "Give each rank of the node its own GPU: leave CUDA_VISIBLE_DEVICES the same for all and "
                            "use cuda:LOCAL_RANK, or set it per rank to a different GPU"
                        )
                    ],
                )
            )
        )
    return out
