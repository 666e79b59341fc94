#!/usr/bin/env python3
"""Time `mpdoctor audit` against what a user would run instead, alternating, in one run.

Three checkpoints are written to a temporary directory first:

* ``moe-100k.safetensors``: a sparse file (its header, then ``truncate``) of 100,000
  tensors shaped like a mixture-of-experts model's (64 layers of 520 experts, float16,
  float32 norms, one float32 expert projection), 16 MB of header and 1.7 GB of
  data that take no disk;
* ``model.safetensors``: the same kind of sparse file, 1,000 Llama-like tensors in 2 GB;
* ``pickles/``: 50 ``.pt`` files written by ``torch.save`` (three tensors each).

Then, as fresh processes, each round running every command once (the starting
command rotating from round to round) after one untimed warm-up round:

====================== =========================================================================================
name                   command
====================== =========================================================================================
safetensors 100k       ``safe_open(FILE, "np")``, every key and its dtype listed (baseline for the header goal)
audit 100k             ``mpdoctor audit moe-100k.safetensors --format json`` (output discarded)
safetensors 1k         ``safe_open(FILE, "np")``, every key listed (baseline of the earlier runs)
audit 1k               ``mpdoctor audit model.safetensors --format json``
import torch           ``python -c "import torch"`` (what any reading of a pickle costs at least)
audit 50 .pt           ``mpdoctor audit pickles/ --format json``
mpdoctor --help        the CLI's own start-up, for scale
====================== =========================================================================================

It prints each command's median and minimum and the ratios the goals are about:
audit 100k / safetensors 100k (goal: at most 1.5), audit 50 .pt in seconds (goal:
under 3) and against ``import torch``. ``--in-process`` adds the 1,000-tensor
comparison inside one process (imports done), as the earlier runs reported it,
and the bytes the audit read (``rchar`` of /proc/self/io) beside the header's
size: "header only", measured.

Before timing, it checks the audit reads what safetensors reads (the same keys and
dtypes, 100,000 of them) and the 50 pickles without an error; it exits 1 when not
(or when a command fails), 2 when ``safetensors`` or ``numpy`` (which its ``"np"``
framework needs) is missing. It asserts no timing.

    pip install safetensors numpy         # only for this bench; mpdoctor needs neither
    python bench/bench_audit.py --rounds 9
    python bench/bench_audit.py --json    # every sample, the medians, the ratios
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

SMALL_TENSORS = 1000
SMALL_TOTAL = 2 * 1000**3  # 2 GB of tensor data
MOE_TENSORS = 100_000
PICKLES = 50


def write_sparse(path: str, tensors: list[tuple[str, str, list[int]]], pad: bool = False) -> int:
    """A safetensors file of ``(name, dtype, shape)``, its data a hole; returns the header's size in bytes."""
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        size = 4 if dtype == "F32" else 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":") if pad else (", ", ": ")).encode()
    if pad:  # as the safetensors library writes it: compact, padded with spaces to 8 bytes
        raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + offset)
    return 8 + len(raw)


