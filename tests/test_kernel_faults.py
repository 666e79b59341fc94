"""Faults inside the precision microkernels cost only themselves.

The real kernel runner runs real torch on the CPU, with one kernel sabotaged by a
``sitecustomize.py`` put on ``PYTHONPATH`` (production code is untouched). Proven:

* a kernel that kills its worker (SIGSEGV) is recorded as ``crashed``, a fresh
  worker resumes at the next test, every later test still has its real result,
  and PREC009 reports it as an error;
* a kernel that never returns is killed at the stall limit (``Budget.kernel_step``,
  ``max(2, timeout/4)`` s, not the device's or the runner's whole limit), recorded as ``timeout``,
  the later tests still run, and PREC009 reports it as a warning;
* a kernel that returns garbage (NaN, random numbers) is ``wrong``, PREC003 says
  so, and no NaN reaches the snapshot's JSON;
* a device that keeps crashing is given up after ``MAX_RESTARTS`` restarts;
* junk in the step files (not JSON, binary, wrong shapes, wrong types, NaN, a
  line cut short) becomes ``error`` entries, never an exception, and the good
  entries beside it survive and serialise as strict JSON;
* a torch that cannot be imported leaves the kernels ``not-run`` with the reason,
  and no precision finding claims anything about them.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from mpdoctor.analysis.kernel_view import verdict
from mpdoctor.doctor.judge import judge
from mpdoctor.findings import Finding
from mpdoctor.probes.remote import kernel_runner, kernel_suite
from mpdoctor.probes.remote.kernel_measure import kernel_key
from mpdoctor.probes.child import ChildResult
from mpdoctor.probes.environment import StepFile
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.kernels import device_facts, kernel_facts, probe_kernels
from mpdoctor.render.json_out import render_snapshot_json
from mpdoctor.schema.serde import to_data
from mpdoctor.snapshot import DeviceKernels, KernelInfo, KernelResult, Snapshot, snapshot_from_data

GENEROUS = 30.0  # the per-probe timeout where the test is not about time: no spurious stalls on a busy machine

# Put first in every target interpreter through PYTHONPATH. ``_fault(owner, name,
# dtype, act)`` replaces ``owner.name`` so that a call whose first argument has
# ``dtype`` runs ``act(real, *args, **kwargs)`` instead; the suite looks the
# functions up on the module at call time, so it calls the wrapper.
SITE_PRELUDE = """\
import os, signal, time, warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch

def _fault(owner, name, dtype, act):
    real = getattr(owner, name)

    def wrapper(x, *args, **kwargs):
        if getattr(x, "dtype", None) == getattr(torch, dtype):
            return act(real, x, *args, **kwargs)
        return real(x, *args, **kwargs)

    setattr(owner, name, wrapper)

SEGFAULT = lambda real, *args, **kwargs: os.kill(os.getpid(), signal.SIGSEGV)
"""


# ---------------------------------------------------------------- helpers


def plan_keys() -> list[str]:
    """The CPU plan's result keys in order, from the suite itself (a stub torch: no kernel runs)."""
    stub = types.SimpleNamespace(Generator=lambda: types.SimpleNamespace(manual_seed=lambda seed: None))
    return [
        key
        for key, _ in kernel_suite.plan(stub, "cpu", "quick")
        if key not in ("device", "retime") and not key.startswith(kernel_suite.TIMING + "/")
    ]


