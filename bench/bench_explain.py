#!/usr/bin/env python3
"""Time ``mpdoctor explain`` against baselines measured in the same run, alternating.

Stdlib only; asserts nothing. Four questions:

* a one-line message, end to end: ``mpdoctor explain "..."`` against ``python -c
  pass`` (interpreter start) and ``mpdoctor --help`` (CLI start);
* a big log (``--size`` MB of training-log noise with a traceback at the end):
  ``mpdoctor explain --file`` against reading the same file once in Python
  (read, decode, lower-case, count lines), and the same at a quarter of the size,
  so the two ratios show whether the cost grows linearly;
* an adversarial log of the same size: long lines built from every signature's
  needles and cut-short copies of them, which a backtracking pattern would choke on;
* the big log piped in (``mpdoctor explain -``) against Python reading the same
  stdin once.

Issue 23's goal: ``explain --file`` of the 100 MB log within 3 x reading it once,
in a run of at least 9 rounds; the MB/s it prints are whole-process figures (the
log's size over the command's median time, interpreter start included).

Each command is a subprocess timed wall-clock; one untimed warm-up round, then
``--rounds`` rounds with the starting command rotating. It exits 0, 1 when a
command fails, 2 on bad options.

    python bench/bench_explain.py                # 100 MB, 9 rounds
    python bench/bench_explain.py --size 20 --rounds 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ONE_LINE = "RuntimeError: expected scalar type Float but found Half"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py", line 416, in forward\n'
    "    return fused_rms_norm_affine(input, self.weight, self.normalized_shape, self.eps)\n"
    f"{ONE_LINE}\n"
)
NOISE = (
    "[2026-11-21 10:00:00,000] INFO step {i} loss 0.2513 lr 1.0e-04 grad_norm 0.98 dtype float16 "
    "scale 65536.0 tokens/s 8123 half precision enabled\n"
)
READ_ONCE = "import sys; d = open(sys.argv[1], 'rb').read().decode('utf-8', 'replace'); print(d.lower().count('\\n'))"
READ_STDIN = "import sys; d = sys.stdin.buffer.read().decode('utf-8', 'replace'); print(d.lower().count('\\n'))"


def write_noise_log(path: str, megabytes: float) -> None:
    target = int(megabytes * (1 << 20))
    with open(path, "w", encoding="utf-8") as out:
        written, i = 0, 0
        block = "".join(NOISE.format(i=n) for n in range(1000))
        while written < target:
            out.write(block)
            written += len(block)
            i += 1000
        out.write(TRACEBACK)


def write_adversarial_log(path: str, megabytes: float, python: str) -> None:
    """Lines of needles and near-needles, each far longer than the matcher gives a regex."""
    code = (
        "from mpdoctor.explain.known import all_signatures as a; "
        "print('\\n'.join(sorted({n for s in a() for n in s.needles})))"
    )
    needles = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    piece = "".join(f"{n} {n[:-1]} " for n in needles if n)
    line = piece * max(1, 65536 // len(piece)) + "\n"
    target = int(megabytes * (1 << 20))
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(max(1, target // len(line))):
            out.write(line)


def timed(argv: list[str], cwd: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds ``argv`` takes; an argv ending in ``<``, ``path`` reads that file on
    its stdin, and one starting with ``PYTHONPATH=dir`` runs with that PYTHONPATH (the --before checkout)."""
    stdin, env = None, None
    if argv[0].startswith("PYTHONPATH="):
        env = {**os.environ, "PYTHONPATH": argv[0].split("=", 1)[1]}
        argv = argv[1:]
    if len(argv) > 2 and argv[-2] == "<":
        argv, stdin = argv[:-2], open(argv[-1], "rb")
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=cwd, stdin=stdin or subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
    finally:
        if stdin:
            stdin.close()
    seconds = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    if proc.returncode not in (0, 1):  # explain exits 1 when it recognises nothing: not a failure
        sys.stderr.write(f"{' '.join(argv[:4])} ... failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}\n")
        sys.exit(1)
    return seconds, cpu


