#!/usr/bin/env python3
"""Time ``mpdoctor check`` against two torch baselines, in one run, alternating.

Stdlib only. Every command runs as a subprocess of the interpreter given with
``--python`` (default: the one running this script) and is timed wall-clock with
``time.perf_counter``. One untimed warm-up round comes first (page cache,
``__pycache__``), then ``--rounds`` timed rounds; each round runs every command once,
the starting command rotating from round to round so that no command always
follows the same one. Commands run in an empty temporary directory, so the
*installed* mpdoctor is what gets timed, not a checkout that happens to be the
current directory.

This script reports numbers; it asserts none. It exits 0, or 1 when a command
fails (its stderr tail is printed), or 2 on bad options.

    python bench/bench_check.py                 # 5 rounds, table
    python bench/bench_check.py --rounds 10 --json
    python bench/bench_check.py --python /path/to/env/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

STDERR_TAIL = 2000
# Commands run as an installed mpdoctor would: bytecode is written by the warm-up round and reused.
# With PYTHONDONTWRITEBYTECODE set (some shells and CI images set it), an editable install recompiles
# every changed module on every run, which times the compiler, not mpdoctor.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def commands(python: str) -> list[tuple[str, list[str]]]:
    return [
        ("import torch", [python, "-c", "import torch"]),
        ("collect_env", [python, "-m", "torch.utils.collect_env"]),
        ("mpdoctor check", [python, "-m", "mpdoctor", "check", "--format", "json", "--fail-on", "never"]),
        (
            "check --no-kernels",
            [python, "-m", "mpdoctor", "check", "--format", "json", "--fail-on", "never", "--no-kernels"],
        ),
        ("mpdoctor --help", [python, "-m", "mpdoctor", "--help"]),
    ]


class CommandFailed(Exception):
    def __init__(self, name: str, argv: list[str], returncode: int, stderr: str):
        super().__init__(name)
        self.name, self.argv, self.returncode, self.stderr = name, argv, returncode, stderr


def run(name: str, argv: list[str], cwd: str) -> tuple[float, str]:
    """Run once, stdout discarded; return (wall seconds, stderr). Raise on failure."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise CommandFailed(name, argv, -1, f"could not start: {exc}") from None
    seconds = time.perf_counter() - start
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise CommandFailed(name, argv, proc.returncode, stderr)
    return seconds, stderr


def help_imports_torch(python: str, cwd: str) -> bool:
    """Does ``mpdoctor --help`` import torch? Read ``-X importtime`` (written to stderr).

    Lines look like ``import time:  self | cumulative | <indent>name``; torch counts
    when the package name is exactly ``torch``, at any nesting depth (top level is
    the line ending in ``| torch``; imported through another module it is indented).
    """
    _, stderr = run("importtime mpdoctor --help", [python, "-X", "importtime", "-m", "mpdoctor", "--help"], cwd)
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "torch":
            return True
    return False


def kernel_devices(python: str, cwd: str) -> list[dict]:
    """Each device's kernel run from one more ``mpdoctor check`` (untimed): its own wall time."""
    argv = [python, "-m", "mpdoctor", "check", "--format", "json", "--fail-on", "never", "--select", "PREC"]
    proc = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, env=ENV, capture_output=True, text=True)
    try:
        kernels = json.loads(proc.stdout)["snapshot"]["kernels"]
    except (ValueError, KeyError, TypeError):
        return []
    return [
        {
            "device": d["device"],
            "name": d["name"],
            "status": d["status"],
            "seconds": d["seconds"],
            "init_seconds": d.get("init_seconds"),
        }
        for d in kernels.get("devices", [])
    ]


def probe_versions(python: str, cwd: str) -> dict:
    code = (
        "import json, platform, importlib.metadata as m\n"
        "def v(d):\n"
        "    try: return m.version(d)\n"
        "    except Exception: return None\n"
        "print(json.dumps({'python': platform.python_version(), 'torch': v('torch'), 'mpdoctor': v('mpdoctor')}))"
    )
    try:
        proc = subprocess.run(
            [python, "-c", code], cwd=cwd, stdin=subprocess.DEVNULL, env=ENV, capture_output=True, text=True
        )
        return json.loads(proc.stdout)
    except (OSError, ValueError):
        return {}  # the warm-up round reports why the interpreter does not run


