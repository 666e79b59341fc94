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

The parts' and steps' names are ``steps.py``'s: the host reads them back by the
same names. The step file is written by ``supervise.StepWriter``.

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
from ._portable import limits as bound  # every bound on what is read here (portable/limits.py)
from .supervise import StepWriter  # noqa: F401 (the step file's writer, used here and by the kernel runner)

# Environment variables that change how devices are enumerated or how precision
# behaves, plus the ones that tell where packages come from.
ENV_PREFIXES = (
    "CUDA_",
    "NVIDIA_",
    "TORCH",
    "PYTORCH_",
    "NCCL_",
    "CUDNN_",
    "CUBLAS",
    "HIP_",
    "ROCR_",
    "ROCM_",
    "HSA_",
    "ONEFLOW_",
    "ONEDIFF_",
    "ACCELERATE_",
    "HF_",
    "TRANSFORMERS_",
    "DIFFUSERS_",
    "XFORMERS_",
    "APEX_",
    "DS_",
    "SLURM_",
    "PIP_",
    "CONDA_",
    "OMP_",
    "MKL_",
    "KMP_",
)
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PATH")
MAX_TEXT = 4000
# The default --timeout's limits, by the formula the host's Budget uses (portable/limits.py): only for a part
# started without a JSON object of limits it can read (by hand, or an older host). No number is repeated here.
DEFAULT_LIMITS = shared_limits.handed_limits(shared_limits.DEFAULT_TIMEOUT)


def _sibling(name):
    """A sibling module of this package, imported on first use (most runs need only some of them)."""
    return importlib.import_module("." + name, __package__)


def _exception_facts(exc):
    return {
        "type": type(exc).__name__,
        "message": redact.redact_clip(exc, MAX_TEXT, tail=True),
        "traceback": redact.redact_clip(
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), MAX_TEXT, tail=True
        ),
    }


# ---------------------------------------------------------------- env part


def _read_text(dist, name):
    try:
        return dist.read_text(name)
    except Exception:  # unreadable files count as absent
        return None


def distribution_facts(dist, sites=None):
    """Facts about one installed distribution. Don't crash on broken metadata.

    ``sites``: ``sites.context()``, to say which kind of site directory it is in ("" without it).
    """
    problems = []
    meta_path = str(getattr(dist, "_path", "") or "")
    try:
        meta = dist.metadata
        name = meta["Name"] if meta is not None else None
        version = meta["Version"] if meta is not None else None
        summary = meta["Summary"] if meta is not None else None
    except Exception as exc:
        name = version = summary = None
        problems.append("metadata unreadable: %s" % redact.redact_clip(exc, 300, tail=True))
    if not name:
        problems.append("no Name in metadata")
    if not version:
        problems.append("no Version in metadata")
    name = _bounded(name, bound.DIST_NAME, "Name", problems)
    version = _bounded(version, bound.DIST_VERSION, "Version", problems)
    try:
        requires = []
        for index, line in enumerate(dist.requires or []):  # a generator: the bound stops reading it, too
            if index == bound.DIST_REQUIRES:
                problems.append("more than %d Requires-Dist lines: the rest not read" % bound.DIST_REQUIRES)
                break
            requires.append(line)
    except Exception as exc:
        requires = []
        problems.append("requirements unreadable: %s" % redact.redact_clip(exc, 300, tail=True))
    try:
        location = str(dist.locate_file(""))
    except Exception:
        location = os.path.dirname(meta_path)
    direct_url = _read_text(dist, "direct_url.json")
    return {
        "name": name,
        "version": version,
        "location": location[: bound.DIST_PATH],
        "metadata_path": meta_path[: bound.DIST_PATH],
        "summary": _clip(summary or "", bound.DIST_SUMMARY),
        "requires": [_clip(r, bound.DIST_REQUIRE) for r in requires],
        "installer": (_read_text(dist, "INSTALLER") or "")[:100].strip(),
        "direct_url": _clip(direct_url, bound.DIST_DIRECT_URL) if direct_url else "",
        "site": _sibling("sites").site_kind(location, sites) if sites else "",
        "problems": problems,
    }


