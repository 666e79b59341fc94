#!/usr/bin/env python3
"""GPU acceptance: the one script a maintainer with any NVIDIA GPU runs, in one command, in under 3 minutes.

    python bench/gpu_acceptance.py --out DIR [--quick] [--skip-tests]

Run it with the interpreter that has CUDA torch (and mpdoctor's dependencies). Each step is a subprocess with
its own timeout, so a hang costs only its row:

1. check kernels    `mpdoctor check --kernels full --format json --save-snapshot DIR/snapshot.json`: the kernels
                    ran (status ok) on every CUDA device; fp16 matmul ok, bf16 and tf32 matmul ok on compute
                    capability >= 8.0, fp8 (float8_e4m3fn) matmul ok on >= 8.9; no CUDA test wrong, error,
                    crashed or timed out; no PREC009 and no MPD finding; torch.devices non-empty and as many as
                    CUDA itself counts (and NVML, where CUDA_VISIBLE_DEVICES can be read without CUDA); the saved
                    snapshot is redacted (two planted canary secrets appear nowhere).
2. visible devices  `check --no-kernels --select GPU --format json` under CUDA_VISIBLE_DEVICES unset, 0, -1, the
                    GPU count (out of range), the first GPU's UUID, its GPU-xxxxxxxx prefix, an unknown UUID and
                    0,0: clean exit, valid JSON, and the report's visible devices (count, names, UUIDs) are what a
                    fresh `python -c` with the same environment gets from torch and CUDA.
3. fleet x1, x2     `python -m torch.distributed.run --standalone --nproc-per-node N -m mpdoctor fleet --format
                    json`: clean exit and every rank reported; FLEET008 is required when there are more ranks
                    than visible GPUs.
4. dtype_trace      Linear+LayerNorm under torch.autocast("cuda") for fp16 (and bf16 on >= 8.0) inside
                    mpdoctor.dtype_trace: the trace records cuda calls with autocast on and that dtype out.
5. tests            unless --skip-tests: `python -m pytest -q -p no:cacheprovider tests`, counts and failing ids.

Prints a table (also DIR/acceptance.md, and DIR/acceptance.json with the failing steps' output tails) and exits
0 when every step passed, 1 when one failed, 2 when there is no CUDA device here (every row SKIP, the reason in
the first). Stdlib only. The judging functions (`judge_*`) take parsed JSON and return a verdict, nothing else.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "mpdoctor-gpu-acceptance/1"
PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
TAIL = 4000  # characters of stdout and of stderr kept per failing command
STEP_TAILS = 16000  # characters of output tails kept per failing step, all its commands together
UNKNOWN_UUID = "GPU-ffffffff-ffff-ffff-ffff-fffffffffff0"
BAD_STATUSES = ("wrong", "error", "crashed", "timeout")  # a CUDA kernel test that ends so fails the step
STEPS = ("cuda device", "check kernels", "visible devices", "fleet x1", "fleet x2", "dtype_trace", "tests")

# --------------------------------------------------------------------------- child programs (run in PY)

# What this interpreter, NVML and CUDA say, under the environment it is given. Prints one JSON object.
PREFLIGHT = r"""
import importlib.util, json, os, platform, sys
out = {"python": platform.python_version(), "executable": sys.executable, "platform": platform.platform(),
       "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "missing": [], "nvml": {}}
try:
    import mpdoctor
    out["mpdoctor"] = mpdoctor.__version__
    out["mpdoctor_file"] = mpdoctor.__file__
except Exception as exc:
    out["mpdoctor_error"] = "%s: %s" % (type(exc).__name__, exc)
for name in ("typer", "rich", "packaging", "pynvml"):
    try:
        if importlib.util.find_spec(name) is None:
            out["missing"].append(name)
    except Exception:
        out["missing"].append(name)
nvml = out["nvml"]
try:
    import pynvml
    pynvml.nvmlInit()
    def text(value):
        return value.decode() if isinstance(value, bytes) else str(value)
    nvml["driver"] = text(pynvml.nvmlSystemGetDriverVersion())
    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        gpu = {"index": index, "name": text(pynvml.nvmlDeviceGetName(handle)),
               "uuid": text(pynvml.nvmlDeviceGetUUID(handle))}
        try:
            gpu["compute_capability"] = "%d.%d" % tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle))
        except Exception:
            pass
        try:
            gpu["mig"] = bool(pynvml.nvmlDeviceGetMigMode(handle)[0])
        except Exception:
            gpu["mig"] = False
        gpus.append(gpu)
    nvml["gpus"] = gpus
except Exception as exc:
    nvml["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
except Exception as exc:
    out["torch_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
print(json.dumps(out))
"""

# What torch and CUDA themselves make of CUDA_VISIBLE_DEVICES, in a fresh process: torch.cuda.device_count()
# (after is_available(), in the order mpdoctor's torch probe calls them), the runtime's count, and each device's
# name, capability and UUID from the runtime. Prints one JSON object.
VISIBILITY = r"""
import json
out = {"available": None, "torch_count": None, "runtime_count": None, "devices": [], "errors": {}}
def error(key, exc):
    out["errors"][key] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
try:
    import torch
except Exception as exc:
    error("import torch", exc)
else:
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    for key, call in (("available", torch.cuda.is_available), ("torch_count", torch.cuda.device_count),
                      ("runtime_count", getattr(torch._C, "_cuda_getDeviceCount", None))):
        if call is None:
            continue
        try:
            out[key] = call()
        except Exception as exc:
            error(key, exc)
    count = out["runtime_count"] if out["runtime_count"] is not None else out["torch_count"]
    if count:
        try:
            torch.cuda.init()
        except Exception as exc:
            error("init", exc)
        props_of = getattr(torch._C, "_cuda_getDeviceProperties", None) or torch.cuda.get_device_properties
        for ordinal in range(count):
            try:
                props = props_of(ordinal)
                uuid = getattr(props, "uuid", None)
                out["devices"].append({"ordinal": ordinal, "name": str(props.name),
                                       "compute_capability": "%d.%d" % (props.major, props.minor),
                                       "uuid": "" if uuid is None else str(uuid)})
            except Exception as exc:
                error("device %d" % ordinal, exc)
print(json.dumps(out))
"""

# A tiny model under torch.autocast inside mpdoctor.dtype_trace. argv[1]: the device ("cuda"; "cpu" for tests).
TRACE = r"""
import json, sys
import torch
import mpdoctor
device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
out = {"device": device, "torch": torch.__version__, "runs": {}}
if device == "cuda":
    major, minor = torch.cuda.get_device_capability(0)
    out["compute_capability"] = "%d.%d" % (major, minor)
    dtypes = ["float16", "bfloat16"] if major >= 8 else ["float16"]
else:
    dtypes = ["float16", "bfloat16"]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32)).to(device)
