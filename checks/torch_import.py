"""torch import: is there a torch, and does `import torch` give a working one."""

from __future__ import annotations

import os
import re
import shlex
from typing import Iterator, Optional

from packaging.requirements import InvalidRequirement, Requirement

from mpdoctor.checks import fixes
from mpdoctor.checks._common import driver_evidence, gpus, requirement_applies, tail
from mpdoctor.findings import Finding, FixStep, StepRole, error, warning
from mpdoctor.checks.registry import check
from mpdoctor.checks.torch_build import CUDA_STEPS
from mpdoctor.snapshot import Snapshot, canonical_name

FAMILY = "torch"
# Seconds a diagnostic `import torch` gets before `timeout` ends it: the import may hang the way it hung for us.
IMPORT_SECONDS = 300


@check(
    "TORCH001",
    "torch-not-installed",
    family=FAMILY,
    fires_on=("torch-missing", "visible-devices-duplicate", "oneflow-pypi-cpu"),
    quiet_on=("torch-import-error", "torch-leftover-directory", "environment-probe-failed"),
)
def torch_not_installed(snap: Snapshot) -> Iterator[Finding]:
    """torch cannot be found by the interpreter under diagnosis.

    ## Why it matters
    Nothing in a PyTorch mixed-precision setup can run. Most often this is first
    contact: mpdoctor was installed on its own (pipx, or a venv of its own) and
    diagnosed that environment, not the one you train with. Or the wrong
    interpreter is active (a venv not activated, a conda env other than the one
    you installed into): check the path in the evidence first.

    ## Fix
    Point mpdoctor at the environment you train with:
    `mpdoctor check --python /path/to/your/venv/bin/python`. The finding lists the
    other environments it can see from here (the active conda env, `./.venv`,
    `$VIRTUAL_ENV`), ready to paste. Or install torch into this one with the CUDA
    variant your driver supports (the finding gives the command).
    """
    if snap.torch.status != "missing":
        return
    cards = gpus(snap)
    evidence = [f"`import torch` finds nothing on {snap.python_command()}"]
    if cards:
        evidence += driver_evidence(snap)
    # Checking another environment only looks (role "inspect"): it changes nothing here, and the one way that
    # does is installing torch.
    steps = [
        fixes.inspect(
            "Run mpdoctor on the environment you train with (mpdoctor may live in a venv or pipx of its own)",
            "mpdoctor check --python /path/to/your/venv/bin/python",
        )
    ]
    for where, python in other_interpreters(snap):
        steps.append(
            fixes.inspect(f"Or check {where}, found here", fixes.command("mpdoctor", "check", "--python", python))
        )
    steps.append(_install_torch(snap, "Or install torch here", role="alternative"))
    yield error("torch is not installed in this environment", evidence, steps)


def other_interpreters(snap: Snapshot) -> list[tuple[str, str]]:
    """(where it comes from, its python) for the environments other than the snapshot's that can be seen here:
    the active conda env (CONDA_PREFIX), ``./.venv``, and an activated venv (VIRTUAL_ENV).

    Only those whose interpreter exists, and only when the snapshot's own interpreter exists here too: a
    snapshot judged on another machine (a saved file, a fixture) says nothing of this one's directories. The
    environment variables are the snapshot's (as the probe saw them); ``./.venv`` is relative to the working
    directory and written so, as a user would type it.
    """
    info = snap.environment.python
    own = info.prefix if info and info.prefix else ""
    if not own or not info.executable or not os.path.exists(info.executable):
        return []
    env = snap.environment.env
    candidates = [
        ("the active conda env (CONDA_PREFIX)", env.get("CONDA_PREFIX", "")),
        ("./.venv", os.path.join(os.curdir, ".venv")),
        ("the activated venv (VIRTUAL_ENV)", env.get("VIRTUAL_ENV", "")),
    ]
    found, seen = [], [own]
    for where, prefix in candidates:
        python = _env_python(prefix) if prefix else ""
        if python and not any(_same_dir(prefix, other) for other in seen):
            found.append((where, python))
            seen.append(prefix)
    return found


def _env_python(prefix: str) -> str:
    """The interpreter of the environment at ``prefix`` (bin/python, or Scripts\\python.exe), "" when none."""
    for relative in (("bin", "python"), ("bin", "python3"), ("Scripts", "python.exe"), ("python.exe",)):
        path = os.path.join(prefix, *relative)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return ""