def _bounded(text, limit, field, problems):
    """``text`` (a metadata field) cut to ``limit`` characters, the cut named in ``problems``, redacted."""
    text = str(text or "")
    if len(text) > limit:
        problems.append("%s is %d characters long: the first %d kept" % (field, len(text), limit - 3))
        return redact.redact_clip(text, limit - 3)  # and "...": ``limit`` in all
    return text


def _clip(text, limit):
    """``text`` redacted and cut to ``limit`` characters in all, its end kept ("..." marks the cut)."""
    return redact.redact_clip(text, limit - 3 if len(str(text)) > limit else limit, tail=True)


def distributions():
    import importlib.metadata as metadata

    sites = _sibling("sites").context()
    found = []
    for dist in metadata.distributions():
        if len(found) == bound.DISTRIBUTIONS:  # one broken environment must not cost the report its bound
            break
        found.append(distribution_facts(dist, sites))
    return found


def environment_variables():
    names = sorted(name for name in os.environ if name.startswith(ENV_PREFIXES) or name in ENV_NAMES)
    return {name: redact.redact_env_value(name, os.environ[name]) for name in names}


# Top-level modules whose origin tells which distribution really provides them.
MODULES = ("pynvml",)


def module_origins():
    """Where each of MODULES would be imported from, without importing it."""
    import importlib.util

    origins = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pynvml's deprecation shim warns from its finder
        for name in MODULES:
            try:
                spec = importlib.util.find_spec(name)
            except Exception:  # a broken finder or package counts as not importable
                spec = None
            origins[name] = (spec.origin or "") if spec is not None else ""
    return origins


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


def _call(facts, key, func):
    """Record func()'s result under key, or the exception that it raised."""
    try:
        facts[key] = func()
    except Exception as exc:
        facts.setdefault("errors", {})[key] = "%s: %s" % (type(exc).__name__, redact.redact_clip(exc, 500, tail=True))


def _warning_texts(caught):
    return [redact.redact_clip("%s: %s" % (w.category.__name__, w.message), 1000, tail=True) for w in caught]


def torch_build_facts(torch):
    """What the build says of itself without starting CUDA: safe in a process that forks CUDA workers later.

    Nothing here may call into CUDA (see ``torch_cuda_facts``). ``torch.cuda.nccl.version()``
    reads the library's own constant and was measured fork-safe on torch 2.11.
    """
    facts = {}
    _call(facts, "version", lambda: str(torch.__version__))
    _call(facts, "file", lambda: getattr(torch, "__file__", None))
    _call(facts, "cuda", lambda: getattr(torch.version, "cuda", None))
    _call(facts, "hip", lambda: getattr(torch.version, "hip", None))
    _call(facts, "git_version", lambda: getattr(torch.version, "git_version", None))
    # Newer torch ships the arch list of each official CUDA build; use it for fixes.
    # getattr all the way: a leftover torch/ directory imports with no .cuda at all.
    table = getattr(getattr(torch, "cuda", None), "PYTORCH_RELEASES_CODE_CC", None)
    if table is not None:
        _call(facts, "release_archs", lambda: release_archs(table))
    return _sibling("nccl").with_nccl(facts, torch)  # NCCL as torch loads it (fleet compares it across ranks)