def bench(python: str, rounds: int) -> dict:
    cmds = commands(python)
    times: dict[str, list[float]] = {name: [] for name, _ in cmds}
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-") as cwd:
        versions = probe_versions(python, cwd)
        for name, argv in cmds:  # warm-up, untimed
            run(name, argv, cwd)
        for r in range(rounds):
            order = cmds[r % len(cmds) :] + cmds[: r % len(cmds)]
            for name, argv in order:
                times[name].append(run(name, argv, cwd)[0])
        imports_torch = help_imports_torch(python, cwd)
        devices = kernel_devices(python, cwd)

    med = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        "python": python,
        "versions": versions,
        "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "rounds": rounds,
        "commands": {
            name: {"argv": argv[1:], "seconds": times[name], "median": med[name], "min": min(times[name])}
            for name, argv in cmds
        },
        "ratios": {
            "check/import-torch": med["mpdoctor check"] / med["import torch"],
            "check/collect_env": med["mpdoctor check"] / med["collect_env"],
            "no-kernels/collect_env": med["check --no-kernels"] / med["collect_env"],
            "help/import-torch": med["mpdoctor --help"] / med["import torch"],
            "kernels/import-torch": (med["mpdoctor check"] - med["check --no-kernels"]) / med["import torch"],
        },
        "kernel_cost_seconds": med["mpdoctor check"] - med["check --no-kernels"],
        "kernel_devices": devices,
        "help_imports_torch": imports_torch,
    }


def print_table(result: dict) -> None:
    v = result["versions"]
    print(f"python {v.get('python', '?')} ({result['python']}), torch {v.get('torch')}, mpdoctor {v.get('mpdoctor')}")
    print(f"host: {result['host']['platform']}, {result['host']['cpus']} CPUs")
    print(f"rounds: {result['rounds']} (alternating, after 1 untimed warm-up round)")
    print()
    width = max(len(name) for name in result["commands"])
    print(f"{'command':<{width}}  {'median s':>9}  {'min s':>9}")
    for name, row in result["commands"].items():
        print(f"{name:<{width}}  {row['median']:>9.3f}  {row['min']:>9.3f}")
    print()
    print("ratios (of medians):")
    for name, ratio in result["ratios"].items():
        print(f"  {name:<20} {ratio:.2f}")
    print(f"  kernel cost          {result['kernel_cost_seconds']:.3f} s (check minus check --no-kernels)")
    print()
    for device in result["kernel_devices"]:
        init = f", CUDA start {device['init_seconds']:.2f} s" if device.get("init_seconds") else ""
        print(
            f"kernels on {device['device']} ({device['name']}): {device['status']}, "
            f"worker wall {device['seconds']:.3f} s{init}"
        )
    print()
    print(f"help imports torch: {'yes' if result['help_imports_torch'] else 'no'}")


def bench_project(python: str, project: str, rounds: int) -> dict:
    """``mpdoctor check`` run from ``project`` against the same command run from an empty directory.

    Its own alternating run (the order flips every round, after one untimed round of each that also fills
    the page cache with the tree), so the ratio compares runs taken under the same load. What it prices is
    the project scan, the only part of a check that reads the working directory.
    """
    argv = dict(commands(python))["mpdoctor check"]
    files = sum(name.endswith(".py") for _, _, names in os.walk(project) for name in names)
    times: dict[str, list[float]] = {"check in empty dir": [], "check in project": []}
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-") as empty:
        where = {"check in empty dir": empty, "check in project": project}
        for name, cwd in where.items():
            run(name, argv, cwd)
        for r in range(rounds):
            for name in list(where) if r % 2 == 0 else list(where)[::-1]:
                times[name].append(run(name, argv, where[name])[0])
    med = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        "project": project,
        "py_files": files,
        "rounds": rounds,
        "commands": {name: {"seconds": ts, "median": med[name], "min": min(ts)} for name, ts in times.items()},
        "ratio": med["check in project"] / med["check in empty dir"],
    }


def print_project(row: dict) -> None:
    print()
    print(f"project: {row['project']} ({row['py_files']} .py files), {row['rounds']} rounds, alternating")
    for name, times in row["commands"].items():
        print(f"  {name:<20} median {times['median']:.3f} s  min {times['min']:.3f} s")
    print(f"  check-in-project/check-in-empty {row['ratio']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter to run the commands with (default: this one)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="also time `mpdoctor check` run from DIR against an empty "
        "directory (a project to scan, e.g. an unpacked transformers)",
    )
    args = parser.parse_args(argv)
    if args.project and not os.path.isdir(args.project):
        parser.error(f"--project: {args.project} is not a directory")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    try:
        result = bench(args.python, args.rounds)
        if args.project:
            result["project"] = bench_project(args.python, os.path.abspath(args.project), args.rounds)
    except CommandFailed as exc:
        tail = exc.stderr.strip()
        tail = tail if len(tail) <= STDERR_TAIL else "..." + tail[-STDERR_TAIL:]
        print(f"bench_check: {exc.name!r} failed (exit status {exc.returncode}): {' '.join(exc.argv)}", file=sys.stderr)
        print(tail or "(no stderr)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
        if "project" in result:
            print_project(result["project"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
