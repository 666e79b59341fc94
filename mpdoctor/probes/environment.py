"""Probe the Python environment under diagnosis through its own interpreter.

``target.py`` runs in child processes of the target interpreter, one for the
package inventory and one for torch, in parallel and each with a timeout, and a
third for OneFlow when the inventory found one. This
module starts them and turns their step-by-step output, or their death, into
snapshot facts. It judges nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import typing
from typing import Optional
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import ChildResult, kill_children_on_error, remote_argv, run_child
from mpdoctor.probes.follow import PART_WORDS, PartProgress, finish_run
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.probes.remote import steps as step_names
from mpdoctor.probes.remote.supervise import parse_steps, step_text
from mpdoctor.schema.serde import DataError, from_data
from mpdoctor.snapshot import (
    CudaDevice,
    Distribution,
    OneflowInfo,
    OneflowRuntime,
    ProbeRun,
    PythonEnvironment,
    PythonInfo,
    TorchInfo,
)
from mpdoctor.snapshot.apex import ApexImport, ApexInfo
from mpdoctor.snapshot.oneflow import CoexistCase
from mpdoctor.snapshot.project import NOT_ASKED, ProjectScan


class StepFile:
    """The JSON lines a probe part wrote: completed steps and the last one begun."""

    def __init__(self, text: str) -> None:
        self.data, self.begun = parse_steps(text)  # the target's own reader: one format, one parser

    @property
    def done(self) -> bool:
        return step_names.DONE in self.data

    @property
    def running(self) -> str:
        """The step that was begun and never finished, if any."""
        return self.begun if self.begun and self.begun not in self.data else ""


def run_part(
    python: str,
    part: str,
    timeout: float,
    limits: Optional[dict[str, float]] = None,
    switches: tuple[str, ...] = (),
    progress: ProgressBoard = SILENT,
    task: str = "",
) -> tuple[ChildResult, StepFile]:
    """Run one part of ``target.py`` in ``python``, killed at ``timeout`` s (its limit, from the Budget).

    ``limits``: the numbers the part enforces itself (``Budget.env_limits``,
    ``Budget.torch_limits``), handed over as one JSON object; ``switches``: words
    after them (``steps.NO_PROJECT``). The step the part is in goes to ``progress``
    as task ``task`` (default: the part's name) while it runs.
    """
    with tempfile.TemporaryDirectory(prefix="mpdoctor-") as tmp:
        out_path = os.path.join(tmp, step_names.PART_FILE % part)
        Path(out_path).touch()
        argv = remote_argv(python, "target", part, out_path, json.dumps(limits or {}), *switches)
        follower = PartProgress(progress, task or part, [out_path], PART_WORDS[part])

        def watch(elapsed: float) -> None:
            follower.look()  # reports only: a part enforces its own limits, and run_child the whole one

        # Nobody watches (SILENT): wait on the child's exit alone, with no ticks at all.
        result = run_child(argv, timeout, watch=None if progress is SILENT else watch)
        follower.look()  # the steps of its last 10 ms
        steps = StepFile(step_text(out_path))  # to the bounds of portable/limits.py
    return result, steps


def probe_run(result: ChildResult, steps: StepFile) -> ProbeRun:
    """Turn how the child ended into a ProbeRun fact."""
    run = ProbeRun(exit_code=result.exit_code, seconds=round(result.seconds, 3), stderr_tail=result.stderr_tail)
    if result.start_error:
        run.status, run.detail = "error", result.start_error
    elif result.timed_out:
        run.status, run.step, run.detail = "timeout", steps.running, result.describe()
    elif result.signal_name:
        run.status, run.step, run.detail = "crashed", steps.running, result.describe()
    elif result.exit_code != 0 or not steps.done:
        run.status, run.step = "error", steps.running
        last = result.stderr_last_line
        run.detail = f"the probe {result.describe()}" + (f": {last}" if last else "")
    else:
        run.status = "ok"
    return run


def _load(cls, data, default):
    """Facts from the child are validated like any snapshot data; junk is dropped."""
    try:
        return from_data(cls, data)
    except DataError:
        return default


def environment_facts(result: ChildResult, steps: StepFile, project: bool = True) -> PythonEnvironment:
    """The env part's facts; ``project``: whether it was asked to scan the working directory."""
    env = PythonEnvironment(probe=probe_run(result, steps))
    env.python = _load(PythonInfo, steps.data.get(step_names.PYTHON), None)
    env.markers = _load(dict[str, str], steps.data.get(step_names.MARKERS), {})
    env.env = _load(dict[str, str], steps.data.get(step_names.ENV), {})
    env.module_origins = _load(dict[str, str], steps.data.get(step_names.MODULES), {})
    env.distributions = _load(list[Distribution], steps.data.get(step_names.DISTRIBUTIONS), [])
    env.distributions_error = _step_error(steps, step_names.DISTRIBUTIONS)
    env.apex = apex_facts(steps)
    if project:
        env.project = _load(ProjectScan, steps.data.get(step_names.PROJECT), ProjectScan())
        env.project.error = _step_error(steps, step_names.PROJECT)
    else:  # nothing was read: say so, never "no use found"
        env.project = ProjectScan(skipped=NOT_ASKED)
    env.oneflow = _load(OneflowInfo, steps.data.get(step_names.ONEFLOW), OneflowInfo())
    env.oneflow.error = _step_error(steps, step_names.ONEFLOW)
    return env


def _step_error(steps: StepFile, step: str) -> str:
    """The error a guarded probe step recorded instead of its facts, if any."""
    error = steps.data.get(step_names.ERROR % step)
    return f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else ""


def apex_facts(steps: StepFile) -> ApexInfo:
    """The env part's apex facts: where it is, what installed it, who imports it."""
    data = steps.data.get(step_names.APEX)
    info = ApexInfo()
    if isinstance(data, dict):
        resolution = data.get("resolution") if isinstance(data.get("resolution"), dict) else {}
        flat = {key: value for key, value in data.items() if key != "resolution"}
        flat.update(
            resolution=resolution.get("kind", "none"),
            origin=resolution.get("origin", ""),
            search_locations=resolution.get("locations", []),
            resolution_error=resolution.get("error", ""),
        )
        info = _load(ApexInfo, flat, info)
    info.error = _step_error(steps, step_names.APEX)
    users = steps.data.get(step_names.APEX_USERS)
    if isinstance(users, dict):
        info.users_scanned = True
        info.users = _load(list[ApexImport], users.get("uses"), [])
        info.unscanned = _load(list[str], users.get("unscanned"), [])
        info.distributions_scanned = _load(int, users.get("distributions_scanned"), 0)
    info.users_error = _step_error(steps, step_names.APEX_USERS)
    return info


def merge_extension_loads(apex: ApexInfo, steps: StepFile) -> None:
    """Attach the torch part's load results to the extensions the env part found."""
    loads = steps.data.get(step_names.APEX_LOADS)
    apex.loads_error = _step_error(steps, step_names.APEX_LOADS)
    if not isinstance(loads, dict):
        why = apex.loads_error or _loads_missing_reason(steps)
        for ext in apex.extensions:
            ext.load_detail = why
        return
    for ext in apex.extensions:
        result = loads.get(ext.name)
        if isinstance(result, dict):
            ext.load_status = str(result.get("status", "not-tried"))
            ext.load_detail = str(result.get("detail", ""))
        else:
            ext.load_detail = "not found by the torch probe"


def _loads_missing_reason(steps: StepFile) -> str:
    if steps.running == step_names.APEX_LOADS:
        return "the torch probe stopped while loading them"
    imported = steps.data.get(step_names.IMPORT)
    if isinstance(imported, dict) and not imported.get("ok"):
        return "torch did not import, so they were not tried"
    return "not tried: torch did not get that far"


def torch_facts(result: ChildResult, steps: StepFile, run: Optional[ProbeRun] = None) -> TorchInfo:
    """The torch part's facts; ``run`` says how it went when not the child's own end (see kernels.torch_part)."""
    info = TorchInfo(probe=run or probe_run(result, steps))
    found = steps.data.get(step_names.FIND)
    if isinstance(found, dict):
        info.origin = str(found.get("origin") or "")
        if not found.get("found"):
            info.status = "missing"
            _record_error(info, found.get("error"))
            return info
    imported = steps.data.get(step_names.IMPORT)
    if isinstance(imported, dict):
        info.import_warnings = _load(list[str], imported.get("warnings"), [])
        info.imported_as = str(imported.get("imported_as") or "")
        if imported.get("ok") and info.imported_as not in ("", "torch"):
            info.status = "mocked"
        elif imported.get("ok"):
            info.status = "imported"
        else:
            info.status = "import-error"
            _record_error(info, imported.get("error"))
    elif info.probe.step == step_names.IMPORT:
        info.status = {"timeout": "import-timeout", "crashed": "import-crashed"}.get(info.probe.status, "import-error")
        if info.status == "import-error":
            info.error_message = info.probe.detail
    cuda = steps.data.get(step_names.CUDA)
    # The build facts come in two parts: those read without CUDA (BUILD), and those that
    # touch CUDA, read with the CUDA step so that no process forks a CUDA worker after them.
    for build in (steps.data.get(step_names.BUILD), cuda.get("build") if isinstance(cuda, dict) else None):
        if isinstance(build, dict):
            hints = typing.get_type_hints(TorchInfo)
            for key in ("version", "cuda", "hip", "cudnn", "nccl", "git_version", "arch_list", "release_archs"):
                if key in build:
                    setattr(info, key, _load(hints[key], build[key], getattr(info, key)))
            info.fact_errors.update(_load(dict[str, str], build.get("errors", {}), {}))
    if isinstance(cuda, dict):
        info.cuda_available = cuda.get("available") if isinstance(cuda.get("available"), bool) else None
        info.device_count = cuda.get("device_count") if isinstance(cuda.get("device_count"), int) else None
        info.cuda_warnings = _load(list[str], cuda.get("warnings"), [])
        info.fact_errors.update(_load(dict[str, str], cuda.get("errors", {}), {}))
    devices = steps.data.get(step_names.DEVICES)
    if isinstance(devices, dict):
        count = devices.get("runtime_device_count")
        info.runtime_device_count = count if isinstance(count, int) and not isinstance(count, bool) else None
        info.devices = _load(list[CudaDevice], devices.get("devices"), [])
        info.cuda_warnings += _load(list[str], devices.get("warnings"), [])
        info.fact_errors.update(_load(dict[str, str], devices.get("errors", {}), {}))
    return info


def _record_error(info: TorchInfo, error: object) -> None:
    if isinstance(error, dict):
        info.error_type = str(error.get("type", ""))
        info.error_message = str(error.get("message", ""))
        info.error_traceback = str(error.get("traceback", ""))


def oneflow_runtime(result: ChildResult, steps: StepFile) -> OneflowRuntime:
    """What the oneflow part saw when it imported torch, then oneflow, and ran them together."""
    runtime = OneflowRuntime(probe=probe_run(result, steps))
    found = steps.data.get(step_names.FIND)
    if not isinstance(found, dict) or not found.get("found"):
        return runtime  # no oneflow: nothing was imported
    torch = steps.data.get(step_names.TORCH_IMPORT)
    if isinstance(torch, dict):
        runtime.torch_status = "imported" if torch.get("ok") else "import-error"
        runtime.torch_imported_as = str(torch.get("imported_as") or "")
    imported = steps.data.get(step_names.ONEFLOW_IMPORT)
    if isinstance(imported, dict):
        runtime.status = "imported" if imported.get("ok") else "import-error"
        runtime.error_type = str(imported.get("type") or "")
        runtime.error_message = str(imported.get("message") or "")
        runtime.import_warnings = _load(list[str], imported.get("warnings"), [])
    elif runtime.probe.step == step_names.ONEFLOW_IMPORT:
        runtime.status = _died_importing(runtime.probe.status)
        runtime.error_message = runtime.probe.detail
    elif runtime.probe.step == step_names.TORCH_IMPORT:  # oneflow itself was never tried
        runtime.torch_status = _died_importing(runtime.probe.status)
        runtime.error_message = f"not tried: the probe {runtime.probe.detail or 'failed'} importing torch first"
    build = steps.data.get(step_names.ONEFLOW_BUILD)
    if isinstance(build, dict):
        _fill_build(runtime, build)
    coexist = steps.data.get(step_names.COEXIST)
    if isinstance(coexist, dict):
        runtime.coexist_device = str(coexist.get("device") or "")
        runtime.coexist = _load(list[CoexistCase], coexist.get("cases"), [])
    runtime.coexist_error = _step_error(steps, step_names.COEXIST) or (
        f"the probe {runtime.probe.detail or runtime.probe.status} during it"
        if runtime.probe.step == step_names.COEXIST
        else ""
    )
    return runtime


def _died_importing(probe_status: str) -> str:
    return {"timeout": "import-timeout", "crashed": "import-crashed"}.get(probe_status, "import-error")


def _fill_build(runtime: OneflowRuntime, build: dict) -> None:
    def text(key: str) -> str:
        value = build.get(key)
        return "" if value is None else str(value)

    def flag(key: str) -> Optional[bool]:
        return build.get(key) if isinstance(build.get(key), bool) else None

    runtime.version, runtime.git_commit, runtime.file = text("version"), text("git_commit"), text("file")
    runtime.cuda_version = text("get_cuda_version")
    runtime.with_cuda, runtime.with_enterprise = flag("with_cuda"), flag("with_enterprise")
    runtime.cuda_available = flag("cuda_available")
    count = build.get("device_count")
    runtime.device_count = count if isinstance(count, int) and not isinstance(count, bool) else None
    runtime.fact_errors = _load(dict[str, str], build.get("errors", {}), {})


def probe_environment(
    python: str, budget: Budget, project: bool = True, progress: ProgressBoard = SILENT, project_dir: str = ""
) -> tuple[PythonEnvironment, TorchInfo]:
    """Run the probe parts in parallel in the interpreter ``python``, within the run's ``budget``.

    ``project``: scan the working directory's code (see probe_inventory). Tasks
    "torch", "inventory" and "oneflow" (when it runs) are posted to ``progress``.
    """
    progress.start("torch", "starting Python")
    with ThreadPoolExecutor(max_workers=1) as pool, kill_children_on_error():
        torch_job = pool.submit(
            run_part, python, step_names.PART_TORCH, budget.part, budget.torch_limits(), (), progress
        )
        env = probe_inventory(python, budget, project, progress, project_dir)
        torch_result, torch_steps = torch_job.result()
        torch = torch_facts(torch_result, torch_steps)
    finish_run(progress, "torch", torch.probe, torch_result.limit)
    merge_extension_loads(env.apex, torch_steps)
    return env, torch


def probe_inventory(
    python: str, budget: Budget, project: bool = True, progress: ProgressBoard = SILENT, project_dir: str = ""
) -> PythonEnvironment:
    """The env part, then the oneflow part when the env part found a oneflow (or could not tell).

    Most environments have no oneflow, and its part would be one more interpreter
    competing with torch's import for the same cores. The torch part runs
    elsewhere: beside this (probe_environment), or in the kernel runner.
    ``project``: scan the user's code (up to ``Budget.project_scan``): ``project_dir``
    (``--project``), or the project the working directory is in (``remote/project_root.py``);
    without it the snapshot's ``environment.project.skipped`` says it was not.
    Tasks "inventory" and "oneflow" are posted to ``progress``.
    """
    if not project:
        switches: tuple[str, ...] = (step_names.NO_PROJECT,)
    else:
        switches = (step_names.PROJECT_DIR + project_dir,) if project_dir else ()
    progress.start("inventory", "starting Python")
    result, steps = run_part(
        python, step_names.PART_ENV, budget.part, budget.env_limits(), switches, progress, "inventory"
    )
    env = environment_facts(result, steps, project)
    finish_run(progress, "inventory", env.probe, result.limit)
    oneflow = env.oneflow.packages.get("oneflow")
    if oneflow is None or oneflow.origin or oneflow.error:
        limit = budget.oneflow_part(env.probe.seconds)
        progress.start("oneflow", "starting Python")
        flow_result, flow_steps = run_part(python, step_names.PART_ONEFLOW, limit, (), (), progress)
        env.oneflow.runtime = oneflow_runtime(flow_result, flow_steps)
        finish_run(progress, "oneflow", env.oneflow.runtime.probe, flow_result.limit)
    return env
