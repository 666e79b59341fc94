#!/usr/bin/env python3
"""Do the CPU microkernels' speed verdicts hold on a busy machine? Quiet runs against loaded runs, one table.

Runs the real kernel runner (``mpdoctor.probes.kernels.probe_kernels``, the quick
CPU kernels of the interpreter running this script) ``--runs`` times with no
competing process, then ``--runs`` times beside 1 and beside 2 busy-loop processes
(``python -c "while 1: pass"``). Each run's speed verdict per op and dtype is
``slow``, ``fine`` or ``inconclusive`` (``mpdoctor.analysis.kernel_view.verdict``).
The reference for an op and dtype is the verdict most quiet runs reached
conclusively; every run is then counted as agreeing with it, inconclusive, or a
flip (the opposite verdict). Goal: no flips.

It reports; it asserts nothing. Exit 0, or 2 on bad options.

    python bench/bench_kernels_load.py               # 5 runs per level, a Markdown table
    python bench/bench_kernels_load.py --runs 10 --busy 0,1,2
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import subprocess
import sys
import time


def busy_loops(n: int) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]
    time.sleep(0.3)
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def naive(snap, device, r) -> str:
    """The verdict a single best-against-best ratio gives, spread and load ignored (what mpdoctor did before)."""
    from mpdoctor.analysis.kernel_view import speedup, threshold

    ratio = speedup(device, r)
    return "" if ratio is None or r.dtype == "float32" else ("slow" if ratio < threshold(snap, device, r) else "fine")


def one_run(timeout: float) -> tuple[dict[str, str], float, float, int, int]:
    """(verdict per kernel, wall s, kernel-worker s, rounds, disturbed rounds) of one quick CPU run.

    The naive verdict of each kernel is in the same dict under "naive:" + its name.
    """
    from mpdoctor.analysis.kernel_view import kernel_name, verdict
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.kernels import probe_kernels
    from mpdoctor.snapshot import Snapshot

    began = time.perf_counter()
    info = probe_kernels(sys.executable, Budget.from_timeout(timeout), "quick")
    wall = time.perf_counter() - began
    snap = Snapshot(kernels=info)
    out = {}
    for device in info.devices[:1]:
        for r in device.results:
            word = verdict(snap, device, r)[0]
            if word:
                out[kernel_name(r)] = word
                out["naive:" + kernel_name(r)] = naive(snap, device, r)
        return out, wall, device.seconds, device.load.rounds, device.load.rounds_disturbed
    return out, wall, 0.0, 0, 0


def reference(quiet: list[dict[str, str]]) -> dict[str, str]:
    """Per kernel, the conclusive verdict most quiet runs reached (none when they never were conclusive)."""
    out = {}
    keys = {k for run in quiet for k in run}
    for key in keys:
        words = collections.Counter(run[key] for run in quiet if run.get(key) in ("slow", "fine"))
        if words:
            out[key] = words.most_common(1)[0][0]
    return out


def classify(ref: str, word: str) -> str:
    if word == "inconclusive":
        return "inconclusive"
    if not ref:
        return "no reference"
    return "agree" if word == ref else "FLIP"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per load level (default 5)")
    parser.add_argument("--busy", default="0,1,2", help="busy-loop counts, comma separated; 0 is the quiet reference")
    parser.add_argument("--timeout", type=float, default=60.0, help="mpdoctor's --timeout for each run")
    args = parser.parse_args(argv)
    try:
        levels = [int(x) for x in args.busy.split(",")]
    except ValueError:
        parser.error("--busy takes integers, e.g. 0,1,2")
    if 0 not in levels or args.runs < 1:
        parser.error("--busy must include 0 (the quiet reference) and --runs must be at least 1")

    import torch  # for the header only; the runs import it in their own processes

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, "
        f"{torch.get_num_threads()} torch threads; {args.runs} runs per level; "
        f"load average before: {os.getloadavg()[0]:.2f}"
    )
    runs: dict[int, list[dict[str, str]]] = {}
    stats: dict[int, list[tuple[float, float, int, int]]] = {}
    for level in sorted(levels):
        procs = busy_loops(level)
        try:
            results = [one_run(args.timeout) for _ in range(args.runs)]
        finally:
            stop(procs)
        runs[level] = [r[0] for r in results]
        stats[level] = [r[1:] for r in results]
        print(f"  busy={level}: done (load average now {os.getloadavg()[0]:.2f})", file=sys.stderr)

    ref = reference(runs[0])
    keys = sorted({k for level in runs.values() for run in level for k in run if not k.startswith("naive:")})
    header = ["kernel", "quiet verdict"] + [f"busy={n}: agree / inconcl. / flip" for n in sorted(levels)]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    totals = {n: collections.Counter() for n in levels}
    for key in keys:
        cells = [key, ref.get(key, "(never conclusive)")]
        for level in sorted(levels):
            count = collections.Counter(classify(ref.get(key, ""), run[key]) for run in runs[level] if key in run)
            totals[level].update(count)
            cells.append(
                f"{count['agree']} / {count['inconclusive']} / {count['FLIP']}"
                + (f" ({count['no reference']} n/r)" if count["no reference"] else "")
            )
        print("| " + " | ".join(cells) + " |")
    print()
    naive_flips = {
        n: sum(
            1
            for key in keys
            for run in runs[n]
            if classify(ref.get("naive:" + key, ""), run.get("naive:" + key, "")) == "FLIP"
        )
        for n in levels
    }
    for level in sorted(levels):
        t = totals[level]
        walls = [s[0] for s in stats[level]]
        worker = [s[1] for s in stats[level]]
        rounds = sum(s[2] for s in stats[level])
        disturbed = sum(s[3] for s in stats[level])
        print(
            f"busy={level}: {t['agree']} agree, {t['inconclusive']} inconclusive, {t['FLIP']} flips "
            f"({t['no reference']} without a quiet reference); run wall median {statistics.median(walls):.2f} s, "
            f"CPU worker median {statistics.median(worker):.2f} s; {disturbed} of {rounds} timing rounds "
            f"disturbed; naive best-against-best verdicts: {naive_flips[level]} flips against their own quiet "
            "majority"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