x = torch.randn(4, 16, device=device)
for name in dtypes:
    run = out["runs"][name] = {}
    try:
        with torch.autocast(device, dtype=getattr(torch, name)):
            with mpdoctor.dtype_trace(model) as trace:
                y = model(x)
        if device == "cuda":
            torch.cuda.synchronize()
        run["output_dtype"] = str(y.dtype).replace("torch.", "")
        run["trace"] = trace.to_data()
        run["table"] = str(trace)
    except Exception as exc:
        run["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:500])
print(json.dumps(out))
"""


# --------------------------------------------------------------------------- verdicts (pure)


def verdict(problems: Sequence[str], passed: str, data: Optional[dict] = None, skip: str = "") -> dict:
    """A step's verdict: FAIL with the first problem (and how many more) as its line, else PASS (or SKIP)."""
    problems = list(problems)
    if skip and not problems:
        return {"status": SKIP, "detail": skip, "problems": [], "data": data or {}}
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return {"status": FAIL, "detail": problems[0] + more, "problems": problems, "data": data or {}}
    return {"status": PASS, "detail": passed, "problems": [], "data": data or {}}


def last_line(text: str) -> str:
    """The last non-empty line of a command's stderr (a traceback's error), for a one-line detail."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def parse_json(text: str) -> tuple[Any, str]:
    """(data, "") or (None, why it is not JSON)."""
    try:
        return json.loads(text), ""
    except ValueError as exc:
        return None, f"not JSON ({exc}); starts {text[:80]!r}"


def cc_tuple(text: Any) -> Optional[tuple[int, int]]:
    """'8.9' -> (8, 9); None when it is not a capability."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def required_matmuls(cc: Optional[tuple[int, int]]) -> list[str]:
    """The matmul dtypes a card of this compute capability has and must have measured ok.

    fp16 always; bf16 and tf32 from Ampere (8.0); fp8 (float8_e4m3fn) from Ada/Hopper (8.9). Unknown capability:
    fp16, bf16 and tf32 (fp8 is then not asked for)."""
    dtypes = ["float16"]
    if cc is None or cc >= (8, 0):
        dtypes += ["bfloat16", "tf32"]
    if cc is not None and cc >= (8, 9):
        dtypes.append("float8_e4m3fn")
    return dtypes


def norm_uuid(uuid: Any) -> str:
    """A GPU UUID as NVML ('GPU-8731a51e-...') or torch ('8731a51e-...') writes it, in one spelling."""
    text = str(uuid or "").strip().lower()
    return text[4:] if text.startswith("gpu-") else text


def nvml_expected_count(cvd: Optional[str], nvml_gpus: Sequence[dict]) -> Optional[int]:
    """How many CUDA devices NVML's GPU list and CUDA_VISIBLE_DEVICES promise, where that is plain; else None.

    Unset: every GPU (None when a GPU is in MIG mode). Set: entries read as CUDA does, stopping at the first
    invalid one (an index out of range, a UUID or prefix no GPU or two GPUs have); a repeated entry, a MIG
    entry or anything else unusual gives None (ask CUDA, not this rule)."""
    if any(gpu.get("mig_enabled") or gpu.get("mig") for gpu in nvml_gpus):
        return None
    if cvd is None:
        return len(nvml_gpus)
    if not cvd.strip():
        return 0
    uuids = [norm_uuid(gpu.get("uuid")) for gpu in nvml_gpus]
    seen: list[int] = []
    for entry in cvd.split(","):
        entry = entry.strip()
        if re.fullmatch(r"-?\d+", entry):
            index = int(entry)
            if index < 0 or index >= len(nvml_gpus):
                break
        elif entry.lower().startswith("gpu-"):
            matches = [i for i, uuid in enumerate(uuids) if uuid and uuid.startswith(norm_uuid(entry))]
            if len(matches) != 1:
                break
            index = matches[0]
        else:
            return None
        if index in seen:
            return None
        seen.append(index)
    return len(seen)


def as_report(doc: dict) -> dict:
    """A report ({findings, snapshot, gpus}) from a report or a bare snapshot (no findings, no device table)."""
    if "snapshot" in doc or "findings" in doc:
        return doc
    return {"findings": [], "snapshot": doc, "gpus": {}}


def _row_for(report: dict, ordinal: int) -> dict:
    for row in (report.get("gpus") or {}).get("devices") or []:
        if row.get("cuda_ordinal") == ordinal:
            return row
    return {}


def judge_check_report(doc: dict, expected_count: Optional[int] = None) -> dict:
    """Step 1 on `check --kernels full --format json` (or a bare snapshot): see the module docstring.

    ``expected_count``: how many devices CUDA counted in a fresh process under the same environment."""
    report = as_report(doc)
    snap = report.get("snapshot") or {}
    problems: list[str] = []
    for finding in report.get("findings") or []:
        code = str(finding.get("code") or "")
        if code == "PREC009" or code.startswith("MPD"):
            problems.append(f"{finding.get('severity', '?')} {code}: {finding.get('title', '')}")
    torch_facts = snap.get("torch") or {}
    for key, text in sorted((torch_facts.get("fact_errors") or {}).items()):
        if key.startswith("device"):
            problems.append(f"torch.fact_errors[{key!r}]: {text}")
    kernels = snap.get("kernels") or {}
    if kernels.get("status") != "ok":
        problems.append(f"kernels status {kernels.get('status')!r}: {kernels.get('detail', '')}".rstrip(": "))
    devices = torch_facts.get("devices") or []
    cuda = [d for d in kernels.get("devices") or [] if str(d.get("device", "")).startswith("cuda:")]
    timings: dict[str, dict] = {}
    measured: dict[str, list[str]] = {}
    if not cuda:
        problems.append(
            "the kernels ran on no CUDA device (only %s)"
            % (", ".join(d.get("device", "?") for d in kernels.get("devices") or []) or "nothing")
        )
    for dev in cuda:
        name = dev["device"]
        ordinal = int(name.split(":", 1)[1]) if name.split(":", 1)[1].isdigit() else -1
        torch_dev = next((d for d in devices if d.get("ordinal") == ordinal), {})
        cc_text = (
            dev.get("compute_capability")
            or _row_for(report, ordinal).get("compute_capability")
            or torch_dev.get("compute_capability")
            or ""
        )
        timings[name] = {
            "name": dev.get("name") or torch_dev.get("name", ""),
            "compute_capability": cc_text,
            "status": dev.get("status"),
            "seconds": dev.get("seconds"),
            "init_seconds": dev.get("init_seconds"),
            "restarts": dev.get("restarts"),
            "tests": len(dev.get("results") or []),
        }
        if dev.get("status") != "ok":
            problems.append(f"{name}: kernels {dev.get('status')}: {dev.get('detail', '')}".rstrip(": "))
            continue
        results = dev.get("results") or []
        for result in results:
            if result.get("status") in BAD_STATUSES:
                what = "/".join(x for x in (result.get("op"), result.get("dtype"), result.get("backend")) if x)
                problems.append(f"{name} {what}: {result.get('status')}: {result.get('detail', '')}".rstrip(": "))
        matmul = {r.get("dtype"): r for r in results if r.get("op") == "matmul" and not r.get("backend")}
        measured[name] = []
        for dtype in required_matmuls(cc_tuple(cc_text)):
            result = matmul.get(dtype)
            if result is None:
                problems.append(f"{name} (cc {cc_text or '?'}): no matmul {dtype} result")
            elif result.get("status") != "ok":
                problems.append(
                    f"{name} (cc {cc_text or '?'}): matmul {dtype} {result.get('status')}: "
                    f"{result.get('detail', '')}".rstrip(": ")
                )
            else:
                measured[name].append(dtype)
    if not devices:
        problems.append("torch.devices is empty: torch listed no CUDA device")
    if expected_count is not None and len(devices) != expected_count:
        problems.append(f"torch.devices lists {len(devices)} device(s), CUDA counts {expected_count}")
    env = (snap.get("environment") or {}).get("env") or {}
    nvml_gpus = ((snap.get("machine") or {}).get("nvml") or {}).get("gpus") or []
    nvml_count = nvml_expected_count(env.get("CUDA_VISIBLE_DEVICES"), nvml_gpus)
    if nvml_count is not None and len(devices) != nvml_count:
        problems.append(
            f"torch.devices lists {len(devices)} device(s), NVML's {len(nvml_gpus)} GPU(s) under "
            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r} promise {nvml_count}"
        )
    short = {"float16": "fp16", "bfloat16": "bf16", "tf32": "tf32", "float8_e4m3fn": "fp8"}
    passed = "; ".join(
        f"{name} {t['name']} cc {t['compute_capability'] or '?'}: {t['tests']} tests, "
        f"{' '.join(short.get(d, d) for d in measured.get(name, []))} ok, {t['seconds']} s"
        for name, t in timings.items()
    )
    return verdict(
        problems,
        passed,
        {
            "devices": timings,
            "torch_devices": len(devices),
            "kernels_probe_seconds": (kernels.get("probe") or {}).get("seconds"),
        },
    )


