"""The microkernels on a busy machine: a verdict may become inconclusive, never the opposite.

Real torch on this machine's CPU, real competing processes: a busy loop on every
core (``python -c "while 1: pass"``), as a data loader or a second job would be.
No timing is asserted; only that a speed verdict under load is the quiet run's
verdict or ``inconclusive``, and that accuracy verdicts do not move at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from mpdoctor.analysis.kernel_view import verdict  # noqa: E402
from mpdoctor.doctor.judge import judge  # noqa: E402
from mpdoctor.probes.kernels import probe_kernels  # noqa: E402
from mpdoctor.probes.budget import Budget
from mpdoctor.snapshot import KernelInfo, Snapshot  # noqa: E402

LOADED_RUNS = 3
OPPOSITE = {("slow", "fine"), ("fine", "slow")}


def verdicts(info: KernelInfo) -> tuple[Snapshot, dict[str, str], dict[str, str]]:
    """(snapshot, speed verdict per kernel, status per kernel) of the CPU device."""
    snap = Snapshot(kernels=info)
    (device,) = info.devices
    speed = {}
    for r in device.results:
        word = verdict(snap, device, r)[0]
        if word:
            speed[f"{r.op}/{r.dtype}/{r.backend}"] = word
    return snap, speed, {f"{r.op}/{r.dtype}/{r.backend}": r.status for r in device.results}


class BusyLoops:
    """``n`` processes that each keep a core busy until the block ends."""

    def __init__(self, n: int):
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(self.n)]
        time.sleep(0.3)  # let them get going
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()


def test_busy_cores_make_verdicts_inconclusive_never_opposite(monkeypatch):
    # CPU timings under CPU load are the subject: a GPU machine's GPUs (CUDA events, untouched by busy cores)
    # would only cost four GPU runs. Real CUDA reads an empty CUDA_VISIBLE_DEVICES as "no devices".
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    quiet_snap, quiet, quiet_status = verdicts(probe_kernels(sys.executable, Budget.from_timeout(60), "quick"))
    assert quiet  # ratios were measured at all
    flips, inconclusive, runs = [], 0, []
    with BusyLoops(os.cpu_count() or 1):
        for _ in range(LOADED_RUNS):
            info = probe_kernels(sys.executable, Budget.from_timeout(60), "quick")
            assert info.status == "ok", (info.status, info.detail)
            snap, loaded, status = verdicts(info)
            runs.append((snap, loaded))
            assert status == quiet_status  # accuracy (ok, wrong, NaN) does not depend on load
            for key, word in loaded.items():
                if (quiet.get(key), word) in OPPOSITE:
                    flips.append((key, quiet[key], word))
                inconclusive += word == "inconclusive"
            assert info.devices[0].load.runnable_others  # the sampler saw the busy loops
    assert flips == []
    assert inconclusive  # the load was noticed, not ignored
    # The report says so: PREC011 on every loaded run, and PREC004 only on ratios that held.
    for snap, loaded in runs:
        findings = judge(snap, select=["PREC"])
        codes = {f.code for f in findings}
        assert "PREC011" in codes
        for f in findings:
            if f.code == "PREC004":
                assert all("rounds)" in line for line in f.evidence if "slower than fp32" in line)


def test_nvml_reports_what_else_runs_on_each_gpu():
    """What NVML says a GPU is doing, from a stand-in NVML module (recorded facts, whatever GPU this machine has).

    The first GPU lists a pid that does not exist here and this test's own process; the
    second raises NotSupported for every load call and keeps its other facts.
    """
    import types

    from mpdoctor.probes.machine import nvml_facts

    class Rates:
        gpu, memory = 97, 40

    class Proc:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    def refuse(*_):
        raise RuntimeError("NVMLError_NotSupported")

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlSystemGetDriverVersion=lambda: "550.54.14",
        nvmlSystemGetNVMLVersion=lambda: "12.550.54.14",
        nvmlSystemGetCudaDriverVersion=lambda: 12040,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: f"GPU {h}",
        nvmlDeviceGetUtilizationRates=lambda h: Rates() if h == 0 else refuse(),
        nvmlDeviceGetComputeRunningProcesses=lambda h: (
            [Proc(999999, 31 * 1024**3), Proc(os.getpid(), None)] if h == 0 else refuse()
        ),
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [],
        nvmlDeviceGetClockInfo=lambda h, kind: 1410 if h == 0 else refuse(),
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980 if h == 0 else refuse(),
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x1 | 0x4 | 0x20 if h == 0 else refuse(),
        NVML_CLOCK_SM=1,
    )
    info = nvml_facts(lambda: fake)
    busy, quiet = info.gpus
    assert info.status == "ok" and (busy.name, quiet.name) == ("GPU 0", "GPU 1")
    assert (busy.utilization, busy.sm_clock, busy.sm_clock_max) == (97, 1410, 1980)
    assert busy.throttle_reasons == ["sw_power_cap", "sw_thermal_slowdown"]  # idle (0x1) is no load
    foreign, own = busy.processes
    assert (foreign.pid, foreign.kind, foreign.memory_used, foreign.ours) == (999999, "compute", 31 * 1024**3, False)
    assert own.pid == os.getpid() and own.name and own.ours  # a descendant of the process that asked
    assert (quiet.utilization, quiet.processes, quiet.throttle_reasons) == (None, [], [])


def test_a_job_started_from_mpdoctors_shell_is_not_mpdoctors_own():
    """A GPU process is ``ours`` only when it descends from the mpdoctor that asked NVML.

    This test process plays the user's shell: it starts "mpdoctor" (a process with a child, its
    kernel worker) and, beside it, "the training job". The job shares every ancestor with mpdoctor
    and is the sharer the timings must hear about; reading ancestors as ours hid it.
    """
    import types

    from mpdoctor.probes.machine import nvml_record

    spawn = "import subprocess, sys; w = subprocess.Popen(['sleep', '60']); print(w.pid, flush=True); w.wait()"
    mpdoctor = subprocess.Popen([sys.executable, "-c", spawn], stdout=subprocess.PIPE, text=True)
    job = subprocess.Popen(["sleep", "60"])
    worker = int(mpdoctor.stdout.readline())
    try:

        class Proc:
            def __init__(self, pid):
                self.pid, self.usedGpuMemory = pid, 1024**3

        fake = types.SimpleNamespace(
            nvmlInit=lambda: None,
            nvmlShutdown=lambda: None,
            nvmlSystemGetDriverVersion=lambda: "550.54.14",
            nvmlSystemGetNVMLVersion=lambda: "12.550.54.14",
            nvmlSystemGetCudaDriverVersion=lambda: 12040,
            nvmlDeviceGetCount=lambda: 1,
            nvmlDeviceGetHandleByIndex=lambda i: i,
            nvmlDeviceGetComputeRunningProcesses=lambda h: [Proc(job.pid), Proc(worker), Proc(mpdoctor.pid)],
        )
        (gpu,) = nvml_record(fake, asker=mpdoctor.pid)["gpus"]
        ours = {p["pid"]: p["ours"] for p in gpu["processes"]}
        assert ours == {job.pid: False, worker: True, mpdoctor.pid: True}
    finally:
        os.kill(worker, signal.SIGKILL)
        for proc in (mpdoctor, job):
            proc.kill()
            proc.wait()


def test_load_window_arithmetic():
    """Two samples a second apart: the machine busy 180 ticks, this process 80 of them: others 1.0 core."""
    from mpdoctor.probes.remote import load_sample

    ticks = load_sample._clock_ticks()
    before = {
        "time": 10.0,
        "busy": 0,
        "total": 0,
        "steal": 0,
        "own": 0,
        "procs_running": 3,
        "own_running": 2,
        "load1": 0.5,
    }
    after = {
        "time": 11.0,
        "busy": int(1.8 * ticks),
        "total": int(2 * ticks),
        "steal": int(0.2 * ticks),
        "own": int(0.8 * ticks),
        "procs_running": 1,
        "own_running": 1,
        "load1": 1.2,
    }
    window = load_sample.window(before, after)
    assert window["others_cores"] == pytest.approx(1.0, abs=0.02)
    assert window["steal"] == pytest.approx(0.1, abs=0.01)
    assert (window["runnable_others"], window["load1"]) == (1, 1.2)
    unknown = dict(after, busy=None, procs_running=None)
    assert load_sample.window(before, unknown)["others_cores"] is None  # unknown, never zero
    assert load_sample.runnable_others(unknown) is None
