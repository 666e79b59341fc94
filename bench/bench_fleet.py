#!/usr/bin/env python3
"""Measure `mpdoctor fleet` at 1,024 ranks: the comparison, the offline command, and the store traffic per rank.

The 1,024 rank snapshots are synthetic: the recorded CPU capture
(tests/fixtures/cpu-kernels.json) with 8 H100s per node grafted on (128 nodes, each
with its own GPU UUIDs), torch 2.13.0+cu130 and the NCCL it loads, measured kernel
times on every rank's own GPU, per-rank identity facts as real ranks have them (when
the snapshot was taken, how long each probe took, SLURM_PROCID/SLURM_LOCALID), and a
few odd ranks out (one node on another NCCL, one on another driver, one rank with
NVIDIA_TF32_OVERRIDE=0, one GPU twice as slow). Measured, in one run:

* rank 0's comparison: 1,024 rank reports as the store hands them over (JSON text),
  decoded and compared (``mpdoctor.fleet.gathered.judge_gathered``): wall time, peak
  Python memory (tracemalloc), size of the JSON report;
* ``mpdoctor fleet compare`` on the 1,024 saved snapshot files, as a subprocess (it
  also judges the snapshots with the single-process checks), against the baseline of
  a subprocess that only reads the same files (``json.load`` each), alternating,
  ``--rounds`` times each: median wall time, peak RSS, output size, and the ratio;
* the store traffic of one rank: the bytes of its report (fingerprint and findings),
  of its report with its whole snapshot (sent by one rank per group, or by every rank
  with ``--full-snapshots``), heartbeat and verdict; through rank 0 in both modes;
  and, when torch is installed, rank 0 gathering the 1,024 reports (one snapshot per
  group) through a real ``torch.distributed.TCPStore`` on this machine.

It reports numbers and asserts none; exits 0, or 1 when a command fails.

    python bench/bench_fleet.py            # table
    python bench/bench_fleet.py --json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpdoctor.fleet.fingerprint import rank_report  # noqa: E402
from mpdoctor.fleet.judging import ManyJudge, identity  # noqa: E402
from mpdoctor.fleet.launcher import Launch  # noqa: E402
from mpdoctor.fleet.model import fleet_data  # noqa: E402
from mpdoctor.fleet.protocol import Channel, Gathered, group_key  # noqa: E402
from mpdoctor.fleet.gathered import judge_gathered  # noqa: E402
from mpdoctor.schema.serde import to_data  # noqa: E402
from mpdoctor.snapshot import (  # noqa: E402
    CudaDevice,
    DeviceKernels,
    Distribution,
    KernelInfo,
    KernelResult,
    NvmlGpu,  # noqa: E402
    NvmlInfo,
    load_snapshot,
)

RANKS, PER_NODE = 1024, 8
H100 = "NVIDIA H100 80GB HBM3"
KERNELS = [
    ("matmul", "bfloat16"),
    ("matmul", "float16"),
    ("matmul", "float32"),
    ("conv2d", "bfloat16"),
    ("layer_norm", "bfloat16"),
    ("softmax", "bfloat16"),
    ("sdpa", "bfloat16"),
]


def node_snapshot(base, node: int, local: int):
    """Rank (node, local) of the synthetic fleet; odd ones out at fixed places."""
    snap = copy.deepcopy(base)
    rank = node * PER_NODE + local
    # What differs on every real rank without mattering: when it ran, how long its probes took, its numbers.
    snap.created = f"2026-11-21T21:{rank // 60 % 60:02d}:{rank % 60:02d}+00:00"
    snap.environment.probe = replace(snap.environment.probe, seconds=0.4 + 0.0007 * rank)
    snap.torch = replace(snap.torch, probe=replace(snap.torch.probe, seconds=3.1 + 0.0009 * rank))
    snap.environment.env.update({"SLURM_PROCID": str(rank), "SLURM_LOCALID": str(local)})
    gpus = [
        NvmlGpu(
            index=i,
            name=H100,
            uuid=f"GPU-{node:04d}{i:04d}-0000-0000-0000-000000000000",
            pci_bus_id=f"0000:{0x18 + i:02x}:00.0",
            memory_total=80 << 30,
            compute_capability="9.0",
        )
        for i in range(PER_NODE)
    ]
    driver = "535.113.01" if node == 90 else "550.54.14"
    snap.machine.nvml = NvmlInfo(status="ok", driver_version=driver, cuda_driver_version="12.4", gpus=gpus)
    snap.torch = replace(
        snap.torch,
        version="2.13.0+cu130",
        cuda="13.0",
        cudnn=91002,
        cuda_available=True,
        device_count=PER_NODE,
        devices=[CudaDevice(ordinal=i, name=H100, compute_capability="9.0") for i in range(PER_NODE)],
    )
    nccl = "2.20.5" if node == 37 else "2.19.3"
    snap.torch.nccl = nccl  # as torch loads it
    snap.environment.distributions.append(Distribution(name="nvidia-nccl-cu12", version=nccl))
    if rank == 555:
        snap.environment.env["NVIDIA_TF32_OVERRIDE"] = "0"
    # Each rank times the GPU its LOCAL_RANK selects, only.
    factor = 2.0 if (node, local) == (64, 3) else 1.0 + 0.01 * ((node * 7 + local) % 5)
    devices = [
        DeviceKernels(
            device=f"cuda:{local}",
            name=H100,
            compute_capability="9.0",
            bf16_native=True,
            status="ok",
            results=[
                KernelResult(op=op, dtype=dtype, status="ok", seconds=0.0004 * (n + 1) * factor)
                for n, (op, dtype) in enumerate(KERNELS)
            ],
        )
    ]
    snap.kernels = KernelInfo(status="ok", mode="quick", devices=devices)
    return snap


def build(directory: Path) -> tuple[list[str], list[str], list[int]]:
    """Write the 1,024 snapshot files; return their paths, each rank's report as the store carries it (JSON: its
    fingerprint and findings), and the size of each rank's whole snapshot as it would travel with the report."""
    base = load_snapshot(str(ROOT / "tests" / "fixtures" / "cpu-kernels.json"))
    paths, wire, snapshot_bytes = [], [], []
    judge = ManyJudge()  # what judge() gives each snapshot (tests/test_fleet_scale.py), without 30 s of judging
    for rank in range(RANKS):
        node, local = divmod(rank, PER_NODE)
        snap = node_snapshot(base, node, local)
        data = to_data(snap)
        path = directory / f"rank{rank:04d}.json"
        path.write_text(json.dumps(data))
        paths.append(str(path))
        report = rank_report(rank, f"node{node:03d}", local, snap, judge.judge(snap, identity(data)))
        wire.append(json.dumps(to_data(report), separators=(",", ":")))
        snapshot_bytes.append(len(json.dumps(data, separators=(",", ":")).encode()) + len(',"snapshot":'))
    return paths, wire, snapshot_bytes