def run_with_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, faults: str, timeout: float = GENEROUS
) -> tuple[KernelInfo, float]:
    """``probe_kernels`` on this interpreter with a sitecustomize applying ``faults``; (info, wall s)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE_PRELUDE + textwrap.dedent(faults), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    # The subject is the CPU worker: on a GPU machine the faults (matched by dtype) would hit the GPU worker too.
    # Real CUDA reads an empty CUDA_VISIBLE_DEVICES as "no devices", so the runner plans the CPU alone.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    began = time.monotonic()
    info = probe_kernels(sys.executable, Budget.from_timeout(timeout), "quick")
    return info, time.monotonic() - began


def cpu(info: KernelInfo) -> DeviceKernels:
    assert info.status == "ok", (info.status, info.detail, info.probe)
    assert [d.device for d in info.devices] == ["cpu"], info.devices
    return info.devices[0]


def by_key(device: DeviceKernels) -> dict[str, KernelResult]:
    return {kernel_key(r.op, r.dtype, r.backend): r for r in device.results}


def assert_only_faulted(device: DeviceKernels, faulted: dict[str, str]) -> dict[str, KernelResult]:
    """Every test of the plan has a result, in plan order; ``faulted`` keys have their status, all others ran.

    This is what a lost worker would break: the tests after the fault would be
    missing, or carry the fault's status.
    """
    results = by_key(device)
    assert list(results) == plan_keys(), "tests missing or out of order after the fault"
    for key, status in faulted.items():
        assert results[key].status == status, (key, results[key])
    others = {k: (r.status, r.detail) for k, r in results.items() if k not in faulted}
    assert {s for s, _ in others.values()} <= {"ok", "skipped"}, others
    return results


def prec(info: KernelInfo) -> list[Finding]:
    return judge(Snapshot(kernels=info), select=["PREC"])


def one(findings: list[Finding], code: str) -> Finding:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, [(f.code, f.title) for f in findings]
    return found[0]


def strict_json(info: KernelInfo) -> str:
    """The snapshot as strict JSON (no NaN/Infinity), and proof that it loads back unchanged."""
    snap = Snapshot(kernels=info)
    text = json.dumps(to_data(snap), allow_nan=False)
    assert snapshot_from_data(json.loads(render_snapshot_json(snap))) == snap
    return text


# ---------------------------------------------------------------- live faults in the real runner


def test_segfaulting_kernel_is_recorded_and_later_tests_still_run(tmp_path, monkeypatch):
    info, _ = run_with_site(
        tmp_path,
        monkeypatch,
        """
        _fault(torch, "matmul", "float16", SEGFAULT)
    """,
    )
    device = cpu(info)
    results = assert_only_faulted(device, {"matmul/float16": "crashed"})
    assert "SIGSEGV" in results["matmul/float16"].detail
    for later in (
        "matmul/bfloat16",
        "conv2d/float32",
        "conv2d/float16",
        "softmax/bfloat16",
        "sdpa/float16/math",
        "autocast/float16",
        "grad_scaler/float16",
    ):
        assert results[later].status == "ok", results[later]
    assert results["matmul/bfloat16"].max_rel_error is not None and results["matmul/bfloat16"].seconds
    assert device.restarts == 1  # exactly one fresh worker, for the one crash
    assert (device.status, device.detail) == ("ok", "")  # the resumed worker finished the plan
    # fp32 matmul was timed by the worker that crashed; bf16 by its successor: never compared as if together.
    assert results["matmul/float32"].rounds is None and results["matmul/bfloat16"].rounds is not None
    word, why = verdict(Snapshot(kernels=info), device, results["matmul/bfloat16"])
    assert word == "inconclusive" and "not timed beside fp32" in why

    findings = prec(info)
    finding = one(findings, "PREC009")
    assert finding.severity == "error"
    assert "fp16 matmul crashed" in finding.title
    assert any("SIGSEGV" in line for line in finding.evidence)
    assert not {"PREC001", "PREC003"} & {f.code for f in findings}
    strict_json(info)


def test_hanging_kernel_is_killed_at_the_stall_limit_and_later_tests_still_run(tmp_path, monkeypatch):
    timeout = 8.0  # stall limit max(2, 8/4) = 2 s; the device's deadline is 2 * timeout after the import
    budget = Budget.from_timeout(timeout)
    assert (budget.kernel_step, budget.device_run) == (2.0, 2 * timeout)
    info, wall = run_with_site(
        tmp_path,
        monkeypatch,
        """
        _fault(torch, "softmax", "bfloat16", lambda real, *a, **k: time.sleep(3600))
    """,
        timeout=timeout,
    )
    # Killed by the stall watch, not by the device deadline or the runner's whole limit.
    assert wall < budget.device_run < budget.runner, wall
    device = cpu(info)
    results = assert_only_faulted(device, {"softmax/bfloat16": "timeout"})
    assert "did not finish within 2 s" in results["softmax/bfloat16"].detail
    for later in ("sdpa/float32", "sdpa/bfloat16/math", "autocast/bfloat16", "grad_scaler/float16"):
        assert results[later].status == "ok", results[later]
    assert device.restarts == 1
    assert device.status == "ok"

    finding = one(prec(info), "PREC009")
    assert finding.severity == "warning"
    assert "bf16 softmax timeout" in finding.title
    strict_json(info)


def test_garbage_numbers_are_wrong_results_and_stay_out_of_json(tmp_path, monkeypatch):
    info, _ = run_with_site(
        tmp_path,
        monkeypatch,
        """
        _norm = torch.nn.functional
        _fault(_norm, "layer_norm", "float16", lambda real, *a, **k: torch.full_like(real(*a, **k), float("nan")))
        _fault(_norm, "layer_norm", "bfloat16", lambda real, *a, **k: torch.rand_like(real(*a, **k)))
    """,
    )
    device = cpu(info)
    results = assert_only_faulted(device, {"layer_norm/float16": "wrong", "layer_norm/bfloat16": "wrong"})
    nan, noise = results["layer_norm/float16"], results["layer_norm/bfloat16"]
    assert nan.max_rel_error is None and "not finite" in nan.detail
    assert noise.max_rel_error is not None and noise.max_rel_error > noise.tolerance
    assert results["layer_norm/float32"].status == "ok"
    assert device.restarts == 0 and device.status == "ok"  # wrong numbers are a result, not a dead worker

    findings = prec(info)
    finding = one(findings, "PREC003")
    assert finding.severity == "error"
    assert "fp16 layer_norm" in finding.title and "bf16 layer_norm" in finding.title
    assert "PREC009" not in {f.code for f in findings}
    assert "NaN" not in strict_json(info)


def test_device_that_keeps_crashing_is_given_up_after_max_restarts(tmp_path, monkeypatch):
    # layer_norm in fp32, fp16 and bf16, then softmax in fp32: the fourth crash ends the device.
    info, _ = run_with_site(
        tmp_path,
        monkeypatch,
        """
        for _dtype in ("float32", "float16", "bfloat16"):
            _fault(torch.nn.functional, "layer_norm", _dtype, SEGFAULT)
        _fault(torch, "softmax", "float32", SEGFAULT)
    """,
    )
    device = cpu(info)
    keys = plan_keys()
    results = by_key(device)
    assert list(results) == keys[: keys.index("softmax/float32") + 1]  # nothing after the last crash ran
    crashed = [k for k, r in results.items() if r.status == "crashed"]
    assert crashed == ["layer_norm/float32", "layer_norm/float16", "layer_norm/bfloat16", "softmax/float32"]
    assert results["conv2d/bfloat16"].status == "ok"
    assert device.restarts == kernel_runner.MAX_RESTARTS
    assert device.status == "crashed"
    assert "stopped at softmax/float32" in device.detail

    finding = one(prec(info), "PREC009")
    assert finding.severity == "error" and "fp32 softmax crashed" in finding.title
    strict_json(info)


def test_torch_that_cannot_import_leaves_kernels_not_run(tmp_path, monkeypatch):
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text('raise ImportError("boom")\n', encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(fake))  # before site-packages: it shadows the real torch
    info = probe_kernels(sys.executable, Budget.from_timeout(GENEROUS), "quick")
    assert info.status == "not-run"
    assert "boom" in info.detail
    assert info.devices == []
    assert info.probe.status == "ok"  # the runner itself ended cleanly
    assert prec(info) == []
    strict_json(info)


# ---------------------------------------------------------------- junk in the step files


def clean_exit() -> ChildResult:
    return ChildResult(exit_code=0, timed_out=False, seconds=1.0, stdout="", stderr="")


def line(step: str, data: object) -> bytes:
    return (json.dumps({"step": step, "data": data}) + "\n").encode()


def test_junk_step_file_lines_become_error_entries_and_good_ones_survive(tmp_path):
    good = {"status": "ok", "detail": "", "max_rel_error": 1e-6, "tolerance": 1e-4, "seconds": 0.001}
    (tmp_path / "runner.jsonl").write_bytes(
        b"".join(
            [
                b'{"step": "import", "begin": true}\n',
                line("import", {"ok": True, "version": "2.13.0"}),
                line("devices", ["cpu"]),
                line("done", True),
            ]
        )
    )
    (tmp_path / "device-0.jsonl").write_bytes(
        b"".join(
            [
                line("device", {"device": "cpu", "name": "AVX2", "threads": "two"}),  # threads of the wrong type
                b'{"step": "matmul/float32", "begin": true}\n',
                line("matmul/float32", good),
                b"this is not JSON\n",
                b"\x00\xff\xfe\x80binary junk\x1b[31m\n",
                b"[1, 2, 3]\n",
                b'"a string"\n',
                b'{"no_step": 1}\n',
                line("conv2d/float32", {"status": "ok", "seconds": "fast", "max_rel_error": [1]}),
                line("layer_norm/float32", "garbage"),
                b'{"step": "softmax/float32", "data": {"status": "ok", "max_rel_error": NaN, "seconds": 0.001}}\n',
                b'{"step": "sdpa/float32", "data": {"status": "ok", "seconds": Infinity}}\n',
                line("autocast/float16", {"status": "ok", "output_dtypes": {"linear": 16}}),
                line("matmul/bfloat16", {**good, "op": "evil", "dtype": "float64"}),  # the step key wins
                line("end", {"status": "ok", "detail": "", "restarts": "many", "seconds": 2.5}),
                line(
                    "timing/matmul",
                    {
                        "timed": {
                            "matmul/float32": {
                                "seconds": 0.0005,
                                "seconds_median": 0.0006,
                                "seconds_max": 0.002,
                                "rounds": 5,
                                "rounds_disturbed": 1,
                            },
                            "matmul/bfloat16": {
                                "seconds": "x",
                                "seconds_median": 0.001,
                                "seconds_max": 0.001,
                                "rounds": 5,
                                "rounds_disturbed": 0,
                            },
                        }
                    },
                ),
                line("timing/conv2d", ["junk"]),
                line("retime", {"load": {"others_cores": "busy", "runnable_others": 2, "rounds": 12}}),
                b'{"step": "softmax/bfloat16", "data": {"status": "o',  # cut short by a crash
            ]
        )
    )

    info = kernel_facts(clean_exit(), str(tmp_path), "quick")
    device = cpu(info)
    assert (device.name, device.threads) == ("AVX2", None)
    assert (device.status, device.restarts, device.seconds) == ("ok", 0, 2.5)
    results = by_key(device)
    assert list(results) == [
        "matmul/float32",
        "conv2d/float32",
        "layer_norm/float32",
        "softmax/float32",
        "sdpa/float32",
        "autocast/float16",
        "matmul/bfloat16",
    ]
    for key in ("conv2d/float32", "layer_norm/float32", "softmax/float32", "sdpa/float32", "autocast/float16"):
        assert results[key].status == "error" and results[key].detail, (key, results[key])
        assert results[key].max_rel_error is None and results[key].seconds is None
    assert results["matmul/float32"].status == "ok"
    assert results["matmul/float32"].seconds == 0.0005  # the interleaved rounds' best
    assert (results["matmul/float32"].seconds_median, results["matmul/float32"].rounds) == (0.0006, 5)
    assert results["matmul/bfloat16"].rounds is None  # its timing facts did not fit: the first estimate stays
    assert (device.load.others_cores, device.load.runnable_others, device.load.rounds) == (None, 2, 12)
    assert (results["matmul/bfloat16"].op, results["matmul/bfloat16"].dtype) == ("matmul", "bfloat16")
    assert results["matmul/bfloat16"].seconds == 0.001

    assert "MPD001" not in {f.code for f in prec(info)}  # no check crashes on it either
    strict_json(info)


def test_step_files_that_are_missing_or_empty(tmp_path):
    (tmp_path / "runner.jsonl").write_bytes(
        line("import", {"ok": True}) + line("devices", ["cpu", "cuda:0"]) + line("done", True)
    )
    (tmp_path / "device-0.jsonl").write_bytes(b"")  # cuda:0's file (device-1) does not exist
    info = kernel_facts(clean_exit(), str(tmp_path), "quick")
    assert info.status == "ok"
    assert [(d.device, d.status, d.results) for d in info.devices] == [
        ("cpu", "not-run", []),
        ("cuda:0", "not-run", []),
    ]
    strict_json(info)


def test_nan_device_seconds_stays_out_of_json():
    device = device_facts("cpu", StepFile('{"step": "end", "data": {"status": "ok", "seconds": NaN}}\n'))
    strict_json(KernelInfo(status="ok", devices=[device]))


def test_unknown_steps_are_ignored_and_crash_no_check():
    steps = (
        '{"step": "matmul/float64", "data": {"status": "wrong", "detail": "x"}}\n'
        '{"step": "7", "data": {"status": "ok"}}\n'
        '{"step": "sdpa/float16/turbo", "data": {"status": "ok"}}\n'
    )
    device = device_facts("cpu", StepFile(steps))
    assert device.results == []
    findings = judge(Snapshot(kernels=KernelInfo(status="ok", devices=[device])), select=["PREC"])
    assert "MPD001" not in {f.code for f in findings}, [f.title for f in findings]
