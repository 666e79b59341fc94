"""Building blocks for fix commands, so every check phrases them the same way.

Commands name the interpreter under diagnosis explicitly (``/venv/bin/python -m
pip``), so a fix pasted from a ``--python`` run changes the right environment.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable, Optional

from mpdoctor.analysis.capability import parse_capability
from mpdoctor.analysis.versions import driver_for_cuda, version_tuple
from mpdoctor.findings import FixStep, StepRole
from mpdoctor.snapshot import Snapshot, canonical_name

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
    """``<target python> -m pip <args>``, each argument shell-quoted; on an externally managed Python, one that works.

    pip refuses to install into or uninstall from an externally managed Python (PEP 668: a distribution's
    /usr/bin/python3) with "error: externally-managed-environment". There, an install goes into a venv made from
    that Python, as pip's refusal itself advises (``--system-site-packages``: the venv still sees the system's
    packages); an uninstall is pip's own override, labelled on the command as the risk pip calls it. Every pip fix
    is built here, so no check has to know.
    """
    python = snap.python_command()
    if not (snap.environment.python and snap.environment.python.externally_managed) or not args:
        return command(python, "-m", "pip", *args)
    why = f"{python} is externally managed (PEP 668)"
    if args[0] == "install":
        venv = pep668_venv(snap)
        return (
            f"{{ test -e {venv} || {command(python, '-m', 'venv', '--system-site-packages')} {venv}; }} && "
            f"{venv}/bin/python -m pip {command(*args)}  # {why}: pip installs into a venv made from it, made only "
            f"where nothing is yet; use {venv}/bin/python from now on"
        )
    if args[0] == "uninstall":
        return (
            f"{command(python, '-m', 'pip', 'uninstall', '--break-system-packages', *args[1:])}  # RISKY: {why}; "
            "pip overrides that 'at the risk of breaking your Python installation or OS': only for a copy pip "
            "installed, never one of the distribution's packages (its package manager removes those)"
        )
    return command(python, "-m", "pip", *args)


def conda(snap: Snapshot, *args: str) -> Optional[str]:
    """``conda <args> -p <the target's prefix>``, or None when the interpreter under diagnosis is no conda env.

    Without ``-p``, conda acts on whichever env is active in the user's shell (often base), not the one diagnosed
    with ``--python``: every pip fix names its interpreter for the same reason.
    """
    python = snap.environment.python
    if not (python and python.is_conda and python.prefix and args):
        return None
    return command("conda", args[0], "-p", python.prefix, *args[1:])


def conda_owns_torch(snap: Snapshot) -> bool:
    """Whether the target is a conda env whose torch conda installed: a conda package that depends on pytorch
    (conda-forge's nvidia-apex) then works with it, where beside a pip torch it would install a second one."""
    python, torch = snap.environment.python, snap.distribution("torch")
    return bool(python and python.is_conda and torch and torch.installer == "conda")


def pep668_venv(snap: Snapshot) -> str:
    """Where a pip install for an externally managed Python goes instead (``pip``), as the shell expands it.

    A directory named after that Python (``~/.venvs/system-python3.11``), made only if nothing is there: ``python -m
    venv`` run on an existing venv rewrites its ``pyvenv.cfg`` to the new interpreter, which would break a user's
    own ``~/venv`` made from another Python and then install into it. ``${HOME:?}``: with HOME unset the shell stops
    with "HOME: parameter null or not set" rather than make ``/.venvs`` at the root.
    """
    version = ".".join(snap.environment.python.version.split(".")[:2]) if snap.environment.python else ""
    name = "system-python" + version if re.fullmatch(r"\d{1,2}\.\d{1,3}", version) else "system-python"
    return '"${HOME:?}"/.venvs/' + name


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
    if given.project:
        words += ["--project", given.project]
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


def minor_compat_note(snap: Snapshot, cuda: Optional[str]) -> str:
    """What installing the CUDA ``cuda`` build means on this driver, when the driver's CUDA is older ("" when not).

    A build for a newer minor version of the driver's CUDA major version runs under CUDA minor-version
    compatibility (NVIDIA: CUDA 12.x on any 525+ driver, 13.x on 580+), with a limited feature set: PTX JIT
    (GPUs newer than the build's cubins, Triton/torch.compile kernels) fails. TORCH006 warns of that; the
    fix says so, and which driver gives the build full support.
    """
    have = snap.machine.nvml.cuda_driver_version
    if not cuda or not have or version_tuple(cuda)[:2] <= version_tuple(have)[:2]:
        return ""
    least = driver_for_cuda(cuda)
    upgrade = f"driver {least} or newer" if least else f"a driver that supports CUDA {cuda}"
    return (
        f"; driver {snap.machine.nvml.driver_version or '?'} supports CUDA {have}, so this build runs under CUDA "
        f"minor-version compatibility, without PTX JIT (mpdoctor's TORCH006 then warns of it), and {upgrade} "
        "gives it full support"
    )


def mixed_gpus_note(snap: Snapshot) -> str:
    """What CUDA seeing every GPU of a box with different GPUs leads to ("" when the GPUs are alike).

    Once CUDA sees them (a CUDA torch installed, a CUDA_VISIBLE_DEVICES that hid them gone), the GPU checks judge
    which card CUDA makes cuda:0 (fastest first, not nvidia-smi's order) and what the weaker cards lack: a fix that
    leads there says so, by those checks' codes.
    """
    cards = {(g.name, g.compute_capability) for g in snap.machine.nvml.usable_gpus}
    if len(cards) < 2:
        return ""
    return (
        "; these GPUs differ, so mpdoctor's GPU001, GPU002 and GPU003 then say which one CUDA makes cuda:0 and "
        "what the others lack"
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


# The packages the PyTorch index serves beside torch's own dependencies. A pip command that names only these can
# take that index alone (--index-url); one that names any other package (transformers, a numpy pin) needs PyPI as
# well, so the torch index is added to it (--extra-index-url): the torch index hosts only some packages.
TORCH_INDEX_PACKAGES = frozenset({"torch", "torchvision", "torchaudio"})
_LOCAL_LABEL = re.compile(r"cpu|cu\d+|rocm[\d.]+|xpu")
_PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*(?P<version>[^\s;,]+)\s*$")


def local_label(version: str) -> str:
    """The PyTorch build label of a version (``"2.13.0+cu126"`` -> ``"cu126"``), "" when it has none pip can find."""
    local = version.partition("+")[2]
    return local if _LOCAL_LABEL.fullmatch(local) else ""


def torch_index(version: str, *, with_pypi: bool = False) -> list[str]:
    """The pip options for the PyTorch index a torch ``version`` with a local label (+cpu, +cu130) comes from.

    pip finds such a version on no other index (PyPI has no local versions); none for a version without one.
    ``--index-url`` when every package of the command is on that index; with ``with_pypi`` (the command names
    packages only PyPI has), ``--extra-index-url``, so PyPI stays the main index.
    """
    label = local_label(version)
    if not label:
        return []
    return ["--extra-index-url" if with_pypi else "--index-url", f"{PYTORCH_INDEX}/{label}"]


def index_for(specs: Iterable[str]) -> list[str]:
    """The index options a pip install of ``specs`` needs: the PyTorch index of the first exact pin with a local
    label (``torch==2.13.0+cpu``, ``torchvision==0.28.0+cu126``), as ``--index-url`` when every spec is a package
    that index serves, else as ``--extra-index-url``; none when no spec pins a local build."""
    specs = list(specs)
    pins = [m for m in (_PIN.match(s) for s in specs) if m]
    label = next((local_label(m["version"]) for m in pins if local_label(m["version"])), "")
    if not label:
        return []
    names = {canonical_name(re.split(r"[\s<>=!~;\[(]", s.strip(), maxsplit=1)[0]) for s in specs}
    return torch_index(f"+{label}", with_pypi=not names <= TORCH_INDEX_PACKAGES)


def install_torch_step(snap: Snapshot, lead: str, spec: str = "torch", role: StepRole = "step") -> FixStep:
    """Install torch (``spec``: ``torch``, ``torch>=2.4``) from the index of the variant this machine needs: the CUDA
    build this driver runs that has code for these GPUs, the CPU build without GPUs. Never from PyPI, whose torch
    on Linux is one CUDA build whatever the machine (and gigabytes of it)."""
    cards = snap.machine.nvml.usable_gpus
    caps = [c for c in (parse_capability(g.compute_capability) for g in cards) if c]
    cuda = best_cuda_variant(snap, snap.machine.nvml.cuda_driver_version, caps) if cards else None
    index = f"{PYTORCH_INDEX}/{cuda_tag(cuda)}" if cuda else f"{PYTORCH_INDEX}/cpu"
    variant = f"CUDA {cuda} build" if cuda else "CPU build"
    return FixStep(
        f"{lead} ({variant}; other builds: {INSTALL_SELECTOR}){minor_compat_note(snap, cuda)}"
        + (mixed_gpus_note(snap) if cuda else ""),
        pip(snap, "install", spec, "--index-url", index),
        role=role,
    )


def reinstall_torch_step(snap: Snapshot, cuda: Optional[str], why: str, role: StepRole = "step") -> FixStep:
    """Reinstall the same torch version (and its companions) from the CUDA ``cuda`` index."""
    version = snap.torch.version.split("+")[0] if snap.torch.version else ""
    spec = f"torch=={version}" if version else "torch"
    index = f"{PYTORCH_INDEX}/{cuda_tag(cuda)}" if cuda else f"{PYTORCH_INDEX}/cpu"
    command = pip(snap, "install", "--force-reinstall", spec, *torch_companions(snap), "--index-url", index)
    # A torch that listed no CUDA device (a CPU build, CUDA not starting): this one lets CUDA see the GPUs first.
    first_sight = mixed_gpus_note(snap) if cuda and not snap.torch.devices else ""
    return FixStep(
        f"{why} (other builds: {INSTALL_SELECTOR}){minor_compat_note(snap, cuda)}{first_sight}", command, role=role
    )