def rank_zero_compare(wire: list[str]) -> dict:
    launch = Launch("torchrun", 0, RANKS, 0, "node000", "node000", 29500, "bench")

    def once():
        gathered = Gathered(reports={rank: json.loads(text) for rank, text in enumerate(wire)})
        report = judge_gathered(gathered, launch)
        return report, json.dumps(fleet_data(report), indent=2)

    start = time.perf_counter()  # timed without tracemalloc, which doubles the time; then once more with it
    report, text = once()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    once()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "seconds": seconds,
        "peak_python_bytes": peak,
        "report_bytes": len(text.encode()),
        "groups": len(report.groups),
        "findings": [f.code for f in report.findings],
    }


# Runs the CLI as `python -m mpdoctor` does, and writes the process's own peak RSS (KiB on Linux) at exit.
CLI_WITH_RSS = (
    "import atexit, resource, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMAXRSS %d\\n' % "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
    "sys.argv = ['mpdoctor'] + sys.argv[1:]\n"
    "runpy.run_module('mpdoctor', run_name='__main__')\n"
)


def _timed(argv: list[str], cwd: str) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode()[-2000:])
        raise SystemExit(1)
    rss = [line.split()[1] for line in proc.stderr.decode().splitlines() if line.startswith("MAXRSS ")]
    return {"seconds": seconds, "max_rss_kib": int(rss[-1]) if rss else None, "output_bytes": len(proc.stdout)}


# The baseline: a process that only reads the same files, as fast as Python can (json.load each).
READ_ONLY = (
    "import atexit, json, resource, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMAXRSS %d\\n' % "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path) as handle:\n"
    "        json.load(handle)\n"
)


def cli_compare(paths: list[str], cwd: str, rounds: int) -> dict:
    """`fleet compare` of ``paths`` and the read-only baseline, alternating, ``rounds`` times each."""
    compare_runs, baseline_runs = [], []
    for _ in range(rounds):
        baseline_runs.append(_timed([sys.executable, "-c", READ_ONLY, *paths], cwd))
        compare_runs.append(
            _timed(
                [sys.executable, "-c", CLI_WITH_RSS, "fleet", "compare", *paths, "-f", "json", "--fail-on", "never"],
                cwd,
            )
        )
    compare_s = statistics.median(r["seconds"] for r in compare_runs)
    baseline_s = statistics.median(r["seconds"] for r in baseline_runs)
    return {
        "seconds": compare_s,
        "baseline_seconds": baseline_s,
        "ratio": compare_s / baseline_s,
        "rounds": rounds,
        "max_rss_kib": max(r["max_rss_kib"] or 0 for r in compare_runs),
        "baseline_max_rss_kib": max(r["max_rss_kib"] or 0 for r in baseline_runs),
        "output_bytes": compare_runs[-1]["output_bytes"],
    }