def judge_saved_snapshot(
    text: Optional[str], report_text: str, canaries: Sequence[str], canary_names: Sequence[str] = ()
) -> list[str]:
    """Problems with the --save-snapshot file: missing, not a snapshot, or a planted secret in it or the report.

    ``canary_names``: variables planted with a canary value; each must be in the saved env, masked."""
    if text is None:
        return ["--save-snapshot wrote no file"]
    problems = []
    data, why = parse_json(text)
    if not isinstance(data, dict) or "schema_version" not in data or "kernels" not in data:
        problems.append(f"the saved snapshot is not a snapshot: {why or 'no schema_version/kernels'}")
    for canary in canaries:
        if canary in text:
            problems.append("the saved snapshot holds a planted secret unredacted")
        if canary in report_text:
            problems.append("the JSON report holds a planted secret unredacted")
    env = ((data or {}).get("environment") or {}).get("env") or {} if isinstance(data, dict) else {}
    for name in canary_names:
        if name not in env:
            problems.append(f"the saved snapshot does not record {name} (planted to test redaction)")
    return problems


def judge_visibility(rc: Optional[int], stdout: str, stderr: str, expected: dict) -> dict:
    """Step 2, one CUDA_VISIBLE_DEVICES value: `check --no-kernels --select GPU --format json` against what a fresh
    process got from torch and CUDA under the same environment (``expected``: the VISIBILITY program's JSON)."""
    problems: list[str] = []
    if rc != 0:
        problems.append("timed out" if rc is None else f"exit {rc}")
    if "Traceback (most recent call last)" in stderr or "Traceback (most recent call last)" in stdout:
        problems.append("a traceback on " + ("stderr" if "Traceback" in stderr else "stdout"))
    report, why = parse_json(stdout)
    if not isinstance(report, dict):
        problems.append(f"stdout is {why or 'not a JSON object'}")
        return verdict(problems, "")
    for finding in report.get("findings") or []:
        if str(finding.get("code") or "").startswith("MPD"):
            problems.append(f"{finding.get('code')}: {finding.get('title', '')}")
    torch_facts = (report.get("snapshot") or {}).get("torch") or {}
    for key, ours in (("runtime_count", "runtime_device_count"), ("torch_count", "device_count")):
        if expected.get(key) is not None and torch_facts.get(ours) != expected[key]:
            problems.append(f"torch.{ours} {torch_facts.get(ours)!r}, a fresh process got {expected[key]!r}")
    rows = sorted(
        (r for r in (report.get("gpus") or {}).get("devices") or [] if r.get("cuda_ordinal") is not None),
        key=lambda r: r["cuda_ordinal"],
    )
    want = expected.get("devices") or []
    count = expected.get("runtime_count")
    count = count if count is not None else expected.get("torch_count")
    if count is not None and len(rows) != count:
        problems.append(f"the device table shows {len(rows)} CUDA device(s), CUDA counts {count}")
    for row, dev in zip(rows, want):
        label = f"cuda:{row['cuda_ordinal']}"
        if row.get("cuda_ordinal") != dev.get("ordinal"):
            problems.append(f"{label}: CUDA's device {dev.get('ordinal')} is in its place")
        if dev.get("name") and row.get("name") != dev["name"]:
            problems.append(f"{label} is {row.get('name')!r}, CUDA says {dev['name']!r}")
        row_uuid = str(row.get("uuid") or "")
        if (
            dev.get("uuid")
            and row_uuid
            and not row_uuid.upper().startswith("MIG-")
            and norm_uuid(row_uuid) != norm_uuid(dev["uuid"])
        ):
            problems.append(f"{label} has UUID {row_uuid}, CUDA says {dev['uuid']}")
    seen = (
        ", ".join(
            f"cuda:{r['cuda_ordinal']}={r.get('name', '?')}" + ("*" if r.get("source") == "predicted" else "")
            for r in rows
        )
        or "no CUDA device"
    )
    codes = sorted({str(f.get("code")) for f in report.get("findings") or []})
    return verdict(
        problems,
        seen + (f" [{' '.join(codes)}]" if codes else ""),
        {"rows": len(rows), "expected": count, "codes": codes},
    )


