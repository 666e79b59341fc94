"""Which torch calls leave a later fork() unable to use CUDA, measured on this machine.

For each call, a fresh interpreter imports torch, makes the call, forks, and the child
runs ``torch.zeros(1, device="cuda")``; each row is measured with and without
``PYTORCH_NVML_BASED_CUDA_CHECK=1``. The table is what mpdoctor's kernel runner must
obey (mpdoctor/probes/remote/kernel_runner.py) and what the tests' stand-in torch
copies (tests/cuda_standin.py). Needs a CUDA torch and a GPU; stdlib otherwise.

    python bench/fork_rules.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CALLS = {
    "nothing": "None",
    "torch.cuda.is_available()": "torch.cuda.is_available()",
    "torch.cuda.device_count()": "torch.cuda.device_count()",
    "torch.cuda.get_arch_list()": "torch.cuda.get_arch_list()",
    "torch._C._cuda_getArchFlags()": "torch._C._cuda_getArchFlags()",
    "torch.backends.cudnn.version()": "torch.backends.cudnn.version()",
    "torch._C._cudnn.getVersionInt()": "torch._C._cudnn.getVersionInt()",
    "torch._C._cuda_getDeviceCount()": "torch._C._cuda_getDeviceCount()",
    "torch.cuda.nccl.version()": "torch.cuda.nccl.version()",
}

CHILD = r"""
import os, sys, json, warnings
warnings.simplefilter("ignore")
import torch
import torch.cuda.nccl
%s
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    out = {"is_available": None, "count": None}
    try:
        out["is_available"] = bool(torch.cuda.is_available())
        out["count"] = int(getattr(torch._C, "_cuda_getDeviceCount", lambda: 0)())
        torch.zeros(1, device="cuda")
        out["cuda"] = "yes"
    except Exception as exc:
        out["cuda"] = "%%s: %%s" %% (type(exc).__name__, exc)
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
print(data.decode())
"""


def measure(call: str, nvml: bool) -> dict:
    env = dict(os.environ)
    env.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    if nvml:
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD % CALLS[call]], capture_output=True, text=True, timeout=120, env=env
        )
    except subprocess.TimeoutExpired:
        return {"cuda": "timeout"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"cuda": "no answer: " + (done.stderr.strip().splitlines() or ["?"])[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the measurements here too")
    args = parser.parse_args()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:  # each row is its own interpreter
        futures = {
            (call, key): pool.submit(measure, call, key == "nvml") for call in CALLS for key in ("default", "nvml")
        }
        rows = {call: {key: futures[(call, key)].result() for key in ("default", "nvml")} for call in CALLS}
    print("| call in the parent before fork() | child can use CUDA | with PYTORCH_NVML_BASED_CUDA_CHECK=1 |")
    print("|---|---|---|")
    for call, row in rows.items():
        cells = [
            row[k]["cuda"] if row[k]["cuda"] == "yes" else "**no** (" + row[k]["cuda"][:70] + ")"
            for k in ("default", "nvml")
        ]
        print(f"| `{call}` | {cells[0]} | {cells[1]} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
