"""OneFlow / OneDiff facts, collected *inside the interpreter under diagnosis*.

Loaded beside ``target.py`` (stdlib only, Python 3.8+, judges nothing). Two uses:

* the env part reads, without importing anything: where oneflow, onediff,
  onediffx and nexfort would import from, whether the oneflow package has its
  native core or is PyPI's placeholder, and whether oneflow's mock-torch is wired
  into this interpreter (a ``torch`` that is really OneFlow);
* the ``oneflow`` part, a process of its own with a timeout, then imports
  oneflow for real: it confirms what the static look found, reads the build, and
  runs a tiny fp16 OneFlow module alone (does this build have fp16 kernels on
  this device?), then under ``torch.autocast`` and under ``oneflow.autocast`` to
  record what each does.
"""

import importlib.util
import os
import re
import sys
import warnings

from . import steps
from ._portable import files, limits, linebreaks, redact

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

PACKAGES = ("oneflow", "onediff", "onediffx", "nexfort", "onediff_quant")
# PyPI's oneflow 0.7.0 raises this from its __init__.py; 0.6.0 just lacks the core.
PLACEHOLDER = re.compile(r"""raise\s+RuntimeError\(\s*["'](This package is a placeholder[^"']*)""")
VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)""", re.M)
GIT_COMMIT = re.compile(r"""^__git_commit__\s*=\s*["']([^"']+)""", re.M)
IMPORTS_ONEFLOW = re.compile(rb"^\s*(?:import|from)\s+oneflow\b", re.M)
MOCK_DIR = os.path.join("oneflow", "mock_torch")
MAX_SHIM = 256 * 1024  # a torch/__init__.py this small that imports oneflow is a shim, not torch
MAX_LIST = 40


def _read(path, limit=65536):
    """The first ``limit`` bytes of a regular file; b"" for anything else (a FIFO would block the open)."""
    try:
        return files.read_bytes(path, limit, cut=True)
    except (OSError, files.Refused):
        return b""


def _error(exc):
    return "%s: %s" % (type(exc).__name__, redact_clip(exc, limits.ERROR_TEXT))


# ---------------------------------------------------------------- static: no oneflow code runs


def import_origins():
    """Where each of PACKAGES would be imported from (found, not imported); "" when not found."""
    origins = {}
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except Exception as exc:  # a broken finder; find_spec of a top-level name runs no package code
            origins[name] = {"origin": "", "error": _error(exc)}
            continue
        locations = list(spec.submodule_search_locations or []) if spec else []
        origin = (spec.origin or (locations[0] if locations else "")) if spec else ""
        origins[name] = {"origin": origin if origin not in ("namespace", "built-in") else "", "error": ""}
    return origins


def build_facts(directory):
    """What the oneflow package directory holds: its native core, or a placeholder's raise."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        return {"directory": directory, "error": _error(exc)}
    cores = [name for name in names if name.startswith("_oneflow_internal") and name.endswith((".so", ".pyd"))]
    init = _read(os.path.join(directory, "__init__.py")).decode("utf-8", "replace")
    placeholder = PLACEHOLDER.search(init)
    version_text = _read(os.path.join(directory, "version.py"), 4096).decode("utf-8", "replace")
    version, commit = VERSION.search(version_text), GIT_COMMIT.search(version_text)
    facts = {
        "directory": directory,
        "native_core": os.path.join(directory, cores[0]) if cores else "",
        "placeholder_message": placeholder.group(1) if placeholder else "",
        "version": version.group(1) if version else "",
        "git_commit": commit.group(1) if commit else "",
        "has_mock_torch": os.path.isdir(os.path.join(directory, "mock_torch")),
    }
    facts.update(wheel_facts(os.path.dirname(directory)))
    return facts


def wheel_facts(site):
    """The WHEEL file of the oneflow distribution beside the package: a pure-Python wheel has no core."""
    try:
        infos = sorted(
            name for name in os.listdir(site) if name.lower().startswith("oneflow") and name.endswith(".dist-info")
        )
    except OSError:
        return {}
    if not infos:
        return {}
    text = _read(os.path.join(site, infos[0], "WHEEL"), 8192).decode("utf-8", "replace")
    tags = [line.split(":", 1)[1].strip() for line in linebreaks.split_lines(text) if line.startswith("Tag:")]
    purelib = [
        line.split(":", 1)[1].strip().lower()
        for line in linebreaks.split_lines(text)
        if line.startswith("Root-Is-Purelib:")
    ]
    return {"metadata_dir": infos[0], "wheel_tags": tags, "purelib": purelib[:1] == ["true"]}


def _in_mock_dir(path):
    return (os.sep + MOCK_DIR + os.sep) in os.path.abspath(path)


def torch_resolution():
    """What ``import torch`` would load, found without running it.

    kind: torch; missing; oneflow-mock-torch (oneflow's own mock_torch/torch, put on
    the path by ``eval $(python -m oneflow.mock_torch)``); oneflow-hook (an import
    hook from oneflow answers for torch: mock_torch.enable() ran at start-up); or
    oneflow-shim (some other small torch/__init__.py that imports oneflow).
    """
    try:
        spec = importlib.util.find_spec("torch")
    except Exception as exc:
        return {"kind": "error", "origin": "", "error": _error(exc)}
    if spec is None:
        return {"kind": "missing", "origin": ""}
    origin = spec.origin or ""
    loader = type(spec.loader).__module__ if spec.loader is not None else ""
    if loader.startswith("oneflow"):
        kind = "oneflow-hook"
    elif origin and _in_mock_dir(origin):
        kind = "oneflow-mock-torch"
    elif origin.endswith(".py") and 0 < _size(origin) <= MAX_SHIM and IMPORTS_ONEFLOW.search(_read(origin, MAX_SHIM)):
        kind = "oneflow-shim"
    else:
        kind = "torch"
    return {"kind": kind, "origin": origin, "loader": loader}


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def mock_torch_facts(entries, pth_lines):
    """Every way oneflow's mock-torch can be wired into this interpreter."""
    hooks = sorted(
        {
            "%s.%s" % (type(f).__module__, type(f).__name__)
            for f in sys.meta_path
            if type(f).__module__.startswith("oneflow")
        }
    )
    customize = []
    for name in ("sitecustomize", "usercustomize"):
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        origin = spec.origin if spec is not None else ""
        if origin and origin.endswith(".py") and b"mock_torch" in _read(origin, 1 << 20):
            customize.append(origin)
    return {
        "torch": torch_resolution(),
        "path_entries": [entry for entry in entries if os.path.normpath(entry).endswith(MOCK_DIR)],
        "hooks": hooks,
        "preloaded": sorted(name for name in sys.modules if name == "oneflow" or name.startswith("oneflow."))[
            :MAX_LIST
        ],
        "pth_lines": pth_lines(entries, words=("oneflow", "mock_torch"))[:MAX_LIST],
        "customize": customize,
    }


def oneflow_facts(entries, pth_lines):
    """Everything about OneFlow/OneDiff that can be known without importing them."""
    facts = {"packages": import_origins(), "mock": mock_torch_facts(entries, pth_lines)}
    origin = facts["packages"]["oneflow"]["origin"]
    if origin:
        facts["build"] = build_facts(os.path.dirname(origin) if origin.endswith(".py") else origin)
    return facts


def imported_as(module):
    """What an imported ``torch`` really is: "torch", or "oneflow" when mock-torch answered."""
    name = getattr(module, "__name__", "") or type(module).__name__
    if name != "torch":
        return name  # mock_torch.enable() puts a ModuleWrapper of oneflow itself in sys.modules
    if "oneflow" in sys.modules and _in_mock_dir(getattr(module, "__file__", "") or ""):
        return "oneflow"  # the CLI's mock_torch/torch/__init__.py forwards every attribute to oneflow
    return "torch"


# ---------------------------------------------------------------- the oneflow part: imports for real


def _import(name):
    """Import a module, recording how it went. BaseException: a broken build can SystemExit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            module = importlib.import_module(name)
        except BaseException as exc:
            return None, {"ok": False, "type": type(exc).__name__, "message": redact_clip(exc, limits.FAILURE_TEXT)}
    return module, {"ok": True, "warnings": [redact_clip(w.message, limits.WARNING_TEXT) for w in caught][:10]}


def _call(facts, key, func):
    try:
        value = func()
    except Exception as exc:
        facts.setdefault("errors", {})[key] = _error(exc)
        return
    facts[key] = (
        value if isinstance(value, (bool, int, float)) or value is None else redact_clip(value, limits.REPORTED_VALUE)
    )


def oneflow_build(flow):
    """What the imported oneflow says about itself (onediff's collect_env reads the same)."""
    facts = {"file": str(getattr(flow, "__file__", "") or ""), "has_internal": hasattr(flow, "_oneflow_internal")}
    _call(facts, "version", lambda: flow.__version__)
    _call(facts, "git_commit", lambda: getattr(flow, "__git_commit__", ""))
    sysconfig = getattr(flow, "sysconfig", None)
    if sysconfig is None:  # a submodule that OneFlow 0.9.0's `import oneflow` does not load
        sysconfig, _ = _import(flow.__name__ + ".sysconfig")
    for name in ("with_cuda", "get_cuda_version", "with_enterprise", "with_mlir", "cmake_build_type"):
        if sysconfig is not None and hasattr(sysconfig, name):
            _call(facts, name, getattr(sysconfig, name))
    cuda = getattr(flow, "cuda", None)
    if cuda is not None:
        _call(facts, "cuda_available", lambda: bool(cuda.is_available()))
        if facts.get("cuda_available"):
            _call(facts, "device_count", lambda: int(cuda.device_count()))
    return facts


def _dtype(tensor):
    return str(getattr(tensor, "dtype", "")).split(".")[-1]


def _sees_autocast(flow, device):
    """Does OneFlow consider autocast on, here? None when this oneflow cannot say."""
    check = getattr(flow, "is_autocast_enabled", None)
    if check is None:
        return None
    try:
        return bool(check())
    except TypeError:  # a signature that wants the device
        return bool(check(device))


def _fp16_linear(flow, device):
    """An fp16 OneFlow Linear on fp16 input, with no precision manager: does this build have the kernel?

    OneFlow's CPU build has no fp16 matmul kernel ("Cannot find the kernel matching
    Current OperatorConf"): a fact about the build, measured with OneFlow alone so that
    it is known with or without torch, and never read as evidence about autocast.
    """
    record = {"name": "fp16 input", "device": device}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            linear = flow.nn.Linear(16, 16).to(device).half()
            record["output_dtype"] = _dtype(linear(flow.randn(4, 16, device=device).half()))
            record["status"] = "ok"
        except Exception as exc:
            record["status"], record["detail"] = "error", _error(exc)
    record["warnings"] = [redact_clip(w.message, limits.WARNING_TEXT) for w in caught][:5]
    return record


def coexistence(torch, flow):
    """A tiny fp16 OneFlow module fed the fp32 tensor torch code would hand it.

    Under ``torch.autocast`` a torch user expects that input cast to fp16; the
    question is whether OneFlow does it. Then the same under ``oneflow.autocast``.
    A plain fp16 run first tells whether fp16 runs on this device at all; it needs
    no torch, and is all that runs when ``torch`` is None (no PyTorch here, or
    mock-torch answers for it).
    """
    flow_cuda = bool(getattr(flow, "cuda", None) and flow.cuda.is_available())
    use_cuda = flow_cuda and (torch is None or bool(torch.cuda.is_available()))
    device = "cuda" if use_cuda else "cpu"
    plain = _fp16_linear(flow, device)
    if torch is None:
        return {"device": device, "cases": [plain]}
    torch.manual_seed(0)
    x32 = torch.randn(4, 16, device=device)
    w16 = torch.randn(16, 16, device=device, dtype=torch.float16)
    linear = flow.nn.Linear(16, 16).to(device).half()

    def from_torch(tensor):
        convert = getattr(getattr(getattr(flow, "utils", None), "tensor", None), "from_torch", None)
        if convert is not None:
            return convert(tensor.contiguous())
        return flow.tensor(tensor.cpu().numpy(), device=device)

    def case(name, context, x):
        record = {"name": name, "device": device}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with context():
                    if name == "torch.autocast":  # what torch itself does with the same input
                        record["torch_output_dtype"] = _dtype(torch.nn.functional.linear(x, w16))
                    record["oneflow_autocast"] = _sees_autocast(flow, device)
                    record["output_dtype"] = _dtype(linear(from_torch(x)))
                record["status"] = "ok"
            except Exception as exc:
                record["status"], record["detail"] = "error", _error(exc)
        record["warnings"] = [redact_clip(w.message, limits.WARNING_TEXT) for w in caught][:5]
        return record

    return {
        "device": device,
        "cases": [
            plain,
            case("torch.autocast", lambda: torch.autocast(device_type=device, dtype=torch.float16), x32),
            case("oneflow.autocast", lambda: flow.autocast(device, dtype=flow.float16), x32),
        ],
    }


def run(out, guard):
    """The oneflow part: confirm what the static look found, then the coexistence probe."""
    try:
        spec = importlib.util.find_spec("oneflow")
    except Exception as exc:
        failed = {"found": False, "error": _error(exc)}
        guard(out, steps.FIND, lambda: failed)
        return
    guard(out, steps.FIND, lambda: {"found": spec is not None, "origin": (spec.origin or "") if spec else ""})
    if spec is None:
        return
    torch = None
    # torch first, as OneDiff does (a mock-torch makes this import oneflow already);
    # not for a oneflow without its core, whose import is only worth confirming
    directory = list(spec.submodule_search_locations or [""])[0]
    if build_facts(directory).get("native_core"):
        out.begin(steps.TORCH_IMPORT)
        torch, torch_facts = _import("torch")
        if torch is not None:
            torch_facts["imported_as"] = imported_as(torch)
        guard(out, steps.TORCH_IMPORT, lambda: torch_facts)  # guard redacts what it records
    out.begin(steps.ONEFLOW_IMPORT)
    flow, flow_facts = _import("oneflow")
    guard(out, steps.ONEFLOW_IMPORT, lambda: flow_facts)
    if flow is None:
        return
    guard(out, steps.ONEFLOW_BUILD, lambda: oneflow_build(flow))
    # without a real PyTorch (none here, or mock-torch answers for it) only OneFlow's own fp16 run is measured
    usable = torch if torch is not None and imported_as(torch) == "torch" else None
    guard(out, steps.COEXIST, lambda: coexistence(usable, flow))