def judge_fleet(rc: Optional[int], report: Any, nproc: int, gpu_count: int) -> dict:
    """Step 3: one torchrun of `mpdoctor fleet --format json` (``report``: rank 0's JSON, None when missing)."""
    problems: list[str] = []
    if rc is not None and rc != 0:  # None: it timed out, which the caller says
        problems.append(f"torchrun exit {rc}")
    if not isinstance(report, dict):
        problems.append("rank 0 wrote no JSON report")
        return verdict(problems, "")
    if report.get("world_size") != nproc:
        problems.append(f"world_size {report.get('world_size')!r}, started {nproc}")
    ranks = {r.get("rank"): r for r in report.get("ranks") or []}
    for rank in range(nproc):
        state = ranks.get(rank)
        if state is None:
            problems.append(f"rank {rank} is not in the report")
        elif state.get("status") != "reported":
            problems.append(f"rank {rank} {state.get('status')}: {state.get('detail') or state.get('last_step')}")
    codes = [str(f.get("code")) for f in report.get("findings") or []]
    shared = 0 < gpu_count < nproc  # more ranks than GPUs on this node: some rank has no GPU of its own
    if shared and "FLEET008" not in codes:
        problems.append(f"no FLEET008 with {nproc} ranks on {gpu_count} visible GPU(s)")
    expected = " (FLEET008 expected)" if shared and "FLEET008" in codes else ""
    return verdict(
        problems,
        f"{len(ranks)}/{nproc} ranks reported; fleet findings: {' '.join(codes) or 'none'}{expected}",
        {"codes": codes, "launcher": report.get("launcher")},
    )


def judge_trace(data: Any, device: str = "cuda") -> dict:
    """Step 4 on the TRACE program's JSON: each autocast dtype run was traced on ``device`` with autocast on,
    and its Linear produced that dtype."""
    if not isinstance(data, dict):
        return verdict(["the trace program printed no JSON object"], "")
    problems: list[str] = []
    runs = data.get("runs") or {}
    wanted = ["float16"]
    cc = cc_tuple(data.get("compute_capability"))
    if device != "cuda" or (cc is not None and cc >= (8, 0)):
        wanted.append("bfloat16")
    seen = []
    for dtype in wanted:
        run = runs.get(dtype)
        if run is None:
            problems.append(f"no {dtype} run")
            continue
        if run.get("error"):
            problems.append(f"{dtype}: {run['error']}")
            continue
        trace = run.get("trace") or {}
        calls = trace.get("calls") or []
        if trace.get("failure"):
            problems.append(f"{dtype}: the trace recorded a failure")
        on_device = [c for c in calls if c.get("device") == device]
        if not on_device:
            problems.append(
                f"{dtype}: no call recorded on {device} (devices: "
                f"{sorted({str(c.get('device')) for c in calls}) or 'no calls'})"
            )
            continue
        linear = [c for c in on_device if c.get("class") == "Linear"]
        if not any(c.get("autocast") and c.get("autocast_dtype") == dtype for c in on_device):
            problems.append(f"{dtype}: no {device} call with autocast {dtype} recorded")
        if not any(dtype in [o.get("dtype") for o in c.get("outputs") or []] for c in linear):
            problems.append(f"{dtype}: no Linear on {device} recorded a {dtype} output")
        else:
            seen.append(f"{dtype} ({len(on_device)} {device} calls)")
    return verdict(problems, "traced " + ", ".join(seen), {"runs": sorted(runs)})


SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected|warnings?)")


def parse_pytest(text: str) -> dict:
    """Counts from pytest's last summary line (`3 failed, 120 passed, 4 skipped in 9.1s`) and the failing ids
    from its short summary (`FAILED tests/x.py::test_y - ...`, `ERROR ...`)."""
    counts: dict[str, int] = {}
    for line in reversed(text.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line) and SUMMARY.search(line):
            for number, word in SUMMARY.findall(line):
                word = {"error": "errors", "warning": "warnings"}.get(word, word)
                counts[word] = int(number)
            break
    failing = []
    for line in text.splitlines():
        match = re.match(r"(FAILED|ERROR) (\S+)", line)
        if match and match.group(2) not in failing:
            failing.append(match.group(2))
    return {"counts": counts, "failing": failing, "summary_found": bool(counts)}


