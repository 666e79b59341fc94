"""torch install: is there a torch, does it import, and does its build fit this machine."""

from __future__ import annotations

import shlex
from typing import Iterator, Optional

from mpdoctor import fixes
from mpdoctor.findings import Finding, Step, error, warning
from mpdoctor.registry import check
from mpdoctor.snapshot import NvmlGpu, Snapshot

FAMILY = "torch"


def _gpus(snap: Snapshot) -> list[NvmlGpu]:
    nvml = snap.machine.nvml
    return nvml.gpus if nvml.status == "ok" else []


def _capability(gpu: NvmlGpu) -> Optional[int]:
    """NVML's "8.6" as 86; None when NVML did not say."""
    major, _, minor = gpu.compute_capability.partition(".")
    return int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() else None


def _driver_evidence(snap: Snapshot) -> list[str]:
    nvml = snap.machine.nvml
    lines = [f"NVIDIA driver {nvml.driver_version} supports CUDA up to {nvml.cuda_driver_version or '?'}"]
    lines += [f"NVML GPU {g.index}: {g.name} (compute capability {g.compute_capability or '?'})" for g in _gpus(snap)]
    return lines


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _is_cuda_build(snap: Snapshot) -> bool:
    return snap.torch.status == "imported" and bool(snap.torch.cuda)


@check("TORCH001", "torch-not-installed", family=FAMILY)
def torch_not_installed(snap: Snapshot) -> Iterator[Finding]:
    """torch cannot be found by the interpreter under diagnosis.

    ## Why it matters
    Nothing in a PyTorch mixed-precision setup can run. Often the wrong interpreter
    is active (a venv not activated, a conda env other than the one you installed
    into), so check the path in the evidence first.

    ## Fix
    Activate the environment that has torch, or install torch into this one with the
    CUDA variant your driver supports (the finding gives the command).
    """
    if snap.torch.status != "missing":
        return
    gpus = _gpus(snap)
    driver_cuda = snap.machine.nvml.cuda_driver_version
    caps = [c for c in map(_capability, gpus) if c]
    cuda = fixes.best_cuda_variant(snap, driver_cuda, caps) if gpus else None
    index = f"{fixes.PYTORCH_INDEX}/{fixes.cuda_tag(cuda)}" if cuda else f"{fixes.PYTORCH_INDEX}/cpu"
    variant = f"CUDA {cuda} build" if cuda else "CPU build"
    evidence = [f"`import torch` finds nothing on {snap.python_command()}"]
    if gpus:
        evidence += _driver_evidence(snap)
    yield error(
        "torch is not installed in this environment",
        evidence,
        [Step("Check that this is the interpreter you train with", fixes.python(snap, "-c", "import sys; print(sys.executable)")),
         Step(f"Or install torch here ({variant}; other builds: {fixes.INSTALL_SELECTOR})",
              fixes.pip(snap, "install", "torch", "--index-url", index))],
    )


def _import_error_hints(snap: Snapshot) -> list[Step]:
    message = f"{snap.torch.error_type}: {snap.torch.error_message}"
    steps = []
    if "cannot open shared object file" in message or "DLL load failed" in message:
        steps.append(Step("A shared library torch links against is missing or shadowed; look for a stale "
                          "LD_LIBRARY_PATH pointing at another CUDA/cuDNN", "echo $LD_LIBRARY_PATH"))
    if "undefined symbol" in message:
        steps.append(Step("torch and its CUDA libraries come from different builds (pip and conda mixed?)"))
    if "numpy" in message.lower() or "_ARRAY_API" in message:
        steps.append(Step("This torch was built against NumPy 1.x; pin NumPy below 2",
                          fixes.pip(snap, "install", "numpy<2")))
    return steps


