"""torch build: does the installed torch build fit this machine's driver and GPUs."""

from __future__ import annotations

from typing import Iterator, Optional

from mpdoctor.checks import fixes
from mpdoctor.checks._common import arch_fix_steps, capability, driver_evidence, gpus, is_cuda_build, tail
from mpdoctor.analysis.gpu_map import gpu_view
from mpdoctor.analysis.visible_devices import shown_value
from mpdoctor.findings import Finding, FixStep, error, warning
from mpdoctor.checks.registry import check, defer
from mpdoctor.snapshot import Snapshot

FAMILY = "torch"
# The torch part's steps that start CUDA (their names: mpdoctor/probes/remote/steps.py, CUDA and DEVICES).
CUDA_STEPS = ("cuda", "devices")


@check(
    "TORCH005",
    "cpu-only-torch-with-gpus",
    family=FAMILY,
    fires_on=("titan-rtx-1080ti-cpu-torch",),
    quiet_on=("cpu-laptop", "torch-missing", "titan-1080ti-fastest-first"),
)
def cpu_only_torch_with_gpus(snap: Snapshot) -> Iterator[Finding]:
    """torch is a CPU-only build, but this machine has NVIDIA GPUs.

    ## Why it matters
    `torch.cuda.is_available()` is False, so fp16/bf16 training silently runs on
    the CPU (very slowly) or fails on the first `.cuda()`. This happens when
    `pip install torch` resolved to a CPU wheel or another package pulled one in.

    ## Fix
    Reinstall the same torch version from the PyTorch index of a CUDA version your
    driver supports; reinstall torchvision/torchaudio from the same index. When no
    build of this version is as old as the driver's CUDA (torch 2.13 has none
    before CUDA 12.6; driver 535 supports 12.2), the build of the same CUDA major
    version runs under CUDA minor-version compatibility, without PTX JIT: the fix
    says so, that TORCH006 then warns of it, and which driver gives full support.
    """
    torch = snap.torch
    cards = gpus(snap)
    if torch.status != "imported" or torch.cuda or torch.hip or not cards:
        return
    caps = [c for c in map(capability, cards) if c]
    cuda = fixes.best_cuda_variant(snap, snap.machine.nvml.cuda_driver_version, caps)
    if cuda:
        steps = [
            fixes.reinstall_torch_step(
                snap, cuda, f"Reinstall torch {torch.version.split('+')[0]} built with CUDA {cuda}"
            )
        ]
    else:
        steps = [
            FixStep(
                "No official build of this torch version fits this driver and these GPUs; upgrade the "
                f"NVIDIA driver, then pick a CUDA build at {fixes.INSTALL_SELECTOR}"
            )
        ]
    yield error(
        f"torch {torch.version} is a CPU-only build, but NVML sees {len(cards)} NVIDIA GPU(s)",
        [f"torch.version.cuda is None (torch {torch.version})"] + driver_evidence(snap),
        steps,
    )


def driver_too_old(snap: Snapshot) -> Optional[tuple[str, str]]:
    """(torch's CUDA, driver's CUDA) when the driver's CUDA major version is older."""
    driver = snap.machine.nvml.cuda_driver_version
    if not is_cuda_build(snap) or snap.machine.nvml.status != "ok" or not driver:
        return None
    if fixes.version_tuple(snap.torch.cuda)[0] > fixes.version_tuple(driver)[0]:
        return snap.torch.cuda, driver
    return None


def _driver_steps(snap: Snapshot) -> list[FixStep]:
    """Upgrade the driver to one that fully supports torch's CUDA, or install a build this driver fully supports.

    Never the build already installed, and never one that would again need minor-version
    compatibility: that is the problem being fixed. When no build of this torch version fits
    the driver, the finding says so and the driver upgrade is the fix.
    """
    torch, nvml = snap.torch, snap.machine.nvml
    caps = [c for c in map(capability, gpus(snap)) if c]
    cuda = fixes.best_cuda_variant(snap, nvml.cuda_driver_version, caps, minor_compat=False)
    steps = [fixes.driver_upgrade_step(snap, torch.cuda)]
    version = torch.version.split("+")[0]
    if cuda:
        steps.append(
            fixes.reinstall_torch_step(
                snap,
                cuda,
                f"Or install the torch {version} build for CUDA {cuda}, which this driver supports",
                role="alternative",
            )
        )
    else:
        builds = ", ".join(sorted(fixes.torch_variants(snap), key=fixes.version_tuple))
        steps.append(
            FixStep(
                f"No build of torch {version} fits this driver (its CUDA builds: {builds}; the driver "
                f"supports CUDA {nvml.cuda_driver_version}): upgrading the driver is the fix, or an "
                f"older torch release built for CUDA {nvml.cuda_driver_version} or older "
                f"({fixes.INSTALL_SELECTOR})",
                role="alternative",
            )
        )
    return steps