def release_archs(table):
    """``torch.cuda.PYTORCH_RELEASES_CODE_CC`` as {cuda: {host: [cc, ...]}}, whichever shape this torch ships.

    Seen: {cuda: {host: set}} and {cuda: set} (torch 2.11: one set of ccs per CUDA
    version, for every host). A set alone is filed under host "any"; anything else raises
    TypeError or ValueError, recorded as a fact error by the caller.
    """

    def ccs(value):
        if isinstance(value, (set, frozenset, list, tuple)):
            return sorted(int(cc) for cc in value)
        raise TypeError("unexpected %s in PYTORCH_RELEASES_CODE_CC" % type(value).__name__)

    if not isinstance(table, dict):
        raise TypeError("PYTORCH_RELEASES_CODE_CC is a %s, not a dict" % type(table).__name__)
    out = {}
    for cuda, by_host in table.items():
        if isinstance(by_host, dict):
            out[str(cuda)] = {str(host): ccs(value) for host, value in by_host.items()}
        else:
            out[str(cuda)] = {"any": ccs(by_host)}
    return out


# Every call here starts CUDA, or marks the process so that a child it forks later can
# never use CUDA ("Cannot re-initialize CUDA in forked subprocess"), measured on torch
# 2.11 + H200: is_available() (unless PYTORCH_NVML_BASED_CUDA_CHECK=1),
# get_arch_list() (it calls is_available), backends.cudnn.version() and
# _C._cuda_getDeviceCount(). So they run only in a process that forks no CUDA worker
# afterwards: the kernel runner's counting child, or the torch part after its forks.
def torch_cuda_facts(torch):
    """CUDA's availability and device count, with the build facts that need CUDA (under "build")."""
    facts = {}
    build = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _call(facts, "available", lambda: bool(torch.cuda.is_available()))
        _call(facts, "device_count", lambda: int(torch.cuda.device_count()))
        _call(build, "cudnn", lambda: torch.backends.cudnn.version())
        _call(build, "arch_list", lambda: list(torch.cuda.get_arch_list()))
    facts["build"] = build
    facts["warnings"] = _warning_texts(caught)
    return facts


def _pci_bus_id(props):
    """torch 2.8+ exposes the PCI location as ints; render it like NVML (normalised)."""
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if any(not isinstance(part, int) for part in parts):
        return ""
    return "%04x:%02x:%02x.0" % tuple(parts)


def device_facts(torch, ordinal):
    """One CUDA device's properties; getattr throughout, older torch lacks uuid and pci_*."""
    props = torch.cuda.get_device_properties(ordinal)
    uuid = getattr(props, "uuid", None)
    memory = getattr(props, "total_memory", None)
    sms = getattr(props, "multi_processor_count", None)
    integrated = getattr(props, "is_integrated", None)
    return {
        "ordinal": ordinal,
        "name": str(getattr(props, "name", "")),
        "compute_capability": "%s.%s" % (props.major, props.minor),
        "memory_total": int(memory) if memory is not None else None,
        "multiprocessor_count": int(sms) if sms is not None else None,
        "uuid": str(uuid) if uuid is not None else "",
        "pci_bus_id": _pci_bus_id(props),
        "is_integrated": bool(integrated) if integrated is not None else None,
    }


def torch_device_facts(torch, torch_count):
    """Every device CUDA enumerates. Starts CUDA, so it runs as its own step.

    ``torch_count`` is torch.cuda.device_count() from the step before, used only
    when this torch lacks the runtime call.
    """
    facts = {}
    # The runtime's count, not torch.cuda.device_count(): before CUDA starts, torch
    # parses CUDA_VISIBLE_DEVICES itself (against NVML) and can disagree with CUDA.
    runtime_count = getattr(getattr(torch, "_C", None), "_cuda_getDeviceCount", None)
    if runtime_count is not None:
        _call(facts, "runtime_device_count", lambda: int(runtime_count()))
    count = facts.get("runtime_device_count")
    if count is None:
        count = torch_count if isinstance(torch_count, int) else 0
    devices = []
    for ordinal in range(count):
        try:
            devices.append(device_facts(torch, ordinal))
        except Exception as exc:
            error = "%s: %s" % (type(exc).__name__, redact.redact_clip(exc, 500, tail=True))
            facts.setdefault("errors", {})["device %d" % ordinal] = error
    facts["devices"] = devices
    return facts


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