def judge_tests(rc: Optional[int], timed_out: bool, text: str, limit: float) -> dict:
    parsed = parse_pytest(text)
    counts = parsed["counts"]
    problems = []
    if timed_out:
        problems.append(f"timed out after {limit:g} s")
    if counts.get("failed") or counts.get("errors"):
        problems.append(
            f"{counts.get('failed', 0)} failed, {counts.get('errors', 0)} errors: "
            + " ".join(parsed["failing"][:5])
            + (" ..." if len(parsed["failing"]) > 5 else "")
        )
    elif rc != 0 and not timed_out:
        problems.append(f"pytest exit {rc}" + ("" if parsed["summary_found"] else " (no summary line)"))
    line = ", ".join(
        f"{counts[k]} {k}" for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed") if counts.get(k)
    )
    return verdict(problems, line or "no tests ran", parsed)


def judge_preflight(info: dict) -> dict:
    """The first row: is there a CUDA device torch can use here? SKIP with the reason when not."""
    nvml = info.get("nvml") or {}
    nvml_gpus = nvml.get("gpus") or []
    seen = (
        f"; NVML sees {len(nvml_gpus)} GPU(s): {', '.join(g['name'] for g in nvml_gpus)}"
        if nvml_gpus
        else f"; NVML: {nvml.get('error') or 'no GPU'}"
    )
    vis = info.get("visibility") or {}
    cvd = info.get("cuda_visible_devices")
    if info.get("torch_error"):
        return verdict(
            [],
            "",
            skip=f"no CUDA device: torch does not import in {info.get('executable')}: {info['torch_error']}{seen}",
        )
    if not info.get("torch_cuda"):
        return verdict(
            [],
            "",
            skip=f"no CUDA device: torch {info.get('torch')} is a CPU build "
            f"(torch.version.cuda is None){seen}; run this with the interpreter "
            "that has CUDA torch",
        )
    count = vis.get("runtime_count") if vis.get("runtime_count") is not None else vis.get("torch_count")
    if not count:
        errors = "; ".join(f"{k}: {v}" for k, v in (vis.get("errors") or {}).items())
        return verdict(
            [],
            "",
            skip=f"no CUDA device: torch {info.get('torch')} counts {count!r} CUDA devices "
            f"(CUDA_VISIBLE_DEVICES={cvd!r}){seen}" + (f"; {errors}" if errors else ""),
        )
    problems = []
    if info.get("mpdoctor_error"):
        problems.append(
            f"mpdoctor does not import in {info.get('executable')}: {info['mpdoctor_error']} (pip install -e {REPO})"
        )
    if info.get("missing"):
        problems.append(f"missing in {info.get('executable')}: {', '.join(info['missing'])} (pip install -e {REPO})")
    names = ", ".join(
        f"cuda:{d['ordinal']} {d['name']} ({d.get('compute_capability', '?')})" for d in vis.get("devices") or []
    )
    return verdict(problems, f"{count} CUDA device(s): {names}")


# --------------------------------------------------------------------------- running


class Runner:
    """Runs commands, each in its own process group with its own timeout; kills what is left on exit."""

    def __init__(self) -> None:
        self.live: set[subprocess.Popen] = set()
        self.lock = threading.Lock()

    def run(self, cmd: Sequence[str], timeout: float, env: Optional[dict] = None, cwd: Optional[str] = None) -> dict:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            return {
                "cmd": list(cmd),
                "rc": None,
                "stdout": "",
                "stderr": f"cannot start: {exc}",
                "seconds": 0.0,
                "timed_out": False,
            }
        with self.lock:
            self.live.add(proc)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill(proc)
            out, err = proc.communicate()
        finally:
            with self.lock:
                self.live.discard(proc)
        return {
            "cmd": list(cmd),
            "rc": proc.returncode,
            "timed_out": timed_out,
            "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace"),
            "seconds": round(time.perf_counter() - start, 2),
        }

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the whole group it started
        except OSError:
            proc.kill()

    def kill_all(self) -> None:
        with self.lock:
            procs = list(self.live)
        for proc in procs:
            self._kill(proc)


