#!/usr/bin/env python3
"""Time the hostile inputs of issue 22 (redaction and explain), each at two sizes, in child processes.

Stdlib only; asserts nothing. Every case runs in its own subprocess under
``/usr/bin/time`` (wall seconds and peak RSS), killed at ``--timeout``; a killed
case prints ``>T``. The figure that matters is the ratio between the two sizes
of a case (4.0 = linear for a 4x input), not a time on its own. Run it against
another checkout with ``--root`` (its ``mpdoctor`` package goes first on
``PYTHONPATH``) to compare before and after on the same machine.

    python bench/bench_hostile.py                       # this checkout
    python bench/bench_hostile.py --root /tmp/old --timeout 60 --only redact
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile

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


def timed(argv: list[str], env: dict, timeout: float, stdin=None) -> dict:
    with tempfile.NamedTemporaryFile("r") as report:
        # its own process group: on a timeout the command under /usr/bin/time is killed too, not left running
        proc = subprocess.Popen(
            ["/usr/bin/time", "-o", report.name, "-f", "%e %M", *argv],
            env=env,
            stdin=stdin or subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"seconds": f">{timeout:g}", "rss_mb": None, "rc": None, "out": ""}
        fields = report.read().split()
    seconds, rss = (float(fields[-2]), int(fields[-1]) // 1024) if len(fields) >= 2 else (None, None)
    out = (stdout.strip().splitlines() or [""])[0][:100]
    return {"seconds": seconds, "rss_mb": rss, "rc": proc.returncode, "out": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--root", help="a checkout whose mpdoctor package to time (default: the installed one)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--redact-size", type=int, default=200_000, help="characters (the small size; x4 too)")
    parser.add_argument("--log-size", type=float, default=25.0, help="explain log MB (the small size; x4 too)")
    parser.add_argument("--stdin-size", type=int, default=1024, help="MB piped into explain -")
    parser.add_argument("--only", choices=("redact", "explain", "read"))
    args = parser.parse_args()
    env = dict(os.environ)
    if args.root:
        env["PYTHONPATH"] = os.path.abspath(args.root) + os.pathsep + env.get("PYTHONPATH", "")
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
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