def small_model() -> list[tuple[str, str, list[int]]]:
    """1,000 Llama-like tensors of 2 MB each: float16, float32 norms and one float32 mlp.fc2."""
    per = SMALL_TOTAL // SMALL_TENSORS // 4  # fp32 elements per tensor
    tensors = []
    for layer in range(SMALL_TENSORS // 10):
        for part in (
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.fc1",
            "mlp.fc2",
            "mlp.gate",
            "input_layernorm",
            "post_attention_layernorm",
            "extra",
        ):
            name = f"model.layers.{layer}.{part}.weight"
            fp32 = name.endswith("layernorm.weight") or name == "model.layers.42.mlp.fc2.weight"
            tensors.append((name, "F32", [per]) if fp32 else (name, "F16", [per * 2]))
    return tensors


def moe_model() -> list[tuple[str, str, list[int]]]:
    """100,000 tensors: embeddings, then layers of attention, two float32 norms, a router and 520 experts."""
    tensors = [("model.embed_tokens.weight", "F16", [512, 128])]
    layer = 0
    while len(tensors) < MOE_TENSORS - 1:
        prefix = f"model.layers.{layer}."
        tensors += [
            (f"{prefix}self_attn.{p}.weight", "F16", [128, 128]) for p in ("q_proj", "k_proj", "v_proj", "o_proj")
        ]
        tensors += [(f"{prefix}{p}.weight", "F32", [128]) for p in ("input_layernorm", "post_attention_layernorm")]
        tensors.append((f"{prefix}mlp.gate.weight", "F16", [512, 128]))
        for expert in range(520):
            for part in ("gate_proj", "up_proj", "down_proj"):
                odd = (layer, expert, part) == (42, 7, "down_proj")  # the accident AUDIT004 names
                tensors.append((f"{prefix}mlp.experts.{expert}.{part}.weight", "F32" if odd else "F16", [64, 128]))
        layer += 1
    return tensors[: MOE_TENSORS - 1] + [("model.norm.weight", "F32", [128])]


def write_pickles(folder: str) -> None:
    import torch

    os.makedirs(folder)
    for i in range(PICKLES):
        torch.save(
            {
                f"layers.{i}.weight": torch.zeros(64, 64, dtype=torch.float16),
                f"layers.{i}.bias": torch.zeros(64),
                "norm.weight": torch.ones(64),
            },
            os.path.join(folder, f"part-{i:02d}.pt"),
        )


def rchar() -> int | None:
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            return int(next(line for line in handle if line.startswith("rchar:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return None


def audit_lines(path: str) -> list[str]:
    """The audit as `mpdoctor audit` makes it, in this process; the odd modules as the findings show them."""
    from mpdoctor.checkpoint_audit.report import audit_files
    from mpdoctor.checkpoint_audit.sources import read_all, weight_files
    from mpdoctor.probes.budget import Budget
    from mpdoctor.checkpoint_audit.tree import describe

    report = audit_files(path, read_all(weight_files(path), sys.executable, Budget.from_timeout(60)))
    if report.files[0].error:
        raise SystemExit(f"the audit could not read {path}: {report.files[0].error}")
    return describe(report.odd_modules)


def safetensors_pairs(path: str) -> list[tuple[str, str]]:
    from safetensors import safe_open

    with safe_open(path, "np") as handle:
        return [(key, handle.get_slice(key).get_dtype()) for key in handle.keys()]


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
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(timed(sides[name]))
    return samples


def run_process(argv: list[str], env: dict | None = None) -> str:
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, env=env)
    if result.returncode != 0:
        sys.stderr.write(f"{' '.join(argv[:4])} ... failed ({result.returncode}):\n{result.stderr[-2000:]}\n")
        raise SystemExit(1)
    return result.stdout


def audit_argv(path: str) -> list[str]:
    return [sys.executable, "-m", "mpdoctor", "audit", path, "--format", "json", "--fail-on", "never"]


def check_reads(moe: str, small: str, pickles: str) -> None:
    """The audit reads what safetensors reads, and every pickle: else the timings compare different work."""
    from mpdoctor.checkpoint_audit.safetensors import TORCH_NAME, read_header

    for path, count in ((moe, MOE_TENSORS), (small, SMALL_TENSORS)):
        ours = sorted((e.name, e.dtype) for e in read_header(path)[0])
        theirs = sorted((key, TORCH_NAME[str(dtype)]) for key, dtype in safetensors_pairs(path))
        if ours != theirs or len(ours) != count:
            raise SystemExit(f"the audit and safetensors disagree on {path}'s keys or dtypes")
    report = json.loads(run_process(audit_argv(pickles)))
    if len(report["files"]) != PICKLES or any(f["error"] or f["tensors"] != 3 for f in report["files"]):
        raise SystemExit(f"the audit did not read the {PICKLES} pickles: {report['files']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (default 9)")
    parser.add_argument("--in-process", action="store_true", help="also time the 1,000-tensor audit in-process")
    parser.add_argument("--json", action="store_true", help="print the samples, medians and ratios as JSON")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401  (safetensors' "np" framework imports it)
        import safetensors
    except ImportError as exc:
        sys.stderr.write(f"bench_audit needs {exc.name}: pip install safetensors numpy\n")
        return 2
    env = dict(os.environ)  # the commands see numpy where this process does (a --target install on PYTHONPATH)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(numpy.__file__)), env.get("PYTHONPATH", "")] if p
    )
    with tempfile.TemporaryDirectory(prefix="mpdoctor-bench-audit-") as tmp:
        moe, small, pickles = (
            os.path.join(tmp, name) for name in ("moe-100k.safetensors", "model.safetensors", "pickles")
        )
        moe_header, small_header = write_sparse(moe, moe_model(), pad=True), write_sparse(small, small_model())
        write_pickles(pickles)
        check_reads(moe, small, pickles)

        def listing(path: str, count: int, dtypes: bool) -> list[str]:
            pairs = "[(k, f.get_slice(k).get_dtype()) for k in f.keys()]" if dtypes else "list(f.keys())"
            code = (
                f"from safetensors import safe_open; f = safe_open({path!r}, 'np'); listed = {pairs}; "
                f"assert len(listed) == {count}"
            )
            return [sys.executable, "-c", code]

        commands = {
            "safetensors 100k": listing(moe, MOE_TENSORS, True),
            "audit 100k": audit_argv(moe),
            "safetensors 1k": listing(small, SMALL_TENSORS, False),
            "audit 1k": audit_argv(small),
            "import torch": [sys.executable, "-c", "import torch"],
            f"audit {PICKLES} .pt": audit_argv(pickles),
            "mpdoctor --help": [sys.executable, "-m", "mpdoctor", "--help"],
        }
        process = alternate(
            {name: (lambda argv=argv: run_process(argv, env)) for name, argv in commands.items()}, args.rounds
        )
        inside, read_bytes, odd = {}, None, audit_lines(small)
        if args.in_process:
            from mpdoctor.checkpoint_audit.safetensors import read_header

            before = rchar()
            audit_lines(small)
            after = rchar()
            read_bytes = None if before is None or after is None else after - before
            inside = alternate(
                {
                    "safetensors keys": lambda: safetensors_pairs(small),
                    "mpdoctor audit": lambda: audit_lines(small),
                    "header read only": lambda: read_header(small),
                },
                args.rounds * 5,
            )
    medians = {name: statistics.median(s) for name, s in process.items()}
    minima = {name: min(s) for name, s in process.items()}
    ratios = {
        "audit 100k / safetensors 100k": medians["audit 100k"] / medians["safetensors 100k"],
        "audit 1k / safetensors 1k": medians["audit 1k"] / medians["safetensors 1k"],
        f"audit {PICKLES} .pt / import torch": medians[f"audit {PICKLES} .pt"] / medians["import torch"],
        "help / safetensors 100k": medians["mpdoctor --help"] / medians["safetensors 100k"],
    }
    if args.json:
        json.dump(
            {
                "headers": {"moe": moe_header, "small": small_header},
                "samples": process,
                "medians": medians,
                "minima": minima,
                "ratios": ratios,
                "in_process": inside,
                "audit_read_bytes": read_bytes,
                "odd_modules": odd,
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return 0
    from mpdoctor import __version__

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()} ({sys.executable}), safetensors {safetensors.__version__}, "
        f"mpdoctor {__version__}"
    )
    print(f"host: {platform.platform()}, {os.cpu_count()} CPUs, load average {load:.2f} after the run")
    print(
        f"moe-100k.safetensors: {MOE_TENSORS:,} tensors, header {moe_header:,} bytes; model.safetensors: "
        f"{SMALL_TENSORS:,} tensors, header {small_header:,} bytes; pickles/: {PICKLES} .pt files"
    )
    print(f"\nprocesses ({args.rounds} rounds, alternating)  median s    min s")
    for name in process:
        print(f"  {name:<22} {medians[name]:10.3f} {minima[name]:8.3f}")
    print("\nratios (of medians):")
    for name, value in ratios.items():
        print(f"  {name:<34} {value:6.2f}")
    print(f"  audit {PICKLES} .pt                      {medians[f'audit {PICKLES} .pt']:6.2f} s")
    if inside:
        base = statistics.median(inside["safetensors keys"])
        print(f"\nin-process, 1k tensors ({args.rounds * 5} rounds)   median s    x safetensors")
        for name, samples in inside.items():
            print(f"  {name:<18}  {statistics.median(samples):10.4f}   {statistics.median(samples) / base:8.2f}")
        print(
            f"the audit read {read_bytes:,} bytes of a {small_header:,}-byte header"
            if read_bytes is not None
            else "bytes read: /proc/self/io unreadable"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
