#!/usr/bin/env python3
"""Time the hostile inputs of issues 22 and 33, each at two sizes or more, in child processes.

Stdlib only; asserts nothing. Every case runs in its own subprocess under
``/usr/bin/time`` (wall seconds and peak RSS), killed at ``--timeout``; a killed
case prints ``>T``. The figure that matters is the ratio between the two sizes
of a case (4.0 = linear for a 4x input), not a time on its own. Run it against
another checkout with ``--root`` (its ``mpdoctor`` package goes first on
``PYTHONPATH``, and the commands run in it) to compare before and after on the
same machine.

Issue 33's cases (``--only scale``) are built to eat the machine on the code
before it: each also runs under ``ulimit -v`` (``--memory-mb``), so one that
runs away dies of MemoryError or a failed allocation (its exit status says so)
rather than taking the machine with it:

* ``fleet compare /dev/zero s.json`` (item 1), ``s.json`` from
  ``check --no-kernels --save-snapshot``;
* ``audit`` of a zip checkpoint whose ``data.pkl`` deflates a pickled string of
  ``--bomb-mb`` MB to about 1 MB (item 3), at 1x and 4x;
* ``audit`` of a safetensors header ``{"w": {"dtype": "F32", "shape": [10**39] * N,
  ...}}`` at N = 120, 50,000 and 200,000 (item 4);
* ``check --snapshot -f json`` of a snapshot of 1k, 2k, 4k and 8k GPUs (item 5):
  the saved snapshot with NVML and torch made to list N identical GPUs.

    python bench/bench_hostile.py                       # this checkout
    python bench/bench_hostile.py --root /tmp/old --timeout 60 --only redact
    python bench/bench_hostile.py --root /tmp/old --only scale --timeout 120 --memory-mb 6144
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile

ERROR = "RuntimeError: expected scalar type Float but found Half\n"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/work/train.py", line 12, in <module>\n    loss = model(x)\n'
    '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n'
    "    return forward_call(*args, **kwargs)\n" + ERROR
)

# Redaction of one string of N characters, in the process that imports mpdoctor's redactor.
REDACT = (
    "import sys, time; from mpdoctor.portable.redact import redact_text, redact_env_value; "
    "n = int(sys.argv[2]); text = {kind}; t = time.perf_counter(); {call}; "
    "print(round(time.perf_counter() - t, 3))"
)
REDACT_CASES = {
    # a torch stderr / ImportError message that is one long run of URL-ish characters
    "run of letters ('B' * n)": ("'B' * n", "redact_text(text)"),
    "run of scheme chars ('a.' * n/2)": ("'a.' * (n // 2)", "redact_text(text)"),
    "CUDA_VISIBLE_DEVICES value ('GPU-0a1b' * n/8)": (
        "'GPU-0a1b' * (n // 8)",
        "redact_env_value('CUDA_VISIBLE_DEVICES', text)",
    ),
    "tensor name ('layer.' * n/6)": ("'layer.' * (n // 6)", "redact_text(text)"),
}


def write_explain_inputs(tmp: str, megabytes: float) -> dict[str, str]:
    size = int(megabytes * (1 << 20))
    paths = {}
    paths["dotted-I"] = os.path.join(tmp, "dotted.log")  # U+0130 lower-cases to two characters
    with open(paths["dotted-I"], "w", encoding="utf-8") as out:
        out.write("\u0130" * max(60, size // 2) + "\n" + ERROR)
    paths["random bytes"] = os.path.join(tmp, "random.log")
    with open(paths["random bytes"], "wb") as out:
        out.write(random.Random(22).randbytes(size) + b"\n" + ERROR.encode())
    paths["repeated tracebacks"] = os.path.join(tmp, "tracebacks.log")
    with open(paths["repeated tracebacks"], "w", encoding="utf-8") as out:
        out.write(TRACEBACK * max(1, size // len(TRACEBACK)))
    return paths


def capped(argv: list[str], memory_mb: int) -> list[str]:
    """``argv`` under ``ulimit -v``: a case that runs away fails an allocation instead of eating the machine."""
    return ["bash", "-c", f'ulimit -v {memory_mb * 1024} && exec "$@"', "bash", *argv]


def write_zip_bomb(path: str, megabytes: int) -> None:
    """A torch.save-shaped archive: data.pkl, one pickled str of ``megabytes`` MB, deflated to about 1 MB."""
    size = megabytes << 20
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("archive/data.pkl")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as entry:
            entry.write(b"\x80\x02X" + struct.pack("<I", size))  # PROTO 2, BINUNICODE of `size` bytes
            chunk = b"a" * (4 << 20)
            for _ in range(size // len(chunk)):
                entry.write(chunk)
            entry.write(b"a" * (size % len(chunk)) + b".")
        archive.writestr("archive/version", "3\n")


def write_shape_bomb(path: str, rank: int) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**39] * rank, "data_offsets": [0, 0]}}).encode()
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(header)) + header)


def write_many_gpus(path: str, base: dict, count: int) -> None:
    """``base`` (a saved snapshot) with NVML and torch listing ``count`` identical GPUs, each its own UUID."""
    snap = json.loads(json.dumps(base))
    gpus, devices = [], []
    for i in range(count):
        uuid = f"GPU-{i:08x}-0000-4000-8000-{i:012x}"
        pci = f"{i >> 8:08x}:{i & 255:02x}:00.0"
        gpus.append(
            {"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "pci_bus_id": pci, "memory_total": 85 << 30}
        )
        gpus[-1].update(compute_capability="9.0", mig_enabled=False)
        devices.append({"ordinal": i, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "uuid": uuid[4:]})
        devices[-1].update(pci_bus_id=pci, memory_total=85 << 30, multiprocessor_count=132)
    snap["machine"]["nvml"].update(status="ok", reason="", driver_version="550.54.15", cuda_driver_version="12.4")
    snap["machine"]["nvml"]["gpus"] = gpus
    torch = snap["torch"]
    torch.update(cuda="12.4", hip=None, cuda_available=True, device_count=count, devices=devices)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(snap, out)


def scale_rows(args, env: dict, cwd: str) -> list[dict]:
    """Issue 33's cases, each capped in time and memory (see the module's docstring)."""
    mpdoctor = [args.python, "-m", "mpdoctor"]
    rows = []

    def row(case: str, size: str, argv: list[str], pick: str = "rror") -> None:
        argv = capped(argv, args.memory_mb)
        rows.append({"case": case, "size": size, **timed(argv, env, args.timeout, cwd=cwd, pick=pick)})

    with tempfile.TemporaryDirectory(prefix="mpdoctor-hostile-") as tmp:
        snapshot = os.path.join(tmp, "s.json")
        made = subprocess.run(
            [*mpdoctor, "check", "--no-kernels", "--fail-on", "never", "--save-snapshot", snapshot],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if made.returncode != 0 or not os.path.exists(snapshot):
            raise SystemExit(f"check --save-snapshot failed: {made.stderr[-500:]}")
        row(
            "fleet compare /dev/zero s.json (item 1)", "endless", [*mpdoctor, "fleet", "compare", "/dev/zero", snapshot]
        )
        for megabytes in (args.bomb_mb, 4 * args.bomb_mb):
            bomb = os.path.join(tmp, f"bomb-{megabytes}.pt")
            write_zip_bomb(bomb, megabytes)
            size = f"{os.path.getsize(bomb) >> 10} KB -> {megabytes} MB"
            row("audit zip bomb (item 3)", size, [*mpdoctor, "audit", bomb], pick="  - ")
            os.unlink(bomb)
        for rank in (120, 50_000, 200_000):
            shape = os.path.join(tmp, f"shape-{rank}.safetensors")
            write_shape_bomb(shape, rank)
            size = f"N={rank}, {os.path.getsize(shape) >> 10} KB"
            row("audit safetensors shape [10**39]*N (item 4)", size, [*mpdoctor, "audit", shape], pick="  - ")
        with open(snapshot, encoding="utf-8") as handle:
            base = json.load(handle)
        for count in args.gpus:
            many = os.path.join(tmp, f"gpus-{count}.json")
            write_many_gpus(many, base, count)
            size = f"{count} GPUs, {os.path.getsize(many) >> 10} KB"
            # JSON: the judging and the device table, not the text table's rendering of N rows (a cost of its own)
            argv = [*mpdoctor, "check", "--snapshot", many, "-f", "json", "--fail-on", "never"]
            row("check --snapshot -f json, many GPUs (item 5)", size, argv, pick="MPD001")
    return rows


def timed(argv: list[str], env: dict, timeout: float, stdin=None, cwd=None, pick: str = "") -> dict:
    """Wall seconds, peak RSS and exit status of ``argv``; ``out``: its first output line, or the first with ``pick``."""
    with tempfile.NamedTemporaryFile("r") as report:
        # its own process group: on a timeout the command under /usr/bin/time is killed too, not left running
        proc = subprocess.Popen(
            ["/usr/bin/time", "-o", report.name, "-f", "%e %M", *argv],
            env=env,
            cwd=cwd,
            stdin=stdin or subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"seconds": f">{timeout:g}", "rss_mb": None, "rc": None, "out": ""}
        fields = report.read().split()
    seconds, rss = (float(fields[-2]), int(fields[-1]) // 1024) if len(fields) >= 2 else (None, None)
    lines = stdout.strip().splitlines() + stderr.strip().splitlines()
    picked = [line.strip() for line in lines if pick and pick in line] or lines or [""]
    out = picked[0][:160]
    return {"seconds": seconds, "rss_mb": rss, "rc": proc.returncode, "out": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--root", help="a checkout whose mpdoctor package to time (default: the installed one)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--redact-size", type=int, default=200_000, help="characters (the small size; x4 too)")
    parser.add_argument("--log-size", type=float, default=25.0, help="explain log MB (the small size; x4 too)")
    parser.add_argument("--stdin-size", type=int, default=1024, help="MB piped into explain -")
    parser.add_argument("--bomb-mb", type=int, default=300, help="MB a zip bomb inflates to (the small size; x4 too)")
    parser.add_argument("--gpus", type=int, nargs="+", default=[1000, 2000, 4000, 8000], help="GPU counts")
    parser.add_argument("--memory-mb", type=int, default=6144, help="ulimit -v of each issue 33 case")
    parser.add_argument("--only", choices=("redact", "explain", "read", "scale"))
    args = parser.parse_args()
    env = dict(os.environ)
    cwd = None
    if args.root:
        env["PYTHONPATH"] = os.path.abspath(args.root) + os.pathsep + env.get("PYTHONPATH", "")
        cwd = os.path.abspath(args.root)  # `python -m` puts the working directory first: the same checkout
    rows = []
    if args.only in (None, "redact"):
        for name, (kind, call) in REDACT_CASES.items():
            for n in (args.redact_size, 4 * args.redact_size):
                code = REDACT.format(kind=kind, call=call)
                rows.append(
                    {
                        "case": f"redact {name}",
                        "size": f"{n} chars",
                        **timed([args.python, "-c", code, "-", str(n)], env, args.timeout),
                    }
                )
    explain = [args.python, "-m", "mpdoctor", "explain"]
    if args.only in (None, "explain"):
        with tempfile.TemporaryDirectory(prefix="mpdoctor-hostile-") as tmp:
            for megabytes in (args.log_size, 4 * args.log_size):
                for name, path in write_explain_inputs(tmp, megabytes).items():
                    rows.append(
                        {
                            "case": f"explain --file: {name}",
                            "size": f"{os.path.getsize(path) >> 20} MB",
                            **timed([*explain, "--file", path], env, args.timeout),
                        }
                    )
    if args.only in (None, "read"):
        rows.append(
            {
                "case": "explain --file /dev/zero",
                "size": "endless",
                **timed([*explain, "--file", "/dev/zero"], env, args.timeout),
            }
        )
        feeder = subprocess.Popen(["head", "-c", f"{args.stdin_size}M", "/dev/zero"], stdout=subprocess.PIPE)
        rows.append(
            {
                "case": "explain - (stdin)",
                "size": f"{args.stdin_size} MB",
                **timed([*explain, "-"], env, args.timeout, stdin=feeder.stdout),
            }
        )
        feeder.stdout.close()
        feeder.kill()
        feeder.wait()
    if args.only in (None, "scale"):
        rows += scale_rows(args, env, cwd or os.getcwd())
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
