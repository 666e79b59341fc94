"""Snapshot facts from the live microkernels: what each op did in each dtype on one device, and how busy
the machine was meanwhile.

Part of the snapshot (``mpdoctor.snapshot``); filled by mpdoctor/probes/kernels.py, judged by the precision
family through mpdoctor/analysis/kernel_view.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mpdoctor.portable.kernel_names import DTYPES, OPS, SDPA_BACKENDS, listed
from mpdoctor.schema.serde import fact
from mpdoctor.snapshot.vocab import DeviceRunStatus, KernelDtype, KernelOp, KernelResultStatus, SdpaBackend


@dataclass
class KernelResult:
    """One microkernel (an op in a dtype) run on one device."""

    op: KernelOp = fact(listed(OPS), "")
    dtype: KernelDtype = fact(listed(DTYPES), "")
    backend: SdpaBackend = fact(
        f"The SDPA backend it was restricted to ({', '.join(SDPA_BACKENDS)}); empty otherwise", ""
    )
    status: KernelResultStatus = fact(
        "ok; unsupported (raised); wrong (outside tolerance or unexpected dtypes); error (failed before "
        "the kernel ran); crashed or timeout (killed the worker); skipped (does not apply)",
        "",
    )
    detail: str = fact("The error text, what was wrong, or why it was skipped", "")
    max_rel_error: Optional[float] = fact(
        "max|out - ref| / max|ref| against float64 on the same device, from the same rounded inputs", None
    )
    tolerance: Optional[float] = fact("The largest max_rel_error accepted for this dtype", None)
    seconds: Optional[float] = fact(
        "Seconds per call after a warm-up (CUDA events on GPUs): the best of the undisturbed timing rounds, "
        "or of every round when none was undisturbed",
        None,
    )
    seconds_median: Optional[float] = fact(
        "The median seconds per call of the same rounds; null: timed once (an older mpdoctor)", None
    )
    seconds_max: Optional[float] = fact("The slowest seconds per call of every round, disturbed ones included", None)
    rounds: Optional[int] = fact(
        "Undisturbed timing rounds, interleaved with the other dtypes of the same op; "
        "null: not timed in rounds (an older mpdoctor)",
        None,
    )
    rounds_disturbed: int = fact(
        "Timing rounds set aside because processes other than mpdoctor's own were "
        "runnable on the CPU, more than its idle cores could take",
        0,
    )
    flops: Optional[float] = fact("Floating-point operations per call, for GEMMs", None)
    output_dtypes: dict[str, str] = fact("autocast: the dtype each op produced", factory=dict)
    loss_finite: Optional[bool] = fact("grad_scaler: the loss was finite", None)
    grads_finite: Optional[bool] = fact("grad_scaler: no gradient overflowed after unscaling", None)
    scale_before: Optional[float] = fact("grad_scaler: the loss scale before the step", None)
    scale_after: Optional[float] = fact("grad_scaler: the loss scale after the step", None)


@dataclass
class TimingLoad:
    """What else the machine was doing while one device's kernels were timed (probes/remote/load_sample)."""

    seconds: Optional[float] = fact("Wall time of the timing rounds", None)
    others_cores: Optional[float] = fact(
        "CPU time processes other than mpdoctor's own used meanwhile, in cores "
        "(1.0: one core kept busy); null where /proc/stat is missing",
        None,
    )
    steal: Optional[float] = fact("The fraction of CPU time a hypervisor gave to other guests meanwhile", None)
    runnable_others: Optional[int] = fact(
        "The most runnable tasks seen at one moment that were not mpdoctor's "
        "own (the kernel worker's threads, the runner, its other workers, "
        "the host)",
        None,
    )
    load1: Optional[float] = fact("The 1-minute load average at the end (it lags)", None)
    cpus: Optional[int] = fact("os.cpu_count() in the worker", None)
    rounds: int = fact("Timing rounds run, disturbed ones included", 0)
    rounds_disturbed: int = fact(
        "Rounds set aside because processes other than mpdoctor's own were runnable, "
        "more than the idle cores could take",
        0,
    )
    extra_seconds: float = fact("Time spent on extra rounds because the timings were noisy or disturbed", 0.0)
    budget_exhausted: bool = fact(
        "The extra rounds stopped at their time budget, not because the timings settled", False
    )


@dataclass
class DeviceKernels:
    """The microkernels of one device, run in a worker process of its own."""

    device: str = fact("cpu or cuda:N", "")
    name: str = fact("GPU name, or the CPU's vector capability as torch reports it (AVX2, AVX512, ...)", "")
    compute_capability: str = fact("GPUs: e.g. 8.6", "")
    arch: str = fact("ROCm: the gfx architecture name", "")
    threads: Optional[int] = fact("CPU: torch's intra-op thread count", None)
    init_seconds: Optional[float] = fact("GPUs: seconds to start CUDA on the device", None)
    bf16_supported: Optional[bool] = fact("GPUs: torch.cuda.is_bf16_supported(), which counts emulation", None)
    bf16_native: Optional[bool] = fact("GPUs: torch.cuda.is_bf16_supported(including_emulation=False)", None)
    status: DeviceRunStatus = fact("How the device's run ended: ok, crashed, timeout, error or not-run", "not-run")
    detail: str = fact("What went wrong, when it did", "")
    restarts: int = fact("Workers started again after a test crashed or hung", 0)
    seconds: float = fact("Wall time of the device's run, CUDA start-up included", 0.0)
    results: list[KernelResult] = fact("Every test, in the order run", factory=list)
    load: TimingLoad = fact("What else the machine did while the kernels were timed", factory=TimingLoad)
