"""The environment probe: runs *inside the interpreter under diagnosis*.

It is executed by ``mpdoctor.probes.environment`` as a child process of the target
interpreter (``--python PATH``), so it must stay stdlib-only and work on Python 3.8+.
It judges nothing: it writes facts, one JSON object per line, to the file named on
its command line, flushing after each step. When a step crashes the interpreter or
hangs, the parent still has every earlier line and knows which step was running.

Two parts, run as separate processes so that a torch that segfaults on import does
not cost the package inventory:

* ``env``: interpreter, installed distributions, environment variables;
* ``torch``: the result of importing torch and what the imported torch reports.

Both also look at NVIDIA apex (``apex.py``, ``scan.py`` and ``loads.py``, siblings in
this package): the env part finds it and who imports it without importing it; the torch
part loads apex's compiled extensions in a supervised forked worker (``supervise.py``).
The env part also looks for OneFlow without importing it; a third part, ``oneflow``
(``oneflow.py``), imports it and runs it beside torch.

What each part reads is its siblings': ``env_facts.py`` (distributions, environment
variables, module origins) and ``torch_facts.py`` (the build, CUDA, the devices); this
module runs the steps. The parts' and steps' names are ``steps.py``'s: the host reads
them back by the same names. The step file is written by ``supervise.StepWriter``.

Command line: the part, its step file, the limits the part enforces itself (one
JSON object from the host's ``Budget``: ``env_limits``, ``torch_limits``), then
switches (``steps.NO_PROJECT``, ``steps.PROJECT_DIR``). No limit is derived here.
"""

import gc
import importlib
import os
import sys
import traceback
import warnings

from . import steps
from ._portable import files, limits as shared_limits, redact

# What the parts read, named here too, where they always were (tests, the kernel runner: ``probe.torch_build_facts``).
from .env_facts import (  # noqa: F401
    ENV_NAMES,
    ENV_PREFIXES,
    MODULES,
    distribution_facts,
    distributions,
    environment_variables,
    module_origins,
)
from .supervise import StepWriter  # noqa: F401 (the step file's writer, used here and by the kernel runner)
from .torch_facts import (  # noqa: F401
    _warning_texts,
    device_facts,
    release_archs,
    torch_build_facts,
    torch_cuda_facts,
    torch_device_facts,
)

# The default --timeout's limits, by the formula the host's Budget uses (portable/limits.py): only for a part
# started without a JSON object of limits it can read (by hand, or an older host). No number is repeated here.
DEFAULT_LIMITS = shared_limits.handed_limits(shared_limits.DEFAULT_TIMEOUT)


def _sibling(name):
    """A sibling module of this package, imported on first use (most runs need only some of them)."""
    return importlib.import_module("." + name, __package__)


def _exception_facts(exc):
    return {
        "type": type(exc).__name__,
        "message": redact.redact_clip(exc, shared_limits.FAILURE_TEXT, tail=True),
        "traceback": redact.redact_clip(
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), shared_limits.TRACEBACK, tail=True
        ),
    }


# ---------------------------------------------------------------- env part


def guarded_step(out, step, func):
    """Run one step; if it raises, record the error under ``steps.ERROR % step`` and go on."""
    out.begin(step)
    try:
        result = func()
    except Exception as exc:  # e.g. importlib.metadata missing on a very old Python
        out.emit(steps.ERROR % step, _exception_facts(exc))
        return None
    out.emit(step, redact.redact_tree(result))  # paths and error texts can carry tokens
    return result


def run_env(out, limits, project=True, project_dir=""):
    """The env part; ``limits``: apex_users and project_scan (s). ``project``: scan the user's project, which is
    ``project_dir`` when given (--project), else the one the working directory is in (``project_root.py``).

    Without ``project`` the project step is not written at all: the host, which
    chose not to ask for it, records why it is missing.
    """
    interpreter = _sibling("interpreter")
    out.emit(steps.PYTHON, interpreter.python_facts())
    out.emit(steps.MARKERS, interpreter.marker_environment())
    out.emit(steps.ENV, environment_variables())
    out.begin(steps.MODULES)
    out.emit(steps.MODULES, module_origins())
    guarded_step(out, steps.DISTRIBUTIONS, distributions)
    apex, scan = _sibling("apex"), _sibling("scan")
    paths, cwd = [p for p in sys.path if p], os.getcwd()
    facts = guarded_step(out, steps.APEX, lambda: apex.apex_facts(paths, cwd, sys.prefix))
    if facts and apex.present(facts):
        guarded_step(out, steps.APEX_USERS, lambda: scan.installed_uses(limits["apex_users"]))
    if project:
        # apex's own source tree is not the user's code, even in the working directory
        skip = [location["path"] for location in (facts or {}).get("locations", [])]
        guarded_step(
            out, steps.PROJECT, lambda: scan.project_facts(cwd, limits["project_scan"], skip=skip, given=project_dir)
        )
    guarded_step(out, steps.ONEFLOW, lambda: _sibling("oneflow").oneflow_facts(paths, apex.pth_lines))


# ---------------------------------------------------------------- torch part


def apex_extension_loads(limit, budget):
    """Import each compiled apex extension found, after torch, each in a forked child.

    ``limit`` s each, all within ``budget`` s (the host's apex_load_each and apex_loads).
    """
    apex = _sibling("apex")
    found = apex.find_extensions(apex.extension_names(apex.apex_distributions()))
    return _sibling("loads").load_each([ext["name"] for ext in found], limit, budget)