@check("TORCH002", "torch-import-fails", family=FAMILY)
def torch_import_fails(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` raises an exception.

    ## Why it matters
    Every training or inference script fails before it starts. The message in the
    evidence is the real error, as the target interpreter raised it.

    ## Fix
    Usually a broken or half-upgraded install: reinstall the same torch version,
    with its CUDA variant, without touching other packages. Missing shared
    libraries often come from a stale LD_LIBRARY_PATH.
    """
    torch = snap.torch
    if torch.status != "import-error":
        return
    dist = snap.distribution("torch")
    version = dist.version if dist else ""
    spec = f"torch=={version}" if version else "torch"
    yield error(
        f"`import torch` fails: {torch.error_type or 'error'}: {_tail(torch.error_message, 1)}",
        [f"torch found at {torch.origin}" if torch.origin else "torch location unknown",
         _tail(torch.error_traceback or torch.error_message)],
        _import_error_hints(snap) + [
            Step("Reinstall this torch version in place (keep the same --index-url you installed it from)",
                 fixes.pip(snap, "install", "--force-reinstall", "--no-deps", spec))],
    )


@check("TORCH003", "torch-import-crashes", family=FAMILY)
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
        [f"exit code {probe.exit_code}", _tail(probe.stderr_tail) or "no output on stderr"],
        [Step("See where it dies", fixes.python(snap, "-X", "faulthandler", "-c", "import torch")),
         Step("Look for preloaded or foreign native libraries", "env | grep -E '^LD_(PRELOAD|LIBRARY_PATH)='")],
    )


@check("TORCH004", "torch-import-hangs", family=FAMILY)
def torch_import_hangs(snap: Snapshot) -> Iterator[Finding]:
    """`import torch` did not finish within the timeout.

    ## Why it matters
    Scripts appear to hang before doing anything. Typical causes: torch on a slow
    network file system, a site-packages `.pth` hook that blocks, or a lock held by
    another process.

    ## Fix
    Time the import module by module and look at the slowest entries; raise
    `--timeout` if the file system is merely slow.
    """
    if snap.torch.status != "import-timeout":
        return
    yield error(
        f"`import torch` hangs: it {snap.torch.probe.detail}",
        [f"torch found at {snap.torch.origin}" if snap.torch.origin else "torch location unknown"],
        [Step("Find the slow imports", fixes.python(snap, "-X", "importtime", "-c", "import torch")),
         Step("If the disk is merely slow, give mpdoctor more time", "mpdoctor check --timeout 300")],
    )


@check("TORCH005", "cpu-only-torch-with-gpus", family=FAMILY)
def cpu_only_torch_with_gpus(snap: Snapshot) -> Iterator[Finding]:
    """torch is a CPU-only build, but this machine has NVIDIA GPUs.

    ## Why it matters
    `torch.cuda.is_available()` is False, so fp16/bf16 training silently runs on
    the CPU (very slowly) or fails on the first `.cuda()`. This happens when
    `pip install torch` resolved to a CPU wheel or another package pulled one in.

    ## Fix
    Reinstall the same torch version from the PyTorch index of a CUDA version your
    driver supports; reinstall torchvision/torchaudio from the same index.
    """
    torch = snap.torch
    gpus = _gpus(snap)
    if torch.status != "imported" or torch.cuda or torch.hip or not gpus:
        return
    caps = [c for c in map(_capability, gpus) if c]
    cuda = fixes.best_cuda_variant(snap, snap.machine.nvml.cuda_driver_version, caps)
    if cuda:
        steps = [fixes.reinstall_torch_step(snap, cuda, f"Reinstall torch {torch.version.split('+')[0]} built with CUDA {cuda}")]
    else:
        steps = [Step("No official build of this torch version fits this driver and these GPUs; upgrade the "
                      f"NVIDIA driver, then pick a CUDA build at {fixes.INSTALL_SELECTOR}")]
    yield error(
        f"torch {torch.version} is a CPU-only build, but NVML sees {len(gpus)} NVIDIA GPU(s)",
        [f"torch.version.cuda is None (torch {torch.version})"] + _driver_evidence(snap),
        steps,
    )


def driver_too_old(snap: Snapshot) -> Optional[tuple[str, str]]:
    """(torch's CUDA, driver's CUDA) when the driver's CUDA major version is older."""
    driver = snap.machine.nvml.cuda_driver_version
    if not _is_cuda_build(snap) or snap.machine.nvml.status != "ok" or not driver:
        return None
    if fixes.version_tuple(snap.torch.cuda)[0] > fixes.version_tuple(driver)[0]:
        return snap.torch.cuda, driver
    return None


# Minimum Linux driver of each CUDA major version (NVIDIA's CUDA Compatibility guide).
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580"}


@check("TORCH006", "cuda-runtime-newer-than-driver", family=FAMILY)
def cuda_runtime_newer_than_driver(snap: Snapshot) -> Iterator[Finding]:
    """torch was built for a newer CUDA than the NVIDIA driver supports.

    ## Why it matters
    A newer CUDA *major* version than the driver's cannot initialise at all:
    `torch.cuda.is_available()` is False ("The NVIDIA driver on your system is too
    old"). A newer *minor* version runs under CUDA's minor-version compatibility,
    but code that needs the driver to JIT-compile PTX (GPUs newer than the build's
    cubins, Triton/torch.compile kernels) can fail with "unsupported toolchain".

    ## Fix
    Upgrade the NVIDIA driver, or install the torch build for a CUDA version the
    driver supports.
    """
    torch, nvml = snap.torch, snap.machine.nvml
    if not _is_cuda_build(snap) or nvml.status != "ok" or not nvml.cuda_driver_version:
        return
    built, supported = fixes.version_tuple(torch.cuda), fixes.version_tuple(nvml.cuda_driver_version)
    if built[:2] <= supported[:2]:
        return
    caps = [c for c in map(_capability, _gpus(snap)) if c]
    cuda = fixes.best_cuda_variant(snap, nvml.cuda_driver_version, caps)
    steps = [Step(f"Upgrade the NVIDIA driver to at least {MIN_DRIVER.get(built[0], 'the one for CUDA ' + torch.cuda)} "
                  f"(CUDA {torch.cuda}); a reboot may be needed")]
    if cuda:
        steps.append(fixes.reinstall_torch_step(snap, cuda, f"Or install the torch build for CUDA {cuda}"))
    evidence = [f"torch {torch.version} is built with CUDA {torch.cuda}"] + _driver_evidence(snap)
    evidence += [w for w in torch.cuda_warnings if "driver" in w.lower()]
    if built[0] > supported[0]:
        yield error(f"torch needs CUDA {torch.cuda} but the driver supports only CUDA {nvml.cuda_driver_version}: "
                    "CUDA cannot start", evidence, steps)
    else:
        yield warning(f"torch's CUDA {torch.cuda} is newer than the driver's CUDA {nvml.cuda_driver_version} "
                      "(runs under minor-version compatibility; PTX JIT will fail)", evidence, steps)


def _runs_on(arch_list: list[str], cc: int) -> bool:
    """Does a build with these arch flags have code for capability ``cc``?

    ``sm_XY`` cubins run on the same major version with minor >= Y; ``compute_XY``
    PTX can be JIT-compiled for any device of capability >= XY.
    """
    for flag in arch_list:
        kind, _, number = flag.partition("_")
        digits = "".join(ch for ch in number if ch.isdigit())
        if not digits:
            continue
        code = int(digits)
        if kind == "sm" and fixes.compatible(cc, code):
            return True
        if kind == "compute" and cc >= code:
            return True
    return False


@check("TORCH007", "gpu-arch-not-in-torch-build", family=FAMILY)
def gpu_arch_not_in_torch_build(snap: Snapshot) -> Iterator[Finding]:
    """A GPU's compute capability is missing from the torch build's arch list.

    ## Why it matters
    Every kernel launch on that GPU fails with "CUDA error: no kernel image is
    available for execution on the device". Typical cases: a brand-new GPU with an
    older torch, or an older GPU (Pascal, Volta) with a CUDA 13 wheel, which dropped
    them.

    ## Fix
    Install the same torch version built for a CUDA version that includes this
    GPU's architecture (the finding picks one from torch's own release table).
    """
    torch = snap.torch
    if not _is_cuda_build(snap) or not torch.arch_list:
        return
    missing = [g for g in _gpus(snap) if _capability(g) and not _runs_on(torch.arch_list, _capability(g))]
    if not missing:
        return
    caps = [_capability(g) for g in missing]
    cuda = fixes.best_cuda_variant(snap, snap.machine.nvml.cuda_driver_version, caps)
    names = ", ".join(f"GPU {g.index} {g.name} (sm_{_capability(g)})" for g in missing)
    steps = ([fixes.reinstall_torch_step(snap, cuda, f"Install the CUDA {cuda} build, which has code for it")]
             if cuda else [Step("No official build known to mpdoctor covers this GPU with this driver; upgrade "
                                "the driver or build torch from source with TORCH_CUDA_ARCH_LIST set")])
    yield error(
        f"torch {torch.version} has no kernels for {names}: 'no kernel image is available'",
        [f"torch.cuda.get_arch_list() = {torch.arch_list}"] + _driver_evidence(snap),
        steps,
    )


@check("TORCH008", "cuda-build-without-cudnn", family=FAMILY)
def cuda_build_without_cudnn(snap: Snapshot) -> Iterator[Finding]:
    """A CUDA build of torch cannot load cuDNN.

    ## Why it matters
    Convolutions and cuDNN attention fall back to slow paths or fail, and fp16/bf16
    convolution performance collapses. Usually the nvidia-cudnn package is missing
    or a different libcudnn on LD_LIBRARY_PATH shadows it.

    ## Fix
    Reinstall the cuDNN package torch pins (it is in torch's requirements), and
    remove foreign cuDNN directories from LD_LIBRARY_PATH.
    """
    torch = snap.torch
    if not _is_cuda_build(snap) or torch.cudnn is not None:
        return
    dist = snap.distribution("torch")
    wanted = [r.split(";")[0].strip() for r in (dist.requires if dist else []) if "cudnn" in r]
    steps = [Step("Reinstall the cuDNN torch was built with", fixes.pip(snap, "install", "--force-reinstall", w))
             for w in wanted] or [Step("Reinstall torch so that its cuDNN comes with it",
                                       fixes.pip(snap, "install", "--force-reinstall", f"torch=={torch.version}"))]
    evidence = [f"torch {torch.version} built with CUDA {torch.cuda}", "torch.backends.cudnn.version() is None"]
    if "cudnn" in torch.fact_errors:
        evidence.append(torch.fact_errors["cudnn"])
    yield warning("torch cannot load cuDNN: convolutions and cuDNN attention will be slow or fail", evidence, steps)


@check("TORCH009", "cuda-unavailable", family=FAMILY)
def cuda_unavailable(snap: Snapshot) -> Iterator[Finding]:
    """A CUDA build of torch, NVIDIA GPUs present, yet `torch.cuda.is_available()` is False.

    ## Why it matters
    Training silently falls back to the CPU, or fails at the first `.cuda()`.
    torch's own warning (in the evidence) usually names the reason: a driver too
    old, a CUDA_VISIBLE_DEVICES that hides every GPU, or no access to /dev/nvidia*
    inside a container.

    ## Fix
    Follow the reason in torch's warning; `mpdoctor check --select GPU` lists what
    CUDA_VISIBLE_DEVICES selects.
    """
    torch = snap.torch
    if not _is_cuda_build(snap) or torch.cuda_available is not False or not _gpus(snap):
        return
    if driver_too_old(snap):
        return  # TORCH006 reports it with the fix
    env = snap.environment.env
    evidence = [f"torch {torch.version} built with CUDA {torch.cuda}", "torch.cuda.is_available() is False"]
    evidence += _driver_evidence(snap) + torch.cuda_warnings
    steps = []
    if "CUDA_VISIBLE_DEVICES" in env:
        evidence.append(f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r}")
        steps.append(Step("CUDA_VISIBLE_DEVICES may hide every GPU; try without it", "unset CUDA_VISIBLE_DEVICES"))
    steps.append(Step("In a container, pass the GPUs through", "docker run --gpus all ..."))
    steps.append(Step("See CUDA's own error", fixes.python(snap, "-c", "import torch; torch.cuda.init()")))
    yield error("torch cannot use the GPUs: torch.cuda.is_available() is False", evidence, steps)


@check("TORCH010", "cuda-init-crashes", family=FAMILY)
def cuda_init_crashes(snap: Snapshot) -> Iterator[Finding]:
    """torch imports, but asking it about CUDA crashes or hangs the interpreter.

    ## Why it matters
    Any script that touches the GPU dies or hangs the same way. Typical causes: a
    driver in a bad state (after an Xid error or a driver upgrade without reboot),
    GPUs held by a hung process, or mismatched user-space driver libraries in a
    container.

    ## Fix
    Check `nvidia-smi` and the kernel log; a reboot or a driver reload usually
    clears it.
    """
    torch = snap.torch
    probe = torch.probe
    if torch.status != "imported" or probe.status not in ("crashed", "timeout") or probe.step == "import":
        return
    yield error(
        f"CUDA initialisation in torch {torch.version} {'hangs' if probe.status == 'timeout' else 'crashes'}: "
        f"it {probe.detail} during step '{probe.step}'",
        [_tail(probe.stderr_tail) or "no output on stderr"],
        [Step("Look at the driver's state", "nvidia-smi"),
         Step("Look for GPU errors in the kernel log", "sudo dmesg | grep -iE 'NVRM|Xid'")],
    )


@check("TORCH011", "torch-is-incomplete", family=FAMILY)
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
        [Step("Look at what is there (a leftover directory has no __init__.py)", f"ls -la {shlex.quote(location)}"),
         Step("Uninstall torch, delete what remains of that directory, then reinstall",
              fixes.pip(snap, "uninstall", "-y", "torch"))],
    )