def _same_dir(one: str, other: str) -> bool:
    """Whether two environment directories are the same one (a venv's python is a symlink to the base
    interpreter, so the interpreters' real paths cannot tell venvs apart; their directories can)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.abspath(one) == os.path.abspath(other)


def _install_torch(snap: Snapshot, lead: str, role: StepRole = "step") -> FixStep:
    """Install torch from the index of the CUDA variant that this driver runs and these GPUs need (CPU without GPUs)."""
    return fixes.install_torch_step(snap, lead, role=role)


def _import_error_hints(snap: Snapshot) -> list[FixStep]:
    message = f"{snap.torch.error_type}: {snap.torch.error_message}"
    steps = []
    if "cannot open shared object file" in message or "DLL load failed" in message:
        steps.append(
            fixes.inspect(
                "A shared library torch links against is missing or shadowed; look for a stale "
                "LD_LIBRARY_PATH pointing at another CUDA/cuDNN",
                "echo $LD_LIBRARY_PATH",
            )
        )
    if "undefined symbol" in message:
        steps.append(FixStep("torch and its CUDA libraries come from different builds (pip and conda mixed?)"))
    if "numpy" in message.lower() or "_ARRAY_API" in message:
        steps.append(
            FixStep("This torch was built against NumPy 1.x; pin NumPy below 2", fixes.pip(snap, "install", "numpy<2"))
        )
    return steps


@check(
    "TORCH002",
    "torch-import-fails",
    family=FAMILY,
    fires_on=("torch-import-error",),
    quiet_on=("torch-missing", "torch-import-crash", "torch-import-hang"),
)
def torch_import_fails(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` raises an exception.

    ## Why it matters
    Every training or inference script fails before it starts. The message in the
    evidence is the real error, as the target interpreter raised it.

    ## Fix
    Usually a broken or half-upgraded install: reinstall the same torch version,
    with its CUDA variant, without touching other packages. Missing shared
    libraries often come from a stale LD_LIBRARY_PATH. A missing library that one
    of torch's nvidia-* dependencies ships (libcudnn.so.9 is nvidia-cudnn-cu12's)
    comes back only with that dependency: the fix reinstalls it, at the version
    torch's own requirements pin, not torch alone.
    """
    torch = snap.torch
    if torch.status != "import-error":
        return
    dist = snap.distribution("torch")
    version = dist.version if dist else ""
    yield error(
        f"`import torch` fails: {torch.error_type or 'error'}: {tail(torch.error_message, 1)}",
        [
            f"torch found at {torch.origin}" if torch.origin else "torch location unknown",
            tail(torch.error_traceback or torch.error_message),
        ],
        _import_error_hints(snap) + _reinstall_steps(snap, version),
    )


# A shared library `import torch` could not open (the loader's words), and the name of the nvidia-* wheel stem that
# ships it where the two differ (libcudart.so.12 is in nvidia-cuda-runtime-cu12).
MISSING_LIBRARY = re.compile(r"lib(?P<stem>[A-Za-z][\w]*?)(?:[-_.]\w+)*\.so[\w.]*: cannot open shared object file")
WHEEL_OF_LIBRARY = {
    "cublaslt": "cublas",
    "cudart": "cuda-runtime",
    "nvrtc": "cuda-nvrtc",
    "cupti": "cuda-cupti",
    "nvtoolsext": "nvtx",
}


def providing_requirement(snap: Snapshot, message: str) -> Optional[Requirement]:
    """torch's own requirement (its Requires-Dist, for this interpreter) on the nvidia-* wheel that ships the library
    the import error names (``libcudnn.so.9`` -> ``nvidia-cudnn-cu12==9.10.2.21``); None when torch requires none."""
    found = MISSING_LIBRARY.search(message)
    dist = snap.distribution("torch")
    if not found or not dist:
        return None
    stem = found["stem"].lower()
    wheel = f"nvidia-{WHEEL_OF_LIBRARY.get(stem, stem)}"
    for line in dist.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonical_name(req.name)
        if (name == wheel or re.fullmatch(re.escape(wheel) + r"-cu\d+", name)) and requirement_applies(
            req, snap.environment.markers
        ):
            return req
    return None


def _reinstall_steps(snap: Snapshot, version: str) -> list[FixStep]:
    """Reinstall what the import misses: the nvidia-* wheel torch requires that ships the missing library, at the
    version torch requires (a torch reinstalled without its dependencies never brings it back); else torch itself,
    in place, from the index its build comes from."""
    torch = snap.torch
    library = providing_requirement(snap, torch.error_message)
    if library is not None:
        wanted = f"{library.name}{library.specifier}"
        return [
            FixStep(
                f"Reinstall {library.name}, the torch dependency that ships the missing library, at the version "
                f"torch {version} requires",
                fixes.pip(snap, "install", "--force-reinstall", "--no-deps", wanted),
            )
        ]
    if not version:
        # No torch-*.dist-info: pip has no record of this torch, so it cannot be reinstalled "in place", and an
        # unpinned `pip install torch` would fetch the newest CUDA build from PyPI, gigabytes of another torch.
        location = torch.origin.rsplit("/__init__.py", 1)[0] if torch.origin else ""
        steps = []
        if location:
            steps.append(
                FixStep(
                    "This torch has no install record (no torch-*.dist-info), so pip cannot reinstall it: move its "
                    "directory aside (kept, to restore if it was wanted)",
                    f"mv {shlex.quote(location)} {shlex.quote(location + '.broken')}",
                )
            )
        return steps + [fixes.install_torch_step(snap, "Then install the torch build this machine needs")]
    spec = f"torch=={version}"
    return [
        FixStep(
            "Reinstall this torch version in place"
            + (
                ", from the index its build comes from"
                if fixes.torch_index(version)
                else " (keep the same --index-url you installed it from)"
            ),
            fixes.pip(snap, "install", "--force-reinstall", "--no-deps", spec, *fixes.torch_index(version)),
        )
    ]