@check(
    "TORCH006",
    "cuda-runtime-newer-than-driver",
    family=FAMILY,
    fires_on=("h100-driver-too-old", "rtx4090-minor-newer"),
    quiet_on=("h100-node-healthy", "oneflow-driver-too-old", "cuda-unknown-error"),
)
def cuda_runtime_newer_than_driver(snap: Snapshot) -> Iterator[Finding]:
    """torch was built for a newer CUDA than the NVIDIA driver supports.

    ## Why it matters
    A newer CUDA *major* version than the driver's cannot initialise at all:
    `torch.cuda.is_available()` is False ("The NVIDIA driver on your system is too
    old"). A newer *minor* version runs under CUDA's minor-version compatibility,
    but code that needs the driver to JIT-compile PTX (GPUs newer than the build's
    cubins, Triton/torch.compile kernels) can fail with "unsupported toolchain".

    ## Fix
    Upgrade the NVIDIA driver to at least the one NVIDIA lists for torch's CUDA
    version (560.28.03 for CUDA 12.6, 580.65.06 for 13.0, ...), or install the
    build of this torch version for a CUDA version the driver fully supports. The
    finding never offers the build already installed; when no build of this torch
    version fits the driver, it says so.
    """
    torch, nvml = snap.torch, snap.machine.nvml
    if not is_cuda_build(snap) or nvml.status != "ok" or not nvml.cuda_driver_version:
        return
    built, supported = fixes.version_tuple(torch.cuda), fixes.version_tuple(nvml.cuda_driver_version)
    if built[:2] <= supported[:2]:
        return
    steps = _driver_steps(snap)
    evidence = [f"torch {torch.version} is built with CUDA {torch.cuda}"] + driver_evidence(snap)
    evidence += [w for w in torch.cuda_warnings if "driver" in w.lower()]
    if built[0] > supported[0]:
        yield error(
            f"torch needs CUDA {torch.cuda} but the driver supports only CUDA {nvml.cuda_driver_version}: "
            "CUDA cannot start",
            evidence,
            steps,
        )
    else:
        yield warning(
            f"torch's CUDA {torch.cuda} is newer than the driver's CUDA {nvml.cuda_driver_version} "
            "(runs under minor-version compatibility; PTX JIT will fail)",
            evidence,
            steps,
        )


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


