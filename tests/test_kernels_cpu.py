"""The microkernels for real, on this machine's CPU with the installed torch.

In-process calls prove each kernel's bookkeeping (accuracy, timing, status);
one end-to-end run proves the forked runner and the parent's parsing.
"""

from __future__ import annotations

import json
import math
import sys

import pytest

torch = pytest.importorskip("torch")

from mpdoctor.probes.remote import kernel_measure, kernel_suite as ks  # noqa: E402
from mpdoctor.probes.kernels import probe_kernels  # noqa: E402
from mpdoctor.probes.budget import Budget  # noqa: E402
from mpdoctor.schema.serde import to_data  # noqa: E402


@pytest.fixture(scope="module")
def cpu():
    return ks.Device(torch, "cpu", "quick")


@pytest.fixture(scope="module")
def plan_results():
    """Every test of the CPU plan, run once in this process."""
    return {key: func() for key, func in ks.plan(torch, "cpu", "quick")}


def test_every_cpu_kernel_runs_and_is_accurate(plan_results):
    numeric = {
        k: r for k, r in plan_results.items() if r.get("op") in ("matmul", "conv2d", "layer_norm", "softmax", "sdpa")
    }
    ran = {k: r for k, r in numeric.items() if r["status"] != "skipped"}
    assert {"matmul/float32", "matmul/float16", "matmul/bfloat16", "conv2d/float16", "sdpa/bfloat16/math"} <= set(ran)
    for key, r in ran.items():
        assert r["status"] == "ok", (key, r)
        assert 0 <= r["max_rel_error"] <= r["tolerance"], key
        assert r["seconds"] > 0, key
    # Low precision really is less precise than fp32: the error measures something.
    assert ran["matmul/float32"]["max_rel_error"] < 1e-5 < ran["matmul/float16"]["max_rel_error"]
    assert ran["matmul/float16"]["max_rel_error"] < ran["matmul/bfloat16"]["max_rel_error"]


def test_cpu_plan_skips_what_does_not_apply(plan_results):
    assert plan_results["matmul/tf32"]["status"] == "skipped"
    assert plan_results["matmul/float8_e4m3fn"]["status"] == "skipped"
    for dtype in ("float16", "bfloat16"):
        for backend in ("efficient", "cudnn"):
            assert plan_results[f"sdpa/{dtype}/{backend}"]["status"] == "skipped"
    assert plan_results["device"]["threads"] >= 1


def test_autocast_and_grad_scaler_on_cpu(plan_results):
    for dtype in ("float16", "bfloat16"):
        r = plan_results[f"autocast/{dtype}"]
        assert r["status"] == "ok" and r["output_dtypes"] == {"linear": dtype, "matmul": dtype}
    step = plan_results["grad_scaler/float16"]
    assert step["status"] == "ok", step
    assert step["loss_finite"] and step["grads_finite"] and step["scale_after"] >= step["scale_before"] == 65536.0


def test_each_op_is_timed_interleaved_with_a_spread(plan_results):
    timed = plan_results["timing/matmul"]["timed"]
    assert {"matmul/float32", "matmul/float16", "matmul/bfloat16"} <= set(timed)
    for key, facts in timed.items():
        assert facts["rounds"] + facts["rounds_disturbed"] >= kernel_measure.EARLY_ROUNDS, key
        assert 0 < facts["seconds"] <= facts["seconds_median"] <= facts["seconds_max"], key
    assert set(plan_results["timing/sdpa"]["timed"]) >= {"sdpa/float32", "sdpa/float16/math"}
    load = plan_results["retime"]["load"]
    assert load["rounds"] >= 5 * kernel_measure.EARLY_ROUNDS and load["cpus"] >= 1 and load["extra_seconds"] >= 0
    assert load["rounds_disturbed"] <= load["rounds"] and isinstance(load["budget_exhausted"], bool)


def test_the_runner_stops_where_the_host_could_not_judge_anyway():
    from mpdoctor.analysis import kernel_view

    # One constant: the host judges by the very CONCLUSIVE_ROUNDS the runner stops by (no mirror to drift).
    assert kernel_view.CONCLUSIVE_ROUNDS == kernel_measure.CONCLUSIVE_ROUNDS and not hasattr(kernel_view, "MIN_ROUNDS")
    assert kernel_measure.EARLY_ROUNDS < kernel_measure.CONCLUSIVE_ROUNDS <= kernel_measure.MIN_ROUNDS


def test_the_load_sampler_sees_a_busy_loop():
    """A real busy process beside us: the sampler counts it as runnable and its CPU time as others'."""
    import subprocess
    import time

    from mpdoctor.probes.remote import load_sample

    busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        time.sleep(0.3)
        before = load_sample.sample()
        seen = []
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            seen.append(load_sample.runnable_now())
            time.sleep(0.02)
        window = load_sample.window(before, load_sample.sample())
    finally:
        busy.kill()
        busy.wait()
    assert max(seen) >= 1  # the busy loop is always runnable
    assert window["others_cores"] >= 0.5 and window["runnable_others"] is not None


