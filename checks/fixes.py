"""Building blocks for fix commands, so every check phrases them the same way.

Commands name the interpreter under diagnosis explicitly (``/venv/bin/python -m
pip``), so a fix pasted from a ``--python`` run changes the right environment.
"""

from __future__ import annotations

import re
import shlex
from typing import Optional

from mpdoctor.analysis.versions import driver_for_cuda, version_tuple
from mpdoctor.findings import FixStep, StepRole
from mpdoctor.snapshot import Snapshot

PYTORCH_INDEX = "https://download.pytorch.org/whl"
INSTALL_SELECTOR = "https://pytorch.org/get-started/locally/"

# Compute capabilities in each official CUDA build of torch, as torch 2.13's own
# torch.cuda.PYTORCH_RELEASES_CODE_CC lists them. Used only when the torch under
# diagnosis cannot tell us its table (missing, broken, or older than that table).
LATEST_RELEASE_ARCHS = {
    "12.6": {"x86_64": [50, 60, 70, 75, 80, 86, 90], "aarch64": [80, 90]},
    "12.9": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 120]},
    "13.0": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 110, 120]},
    "13.2": {"x86_64": [75, 80, 86, 90, 100, 120], "aarch64": [80, 90, 100, 110, 120]},
}


def alternative(text: str, command: Optional[str] = None) -> FixStep:
    """Another way to the same end ("Or ..."): the steps after it, up to the next alternative, belong to it.

    Said in data (``FixStep.role``), so the fix simulator proves each way on its own and renderers can show it.
    """
    return FixStep(text, command, role="alternative")


def role_of(lead: str) -> StepRole:
    """The role of a step whose words start with ``lead``: "Or ..." (and "Or, if ...") is an alternative."""
    return "alternative" if re.match(r"Or\b", lead) else "step"


def inspect(text: str, command: str) -> FixStep:
    """A command that only looks (``nvidia-smi``, ``ls``): it informs the fix and changes nothing."""
    return FixStep(text, command, role="inspect")


def ways(steps: list[FixStep]) -> list[list[FixStep]]:
    """The steps grouped into the ways they offer: the first way, then one per alternative."""
    out: list[list[FixStep]] = [[]]
    for step in steps:
        if step.role == "alternative" and out[-1]:
            out.append([])
        out[-1].append(step)
    return out if out[0] else []


def pip(snap: Snapshot, *args: str) -> str:
    """``<target python> -m pip <args>``, each argument shell-quoted."""
    return command(snap.python_command(), "-m", "pip", *args)


def mpdoctor_check(
    snap: Snapshot,
    *,
    timeout: Optional[float] = None,
    kernels: bool = False,
    select: Optional[str] = None,
    extra: tuple[str, ...] = (),
) -> str:
    """``mpdoctor check`` as the user ran it (``snap.invocation``), changed only where asked.

    ``timeout`` replaces the user's --timeout; ``kernels=True`` drops --no-kernels (the run must measure);
    ``select`` replaces the selection (its --ignore is dropped with it); ``extra`` is appended, and an
    ``--kernels`` in it replaces the user's (and their --no-kernels).
    """
    given = snap.invocation
    words = ["mpdoctor", "check"]
    if given.python:
        words += ["--python", given.python]
    if timeout is not None or given.timeout is not None:
        words += ["--timeout", _number(timeout if timeout is not None else given.timeout)]
    if given.kernels and "--kernels" not in extra:  # an --kernels in ``extra`` replaces the user's
        words += ["--kernels", given.kernels]
    if given.no_kernels and not kernels and "--kernels" not in extra:
        words.append("--no-kernels")
    if select is not None:
        words += ["--select", select]
    else:
        words += [w for code in given.select for w in ("--select", code)]
        words += [w for code in given.ignore for w in ("--ignore", code)]
    return command(*words, *extra)


def more_time(snap: Snapshot, at_least: float) -> float:
    """A --timeout worth trying next: ``at_least``, or three times the one the user gave if that is more."""
    return max(at_least, 3 * (snap.invocation.timeout or 0))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def timed(seconds: int, command: str) -> str:
    """``timeout SECONDS command``: a diagnostic command that can hang (an import that hangs) ends anyway."""
    return f"timeout {seconds} {command}"


def command(*words: str) -> str:
    """A shell command from its words, each quoted for a POSIX shell (``shlex.join``).

    Words come from the machine (UUIDs, paths, env values): quoting keeps ``;``, ``$(...)``, backticks,
    spaces and newlines in one word, so a pasted fix runs one command and nothing a value smuggled in.
    """
    return " ".join(shlex.quote(w) for w in words)


def with_env(name: str, value: str, then: str) -> str:
    """``NAME=value command``: ``then`` (already a quoted command) run with one variable set, the value quoted."""
    return f"{name}={shlex.quote(value)} {then}"


def export(name: str, value: str) -> str:
    """``export NAME=value`` for a POSIX shell, the value quoted when it needs to be."""
    return f"export {name}={shlex.quote(value)}"