def store_traffic(wire: list[str], snapshot_bytes: list[int]) -> dict:
    sizes = sorted(len(text.encode()) for text in wire)
    beat = json.dumps(
        {
            "host": "node000",
            "local_rank": 0,
            "step": "running kernels on cuda:7",
            "step_seconds": 12.3,
            "beat": 42,
            "state": "running",
            "detail": "",
        },
        separators=(",", ":"),
    )
    verdict = json.dumps({"worst": "error", "summary": "x" * 160}, separators=(",", ":"))
    # One whole snapshot per group: the first rank of each group (as the store's claim counter picks it).
    first: dict[str, int] = {}
    for rank, text in enumerate(wire):
        first.setdefault(group_key(json.loads(text)), rank)
    representatives = set(first.values())
    per_group = sum(sizes_of(wire)) + sum(snapshot_bytes[rank] for rank in representatives)
    out = {
        "report_bytes_median": statistics.median(sizes),
        "report_bytes_max": sizes[-1],
        "snapshot_bytes_median": statistics.median(snapshot_bytes),
        "heartbeat_bytes": len(beat),
        "verdict_bytes": len(verdict),
        "through_rank0_bytes": sum(sizes),
        "groups": len(representatives),
        "through_rank0_one_snapshot_per_group_bytes": per_group,
        "through_rank0_full_snapshots_bytes": sum(sizes) + sum(snapshot_bytes),
    }
    try:
        from torch.distributed import TCPStore
    except ImportError:
        return out
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = TCPStore("127.0.0.1", port, None, True, timedelta(seconds=60), wait_for_workers=False)
    client = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=60))
    channel = Channel(client, "bench")
    snapshot = {"filler": "x" * (int(statistics.median(snapshot_bytes)) - 14)}  # a snapshot's size of JSON
    start = time.perf_counter()
    for rank, text in enumerate(wire):
        channel.post_report(rank, {**json.loads(text), "snapshot": snapshot})  # the store keeps one per group
    posted = time.perf_counter() - start
    start = time.perf_counter()
    got = channel.gather(RANKS, time.monotonic() + 120)
    out.update(
        {
            "tcpstore_post_all_seconds": posted,
            "tcpstore_gather_seconds": time.perf_counter() - start,
            "tcpstore_gathered": len(got.reports),
            "tcpstore_snapshots_gathered": sum(1 for data in got.reports.values() if "snapshot" in data),
        }
    )
    del client, server
    return out


def sizes_of(wire: list[str]) -> list[int]:
    return [len(text.encode()) for text in wire]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the CLI and its baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-fleet-") as tmp:
        paths, wire, snapshot_bytes = build(Path(tmp))
        results = {
            "ranks": RANKS,
            "rank0_compare": rank_zero_compare(wire),
            "cli_compare_1024": cli_compare(paths, tmp, max(1, args.rounds)),
            "snapshot_file_bytes_median": statistics.median(os.path.getsize(p) for p in paths),
            "store": store_traffic(wire, snapshot_bytes),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    r0, cli, store = results["rank0_compare"], results["cli_compare_1024"], results["store"]
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {RANKS} synthetic ranks "
        f"({RANKS // PER_NODE} nodes x {PER_NODE})"
    )
    print(
        f"rank 0 compare (decode + group + findings + JSON): {r0['seconds']:.3f} s, peak Python memory "
        f"{r0['peak_python_bytes'] / 2**20:.1f} MiB, report {r0['report_bytes'] / 1024:.1f} KiB, "
        f"{r0['groups']} groups, findings {' '.join(r0['findings'])}"
    )
    print(
        f"fleet compare CLI, 1024 snapshot files: {cli['seconds']:.2f} s, reading the files alone "
        f"{cli['baseline_seconds']:.2f} s: ratio {cli['ratio']:.2f} (median of {cli['rounds']} alternating "
        f"rounds); peak RSS {cli['max_rss_kib'] / 1024:.0f} MiB (baseline {cli['baseline_max_rss_kib'] / 1024:.0f}"
        f" MiB), output {cli['output_bytes'] / 1024:.1f} KiB; snapshot file median "
        f"{results['snapshot_file_bytes_median'] / 1024:.1f} KiB"
    )
    print(
        f"store traffic per rank: report {store['report_bytes_median'] / 1024:.1f} KiB median "
        f"({store['report_bytes_max'] / 1024:.1f} KiB max), with its whole snapshot "
        f"+{store['snapshot_bytes_median'] / 1024:.1f} KiB (one rank of each of {store['groups']} groups, or "
        f"every rank with --full-snapshots), heartbeat {store['heartbeat_bytes']} B/s, verdict "
        f"{store['verdict_bytes']} B"
    )
    print(
        f"through rank 0's store: {store['through_rank0_bytes'] / 2**20:.2f} MiB of reports; "
        f"{store['through_rank0_one_snapshot_per_group_bytes'] / 2**20:.2f} MiB with one snapshot per group; "
        f"{store['through_rank0_full_snapshots_bytes'] / 2**20:.2f} MiB with --full-snapshots"
    )
    if "tcpstore_gather_seconds" in store:
        print(
            f"TCPStore on this machine: posting 1024 reports {store['tcpstore_post_all_seconds']:.2f} s, "
            f"rank 0 gathering them {store['tcpstore_gather_seconds']:.2f} s "
            f"({store['tcpstore_snapshots_gathered']} whole snapshots among them)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
