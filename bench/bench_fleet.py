#!/usr/bin/env python3
"""Measure `mpdoctor fleet` at 1,024 ranks: the comparison, the offline command, and the store traffic per rank.

The 1,024 rank snapshots are synthetic: the recorded CPU capture
(tests/fixtures/cpu-kernels.json) with 8 H100s per node grafted on (128 nodes), torch
2.13.0+cu130, measured kernel times on each node's local rank 0, and a few odd ranks
out (one node on another NCCL wheel, one on another driver, one rank with
NVIDIA_TF32_OVERRIDE=0, one GPU twice as slow). Measured, in one run:

* rank 0's comparison: 1,024 rank reports as the store hands them over (JSON text),
  decoded and compared (``mpdoctor.fleet.verdict.judge_gathered``): wall time, peak
  Python memory (tracemalloc), size of the JSON report;
* ``mpdoctor fleet compare`` on the 1,024 saved snapshot files, as a subprocess (it
  also judges every snapshot with the single-process checks), against the baseline of
  the same command on 2 files: wall time, peak RSS of the child, output size;
* the store traffic of one rank: the bytes of its report, heartbeat and verdict; and,
  when torch is installed, rank 0 gathering the 1,024 reports through a real
  ``torch.distributed.TCPStore`` on this machine.

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
from mpdoctor.fleet.launcher import Launch  # noqa: E402
from mpdoctor.fleet.model import fleet_data  # noqa: E402
from mpdoctor.fleet.protocol import Channel, Gathered  # noqa: E402
from mpdoctor.fleet.verdict import judge_gathered  # noqa: E402
from mpdoctor.doctor.judge import judge  # noqa: E402
from mpdoctor.schema.serde import to_data  # noqa: E402
from mpdoctor.snapshot import (CudaDevice, DeviceKernels, Distribution, KernelInfo, KernelResult, NvmlGpu,  # noqa: E402
                               NvmlInfo, load_snapshot)

RANKS, PER_NODE = 1024, 8
H100 = "NVIDIA H100 80GB HBM3"
KERNELS = [("matmul", "bfloat16"), ("matmul", "float16"), ("matmul", "float32"), ("conv2d", "bfloat16"),
           ("layer_norm", "bfloat16"), ("softmax", "bfloat16"), ("sdpa", "bfloat16")]


def node_snapshot(base, node: int, local: int):
    """Rank (node, local) of the synthetic fleet; odd ones out at fixed places."""
    snap = copy.deepcopy(base)
    gpus = [NvmlGpu(index=i, name=H100, uuid=f"GPU-{node:04d}{i:04d}-0000-0000-0000-000000000000",
                    pci_bus_id=f"0000:{0x18 + i:02x}:00.0", memory_total=80 << 30, compute_capability="9.0")
            for i in range(PER_NODE)]
    driver = "535.113.01" if node == 90 else "550.54.14"
    snap.machine.nvml = NvmlInfo(status="ok", driver_version=driver, cuda_driver_version="12.4", gpus=gpus)
    snap.torch = replace(snap.torch, version="2.13.0+cu130", cuda="13.0", cudnn=91002, cuda_available=True,
                         device_count=PER_NODE,
                         devices=[CudaDevice(ordinal=i, name=H100, compute_capability="9.0") for i in range(PER_NODE)])
    nccl = "2.20.5" if node == 37 else "2.19.3"
    snap.environment.distributions.append(Distribution(name="nvidia-nccl-cu12", version=nccl))
    if node * PER_NODE + local == 555:
        snap.environment.env["NVIDIA_TF32_OVERRIDE"] = "0"
    devices = []
    if local == 0:  # the node's kernels, as its local rank 0 runs them
        for i in range(PER_NODE):
            factor = 2.0 if (node, i) == (64, 3) else 1.0 + 0.01 * ((node * 7 + i) % 5)
            devices.append(DeviceKernels(device=f"cuda:{i}", name=H100, compute_capability="9.0", bf16_native=True,
                                         status="ok", results=[KernelResult(op=op, dtype=dtype, status="ok",
                                                                            seconds=0.0004 * (n + 1) * factor)
                                                               for n, (op, dtype) in enumerate(KERNELS)]))
    snap.kernels = KernelInfo(status="ok" if devices else "skipped", mode="quick" if devices else "",
                              devices=devices)
    return snap


def build(directory: Path) -> tuple[list[str], list[str]]:
    """Write the 1,024 snapshot files; return their paths and each rank's report as the store carries it (JSON)."""
    base = load_snapshot(str(ROOT / "tests" / "fixtures" / "cpu-kernels.json"))
    paths, wire = [], []
    for rank in range(RANKS):
        node, local = divmod(rank, PER_NODE)
        snap = node_snapshot(base, node, local)
        path = directory / f"rank{rank:04d}.json"
        path.write_text(json.dumps(to_data(snap)))
        paths.append(str(path))
        report = rank_report(rank, f"node{node:03d}", local, snap, judge(snap))
        wire.append(json.dumps(to_data(report), separators=(",", ":")))
    return paths, wire


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
    return {"seconds": seconds, "peak_python_bytes": peak, "report_bytes": len(text.encode()),
            "groups": len(report.groups), "findings": [f.code for f in report.findings]}