def python(snap: Snapshot, *args: str) -> str:
    return command(snap.python_command(), *args)


def cuda_tag(cuda_version: str) -> str:
    """``"12.8"`` -> ``"cu128"`` (the PyTorch wheel index name)."""
    major, minor = (version_tuple(cuda_version) + (0, 0))[:2]
    return f"cu{major}{minor}"


def torch_variants(snap: Snapshot) -> dict[str, set[int]]:
    """CUDA version -> compute capabilities its official torch build contains (x86_64/aarch64)."""
    host = "aarch64" if (snap.environment.markers.get("platform_machine", "").lower() == "aarch64") else "x86_64"
    table = snap.torch.release_archs or LATEST_RELEASE_ARCHS
    # "any": a torch whose table has one set of capabilities per CUDA version for every host (2.11)
    return {cuda: set(by_host.get(host, by_host.get("any", []))) for cuda, by_host in table.items()}


def best_cuda_variant(
    snap: Snapshot, driver_cuda: str, capabilities: list[int], *, minor_compat: bool = True
) -> Optional[str]:
    """The official CUDA variant to install: one the driver runs that has code for every GPU.

    The newest variant up to the driver's CUDA version is preferred. With ``minor_compat``,
    a newer minor version of the driver's major version still runs (CUDA minor-version
    compatibility), so the closest such one is the fallback. The variant torch already is
    never comes back: reinstalling the build in place changes nothing. None when none fits.
    """
    limit = version_tuple(driver_cuda) if driver_cuda else (99, 99)
    installed = version_tuple(snap.torch.cuda)[:2] if snap.torch.status == "imported" and snap.torch.cuda else None
    ranked = []
    for cuda, archs in torch_variants(snap).items():
        version = version_tuple(cuda)
        if version[0] > limit[0] or version[:2] == installed:
            continue
        if not all(any(compatible(cc, code) for code in archs) for cc in capabilities):
            continue
        ranked.append((version[:2] <= limit[:2], version, cuda))
    fitting = [r for r in ranked if r[0]]
    if fitting:
        return max(fitting)[2]
    return min(ranked)[2] if ranked and minor_compat else None


def driver_upgrade_step(snap: Snapshot, cuda: str) -> FixStep:
    """Upgrade the driver to the least one that fully supports CUDA ``cuda`` (NVIDIA's table).

    Its words are what the fix simulator reads ("Upgrade the NVIDIA driver to V or newer"): a driver
    upgrade has no command that is the same on every distribution.
    """
    least = driver_for_cuda(cuda)
    if not least:
        return FixStep(
            f"Upgrade the NVIDIA driver to one that supports CUDA {cuda} (NVIDIA's CUDA release notes list "
            "the least driver of each CUDA version); a reboot may be needed"
        )
    return FixStep(
        f"Upgrade the NVIDIA driver to {least} or newer (the least that fully supports CUDA {cuda}; this "
        f"one is {snap.machine.nvml.driver_version or '?'}); a reboot may be needed"
    )


def compatible(device_cc: int, code_cc: int) -> bool:
    """Does a cubin for sm_<code_cc> run on a device of capability device_cc?

    Same major version and a minor version at least the code's (sm_80 code runs on
    8.6, not on 9.0). Capabilities are written as ints: 86 for 8.6.
    """
    return device_cc // 10 == code_cc // 10 and device_cc >= code_cc


def torch_companions(snap: Snapshot) -> list[str]:
    """Installed torchvision/torchaudio, pinned, to be reinstalled from torch's index."""
    specs = []
    for name in ("torchvision", "torchaudio"):
        dist = snap.distribution(name)
        if dist and dist.version:
            specs.append(f"{name}=={dist.version.split('+')[0]}")
    return specs


def torch_index(version: str) -> list[str]:
    """``--index-url`` of the PyTorch index a torch ``version`` with a local label (+cpu, +cu130) comes from.

    pip finds such a version on no other index (PyPI has no local versions); none for a version without one.
    """
    local = version.partition("+")[2]
    return ["--index-url", f"{PYTORCH_INDEX}/{local}"] if re.fullmatch(r"cpu|cu\d+|rocm[\d.]+|xpu", local) else []


def reinstall_torch_step(snap: Snapshot, cuda: Optional[str], why: str, role: StepRole = "step") -> FixStep:
    """Reinstall the same torch version (and its companions) from the CUDA ``cuda`` index."""
    version = snap.torch.version.split("+")[0] if snap.torch.version else ""
    spec = f"torch=={version}" if version else "torch"
    index = f"{PYTORCH_INDEX}/{cuda_tag(cuda)}" if cuda else f"{PYTORCH_INDEX}/cpu"
    command = pip(snap, "install", "--force-reinstall", spec, *torch_companions(snap), "--index-url", index)
    return FixStep(f"{why} (other builds: {INSTALL_SELECTOR})", command, role=role)
