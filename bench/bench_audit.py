#!/usr/bin/env python3
"""Time `mpdoctor audit` on a 2 GB, 1,000-tensor safetensors file against `safetensors` listing its keys.

The file is made sparse (the header written, the rest of the 2 GB by ``truncate``),
so it costs a few hundred KB of disk. Its tensors are a Llama-like model's in
float16, with float32 norms and one float32 ``fc2``, so the audit has a tree to
analyse, not just a header to parse.

Two comparisons, each alternating between the two sides round by round so both
see the same machine state, after one untimed warm-up:

* ``process``: a fresh interpreter each, wall-clock: ``python -m mpdoctor audit
  FILE --format json`` (output discarded) against ``python -c "from safetensors
  import safe_open; keys = list(safe_open(FILE, 'np').keys())"``, and ``python -m
  mpdoctor --help`` for the CLI's own start-up;
* ``in-process``: the audit itself (files found, header read, tree analysed,
  findings made) against ``safe_open(FILE, "np").keys()``, imports done before,
  and mpdoctor's header read alone (``read_header``), to show the analysis's share.

It prints the medians and the ratios against safetensors, and the bytes the
in-process audit read (``rchar`` of /proc/self/io, Linux), beside the header's
size: "header-only" is what that shows. It asserts no timing; it exits 1 when the
audit and safetensors disagree on the keys or a command fails, 2 when safetensors
(or numpy, which its "np" framework needs) is missing.

    pip install safetensors numpy         # only for this bench; mpdoctor needs neither
    python bench/bench_audit.py --rounds 9
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

TENSORS = 1000
TOTAL = 2 * 1000**3  # 2 GB of tensor data


def make_file(path: str) -> int:
    """The sparse 2 GB file; returns its header's size in bytes."""
    header, offset = {}, 0
    names = []
    for layer in range(TENSORS // 10):
        for part in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.fc1",
                     "mlp.fc2", "mlp.gate", "input_layernorm", "post_attention_layernorm", "extra"):
            names.append(f"model.layers.{layer}.{part}.weight")
    per = TOTAL // TENSORS // 4 * 4  # bytes per tensor, a whole number of fp32 elements
    for i, name in enumerate(names):
        fp32 = name.endswith("layernorm.weight") or name == "model.layers.42.mlp.fc2.weight"
        dtype, size = ("F32", 4) if fp32 else ("F16", 2)
        header[name] = {"dtype": dtype, "shape": [per // size], "data_offsets": [offset, offset + per]}
        offset += per
    raw = json.dumps(header).encode()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + offset)
    return 8 + len(raw)


def rchar() -> int | None:
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            return int(next(line for line in handle if line.startswith("rchar:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return None


def audit_keys(path: str) -> list[str]:
    """The audit as `mpdoctor audit` makes it; what it found, grouped as the findings show it."""
    from mpdoctor.checkpoint_audit.report import audit_files
    from mpdoctor.checkpoint_audit.sources import read, weight_files
    from mpdoctor.checkpoint_audit.tree import describe

    report = audit_files(path, [read(f, sys.executable, 60) for f in weight_files(path)])
    if report.files[0].error:
        raise SystemExit(f"the audit could not read the file: {report.files[0].error}")
    return describe(report.odd_modules)


def safetensors_keys(path: str) -> list[str]:
    from safetensors import safe_open

    with safe_open(path, "np") as handle:
        return list(handle.keys())


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def alternate(sides: dict, rounds: int) -> dict[str, list[float]]:
    names = list(sides)
    for name in names:  # untimed warm-up
        sides[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(timed(sides[name]))
    return samples


def run_process(argv: list[str]) -> None:
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    if result.returncode != 0:
        sys.stderr.write(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr[-2000:]}\n")
        raise SystemExit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per comparison (default 7)")
    parser.add_argument("--json", action="store_true", help="print the samples and medians as JSON")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401  (safetensors' "np" framework imports it)
        import safetensors
    except ImportError as exc:
        sys.stderr.write(f"bench_audit needs {exc.name}: pip install safetensors numpy\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-audit-") as tmp:
        path = os.path.join(tmp, "model.safetensors")
        header = make_file(path)
        size, on_disk = os.path.getsize(path), os.stat(path).st_blocks * 512
        listed = safetensors_keys(path)
        from mpdoctor.checkpoint_audit.safetensors import read_header

        if sorted(e.name for e in read_header(path)[0]) != sorted(listed) or len(listed) != TENSORS:
            sys.stderr.write("the audit and safetensors disagree on the file's keys\n")
            return 1
        audit_keys(path)  # once first, so the modules it imports are not counted as read
        before = rchar()
        odd = audit_keys(path)
        after = rchar()
        read_bytes = None if before is None or after is None else after - before
        baseline = (f"from safetensors import safe_open; f = safe_open({path!r}, 'np'); "
                    "keys = list(f.keys()); assert len(keys) == 1000")
        process = alternate({
            "safetensors keys": lambda: run_process([sys.executable, "-c", baseline]),
            "mpdoctor audit": lambda: run_process([sys.executable, "-m", "mpdoctor", "audit", path, "--format",
                                                   "json", "--fail-on", "never"]),
            "mpdoctor --help": lambda: run_process([sys.executable, "-m", "mpdoctor", "--help"]),
        }, args.rounds)
        inside = alternate({"safetensors keys": lambda: safetensors_keys(path),
                            "mpdoctor audit": lambda: audit_keys(path),
                            "header read only": lambda: read_header(path)}, args.rounds * 5)
    medians = {kind: {name: statistics.median(s) for name, s in samples.items()}
               for kind, samples in (("process", process), ("in-process", inside))}
    if args.json:
        json.dump({"file_bytes": size, "disk_bytes": on_disk, "header_bytes": header, "audit_read_bytes": read_bytes,
                   "odd_modules": odd, "samples": {"process": process, "in-process": inside},
                   "medians": medians}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from mpdoctor import __version__

    print(f"python {platform.python_version()} ({sys.executable}), safetensors {safetensors.__version__}, "
          f"mpdoctor {__version__}")
    print(f"host: {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"file: {size:,} bytes ({on_disk:,} on disk, sparse), {TENSORS} tensors, header {header:,} bytes")
    print(f"the audit read {read_bytes:,} bytes" if read_bytes is not None else "bytes read: /proc/self/io unreadable")
    print("odd modules found:", *odd, sep="\n  ")
    for kind, rounds in (("process", args.rounds), ("in-process", args.rounds * 5)):
        base = medians[kind]["safetensors keys"]
        print(f"\n{kind} ({rounds} rounds, alternating)   median s    x safetensors")
        for name, median in medians[kind].items():
            print(f"  {name:<18}  {median:10.4f}   {median / base:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