@check(
    "TORCH007",
    "gpu-arch-not-in-torch-build",
    family=FAMILY,
    superseded_by=("PREC002",),
    fires_on=("v100-cu130",),
    quiet_on=("h100-node-healthy", "laptop-rtx3060", "kernels-titan-1080ti"),
)
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
    This is a prediction from the arch list: when the microkernels ran and saw the
    failure themselves, PREC002 reports it instead (unless PREC002 is ignored).
    """
    torch = snap.torch
    if not is_cuda_build(snap) or not torch.arch_list:
        return
    missing = [g for g in gpus(snap) if capability(g) and not _runs_on(torch.arch_list, capability(g))]
    if not missing:
        return
    names = ", ".join(f"GPU {g.index} {g.name} (sm_{capability(g)})" for g in missing)
    yield error(
        f"torch {torch.version} has no kernels for {names}: 'no kernel image is available'",
        [f"torch.cuda.get_arch_list() = {torch.arch_list}"] + driver_evidence(snap),
        arch_fix_steps(snap, [capability(g) for g in missing]),
    )


@check(
    "TORCH008",
    "cuda-build-without-cudnn",
    family=FAMILY,
    fires_on=("cuda-without-cudnn",),
    quiet_on=("torch-import-error", "cpu-laptop", "h100-node-healthy"),
)
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
    if not is_cuda_build(snap) or torch.cudnn is not None:
        return
    dist = snap.distribution("torch")
    wanted = [r.split(";")[0].strip() for r in (dist.requires if dist else []) if "cudnn" in r]
    steps = [
        FixStep("Reinstall the cuDNN torch was built with", fixes.pip(snap, "install", "--force-reinstall", w))
        for w in wanted
    ] or [
        FixStep(
            "Reinstall torch so that its cuDNN comes with it",
            fixes.pip(
                snap, "install", "--force-reinstall", f"torch=={torch.version}", *fixes.torch_index(torch.version)
            ),
        )
    ]
    evidence = [f"torch {torch.version} built with CUDA {torch.cuda}", "torch.backends.cudnn.version() is None"]
    if "cudnn" in torch.fact_errors:
        evidence.append(torch.fact_errors["cudnn"])
    yield warning("torch cannot load cuDNN: convolutions and cuDNN attention will be slow or fail", evidence, steps)


@check(
    "TORCH009",
    "cuda-unavailable",
    family=FAMILY,
    defers_to=("TORCH006", "GPU005"),
    fires_on=("cuda-unknown-error",),
    quiet_on=("cuda-init-hangs",),
)
def cuda_unavailable(snap: Snapshot) -> Iterator[Finding]:
    """A CUDA build of torch, NVIDIA GPUs present, yet `torch.cuda.is_available()` is False.

    ## Why it matters
    Training silently falls back to the CPU, or fails at the first `.cuda()`.
    torch's own warning (in the evidence) usually names the reason: a driver too
    old, a CUDA_VISIBLE_DEVICES that hides every GPU, or no access to /dev/nvidia*
    inside a container.

    ## Fix
    Follow the reason in torch's warning; `mpdoctor check --select GPU` lists what
    CUDA_VISIBLE_DEVICES selects. When the cause is a driver too old for torch's
    CUDA (TORCH006) or a CUDA_VISIBLE_DEVICES that hides every GPU (GPU005), that
    check reports it with the fix instead; with that check ignored, this one names
    the cause.
    """
    torch = snap.torch
    if not is_cuda_build(snap) or torch.cuda_available is not False or not gpus(snap):
        return
    env = snap.environment.env
    evidence = [f"torch {torch.version} built with CUDA {torch.cuda}", "torch.cuda.is_available() is False"]
    evidence += driver_evidence(snap) + torch.cuda_warnings
    title = "torch cannot use the GPUs: torch.cuda.is_available() is False"
    steps = []
    # Two causes have checks of their own, which name them with the fix: the finding gives way to the one that
    # applies (TORCH006 fires whenever the driver is too old, GPU005 whenever every GPU is hidden). When that
    # check is not selected, the finding names the cause itself.
    too_old = driver_too_old(snap)
    if too_old:
        title += f": the driver supports CUDA {too_old[1]}, torch needs CUDA {too_old[0]}"
        steps += _driver_steps(snap)
    view = gpu_view(snap)
    hidden = view.hides_all
    if hidden:
        title += f": CUDA_VISIBLE_DEVICES={shown_value(view.cuda_visible_devices)!r} hides every GPU"
    if "CUDA_VISIBLE_DEVICES" in env:
        evidence.append(f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r}")
        steps.append(
            FixStep(
                "Let CUDA see every GPU" if hidden else "CUDA_VISIBLE_DEVICES may hide every GPU; try without it",
                "unset CUDA_VISIBLE_DEVICES",
            )
        )
    if not (too_old or hidden):
        steps.append(FixStep("In a container, pass the GPUs through", "docker run --gpus all ..."))
    steps.append(
        fixes.inspect(
            "See CUDA's own error (ended after 60 s if CUDA hangs)",
            fixes.timed(60, fixes.python(snap, "-c", "import torch; torch.cuda.init()")),
        )
    )
    causes = (["TORCH006"] if too_old else []) + (["GPU005"] if hidden else [])
    finding = error(title, evidence, steps)
    yield defer(finding, *causes) if causes else finding


@check(
    "TORCH010",
    "cuda-init-crashes",
    family=FAMILY,
    fires_on=("cuda-init-hangs",),
    quiet_on=("cuda-unknown-error", "torch-import-hang", "torch-import-crash"),
)
def cuda_init_crashes(snap: Snapshot) -> Iterator[Finding]:
    """torch imports, but asking it about CUDA crashes or hangs the interpreter.

    ## Why it matters
    Any script that touches the GPU dies or hangs the same way. Typical causes: a
    driver in a bad state (after an Xid error or a driver upgrade without reboot),
    GPUs held by a hung process, or mismatched user-space driver libraries in a
    container.

    ## Fix
    Check `nvidia-smi` and the kernel log; a reboot or a driver reload usually
    clears it. Only a CUDA build that died while starting CUDA gets this diagnosis:
    a probe that ran out of time in any other step (a slow import, a CPU-only
    build) is TORCH004's.
    """
    torch = snap.torch
    probe = torch.probe
    if torch.status != "imported" or probe.status not in ("crashed", "timeout") or probe.step not in CUDA_STEPS:
        return
    if not torch.cuda:  # a CPU-only build cannot hang in CUDA: this is not a driver problem
        return
    yield error(
        f"CUDA initialisation in torch {torch.version} {'hangs' if probe.status == 'timeout' else 'crashes'}: "
        f"it {probe.detail} during step '{probe.step}'",
        [tail(probe.stderr_tail) or "no output on stderr"],
        [
            fixes.inspect("Look at the driver's state", fixes.timed(30, "nvidia-smi")),
            fixes.inspect("Look for GPU errors in the kernel log", "sudo dmesg | grep -iE 'NVRM|Xid'"),
        ],
    )