def measure(
    commands: list[tuple[str, list[str]]], rounds: int, cwd: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each command, per round."""
    samples: dict[str, list[float]] = {name: [] for name, _ in commands}
    cpu: dict[str, list[float]] = {name: [] for name, _ in commands}
    for name, argv in commands:  # warm-up
        timed(argv, cwd)
    for r in range(rounds):
        order = commands[r % len(commands) :] + commands[: r % len(commands)]
        for name, argv in order:
            wall, used = timed(argv, cwd)
            samples[name].append(wall)
            cpu[name].append(used)
    return samples, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=float, default=100.0, help="log size in MB (default 100)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="also time the big log with the mpdoctor of this checkout (first on PYTHONPATH), e.g. "
        "`git archive HEAD mpdoctor checks | tar -x -C DIR`",
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.size <= 0:
        parser.error("--rounds and --size must be positive")
    if args.before and not os.path.isfile(os.path.join(args.before, "mpdoctor", "__main__.py")):
        parser.error(f"--before {args.before}: no mpdoctor/__main__.py there")
    py = args.python
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-") as tmp:
        big, small, hostile = (os.path.join(tmp, name) for name in ("big.log", "small.log", "adversarial.log"))
        write_noise_log(big, args.size)
        write_noise_log(small, args.size / 4)
        write_adversarial_log(hostile, args.size, py)
        commands = [
            ("python -c pass", [py, "-c", "pass"]),
            ("mpdoctor --help", [py, "-m", "mpdoctor", "--help"]),
            ("explain one line", [py, "-m", "mpdoctor", "explain", ONE_LINE]),
            ("read log once", [py, "-c", READ_ONCE, big]),
            ("explain log", [py, "-m", "mpdoctor", "explain", "--file", big]),
            ("read 1/4 log once", [py, "-c", READ_ONCE, small]),
            ("explain 1/4 log", [py, "-m", "mpdoctor", "explain", "--file", small]),
            ("read adversarial", [py, "-c", READ_ONCE, hostile]),
            ("explain adversarial", [py, "-m", "mpdoctor", "explain", "--file", hostile]),
            ("read stdin once", [py, "-c", READ_STDIN, "<", big]),
            ("explain - < log", [py, "-m", "mpdoctor", "explain", "-", "<", big]),
        ]
        if args.before:
            before = f"PYTHONPATH={os.path.abspath(args.before)}"
            commands += [("explain log, before", [before, py, "-m", "mpdoctor", "explain", "--file", big])]
        size = os.path.getsize(big)
        samples, cpu = measure(commands, args.rounds, tmp)
    median = {name: statistics.median(values) for name, values in samples.items()}
    cpu_median = {name: statistics.median(values) for name, values in cpu.items()}
    ratios = {
        "one line / python start": median["explain one line"] / median["python -c pass"],
        "one line / mpdoctor --help": median["explain one line"] / median["mpdoctor --help"],
        "log / read once": median["explain log"] / median["read log once"],
        "1/4 log / read once": median["explain 1/4 log"] / median["read 1/4 log once"],
        "log / 1/4 log (4.0 = linear)": median["explain log"] / median["explain 1/4 log"],
        "adversarial / read once": median["explain adversarial"] / median["read adversarial"],
        "stdin log / read stdin once": median["explain - < log"] / median["read stdin once"],
    }
    if args.before:
        ratios["log before / read once"] = median["explain log, before"] / median["read log once"]
        ratios["log before / log now"] = median["explain log, before"] / median["explain log"]
    # CPU seconds a command's processes used: on a machine others keep busy, waiting for a core inflates wall
    # time and not these, so their ratios say more there (the goal is stated in wall time, on a quiet machine)
    cpu_ratios = {
        "log / read once": cpu_median["explain log"] / cpu_median["read log once"],
        "stdin log / read stdin once": cpu_median["explain - < log"] / cpu_median["read stdin once"],
        "adversarial / read once": cpu_median["explain adversarial"] / cpu_median["read adversarial"],
    }
    throughput = {
        name: size / (1 << 20) / median[name]
        for name in ("read log once", "explain log", "read stdin once", "explain - < log")
    }
    if args.json:
        json.dump(
            {
                "python": py,
                "size_mb": args.size,
                "rounds": args.rounds,
                "samples": samples,
                "median": median,
                "ratios": ratios,
                "mb_per_s": throughput,
                "cpu_samples": cpu,
                "cpu_median": cpu_median,
                "cpu_ratios": cpu_ratios,
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return 0
    print(
        f"python {platform.python_version()} ({py}); {os.cpu_count()} CPUs; log {args.size:g} MB; "
        f"{args.rounds} rounds after a warm-up"
    )
    print(f"{'command':<22}{'median s':>10}{'min s':>10}{'cpu s':>10}")
    for name, values in samples.items():
        print(f"{name:<22}{median[name]:>10.3f}{min(values):>10.3f}{cpu_median[name]:>10.3f}")
    print("\nratios (of medians):")
    for name, value in ratios.items():
        print(f"  {name:<30}{value:>6.2f}")
    print("\nCPU ratios (of median user + system seconds):")
    for name, value in cpu_ratios.items():
        print(f"  {name:<30}{value:>6.2f}")
    print(f"\nMB/s, whole process ({size / (1 << 20):.1f} MB over the median):")
    for name, value in throughput.items():
        print(f"  {name:<30}{value:>6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