def tails(results: Sequence[dict], budget: int = STEP_TAILS) -> list[dict]:
    """The commands' output tails for acceptance.json, at most ``budget`` characters in all."""
    kept = []
    for result in results:
        if budget <= 0:
            kept.append({"cmd": result.get("cmd"), "rc": result.get("rc"), "omitted": "output budget spent"})
            continue
        each = max(200, min(TAIL, budget // 2))
        out, err = result.get("stdout", "")[-each:], result.get("stderr", "")[-each:]
        budget -= len(out) + len(err)
        kept.append(
            {
                "cmd": result.get("cmd"),
                "rc": result.get("rc"),
                "timed_out": result.get("timed_out"),
                "seconds": result.get("seconds"),
                "stdout_tail": out,
                "stderr_tail": err,
            }
        )
    return kept


class Acceptance:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.py = args.python
        self.out = os.path.abspath(args.out)
        self.raw = os.path.join(self.out, "raw")
        self.runner = Runner()
        self.rows: list[dict] = []
        self.header: dict = {}
        self.started = time.perf_counter()
        self.env = dict(os.environ)
        self.gpu_count = 0
        self.preflight: dict = {}

    # ---- helpers

    def progress(self, text: str) -> None:
        print(f"[{time.perf_counter() - self.started:6.1f}s] {text}", flush=True)

    def save_raw(self, name: str, text: str) -> str:
        path = os.path.join(self.raw, name)
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
        return path

    def env_with(self, cvd: Optional[str] = "keep", **extra: str) -> dict:
        env = dict(self.env)
        if cvd is None:
            env.pop("CUDA_VISIBLE_DEVICES", None)
        elif cvd != "keep":
            env["CUDA_VISIBLE_DEVICES"] = cvd
        env.update(extra)
        return env

    def mpdoctor(self, *args: str) -> list[str]:
        return [self.py, "-m", "mpdoctor", *args]

    def add(self, name: str, result: dict, seconds: float, outputs: Sequence[dict] = ()) -> dict:
        row = {
            "name": name,
            "status": result["status"],
            "seconds": round(seconds, 1),
            "detail": result["detail"],
            "problems": result.get("problems", []),
            "data": result.get("data", {}),
        }
        if result["status"] == FAIL and outputs:
            row["output"] = tails(outputs)
        self.rows.append(row)
        self.progress(f"{name}: {row['status']} ({row['seconds']} s) {row['detail']}")
        return row

    # ---- steps

    def step_preflight(self) -> bool:
        self.progress(f"cuda device: asking {self.py} about torch, NVML and CUDA")
        start = time.perf_counter()
        info_run = self.runner.run([self.py, "-c", PREFLIGHT], self.args.step_timeout, self.env, cwd=self.out)
        vis_run = self.runner.run([self.py, "-c", VISIBILITY], self.args.step_timeout, self.env, cwd=self.out)
        info, why = parse_json(info_run["stdout"].strip().splitlines()[-1] if info_run["stdout"].strip() else "")
        if not isinstance(info, dict):
            result = verdict([f"{self.py} could not describe itself: exit {info_run['rc']}, {why}"], "")
            self.add("cuda device", result, time.perf_counter() - start, [info_run])
            return False
        vis, _ = parse_json(vis_run["stdout"].strip().splitlines()[-1] if vis_run["stdout"].strip() else "")
        info["visibility"] = vis if isinstance(vis, dict) else {"errors": {"probe": vis_run["stderr"][-300:]}}
        # Test this checkout's mpdoctor: when the interpreter's own is another (or none), put the checkout first.
        mine = os.path.join(REPO, "mpdoctor") + os.sep
        if not str(info.get("mpdoctor_file", "")).startswith(mine):
            self.env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, self.env.get("PYTHONPATH")) if p)
            again = self.runner.run(
                [self.py, "-c", "import mpdoctor; print(mpdoctor.__file__)"],
                self.args.step_timeout,
                self.env,
                cwd=self.out,
            )
            if again["rc"] == 0 and again["stdout"].strip().startswith(mine):
                info.pop("mpdoctor_error", None)
                info["mpdoctor_file"] = again["stdout"].strip()
                info["mpdoctor_origin"] = "this checkout, through PYTHONPATH"
        info.setdefault("mpdoctor_origin", "installed")
        self.preflight = info
        nvml = info.get("nvml") or {}
        self.header = {
            "gpus": [g.get("name") for g in nvml.get("gpus") or []]
            or [d.get("name") for d in info["visibility"].get("devices") or []],
            "driver": nvml.get("driver") or nvml.get("error", ""),
            "torch": info.get("torch") or info.get("torch_error", ""),
            "cuda": info.get("torch_cuda"),
            "python": f"{info.get('python')} ({info.get('executable')})",
            "mpdoctor": f"{info.get('mpdoctor', '?')} from {info.get('mpdoctor_file', '?')} "
            f"({info.get('mpdoctor_origin')})",
            "cuda_visible_devices": info.get("cuda_visible_devices"),
            "platform": info.get("platform"),
        }
        result = judge_preflight(info)
        vis = info["visibility"]
        self.gpu_count = vis.get("runtime_count") or vis.get("torch_count") or 0
        self.add("cuda device", result, time.perf_counter() - start, [info_run, vis_run])
        return result["status"] == PASS

    def step_check(self) -> None:
        mode = "quick" if self.args.quick else "full"
        snap_path = os.path.join(self.out, "snapshot.json")
        if os.path.exists(snap_path):
            os.unlink(snap_path)
        # Two planted secrets of the shapes the snapshot keeps (HF_ and PIP_ variables): neither may come back.
        token = "hf_" + secrets.token_hex(17)
        password = "acc" + secrets.token_hex(8)
        env = self.env_with(HF_TOKEN=token, PIP_EXTRA_INDEX_URL=f"https://acceptance:{password}@example.invalid/simple")
        cmd = self.mpdoctor(
            "check",
            "--kernels",
            mode,
            "--format",
            "json",
            "--fail-on",
            "never",
            "--quiet",
            "--timeout",
            str(self.args.probe_timeout),
            "--save-snapshot",
            snap_path,
        )
        self.progress(f"check kernels: {' '.join(cmd[1:])} (timeout {self.args.check_timeout:g} s)")
        run = self.runner.run(cmd, self.args.check_timeout, env, cwd=self.out)
        self.save_raw("check.json", run["stdout"])
        self.save_raw("check.stderr.txt", run["stderr"])
        report, why = parse_json(run["stdout"])
        problems = []
        if run["timed_out"]:
            problems.append(f"timed out after {self.args.check_timeout:g} s")
        elif run["rc"] != 0:
            problems.append(f"exit {run['rc']}")
        if "Traceback (most recent call last)" in run["stderr"]:
            problems.append("a traceback on stderr")
        if not isinstance(report, dict):
            result = verdict(problems + [f"stdout is {why or 'not a JSON object'}: {last_line(run['stderr'])}"], "")
        else:
            result = judge_check_report(report, self.gpu_count)
            saved = None
            if os.path.exists(snap_path):
                with open(snap_path, encoding="utf-8", errors="replace") as handle:
                    saved = handle.read()
            snap_problems = judge_saved_snapshot(saved, run["stdout"], [token, password], ["HF_TOKEN"])
            all_problems = problems + result["problems"] + snap_problems
            passed = result["detail"] + "; snapshot redacted" if not all_problems else ""
            result = verdict(all_problems, passed, result["data"])
        result["detail"] = f"{mode}: {result['detail']}"
        result["data"]["mode"] = mode
        self.add("check kernels", result, run["seconds"], [run])

    def visibility_variants(self) -> list[tuple[str, Optional[str]]]:
        gpus = (self.preflight.get("nvml") or {}).get("gpus") or []
        uuid = gpus[0].get("uuid", "") if gpus else ""
        if not uuid:
            uuid = self.uuid_from_smi()
        count = len(gpus) or self.gpu_count
        variants: list[tuple[str, Optional[str]]] = [
            ("unset", None),
            ("0", "0"),
            ("-1", "-1"),
            (f"{count} (out of range)", str(count)),
        ]
        if uuid:
            variants += [("full UUID", uuid), ("UUID prefix", uuid[:12])]
        variants += [("unknown UUID", UNKNOWN_UUID), ("0,0", "0,0")]
        return variants

    def uuid_from_smi(self) -> str:
        run = self.runner.run(["nvidia-smi", "-L"], 20)
        match = re.search(r"\(UUID: (GPU-[0-9a-fA-F-]+)\)", run["stdout"])
        return match.group(1) if match else ""

    def step_visibility(self) -> None:
        variants = self.visibility_variants()
        self.progress(
            f"visible devices: {len(variants)} CUDA_VISIBLE_DEVICES values, "
            f"{self.args.jobs} at a time (timeout {self.args.step_timeout:g} s each)"
        )
        start = time.perf_counter()
        cmd = self.mpdoctor(
            "check",
            "--no-kernels",
            "--select",
            "GPU",
            "--format",
            "json",
            "--fail-on",
            "never",
            "--quiet",
            "--timeout",
            str(min(self.args.probe_timeout, 20)),
        )

        def one(variant: tuple[str, Optional[str]]) -> tuple[str, Optional[str], dict, dict, dict]:
            label, value = variant
            env = self.env_with(value)
            check = self.runner.run(cmd, self.args.step_timeout, env, cwd=self.out)
            fresh = self.runner.run([self.py, "-c", VISIBILITY], self.args.step_timeout, env, cwd=self.out)
            expected, why = parse_json(fresh["stdout"].strip().splitlines()[-1] if fresh["stdout"].strip() else "")
            if not isinstance(expected, dict):
                result = verdict([f"the fresh torch process gave no answer: exit {fresh['rc']}, {why}"], "")
            else:
                result = judge_visibility(
                    None if check["timed_out"] else check["rc"], check["stdout"], check["stderr"], expected
                )
                result["data"]["fresh"] = expected
            return label, value, result, check, fresh

        outcomes = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
            for label, value, result, check, fresh in pool.map(one, variants):
                slug = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_") or "x"
                self.save_raw(f"visible-{slug}.json", check["stdout"])
                self.progress(
                    f"  CUDA_VISIBLE_DEVICES={'(unset)' if value is None else value}: "
                    f"{result['status']} {result['detail']}"
                )
                outcomes.append((label, value, result, check, fresh))
        problems = [
            f"CUDA_VISIBLE_DEVICES={'(unset)' if v is None else v} ({label}): {p}"
            for label, v, r, _, _ in outcomes
            for p in r["problems"]
        ]
        data = {
            "variants": [
                {"label": label, "value": v, "status": r["status"], "detail": r["detail"], "problems": r["problems"]}
                for label, v, r, _, _ in outcomes
            ]
        }
        failed_runs = [x for _, _, r, c, f in outcomes if r["status"] == FAIL for x in (c, f)]
        passed = f"{len(outcomes)}/{len(outcomes)} values mapped as CUDA does"
        if not any(label == "full UUID" for label, *_ in outcomes):
            passed += " (no GPU UUID found: the UUID values were not tried)"
        self.add("visible devices", verdict(problems, passed, data), time.perf_counter() - start, failed_runs)

    def step_fleet(self, nproc: int) -> None:
        report_path = os.path.join(self.raw, f"fleet-{nproc}.json")
        if os.path.exists(report_path):
            os.unlink(report_path)
        deadline = max(10.0, self.args.fleet_timeout - 20)
        cmd = [
            self.py,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            str(nproc),
            "-m",
            "mpdoctor",
            "fleet",
            "--format",
            "json",
            "--output",
            report_path,
            "--fail-on",
            "never",
            "--kernels",
            "quick",
            "--timeout",
            str(min(self.args.probe_timeout, 20)),
            "--deadline",
            f"{deadline:g}",
        ]
        self.progress(f"fleet x{nproc}: {' '.join(cmd[1:])} (timeout {self.args.fleet_timeout:g} s)")
        run = self.runner.run(cmd, self.args.fleet_timeout, self.env, cwd=self.out)
        self.save_raw(f"fleet-{nproc}.stderr.txt", run["stderr"])
        report = None
        if os.path.exists(report_path):
            with open(report_path, encoding="utf-8", errors="replace") as handle:
                report, _ = parse_json(handle.read())
        result = judge_fleet(None if run["timed_out"] else run["rc"], report, nproc, self.gpu_count)
        if run["timed_out"]:
            result = verdict(
                [f"timed out after {self.args.fleet_timeout:g} s"] + result["problems"], "", result["data"]
            )
        self.add(f"fleet x{nproc}", result, run["seconds"], [run])

    def step_trace(self) -> None:
        self.progress(
            f"dtype_trace: Linear+LayerNorm under torch.autocast('cuda') (timeout {self.args.step_timeout:g} s)"
        )
        run = self.runner.run([self.py, "-c", TRACE, "cuda"], self.args.step_timeout, self.env, cwd=self.out)
        self.save_raw("trace.json", run["stdout"])
        lines = run["stdout"].strip().splitlines()
        data, why = parse_json(lines[-1] if lines else "")
        result = (
            judge_trace(data)
            if isinstance(data, dict)
            else verdict(
                [
                    f"exit {run['rc']}"
                    + (" (timed out)" if run["timed_out"] else "")
                    + f": {last_line(run['stderr']) or why}"
                ],
                "",
            )
        )
        self.add("dtype_trace", result, run["seconds"], [run])

    def step_tests(self) -> None:
        if self.args.skip_tests:
            self.add("tests", verdict([], "", skip="--skip-tests"), 0.0)
            return
        cmd = [self.py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        self.progress(f"tests: {' '.join(cmd[1:])} in {REPO} (timeout {self.args.tests_timeout:g} s)")
        run = self.runner.run(cmd, self.args.tests_timeout, self.env, cwd=REPO)
        self.save_raw("pytest.txt", run["stdout"] + "\n--- stderr ---\n" + run["stderr"])
        result = judge_tests(run["rc"], run["timed_out"], run["stdout"], self.args.tests_timeout)
        self.add("tests", result, run["seconds"], [run])

    # ---- the whole run

    def main(self) -> int:
        os.makedirs(self.raw, exist_ok=True)
        self.progress(f"GPU acceptance of {REPO} with {self.py}; results in {self.out}")
        try:
            if self.step_preflight():
                self.step_check()
                self.step_visibility()
                self.step_fleet(1)
                self.step_fleet(2)
                self.step_trace()
                self.step_tests()
            else:
                first = self.rows[0]["status"] if self.rows else FAIL
                why = "no CUDA device" if first == SKIP else "the interpreter is not ready"
                for name in STEPS[1:]:
                    self.rows.append(
                        {
                            "name": name,
                            "status": SKIP,
                            "seconds": 0.0,
                            "detail": f"not run: {why}",
                            "problems": [],
                            "data": {},
                        }
                    )
        except KeyboardInterrupt:
            self.runner.kill_all()
            self.progress("interrupted")
            self.rows.append(
                {
                    "name": "interrupted",
                    "status": FAIL,
                    "seconds": 0.0,
                    "detail": "Ctrl-C",
                    "problems": ["interrupted"],
                    "data": {},
                }
            )
        finally:
            self.runner.kill_all()
        return self.finish()

    def finish(self) -> int:
        statuses = [row["status"] for row in self.rows]
        if FAIL in statuses:
            code, outcome = 1, "fail"
        elif self.rows and self.rows[0]["status"] == SKIP:
            code, outcome = 2, "skip"
        else:
            code, outcome = 0, "pass"
        wall = round(time.perf_counter() - self.started, 1)
        table = render_table(self.header, self.rows, outcome, wall)
        print(table, flush=True)
        with open(os.path.join(self.out, "acceptance.md"), "w", encoding="utf-8") as handle:
            handle.write(render_markdown(self.header, self.rows, outcome, wall, self.args))
        doc = {
            "schema": SCHEMA,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": [sys.executable, *sys.argv],
            "outcome": outcome,
            "exit_code": code,
            "wall_seconds": wall,
            "header": self.header,
            "steps": self.rows,
        }
        with open(os.path.join(self.out, "acceptance.json"), "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=2, default=str)
            handle.write("\n")
        return code


def _header_lines(header: dict) -> list[str]:
    if not header:
        return ["(the interpreter could not be asked)"]
    cvd = header.get("cuda_visible_devices")
    return [
        f"gpus: {', '.join(header.get('gpus') or []) or 'none'}",
        f"driver: {header.get('driver') or '?'}",
        f"torch: {header.get('torch') or '?'}, CUDA {header.get('cuda') or 'none'}",
        f"python: {header.get('python')}",
        f"mpdoctor: {header.get('mpdoctor')}",
        f"CUDA_VISIBLE_DEVICES: {'(unset)' if cvd is None else cvd}",
    ]


def render_table(header: dict, rows: Sequence[dict], outcome: str, wall: float) -> str:
    lines = ["", "GPU acceptance: " + outcome.upper() + f" ({wall} s)"]
    lines += ["  " + line for line in _header_lines(header)]
    width = max([len("step")] + [len(row["name"]) for row in rows])
    lines.append("")
    lines.append(f"{'step'.ljust(width)}  result  seconds  detail")
    for row in rows:
        lines.append(f"{row['name'].ljust(width)}  {row['status']:<6}  {row['seconds']:>7.1f}  {row['detail']}")
    return "\n".join(lines)


def render_markdown(header: dict, rows: Sequence[dict], outcome: str, wall: float, args: argparse.Namespace) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = [
        f"# GPU acceptance: {outcome.upper()}",
        "",
        f"`python bench/gpu_acceptance.py --out {args.out}"
        + (" --quick" if args.quick else "")
        + (" --skip-tests" if args.skip_tests else "")
        + f"`, {wall} s",
        "",
    ]
    lines += [f"- {cell(line)}" for line in _header_lines(header)]
    lines += ["", "| step | result | seconds | detail |", "|---|---|---:|---|"]
    lines += [f"| {cell(r['name'])} | {r['status']} | {r['seconds']:.1f} | {cell(r['detail'])} |" for r in rows]
    for row in rows:
        if row["status"] == FAIL and len(row.get("problems") or []) > 1:
            lines += ["", f"## {row['name']}: what failed", ""] + [f"- {cell(p)}" for p in row["problems"]]
    return "\n".join(lines) + "\n"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        required=True,
        help="directory for acceptance.md, acceptance.json, snapshot.json and the raw outputs (raw/)",
    )
    parser.add_argument("--quick", action="store_true", help="check with --kernels quick instead of full")
    parser.add_argument("--skip-tests", action="store_true", help="do not run the test suite")
    parser.add_argument("--python", default=sys.executable, help="the interpreter with CUDA torch (default: this one)")
    parser.add_argument("--check-timeout", type=float, default=150.0, help="seconds for the kernel check (150)")
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=90.0,
        help="seconds for each other command: each visible-devices run, dtype_trace (90)",
    )
    parser.add_argument("--fleet-timeout", type=float, default=150.0, help="seconds for each torchrun (150)")
    parser.add_argument("--tests-timeout", type=float, default=900.0, help="seconds for the test suite (900)")
    parser.add_argument(
        "--probe-timeout",
        type=float,
        default=40.0,
        help="mpdoctor's own --timeout for the check (40: its probing ends within 3.5x + 5 s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=max(1, min(4, os.cpu_count() or 1)),
        help="visible-devices commands run at once (default: up to 4)",
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    return Acceptance(args).main()


if __name__ == "__main__":
    sys.exit(main())