def import_torch(out):
    """The steps find and import: torch, or (None, why) when it is missing, broken or OneFlow's."""
    import importlib.util

    files.guard_metadata()  # the kernel runner is a torch part too: its apex step reads all METADATA
    out.begin(steps.FIND)
    try:
        spec = importlib.util.find_spec("torch")
    except Exception as exc:
        out.emit(steps.FIND, {"found": False, "error": _exception_facts(exc)})
        return None, _exception_facts(exc)
    if spec is None:
        out.emit(steps.FIND, {"found": False})
        return None, {"type": "ModuleNotFoundError", "message": "No module named 'torch'"}
    # A namespace package (a leftover torch/ directory) has no origin, only locations.
    locations = list(spec.submodule_search_locations or [])
    out.emit(steps.FIND, {"found": True, "origin": spec.origin or (locations[0] if locations else "")})

    out.begin(steps.IMPORT)
    gc.disable()  # `import torch` makes objects by the hundred thousand, none garbage: collecting only costs time
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import torch
        except BaseException as exc:  # SystemExit and friends from a broken torch too
            gc.enable()
            out.emit(steps.IMPORT, {"ok": False, "error": _exception_facts(exc), "warnings": _warning_texts(caught)})
            return None, _exception_facts(exc)
    gc.freeze()  # and what it made stays out of every later collection
    gc.enable()
    imported_as = _sibling("oneflow").imported_as(torch)
    out.emit(steps.IMPORT, {"ok": True, "warnings": _warning_texts(caught), "imported_as": imported_as})
    if imported_as != "torch":  # oneflow's mock-torch: anything further would describe OneFlow
        return None, {"type": "MockTorch", "message": "`import torch` gives %s (mock-torch), not torch" % imported_as}
    return torch, None


def torch_before_cuda(out, torch, apex_loads, apex_load_each):
    """The steps that must run before CUDA starts or is touched: the apex loads fork, and a child
    forked after any call of ``torch_cuda_facts`` cannot use CUDA.

    ``apex_loads``: the time for importing every apex extension; ``apex_load_each``: one import's (s).
    """
    out.begin(steps.BUILD)
    out.emit(steps.BUILD, torch_build_facts(torch))
    guarded_step(out, steps.APEX_LOADS, lambda: apex_extension_loads(apex_load_each, apex_loads))


def torch_devices_step(torch, cuda):
    """Every CUDA device's properties (starts CUDA), with the warnings that raised; None when there is none."""
    if not cuda.get("available") or getattr(torch.version, "hip", None):
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        devices = torch_device_facts(torch, cuda.get("device_count"))
    devices["warnings"] = _warning_texts(caught)
    return devices


def run_torch(out, limits):
    """The torch part; ``limits``: apex_loads and apex_load_each (s)."""
    torch, _ = import_torch(out)
    if torch is None:
        return
    torch_before_cuda(out, torch, limits["apex_loads"], limits["apex_load_each"])
    out.begin(steps.CUDA)
    cuda = torch_cuda_facts(torch)
    out.emit(steps.CUDA, cuda)
    if cuda.get("available") and not getattr(torch.version, "hip", None):
        out.begin(steps.DEVICES)
        out.emit(steps.DEVICES, torch_devices_step(torch, cuda))


PARTS = {
    steps.PART_ENV: lambda out, limits, switches: run_env(
        out, limits, project=steps.NO_PROJECT not in switches, project_dir=_switch_value(switches, steps.PROJECT_DIR)
    ),
    steps.PART_TORCH: lambda out, limits, switches: run_torch(out, limits),
    steps.PART_ONEFLOW: lambda out, limits, switches: _sibling("oneflow").run(out, guarded_step),
}


def _switch_value(switches, prefix):
    """The value of the last switch ``prefix`` + VALUE (e.g. "project=DIR"); "" when there is none."""
    values = [switch[len(prefix) :] for switch in switches if switch.startswith(prefix)]
    return values[-1] if values else ""


def read_limits(text):
    """The JSON object of limits on the command line; a missing key (or no object) gets DEFAULT_LIMITS' value.

    Never raises: malformed JSON, a bare number or a value that is no positive number fall back on
    DEFAULT_LIMITS (the default --timeout's), key by key."""
    import json

    try:
        given = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        given = None
    limits = dict(DEFAULT_LIMITS)
    if isinstance(given, dict):
        for key, value in given.items():
            seconds = _seconds(value)
            if key in limits and seconds is not None:
                limits[key] = seconds
    return limits


def _seconds(value):
    """``value`` as a number of seconds; None unless it is a positive, finite number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer of 400 digits
        return None
    return seconds if 0 < seconds < float("inf") else None


def main(argv):
    """argv: the part, its step file, the limits it enforces itself (JSON, from the host's Budget), switches."""
    part, path = argv[0], argv[1]
    limits = read_limits(argv[2] if len(argv) > 2 else "{}")
    files.guard_metadata()  # a FIFO as a METADATA file must cost its distribution, not the part
    out = StepWriter(path)
    PARTS[part](out, limits, set(argv[3:]))
    out.emit(steps.DONE, True)
