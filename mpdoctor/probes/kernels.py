"""Run the precision microkernels through the interpreter under diagnosis, and read the results.

``kernel_runner.py`` runs in a child of the target interpreter and forks one worker
per device (see there). This module starts it with its time limits, then turns the
step files it and its workers wrote into snapshot facts. A worker that crashed,
hung, or wrote junk costs only its own entries. It judges nothing.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import typing
from pathlib import Path
from typing import Optional, Sequence

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import ChildResult, remote_argv, run_child
from mpdoctor.probes.environment import StepFile, probe_run, torch_facts
from mpdoctor.probes.follow import TORCH_WORDS, KernelProgress, PartProgress, end_words, finish_run
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.probes.remote import kernel_runner
from mpdoctor.probes.remote import steps as step_names
from mpdoctor.probes.remote.kernel_measure import TOLERANCE, kernel_key, parse_key
from mpdoctor.probes.remote.kernel_suite import OPS, SDPA_BACKENDS, TIMED_OPS, TIMING
from mpdoctor.probes.remote.supervise import step_text
from mpdoctor.schema.serde import DataError, from_data
from mpdoctor.snapshot import DeviceKernels, KernelInfo, KernelResult, ProbeRun, TimingLoad, TorchInfo

DEVICE_FACTS = ("name", "compute_capability", "arch", "threads", "init_seconds", "bf16_supported", "bf16_native")
BOOKKEEPING = (step_names.DEVICE, step_names.END, step_names.DONE, step_names.RETIME)
TIMING_FACTS = ("seconds", "seconds_median", "seconds_max", "rounds", "rounds_disturbed")


def probe_kernels(python: str, budget: Budget, mode: str, quiet: Optional[threading.Event] = None) -> KernelInfo:
    """Run every device's microkernels in ``python`` within the run's ``budget``.

    ``quiet`` is set once the other probes that compete for the cores are done:
    the CPU worker waits for it, but no longer than ``Budget.quiet_grace`` once the
    runner is ready to start it (see probe_kernels_and_torch). None: start at once.
    """
    return probe_kernels_and_torch(python, budget, mode, quiet)[0]


def probe_kernels_and_torch(
    python: str,
    budget: Budget,
    mode: str,
    quiet: Optional[threading.Event] = None,
    progress: ProgressBoard = SILENT,
    cpu: bool = True,
    env: Optional[dict] = None,
    names: Sequence[str] = (),
) -> tuple[KernelInfo, TorchInfo, StepFile]:
    """The microkernels, and the environment probe's torch part from the same `import torch`.

    The runner writes the torch part's steps up to CUDA itself and its counting
    child writes `cuda` and `devices` (see kernel_runner); returns the kernel facts,
    the torch facts and the torch steps (for apex's extension loads). The runner
    as a whole gets ``Budget.runner``, its `import torch` ``Budget.torch_import``
    (watched from here), and enforces the rest of its limits itself, handed to it
    on its command line (``Budget.runner_limits``).

    The CPU kernels start once ``quiet`` is set (the inventory, which competes for
    the cores, has ended), or ``Budget.quiet_grace`` after the runner is ready for
    them, whichever comes first: they never wait out a slow inventory, and rounds
    that it disturbs are set aside by the runner's own load detection
    (``kernel_measure``). ``progress`` gets task "torch" (the step the import is
    in) and one "kernels <device>" per device (tests done of the plan's total).
    ``cpu=False`` times the CUDA devices only (a fleet rank, whose node's CPU is timed by one rank).
    ``env``: the runner's whole environment (``run_child``), e.g. CUDA_VISIBLE_DEVICES narrowed to one GPU;
    ``names``: what the caller calls the CUDA devices the runner sees, in order: only as many are timed, and
    their facts and progress carry those names (``steps.NAMES``; a fleet rank's narrowed cuda:0 is its cuda:3).
    """
    with tempfile.TemporaryDirectory(prefix="mpdoctor-kernels-") as tmp:
        runner_file = os.path.join(tmp, step_names.RUNNER_FILE)
        quiet_file = os.path.join(tmp, step_names.QUIET_FILE)
        Path(runner_file).touch()
        if quiet is None:
            Path(quiet_file).touch()
        progress.start("torch", "starting Python")
        torch_progress = PartProgress(
            progress,
            "torch",
            [os.path.join(tmp, name) for name in (step_names.TORCH_FILE, step_names.COUNT_FILE)],
            TORCH_WORDS,
            done_step=step_names.DEVICES,
        )
        kernel_progress = KernelProgress(progress, tmp)  # also tells when the runner is ready for the kernels
        ready_at: list[float] = []

        def watch(elapsed: float) -> Optional[float]:
            if progress is not SILENT:
                torch_progress.look()
            kernel_progress.look()
            if kernel_progress.started() and not ready_at:
                ready_at.append(elapsed)
            if (
                not os.path.exists(quiet_file)
                and quiet is not None
                and (quiet.is_set() or (ready_at and elapsed - ready_at[0] >= budget.quiet_grace))
            ):
                Path(quiet_file).touch()
            # `import torch` gets the same limit as in the torch probe, not the runner's whole one.
            if elapsed > budget.torch_import and step_names.IMPORT not in _read_steps(runner_file).data:
                return budget.torch_import
            return None

        argv = remote_argv(
            python,
            "kernel_runner",
            tmp,
            mode,
            json.dumps(budget.runner_limits()),
            *(() if cpu else (step_names.NO_CPU,)),
            *((step_names.NAMES + ",".join(names),) if names else ()),
        )
        # PYTORCH_NVML_BASED_CUDA_CHECK=1 for the runner alone: the target's start-up code cannot poison its forks.
        result = run_child(argv, budget.runner, env=kernel_runner.runner_environment(env), watch=watch)
        run, steps = torch_part(result, tmp)
        kernel_info, torch = kernel_facts(result, tmp, mode), torch_facts(result, steps, run)
        torch_progress.look()
        kernel_progress.look()
        finish_run(progress, "torch", torch.probe, result.limit)
        for device in kernel_info.devices:  # those whose run the runner could not end itself
            progress.finish(f"kernels {device.device}", end_words(device.status, device.detail, result.limit))
        return kernel_info, torch, steps


def torch_part(result: ChildResult, directory: str) -> tuple[ProbeRun, StepFile]:
    """The torch part as the runner and its counting child wrote it, and how it went.

    Up to CUDA it ran in the runner itself, so the runner's own end tells how it
    went; `cuda` and `devices` ran in the counting child, whose death the runner
    recorded against the step it died in.
    """
    steps = _read_steps(os.path.join(directory, step_names.TORCH_FILE))
    counted = _read_steps(os.path.join(directory, step_names.COUNT_FILE))
    if not steps.done:  # the runner died (or was killed) before CUDA: its own end says how
        return probe_run(result, steps), steps
    failure = None
    for step in (step_names.CUDA, step_names.DEVICES):
        data = counted.data.get(step)
        if isinstance(data, dict) and data.get(step_names.BY) == step_names.SUPERVISOR:
            failure = failure or ProbeRun(
                status=str(data.get("status") or "error"),
                step=step,
                detail=str(data.get("detail") or ""),
                seconds=round(result.seconds, 3),
            )
        elif isinstance(data, dict):
            steps.data[step] = {k: v for k, v in data.items() if k not in ("count", "why")}
    if failure is not None:
        return failure, steps
    return probe_run(result, steps), steps


def _read_steps(path: str) -> StepFile:
    return StepFile(step_text(path))  # to the bounds of portable/limits.py; "" when unreadable


def kernel_facts(result: ChildResult, directory: str, mode: str) -> KernelInfo:
    """Facts from the runner's step files in ``directory`` and how the runner ended."""
    runner = _read_steps(os.path.join(directory, step_names.RUNNER_FILE))
    info = KernelInfo(mode=mode, probe=probe_run(result, runner))
    imported = runner.data.get(step_names.IMPORT)
    if isinstance(imported, dict) and imported.get("ok") is False:
        error = imported.get("error")
        message = error.get("message", "") if isinstance(error, dict) else ""
        mocked = isinstance(error, dict) and error.get("type") == "MockTorch"  # torch imported, as OneFlow
        info.status, info.detail = "not-run", message if mocked else f"torch did not import: {message}".rstrip(": ")
        return info
    counted = runner.data.get(step_names.CUDA)
    if isinstance(counted, dict) and isinstance(counted.get("available"), bool):
        info.cuda_available = counted["available"]
    names = runner.data.get(step_names.DEVICES)
    names = names if isinstance(names, list) else []
    info.devices = [
        device_facts(name, _read_steps(os.path.join(directory, step_names.DEVICE_FILE % i)))
        for i, name in enumerate(names)
        if isinstance(name, str)
    ]  # numbered as the runner did
    if info.probe.status == "ok":
        info.status = "ok"
        return info
    info.status = "error"
    info.detail = ("importing torch " if not isinstance(imported, dict) else "the kernel runner ") + result.describe()
    for device in info.devices:
        if device.status == "not-run":  # its run never ended: it went down with the runner
            device.status, device.detail = info.probe.status, "stopped together with the kernel runner"
    return info


def device_facts(name: str, steps: StepFile) -> DeviceKernels:
    """One device's facts; a step whose data does not fit its shape becomes an error entry."""
    device = DeviceKernels(device=name)
    claims = steps.data.get(step_names.DEVICE)
    if isinstance(claims, dict):
        for key in DEVICE_FACTS:
            if key in claims:
                try:
                    setattr(device, key, from_data(typing.get_type_hints(DeviceKernels)[key], claims[key]))
                except DataError:
                    pass
        if claims.get("status") in ("crashed", "timeout", "error"):  # the device never started
            device.status, device.detail = claims["status"], str(claims.get("detail", ""))
    end = steps.data.get(step_names.END)
    if isinstance(end, dict):
        if device.status == "not-run":
            device.status = str(end.get("status") or "error")
            device.detail = str(end.get("detail") or "")
        restarts, seconds = end.get("restarts"), end.get("seconds")
        device.restarts = restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0
        device.seconds = float(seconds) if _number(seconds) else 0.0
    device.results = [
        kernel_result(key, data)
        for key, data in steps.data.items()
        if key not in BOOKKEEPING and known_key(key) and parse_key(key)[0] != TIMING
    ]
    for key, data in steps.data.items():
        if parse_key(key)[0] == TIMING and known_key(key) and isinstance(data, dict):
            _apply_timing(device.results, data.get("timed"))
    device.load = _load(steps.data.get(step_names.RETIME))
    return device


def _apply_timing(results: list[KernelResult], timed: object) -> None:
    """An op's interleaved timing rounds (``kernel_measure.compare``) onto its results; junk is left out."""
    if not isinstance(timed, dict):
        return
    for r in results:
        facts = timed.get(kernel_key(r.op, r.dtype, r.backend))  # the key the child timed it under
        if r.status != "ok" or not isinstance(facts, dict) or not all(_number(facts.get(k)) for k in TIMING_FACTS):
            continue
        if min(facts[k] for k in TIMING_FACTS[:3]) <= 0 or min(facts["rounds"], facts["rounds_disturbed"]) < 0:
            continue
        r.seconds, r.seconds_median, r.seconds_max = (float(facts[k]) for k in TIMING_FACTS[:3])
        r.rounds, r.rounds_disturbed = int(facts["rounds"]), int(facts["rounds_disturbed"])


def _load(summary: object) -> TimingLoad:
    """The device's timing summary (``kernel_measure.timing_summary``); fields that do not fit are left unknown."""
    data = summary.get("load") if isinstance(summary, dict) else None
    load = TimingLoad()
    if not isinstance(data, dict):
        return load
    hints = typing.get_type_hints(TimingLoad)
    for key, hint in hints.items():
        if key in data:
            try:
                setattr(load, key, from_data(hint, data[key]))
            except DataError:
                pass
    return load


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def known_key(key: str) -> bool:
    """A step this mpdoctor's kernel suite runs; anything else (a mismatched runner, junk) is ignored."""
    op, dtype, backend = parse_key(key)
    if op == TIMING:
        return dtype in TIMED_OPS and not backend
    return op in OPS and dtype in TOLERANCE and backend in ("",) + tuple(name for name, _, _ in SDPA_BACKENDS)


def kernel_result(key: str, data: object) -> KernelResult:
    op, dtype, backend = parse_key(key)
    if not isinstance(data, dict):
        return KernelResult(op, dtype, backend, status="error", detail="the worker wrote no usable result")
    try:
        # The step's name is authoritative for what was tested.
        return from_data(KernelResult, {**data, "op": op, "dtype": dtype, "backend": backend})
    except DataError as exc:
        return KernelResult(op, dtype, backend, status="error", detail=f"the worker wrote an unusable result ({exc})")