@check(
    "TORCH003",
    "torch-import-crashes",
    family=FAMILY,
    fires_on=("torch-import-crash",),
    quiet_on=("torch-import-error", "torch-import-hang", "cuda-init-hangs"),
)
def torch_import_crashes(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` kills the interpreter (segmentation fault, abort).

    ## Why it matters
    The process dies without a Python traceback, usually from a native library
    conflict: two OpenMP runtimes, an incompatible LD_PRELOAD, or CUDA libraries
    from another install.

    ## Fix
    Run the import with faulthandler to see where it dies, check LD_PRELOAD and
    LD_LIBRARY_PATH, and reinstall torch.
    """
    if snap.torch.status != "import-crashed":
        return
    probe = snap.torch.probe
    yield error(
        f"`import torch` crashes the interpreter: it {probe.detail}",
        [f"exit code {probe.exit_code}", tail(probe.stderr_tail) or "no output on stderr"],
        [
            fixes.inspect(
                "See where it dies",
                fixes.timed(IMPORT_SECONDS, fixes.python(snap, "-X", "faulthandler", "-c", "import torch")),
            ),
            fixes.inspect(
                "Look for preloaded or foreign native libraries", "env | grep -E '^LD_(PRELOAD|LIBRARY_PATH)='"
            ),
        ],
    )


@check(
    "TORCH004",
    "torch-import-hangs",
    family=FAMILY,
    fires_on=("torch-import-hang",),
    quiet_on=("torch-import-crash", "cuda-init-hangs", "nvml-timeout"),
)
def torch_import_hangs(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` did not finish within the timeout.

    ## Why it matters
    Scripts appear to hang before doing anything. Typical causes: torch on a slow
    network file system, a site-packages `.pth` hook that blocks, or a lock held by
    another process.

    ## Fix
    Time the import module by module and look at the slowest entries; raise
    `--timeout` if the file system is merely slow. When torch did import but the
    torch probe ran out of time before it finished (outside CUDA's start-up, which
    is TORCH010's), the import took most of the limit: the finding is a warning
    and names the step that was running.
    """
    torch, probe = snap.torch, snap.torch.probe
    slow = [
        fixes.inspect(
            f"Find the slow imports (ended after {IMPORT_SECONDS} s if it hangs)",
            fixes.timed(IMPORT_SECONDS, fixes.python(snap, "-X", "importtime", "-c", "import torch")),
        ),
        FixStep(
            "If the disk is merely slow, give mpdoctor more time",
            fixes.mpdoctor_check(snap, timeout=fixes.more_time(snap, 300)),
        ),
    ]
    where = [f"torch found at {torch.origin}" if torch.origin else "torch location unknown"]
    if torch.status == "import-timeout":
        yield error(f"`import torch` hangs: it {probe.detail}", where, slow)
    elif torch.status == "imported" and probe.status == "timeout" and not (torch.cuda and probe.step in CUDA_STEPS):
        during = f"during step '{probe.step}'" if probe.step else "after the last step it finished"
        yield warning(
            f"The torch probe ran out of time after `import torch` succeeded: it {probe.detail} {during}",
            where
            + [
                f"torch probe: {probe.status} after {probe.seconds:g} s",
                "facts the probe had collected by then are kept",
            ],
            slow,
        )


@check(
    "TORCH011",
    "torch-is-incomplete",
    family=FAMILY,
    fires_on=("torch-leftover-directory",),
    quiet_on=("torch-missing", "torch-import-error"),
)
def torch_is_incomplete(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` succeeds, but what it imports is not a working torch.

    ## Why it matters
    A `torch/` directory left behind by an interrupted uninstall (or a stray folder
    named torch on sys.path) imports as an empty namespace package: `import torch`
    "works", then `torch.cuda`, `torch.float16` and everything else fail.

    ## Fix
    Remove the leftover directory, then reinstall torch.
    """
    torch = snap.torch
    if torch.status != "imported":
        return
    broken_probe = torch.probe.status == "error"
    if torch.version and not broken_probe:
        return
    evidence = [f"`import torch` loads {torch.origin or 'an unknown location'}"]
    if not torch.version:
        evidence.append("it has no torch.__version__")
    evidence += [f"{key}: {error}" for key, error in sorted(torch.fact_errors.items())]
    if broken_probe:
        evidence.append(f"the torch probe {torch.probe.detail}")
    location = torch.origin.rsplit("/__init__.py", 1)[0] if torch.origin else "<site-packages>/torch"
    yield error(
        "`import torch` loads something that is not a working torch",
        evidence,
        [
            fixes.inspect(
                "Look at what is there (a leftover directory has no __init__.py)", f"ls -la {shlex.quote(location)}"
            ),
            FixStep("Uninstall torch", fixes.pip(snap, "uninstall", "-y", "torch")),
            FixStep("Delete what remains of that directory", f"rm -rf {shlex.quote(location)}"),
            _install_torch(snap, "Then install torch again"),
        ],
    )