# Runs the CLI as `python -m mpdoctor` does, and writes the process's own peak RSS (KiB on Linux) at exit.
CLI_WITH_RSS = ("import atexit, resource, runpy, sys\n"
                "atexit.register(lambda: sys.stderr.write('\\nMAXRSS %d\\n' % "
                "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
                "sys.argv = ['mpdoctor'] + sys.argv[1:]\n"
                "runpy.run_module('mpdoctor', run_name='__main__')\n")


def cli_compare(paths: list[str], cwd: str) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI_WITH_RSS, "fleet", "compare", *paths, "-f", "json",
                           "--fail-on", "never"], cwd=cwd, capture_output=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode()[-2000:])
        raise SystemExit(1)
    rss = [line.split()[1] for line in proc.stderr.decode().splitlines() if line.startswith("MAXRSS ")]
    return {"seconds": seconds, "max_rss_kib": int(rss[-1]) if rss else None, "output_bytes": len(proc.stdout)}


def store_traffic(wire: list[str]) -> dict:
    sizes = sorted(len(text.encode()) for text in wire)
    beat = json.dumps({"host": "node000", "local_rank": 0, "step": "checking", "step_seconds": 12.3, "beat": 42,
                       "state": "running", "detail": ""}, separators=(",", ":"))
    verdict = json.dumps({"worst": "error", "summary": "x" * 160}, separators=(",", ":"))
    out = {"report_bytes_median": statistics.median(sizes), "report_bytes_max": sizes[-1],
           "heartbeat_bytes": len(beat), "verdict_bytes": len(verdict), "through_rank0_bytes": sum(sizes)}
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
    start = time.perf_counter()
    for rank, text in enumerate(wire):
        channel.post_report(rank, json.loads(text))
    posted = time.perf_counter() - start
    start = time.perf_counter()
    got = channel.gather(RANKS, time.monotonic() + 120)
    out.update({"tcpstore_post_all_seconds": posted, "tcpstore_gather_seconds": time.perf_counter() - start,
                "tcpstore_gathered": len(got.reports)})
    del client, server
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-fleet-") as tmp:
        paths, wire = build(Path(tmp))
        results = {"ranks": RANKS, "rank0_compare": rank_zero_compare(wire),
                   "cli_compare_2": cli_compare(paths[:2], tmp), "cli_compare_1024": cli_compare(paths, tmp),
                   "snapshot_file_bytes_median": statistics.median(os.path.getsize(p) for p in paths),
                   "store": store_traffic(wire)}
    results["cli_ratio_1024_to_2"] = results["cli_compare_1024"]["seconds"] / results["cli_compare_2"]["seconds"]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    r0, cli, base, store = (results["rank0_compare"], results["cli_compare_1024"], results["cli_compare_2"],
                            results["store"])
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {RANKS} synthetic ranks "
          f"({RANKS // PER_NODE} nodes x {PER_NODE})")
    print(f"rank 0 compare (decode + group + findings + JSON): {r0['seconds']:.3f} s, peak Python memory "
          f"{r0['peak_python_bytes'] / 2**20:.1f} MiB, report {r0['report_bytes'] / 1024:.1f} KiB, "
          f"{r0['groups']} groups, findings {' '.join(r0['findings'])}")
    print(f"fleet compare CLI, 1024 snapshot files: {cli['seconds']:.2f} s (2 files: {base['seconds']:.2f} s; "
          f"ratio {results['cli_ratio_1024_to_2']:.1f}), peak RSS {(cli['max_rss_kib'] or 0) / 1024:.0f} MiB, "
          f"output {cli['output_bytes'] / 1024:.1f} KiB; snapshot file median "
          f"{results['snapshot_file_bytes_median'] / 1024:.1f} KiB")
    print(f"store traffic per rank: report {store['report_bytes_median'] / 1024:.1f} KiB median "
          f"({store['report_bytes_max'] / 1024:.1f} KiB max), heartbeat {store['heartbeat_bytes']} B/s, verdict "
          f"{store['verdict_bytes']} B; through rank 0's store: {store['through_rank0_bytes'] / 2**20:.1f} MiB")
    if "tcpstore_gather_seconds" in store:
        print(f"TCPStore on this machine: posting 1024 reports {store['tcpstore_post_all_seconds']:.2f} s, "
              f"rank 0 gathering them {store['tcpstore_gather_seconds']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