def test_wrong_numbers_are_caught(cpu):
    x = cpu.randn(64, 64)
    expected = torch.matmul(x.double(), x.double())
    assert ks.measure(cpu, "matmul", "float32", lambda: torch.matmul(x, x), expected)["status"] == "ok"
    off = ks.measure(cpu, "matmul", "float16", lambda: torch.matmul(x, x) * 1.1, expected)
    assert off["status"] == "wrong" and "exceeds the float16 tolerance" in off["detail"]
    nan = ks.measure(cpu, "matmul", "float16", lambda: torch.full((64, 64), math.nan), expected)
    assert nan["status"] == "wrong" and nan["max_rel_error"] is None


def test_a_kernel_that_raises_is_unsupported(cpu):
    def refuse():
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")

    r = ks.measure(cpu, "matmul", "float16", refuse, torch.zeros(1))
    assert r["status"] == "unsupported" and "addmm_impl_cpu_" in r["detail"] and "seconds" not in r


def test_sdpa_reason_joins_the_warning_that_follows():
    messages = [
        "Memory efficient kernel not used because:",
        "Expected query, key and value to all be of dtype: {Half, Float}. Got Query dtype: c10::BFloat16 instead.",
        "unrelated",
    ]
    assert kernel_measure.sdpa_reason(messages) == (
        " (Memory efficient kernel not used because: Expected query, key and "
        "value to all be of dtype: {Half, Float}. Got Query dtype: c10::BFloat16 "
        "instead.)"
    )
    assert kernel_measure.sdpa_reason(["something else"]) == ""


@pytest.mark.skipif(not hasattr(torch, "_scaled_mm"), reason="torch without _scaled_mm")
def test_fp8_gemm_path_runs_where_torch_has_it(cpu):
    # The CPU claims no fp8, so the plan skips it; the code path itself is exercised here.
    try:
        r = ks.fp8_gemm(cpu)
    except RuntimeError as exc:  # an older CPU build without fp8 GEMMs
        pytest.skip(f"this torch has no CPU fp8 GEMM: {exc}")
    assert r["status"] == "ok", r
    assert r["max_rel_error"] < r["tolerance"]


def test_whole_runner_end_to_end(this_machine):
    """The real runner: import torch, fork the CPU worker (and one per GPU where there are any), parse their files.

    On a GPU machine this is the end-to-end proof that the GPU workers, forked by a runner that
    has imported torch, can start CUDA (real torch refuses it after a poisoning call).
    """
    info = probe_kernels(sys.executable, Budget.from_timeout(60), "quick")
    assert info.status == "ok" and info.probe.status == "ok", info
    assert info.cuda_available is bool(this_machine.torch["cuda_available"])  # the count child says so
    assert [d.device for d in info.devices] == ["cpu", *this_machine.cuda_device_names]
    for gpu in info.devices[1:]:
        assert gpu.status == "ok" and gpu.restarts == 0, (gpu.device, gpu.status, gpu.detail)
        assert {r.status for r in gpu.results} <= {"ok", "skipped", "unsupported"}, gpu.results
    device = info.devices[0]
    assert device.device == "cpu" and device.status == "ok" and device.restarts == 0
    statuses = {(r.op, r.dtype, r.backend): r.status for r in device.results}
    assert statuses[("matmul", "float16", "")] == "ok"
    assert statuses[("grad_scaler", "float16", "")] == "ok"
    assert set(statuses.values()) <= {"ok", "skipped"}
    json.dumps(to_data(info), allow_nan=False)  # strict JSON: no NaN or Infinity anywhere


def test_one_key_names_a_test_in_the_child_and_on_the_host(plan_results):
    """The child names each test and its timings by kernel_key; the host reads them back by the same helper."""
    from mpdoctor.probes.environment import StepFile
    from mpdoctor.probes.kernels import device_facts, known_key

    tests = [key for key in plan_results if key not in ("device", "retime")]
    for key in tests:
        op, dtype, backend = kernel_measure.parse_key(key)
        assert kernel_measure.kernel_key(op, dtype, backend) == key and known_key(key), key
        if op == ks.TIMING:
            assert {kernel_measure.parse_key(k)[0] for k in plan_results[key]["timed"]} == {dtype}, key
            assert set(plan_results[key]["timed"]) <= set(tests)
        else:
            assert (plan_results[key]["op"], plan_results[key]["dtype"], plan_results[key]["backend"]) == (
                op,
                dtype,
                backend,
            )
    text = "".join(json.dumps({"step": key, "data": data}) + "\n" for key, data in plan_results.items())
    device = device_facts("cpu", StepFile(text))
    timed = {k for key in tests if key.startswith(ks.TIMING) for k in plan_results[key]["timed"]}
    joined = {kernel_measure.kernel_key(r.op, r.dtype, r.backend) for r in device.results if r.rounds is not None}
    assert joined == timed and any("/" in k.partition("/")[2] for k in joined)  # SDPA backends joined too
