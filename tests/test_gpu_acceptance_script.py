"""bench/gpu_acceptance.py: run for real where there is no CUDA device, and its judges on real JSON.

The judges are pure (JSON in, verdict out); they are held to the real H200 capture (../shared/captures, whose
kernels never ran on the GPU: the kernel step must fail on it), to a real re-judging of that capture by today's
`mpdoctor check --snapshot`, and to a real dtype_trace run of the script's own trace program on the CPU.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "gpu_acceptance.py"
CAPTURES = [
    REPO.parent / "shared" / "captures" / "h200-torch2.11-cu130-snapshot.json",
    REPO / "tests" / "fixtures" / "h200-fork-refused.json",
]  # the same capture, copied
H200_UUID = "GPU-8731a51e-f4a8-1ed8-dbb3-ea2c72f10b5f"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_acceptance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ga = _load()


@pytest.fixture(scope="module")
def capture() -> dict:
    for path in CAPTURES:
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    pytest.skip("the H200 capture is not here (../shared/captures)")


def rejudge(capture: dict, tmp_path_factory, *options: str) -> dict:
    """Today's `mpdoctor check --snapshot CAPTURE --format json OPTIONS`, for real."""
    path = tmp_path_factory.mktemp("capture") / "snap.json"
    path.write_text(json.dumps(capture), encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpdoctor",
            "check",
            "--snapshot",
            str(path),
            "--format",
            "json",
            "--fail-on",
            "never",
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path_factory.mktemp("cwd"),
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def capture_report(capture, tmp_path_factory) -> dict:
    """The kernel step's report of the capture: every check, findings and the device table."""
    return rejudge(capture, tmp_path_factory)


@pytest.fixture(scope="module")
def capture_gpu_report(capture, tmp_path_factory) -> dict:
    """The visible-devices step's report of the capture: --select GPU."""
    return rejudge(capture, tmp_path_factory, "--select", "GPU")


def healed(capture: dict, cc: str = "9.0", dtypes=("float16", "bfloat16", "tf32", "float8_e4m3fn")) -> dict:
    """The capture as a healthy H200 would have given it: cuda:0's kernels ran, torch listed the device."""
    snap = copy.deepcopy(capture)
    cpu = next(d for d in snap["kernels"]["devices"] if d["device"] == "cpu")
    gpu = next(d for d in snap["kernels"]["devices"] if d["device"] == "cuda:0")
    results = [dict(r, status="ok", detail="") for r in cpu["results"] if r["op"] != "matmul" and r["status"] == "ok"]
    results += [
        {"op": "matmul", "dtype": dtype, "backend": "", "status": "ok", "detail": ""} for dtype in ("float32", *dtypes)
    ]
    gpu.update(
        status="ok",
        detail="",
        name="NVIDIA H200",
        compute_capability=cc,
        seconds=1.9,
        init_seconds=0.4,
        results=results,
    )
    snap["torch"]["devices"] = [{"ordinal": 0, "name": "NVIDIA H200", "compute_capability": cc, "uuid": H200_UUID[4:]}]
    snap["torch"]["fact_errors"] = {}
    return {"findings": [], "snapshot": snap, "gpus": {"devices": []}}


# --------------------------------------------------------------------------- the script, run here for real


def test_without_a_cuda_device_it_skips_every_step_and_exits_2(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1")  # no CUDA device even where there is a GPU
    out = tmp_path / "acc"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--skip-tests"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("[") and "cuda device: SKIP" in line for line in lines)  # a progress line
    table = lines[lines.index(next(line for line in lines if line.startswith("step "))) :]
    assert [line.split()[0] for line in table[1:]] == [
        "cuda",
        "check",
        "visible",
        "fleet",
        "fleet",
        "dtype_trace",
        "tests",
    ]
    assert "SKIP" in table[1] and "no CUDA device:" in table[1]
    assert all(" SKIP " in line for line in table[1:])
    assert "GPU acceptance: SKIP" in result.stdout and "torch:" in result.stdout and "python:" in result.stdout

    doc = json.loads((out / "acceptance.json").read_text(encoding="utf-8"))
    assert doc["schema"] == ga.SCHEMA and doc["outcome"] == "skip" and doc["exit_code"] == 2
    assert set(doc["header"]) >= {"gpus", "driver", "torch", "cuda", "python", "mpdoctor"}
    assert [step["name"] for step in doc["steps"]] == list(ga.STEPS)
    for step in doc["steps"]:
        assert set(step) >= {"name", "status", "seconds", "detail", "problems", "data"}
        assert step["status"] == "SKIP"
    assert doc["steps"][0]["detail"].startswith("no CUDA device: ")
    markdown = (out / "acceptance.md").read_text(encoding="utf-8")
    assert markdown.startswith("# GPU acceptance: SKIP") and "| cuda device | SKIP |" in markdown


def test_usage_error_exits_2():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--out" in result.stderr


# --------------------------------------------------------------------------- step 1: the kernel check


def test_kernel_step_fails_on_the_real_h200_capture(capture):
    result = ga.judge_check_report(capture, expected_count=1)
    assert result["status"] == "FAIL"
    text = "\n".join(result["problems"])
    assert "cuda:0: kernels error: RuntimeError: Cannot re-initialize CUDA in forked subprocess" in text
    assert "torch.devices is empty" in text
    assert "torch.fact_errors['device 0']" in text
    assert result["data"]["devices"]["cuda:0"]["status"] == "error"


def test_kernel_step_fails_on_todays_judging_of_the_capture(capture_report):
    result = ga.judge_check_report(capture_report, expected_count=1)
    assert result["status"] == "FAIL"
    own = [f["code"] for f in capture_report["findings"] if f["code"] == "PREC009" or f["code"].startswith("MPD")]
    assert own, "the capture's failed kernel run is judged as PREC009 or an MPD finding"
    assert all(any(code in problem for problem in result["problems"]) for code in own)


def test_kernel_step_passes_on_a_healthy_h200(capture):
    result = ga.judge_check_report(healed(capture), expected_count=1)
    assert result["status"] == "PASS", result["problems"]
    assert "cuda:0 NVIDIA H200 cc 9.0" in result["detail"] and "fp16 bf16 tf32 fp8 ok" in result["detail"]
    assert result["data"]["devices"]["cuda:0"]["seconds"] == 1.9


@pytest.mark.parametrize(
    "cc, dtypes, missing",
    [
        ("9.0", ("float16", "bfloat16", "tf32"), "float8_e4m3fn"),  # Hopper has fp8: it must be measured
        ("8.9", ("float16", "bfloat16", "tf32"), "float8_e4m3fn"),  # so has Ada
        ("8.6", ("float16", "tf32"), "bfloat16"),
        ("8.0", ("float16", "bfloat16"), "tf32"),
    ],
)
def test_kernel_step_wants_every_dtype_the_card_has(capture, cc, dtypes, missing):
    result = ga.judge_check_report(healed(capture, cc, dtypes), expected_count=1)
    assert result["status"] == "FAIL"
    assert result["problems"] == [f"cuda:0 (cc {cc}): no matmul {missing} result"]


@pytest.mark.parametrize(
    "cc, dtypes", [("8.6", ("float16", "bfloat16", "tf32")), ("7.5", ("float16",)), ("7.0", ("float16",))]
)
def test_kernel_step_asks_only_for_the_dtypes_the_card_has(capture, cc, dtypes):
    assert ga.judge_check_report(healed(capture, cc, dtypes), expected_count=1)["status"] == "PASS"


def test_kernel_step_fails_on_a_bad_result_a_prec009_or_an_mpd_finding(capture):
    report = healed(capture)
    gpu = report["snapshot"]["kernels"]["devices"][1]
    next(r for r in gpu["results"] if r["op"] == "matmul" and r["dtype"] == "tf32")["status"] = "skipped"
    gpu["results"].append({"op": "softmax", "dtype": "float16", "backend": "", "status": "wrong", "detail": "off"})
    report["findings"] = [
        {"severity": "error", "title": "Could not start cuda:0", "code": "PREC009"},
        {"severity": "warning", "title": "a check crashed", "code": "MPD001"},
        {"severity": "info", "title": "busy", "code": "PREC011"},
    ]
    problems = ga.judge_check_report(report, expected_count=1)["problems"]
    assert problems == [
        "error PREC009: Could not start cuda:0",
        "warning MPD001: a check crashed",
        "cuda:0 softmax/float16: wrong: off",
        "cuda:0 (cc 9.0): matmul tf32 skipped",
    ]


def test_kernel_step_compares_torch_devices_with_cuda_and_nvml(capture):
    report = healed(capture)
    assert ga.judge_check_report(report, expected_count=2)["problems"] == [
        "torch.devices lists 1 device(s), CUDA counts 2"
    ]
    two = copy.deepcopy(report)
    two["snapshot"]["machine"]["nvml"]["gpus"].append(
        dict(two["snapshot"]["machine"]["nvml"]["gpus"][0], index=1, uuid="GPU-11111111-2222-3333-4444-555555555555")
    )
    assert ga.judge_check_report(two)["problems"] == [
        "torch.devices lists 1 device(s), NVML's 2 GPU(s) under CUDA_VISIBLE_DEVICES=None promise 2"
    ]
    two["snapshot"]["environment"]["env"]["CUDA_VISIBLE_DEVICES"] = "1"
    assert ga.judge_check_report(two)["status"] == "PASS"


def test_nvml_expected_count_reads_cuda_visible_devices_as_cuda_does():
    gpus = [{"uuid": "GPU-aaaa1111-0000"}, {"uuid": "GPU-aaaa2222-0000"}, {"uuid": "GPU-bbbb0000-0000"}]
    count = ga.nvml_expected_count
    assert count(None, gpus) == 3
    assert count("", gpus) == 0
    assert count("-1", gpus) == 0
    assert count("2,0", gpus) == 2
    assert count("0,3,1", gpus) == 1  # stops at the first invalid entry
    assert count("GPU-bbbb", gpus) == 1
    assert count("GPU-aaaa", gpus) == 0  # ambiguous prefix
    assert count("GPU-ffff", gpus) == 0  # unknown UUID
    assert count("0,0", gpus) is None  # repeated: ask CUDA
    assert count("MIG-x", gpus) is None
    assert count(None, [{"uuid": "GPU-a", "mig_enabled": True}]) is None


def test_saved_snapshot_judge_finds_a_planted_secret(capture):
    text = json.dumps(dict(capture, environment=dict(capture["environment"], env={"HF_TOKEN": "<redacted>"})))
    assert ga.judge_saved_snapshot(text, "{}", ["hf_canary"], ["HF_TOKEN"]) == []
    assert ga.judge_saved_snapshot(text.replace("<redacted>", "hf_canary"), "{}", ["hf_canary"], ["HF_TOKEN"]) == [
        "the saved snapshot holds a planted secret unredacted"
    ]
    assert ga.judge_saved_snapshot(text, "x hf_canary", ["hf_canary"]) == [
        "the JSON report holds a planted secret unredacted"
    ]
    assert ga.judge_saved_snapshot(json.dumps(capture), "{}", [], ["HF_TOKEN"]) == [
        "the saved snapshot does not record HF_TOKEN (planted to test redaction)"
    ]
    assert ga.judge_saved_snapshot(None, "{}", []) == ["--save-snapshot wrote no file"]


# --------------------------------------------------------------------------- step 2: CUDA_VISIBLE_DEVICES


def fresh(count: int, uuid: str = H200_UUID[4:], name: str = "NVIDIA H200") -> dict:
    """What the script's VISIBILITY program prints under a value that selects ``count`` H200s."""
    return {
        "available": bool(count),
        "torch_count": count,
        "runtime_count": count,
        "errors": {},
        "devices": [{"ordinal": i, "name": name, "compute_capability": "9.0", "uuid": uuid} for i in range(count)],
    }


def test_visibility_judge_on_todays_judging_of_the_capture(capture_gpu_report):
    stdout = json.dumps(capture_gpu_report)
    result = ga.judge_visibility(0, stdout, "", fresh(1))
    assert result["status"] == "PASS", result["problems"]
    assert result["detail"].startswith("cuda:0=NVIDIA H200*")  # predicted: torch listed no device there
    assert ga.judge_visibility(0, stdout, "", fresh(1, name="NVIDIA H100"))["problems"] == [
        "cuda:0 is 'NVIDIA H200', CUDA says 'NVIDIA H100'"
    ]
    assert ga.judge_visibility(0, stdout, "", fresh(1, uuid="0000"))["problems"] == [
        f"cuda:0 has UUID {H200_UUID}, CUDA says 0000"
    ]
    assert ga.judge_visibility(0, stdout, "", fresh(0))["problems"] == [
        "torch.runtime_device_count 1, a fresh process got 0",
        "torch.device_count 1, a fresh process got 0",
        "the device table shows 1 CUDA device(s), CUDA counts 0",
    ]


def test_visibility_judge_wants_a_clean_exit_and_json(capture_gpu_report):
    stdout = json.dumps(capture_gpu_report)
    assert ga.judge_visibility(3, stdout, "Traceback (most recent call last):\n  ...", fresh(1))["problems"] == [
        "exit 3",
        "a traceback on stderr",
    ]
    assert ga.judge_visibility(None, "", "", fresh(1))["problems"][0] == "timed out"
    assert ga.judge_visibility(0, "not json", "", fresh(1))["problems"][0].startswith("stdout is not JSON")
    mpd = dict(capture_gpu_report, findings=[{"severity": "error", "title": "crashed", "code": "MPD001"}])
    assert ga.judge_visibility(0, json.dumps(mpd), "", fresh(1))["problems"] == ["MPD001: crashed"]


# --------------------------------------------------------------------------- step 3: fleet


def fleet_report(statuses, codes=()):
    return {
        "launcher": "torchrun",
        "world_size": len(statuses),
        "ranks": [
            {"rank": i, "status": s, "detail": "", "last_step": "importing torch"} for i, s in enumerate(statuses)
        ],
        "findings": [{"severity": "warning", "title": "t", "code": c} for c in codes],
    }


def test_fleet_judge():
    assert ga.judge_fleet(0, fleet_report(["reported"]), 1, 1)["status"] == "PASS"
    two = ga.judge_fleet(0, fleet_report(["reported", "reported"], ["FLEET008"]), 2, 1)
    assert two["status"] == "PASS" and "FLEET008 expected" in two["detail"]
    assert ga.judge_fleet(0, fleet_report(["reported", "reported"]), 2, 1)["problems"] == [
        "no FLEET008 with 2 ranks on 1 visible GPU(s)"
    ]
    assert ga.judge_fleet(0, fleet_report(["reported", "reported"]), 2, 2)["status"] == "PASS"
    assert ga.judge_fleet(1, fleet_report(["reported", "missing"], ["FLEET001", "FLEET008"]), 2, 1)["problems"] == [
        "torchrun exit 1",
        "rank 1 missing: importing torch",
    ]
    assert ga.judge_fleet(0, None, 2, 1)["problems"] == ["rank 0 wrote no JSON report"]


# --------------------------------------------------------------------------- step 4: dtype_trace


@pytest.fixture(scope="module")
def cpu_trace() -> dict:
    """The script's own trace program, run for real on the CPU (autocast on cpu)."""
    result = subprocess.run([sys.executable, "-c", ga.TRACE, "cpu"], capture_output=True, text=True, timeout=180)
    if result.returncode != 0 and "No module named 'torch'" in result.stderr:
        pytest.skip("torch is not installed")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_trace_judge_on_a_real_trace(cpu_trace):
    on_cpu = ga.judge_trace(cpu_trace, device="cpu")
    assert on_cpu["status"] == "PASS", on_cpu["problems"]
    assert on_cpu["detail"].startswith("traced float16 (") and "bfloat16" in on_cpu["detail"]
    on_cuda = ga.judge_trace(cpu_trace, device="cuda")  # what a CPU-only run would look like to the GPU step
    assert on_cuda["status"] == "FAIL"
    assert on_cuda["problems"][0] == "float16: no call recorded on cuda (devices: ['cpu'])"


def test_trace_judge_wants_autocast_and_its_dtype(cpu_trace):
    off = copy.deepcopy(cpu_trace)
    for call in off["runs"]["float16"]["trace"]["calls"]:
        call["autocast"] = False
        for output in call["outputs"]:
            output["dtype"] = "float32"
    assert ga.judge_trace(off, device="cpu")["problems"] == [
        "float16: no cpu call with autocast float16 recorded",
        "float16: no Linear on cpu recorded a float16 output",
    ]
    older = {"compute_capability": "7.5", "runs": {"float16": cpu_trace["runs"]["float16"]}}
    assert ga.judge_trace(older, device="cpu")["status"] == "FAIL"  # the CPU has bf16 autocast: asked for
    assert (
        ga.judge_trace({"runs": {"float16": {"error": "RuntimeError: x"}}})["problems"][0] == "float16: RuntimeError: x"
    )
    assert ga.judge_trace(None)["status"] == "FAIL"


# --------------------------------------------------------------------------- step 5: the test suite


def test_pytest_summary_parsing():
    text = "\n".join(
        [
            "....F..s.E",
            "=========================== short test summary info ============================",
            "SKIPPED [1] tests/test_a.py:3: no GPU",
            "FAILED tests/test_b.py::test_one[x-1] - AssertionError: no",
            "ERROR tests/test_c.py::test_two - RuntimeError",
            "2 failed, 120 passed, 4 skipped, 1 error, 3 warnings in 91.20s (0:01:31)",
        ]
    )
    parsed = ga.parse_pytest(text)
    assert parsed["counts"] == {"failed": 2, "passed": 120, "skipped": 4, "errors": 1, "warnings": 3}
    assert parsed["failing"] == ["tests/test_b.py::test_one[x-1]", "tests/test_c.py::test_two"]
    result = ga.judge_tests(1, False, text, 900)
    assert result["status"] == "FAIL"
    assert result["detail"] == "2 failed, 1 errors: tests/test_b.py::test_one[x-1] tests/test_c.py::test_two"
    good = ga.judge_tests(0, False, "120 passed, 4 skipped in 9.10s", 900)
    assert good["status"] == "PASS" and good["detail"] == "120 passed, 4 skipped"
    assert ga.judge_tests(None, True, "....", 900)["problems"] == ["timed out after 900 s"]
    assert ga.judge_tests(2, False, "ERROR: usage", 900)["problems"] == ["pytest exit 2 (no summary line)"]


def test_preflight_reasons():
    cpu = {"executable": "/py", "torch": "2.13.0+cpu", "torch_cuda": None, "nvml": {"error": "NVMLError"}}
    result = ga.judge_preflight(cpu)
    assert result["status"] == "SKIP" and result["detail"].startswith("no CUDA device: torch 2.13.0+cpu is a CPU")
    hidden = {
        "executable": "/py",
        "torch": "2.11.0+cu130",
        "torch_cuda": "13.0",
        "cuda_visible_devices": "-1",
        "nvml": {"gpus": [{"name": "NVIDIA H200"}]},
        "visibility": fresh(0),
    }
    assert ga.judge_preflight(hidden)["detail"].startswith(
        "no CUDA device: torch 2.11.0+cu130 counts 0 CUDA devices (CUDA_VISIBLE_DEVICES='-1'); NVML sees 1 GPU"
    )
    ready = dict(hidden, cuda_visible_devices=None, visibility=fresh(1), mpdoctor="0.1.0", missing=[])
    assert ga.judge_preflight(ready)["status"] == "PASS"
    assert ga.judge_preflight(dict(ready, missing=["typer"]))["status"] == "FAIL"
