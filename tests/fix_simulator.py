"""Fix simulator: apply a finding's fix to a copy of the snapshot, judge it again, and see the finding gone.

A fix list is only worth pasting if it is right. This module reads the commands
mpdoctor's own helpers write (``checks/fixes.py``) and applies each to a deep copy
of the snapshot, the way the command would change the facts on the machine:

* ``export VAR=VALUE``, ``unset VAR``, and ``VAR=VALUE command`` (one process's
  environment): the variable, and what CUDA then enumerates (``torch.devices``,
  re-derived from NVML and CUDA's rules; kernels measured per device follow their GPU);
* ``<python> -m pip uninstall -y NAME``: every copy of NAME, and what importing it
  then finds (torch missing, no apex, no oneflow, no pynvml module);
* ``<python> -m pip install [-U] 'NAME==V' | 'NAME>=V' | NAME``: the distribution at
  V (the least version the specifier allows, or an unknown newest one);
* ``... install [--force-reinstall] torch==V --index-url .../cuXYZ`` (or ``--extra-index-url``):
  torch rebuilt for CUDA X.Y with that build's architectures (torch's own release table),
  CUDA available when the driver runs it, and a cuDNN that loads when pip brings the
  build's dependencies over a torch that had none;
* a driver upgrade (``fixes.driver_upgrade_step``: "Upgrade the NVIDIA driver to V
  or newer"): the driver, and the CUDA version it supports (NVIDIA's table);
* ``mv PATH PATH.disabled`` of a stray apex directory; ``rm -rf`` of a leftover torch
  directory or of a broken ``.dist-info``;
* ``APEX_CPP_EXT=1 APEX_CUDA_EXT=1 ... pip install --no-build-isolation git+.../NVIDIA/apex``
  (the variables are the build's, not the shell's): apex whose extensions are built
  against, and load with, the installed torch;
* ``pip install -U --pre oneflow -f .../community_cuXYZ``: a real OneFlow build for CUDA
  X.Y, its import left for the probe;
* ``--force-reinstall`` of the torch build in place over a failing ``import torch``,
  credited only where the error shows another build's files;
* an upgrade past the release that dropped an apex import (apex_usage's release table);
* ``eval $(<python> -m oneflow.mock_torch disable)``: what that module prints, applied.

Those models are ``tests/simulated_installs.py``'s. Anything else, or anything whose
outcome the snapshot cannot tell (a reboot, a container, pip choosing a release it does
not list, which cuDNN a wheel brings, a rerun of mpdoctor that would measure anew),
raises :class:`CannotSimulate` with the reason.
Steps whose role is ``inspect`` only look, and are skipped; steps in words only
(edit your code) are skipped too, so a way is proven by its commands alone. Pure: no
subprocess, no file system; the snapshot passed in is never changed. What CUDA then
sees (available or not, which GPU is cuda:N) is ``tests/simulated_cuda.py``'s.
"""

from __future__ import annotations

import copy
import re
import shlex
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, Optional

from packaging.requirements import InvalidRequirement, Requirement

import simulated_installs as installs
from mpdoctor.checks import fixes
from mpdoctor.findings import Finding, FixStep
from mpdoctor.snapshot import Distribution, Snapshot, TorchInfo, canonical_name
from mpdoctor.snapshot.apex import ApexInfo
from simulated_cuda import CannotSimulate, ordinals, start_cuda, upgrade_driver

CUDA_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
DRIVER_UPGRADE = re.compile(r"^Upgrade the NVIDIA driver to (?P<version>\d+(?:\.\d+)*) or newer\b")
_MOCK_TORCH_OFF = re.compile(r"eval \$\((?P<python>\S+) -m oneflow\.mock_torch disable\)")
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.S)


_BEFORE: ContextVar[Snapshot] = ContextVar("snapshot before the way")
# The CUDA builds on the PyTorch index require their cuDNN (nvidia-cudnn-cuXY, pinned), which pip installs with them:
# a CUDA build installed with its dependencies loads a cuDNN. Which version is torch's pin, which the snapshot of the
# torch before does not hold: 0 stands for "loads, version not recorded" (only whether it loads is judged, TORCH008).
CUDNN_FROM_DEPENDENCIES = 0

Proof = Literal["proven", "failed", "cannot-simulate", "no-command"]


@dataclass
class WayResult:
    """What applying one way of a fix (its first way, or one alternative) did."""

    way: int  # 0: the first way; n: the n-th alternative
    verdict: Proof
    why: str = ""  # the reason it could not be simulated, or what stayed or appeared
    announced: list[str] = field(default_factory=list)  # codes of new findings the way names, so leads to knowingly


Judge = Callable[[Snapshot], list[Finding]]


def prove(snap: Snapshot, finding: Finding, judge: Judge) -> list[WayResult]:
    """Apply each way of ``finding``'s fix alone to a copy of ``snap`` and judge again.

    A way is proven when the finding is gone and no new warning or error appeared that the way does not announce:
    no fix leads to another finding unless its own words say so, by that finding's code ("mpdoctor's TORCH006
    then warns of it"). A finding the fix only renumbers or rewords (cuda:1 becoming cuda:0, a version moving on)
    is the same problem, not a new one.
    """
    before = judge(snap)
    results = []
    for number, way in enumerate(fixes.ways(finding.fix)):
        doing = [s for s in way if s.role != "inspect"]
        if not any(s.command or DRIVER_UPGRADE.match(s.text) for s in doing):
            results.append(WayResult(number, "no-command", "only words: " + "; ".join(s.text for s in way)[:160]))
            continue
        try:
            after_snap = apply(snap, doing)
        except CannotSimulate as exc:
            results.append(WayResult(number, "cannot-simulate", str(exc)))
            continue
        after = judge(after_snap)
        new = _new_findings(finding, before, after)
        said = announced(way)
        problems = _still_there(finding, before, after) + [
            f"new {f.severity} {f.code}, which the fix does not announce: {f.title}" for f in new if f.code not in said
        ]
        results.append(
            WayResult(
                number,
                "failed" if problems else "proven",
                "; ".join(problems),
                sorted({f.code for f in new if f.code in said}),
            )
        )
    return results


_CODE = re.compile(r"\b[A-Z]+[0-9]{3}\b")


def announced(way: Iterable[FixStep]) -> set[str]:
    """The finding codes a way's own words name: the findings it says it leads to."""
    return {code for step in way for code in _CODE.findall(step.text)}


def _key(f: Finding) -> tuple[str, str]:
    return f.code, f.title


def _still_there(finding: Finding, before: list[Finding], after: list[Finding]) -> list[str]:
    if any(_key(f) == _key(finding) for f in after):
        return [f"{finding.code} is still there"]
    same_code_before = sum(f.code == finding.code for f in before)
    same_code_after = sum(f.code == finding.code for f in after)
    if same_code_after >= same_code_before:  # the title changed, the problem did not go
        return [f"{finding.code} is still there, now as: " + next(f.title for f in after if f.code == finding.code)]
    return []


def _new_findings(finding: Finding, before: list[Finding], after: list[Finding]) -> list[Finding]:
    """The warnings and errors after the fix that were not there before.

    Counted per code: a finding of a code that was there, whose title the fix changed (cuda:1 now cuda:0, an info
    now confirmed as a warning), offsets one that went; only findings beyond those are new. The finding being
    fixed offsets nothing: its going is the fix's point, not room for another of its code.
    """
    old = [_key(f) for f in before if _key(f) != _key(finding)]
    now = {_key(f) for f in after}
    new = []
    for code in dict.fromkeys(f.code for f in after):
        fresh = [f for f in after if f.code == code and f.severity in ("warning", "error") and _key(f) not in old]
        gone = sum(1 for key in old if key[0] == code and key not in now)
        if len(fresh) > gone:
            new += fresh
    return new


def apply(snap: Snapshot, steps: Iterable[FixStep]) -> Snapshot:
    """A copy of ``snap`` with the steps applied in order; CannotSimulate for a step it cannot apply."""
    out = copy.deepcopy(snap)
    before = _BEFORE.set(snap)  # what the machine was before the way began, for models that need it
    try:
        _apply_steps(out, steps)
    finally:
        _BEFORE.reset(before)
    return out


def _apply_steps(out: Snapshot, steps: Iterable[FixStep]) -> None:
    for step in steps:
        if step.role == "inspect":
            continue
        upgrade = DRIVER_UPGRADE.match(step.text)
        if upgrade and not step.command:
            upgrade_driver(out, upgrade["version"])
        elif not step.command:
            continue  # advice in words (edit your code, ask Slurm): nothing to apply; the commands must do it
        else:
            _run(out, step.command)


# ---------------------------------------------------------------- commands


def _run(snap: Snapshot, command: str) -> None:
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise CannotSimulate(f"unparseable command ({exc}): {command}") from None
    if _MOCK_TORCH_OFF.fullmatch(command) and _MOCK_TORCH_OFF.fullmatch(command)["python"] == shlex.quote(
        snap.python_command()
    ):
        installs.disable_mock_torch(snap)  # the one eval mpdoctor writes: what it evaluates is known
        return
    if any(w in ("&&", "||", "|", ";") or w.startswith("$(") for w in words) or "$(" in command:
        raise CannotSimulate(f"a compound shell command: {command[:100]}")
    assignments = []
    while words and _ASSIGNMENT.match(words[0]):
        assignments.append(_ASSIGNMENT.match(words.pop(0)))
    if assignments and _is_pip(snap, words):  # VAR=VALUE pip ...: the build pip starts sees them, the shell does not
        _pip(snap, words[3], words[4:], {match["name"]: match["value"] for match in assignments})
        return
    if assignments:  # VAR=VALUE command: the variable for the process the command starts
        for match in assignments:
            _set_env(snap, match["name"], match["value"])
        return
    head = words[0] if words else ""
    if head == "export" and len(words) == 2 and _ASSIGNMENT.match(words[1]):
        match = _ASSIGNMENT.match(words[1])
        _set_env(snap, match["name"], match["value"])
    elif head == "unset" and len(words) >= 2:
        for name in words[1:]:
            _set_env(snap, name, None)
    elif head == "mv" and len(words) == 3:
        _move(snap, words[1], words[2])
    elif words[:2] == ["rm", "-rf"] and len(words) == 3:
        _remove(snap, words[2])
    elif _is_pip(snap, words):
        _pip(snap, words[3], words[4:])
    else:
        raise CannotSimulate(f"not a command the simulator knows: {command[:100]}")


def _set_env(snap: Snapshot, name: str, value: Optional[str]) -> None:
    env = snap.environment.env
    old = ordinals(snap) if name in CUDA_VARIABLES else {}
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value
    if name in CUDA_VARIABLES:
        start_cuda(snap, old)


def _is_pip(snap: Snapshot, words: list[str]) -> bool:
    return words[:1] == [snap.python_command()] and words[1:3] == ["-m", "pip"] and len(words) > 3


_WITH_VALUE = ("--index-url", "--extra-index-url", "-f", "--find-links")


def _pip(snap: Snapshot, verb: str, args: list[str], build_env: Optional[dict[str, str]] = None) -> None:
    flags = {a for a in args if a.startswith("-")}
    names = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in _WITH_VALUE)]
    sources = [n for n in names if n.startswith("git+")]
    if verb == "install" and sources:  # a build from source: only apex's, with the flags its README gives
        if len(names) > 1 or flags - {"-v", "--no-build-isolation"} or "--no-build-isolation" not in flags:
            raise CannotSimulate(
                f"a build of {' '.join(names)} {' '.join(sorted(flags))}: what it installs is for its probe to say"
            )
        installs.build_apex(snap, sources[0], build_env or {})
        return
    if any(a in args for a in _WITH_VALUE):
        # --extra-index-url: pip looks on PyPI and there; a local build (torch==V+cu126) is only there.
        index = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--index-url", "--extra-index-url")), None)
        links = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-f", "--find-links")]
        if verb == "install" and index and any(canonical_name(_requirement(n).name) == "torch" for n in names):
            free = [n for n in names if not _requirement(n).specifier]
            if flags & {"-U", "--upgrade"} and free:
                raise CannotSimulate(
                    f"pip --upgrade picks the release of {', '.join(free)} that fits the pins: the index "
                    "pages are not in the snapshot"
                )
            _install_torch_build(snap, names, index, no_deps="--no-deps" in flags)
            return
        oneflow_flags = {"-U", "--upgrade", "--pre", "-f", "--find-links"}
        if verb == "install" and names == ["oneflow"] and len(links) == 1 and not index and flags <= oneflow_flags:
            installs.install_oneflow(snap, links[0], _BEFORE.get())
            return
        raise CannotSimulate("a build from another index: what it installs is for its probe to say")
    if verb == "uninstall" and names:
        for name in names:
            _uninstall(snap, name)
    elif verb == "install" and names and not flags - {"-U", "--upgrade"}:
        free = [n for n in names if not _requirement(n).specifier]
        if len(names) > 1 and flags & {"-U", "--upgrade"} and free:
            raise CannotSimulate(
                f"pip --upgrade picks the release of {', '.join(free)} that fits the pins: the snapshot "
                "does not list which releases exist"
            )
        for name in names:
            _install(snap, _requirement(name))
    else:
        raise CannotSimulate(
            f"pip {verb} {' '.join(sorted(flags))}: a reinstall in place repairs files the snapshot does not describe"
        )


def _requirement(text: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement:
        raise CannotSimulate(f"not a requirement pip would take: {text}") from None


def _install(snap: Snapshot, req: Requirement) -> None:
    name = canonical_name(req.name)
    if name in ("torch", "apex", "oneflow", "nvidia-apex"):
        raise CannotSimulate(f"installing {req.name} from PyPI: which build it is is for the probe to say")
    version = ""
    for spec in req.specifier:
        if spec.operator in ("==", ">=", "~=") and "*" not in spec.version:
            version = spec.version  # the least version the specifier allows
    if req.specifier and not version:
        raise CannotSimulate(f"which version of {req} pip would pick is not known offline")
    installs.upgrade_drops_imports(snap, req.name, version)  # apex imports the scan found in its code
    existing = [d for d in snap.environment.distributions if canonical_name(d.name) == name]
    if existing:
        existing[0].version = version or existing[0].version
        existing[0].problems = []
    else:
        site = installs.site_packages(snap)
        snap.environment.distributions.append(
            Distribution(
                name=req.name,
                version=version,
                location=site,
                metadata_path=f"{site}/{name}-{version}.dist-info",
                installer="pip",
            )
        )


def _uninstall(snap: Snapshot, name: str) -> None:
    wanted = canonical_name(name)
    env = snap.environment
    env.distributions = [d for d in env.distributions if canonical_name(d.name) != wanted]
    env.module_origins.pop(wanted.replace("-", "_"), None)
    if wanted == "torch" and not (snap.torch.status == "imported" and not snap.torch.version):
        snap.torch = TorchInfo(status="missing", probe=snap.torch.probe)
    # a leftover torch/ with no version is owned by no distribution: pip leaves it, and it still imports
    elif wanted in ("apex", "nvidia-apex"):
        _forget_apex(snap)
    elif wanted == "oneflow":
        oneflow = env.oneflow
        oneflow.packages.pop("oneflow", None)
        oneflow.build = None
        oneflow.runtime = type(oneflow.runtime)()


def _forget_apex(snap: Snapshot) -> None:
    apex = snap.environment.apex
    if any(loc.source == "cwd" for loc in apex.locations):
        raise CannotSimulate(
            "another apex (a checkout in the working directory) stays: what imports then is for the probe to say"
        )
    snap.environment.apex = ApexInfo(
        users=apex.users, users_scanned=apex.users_scanned, distributions_scanned=apex.distributions_scanned
    )


def _remove(snap: Snapshot, path: str) -> None:
    """rm -rf of what `import torch` loads, or of a distribution's metadata directory."""
    env = snap.environment
    if any(d.metadata_path == path for d in env.distributions):
        env.distributions = [d for d in env.distributions if d.metadata_path != path]
        return
    origin = snap.torch.origin.rstrip("/")
    if not origin or path.rstrip("/") not in (origin, origin.rsplit("/__init__.py", 1)[0]):
        raise CannotSimulate(f"rm -rf {path}: the snapshot does not say what it is")
    snap.torch = TorchInfo(status="missing", probe=snap.torch.probe)


def _move(snap: Snapshot, source: str, target: str) -> None:
    apex = snap.environment.apex
    if not any(loc.path == source for loc in apex.locations):
        raise CannotSimulate(f"mv of {source}: the snapshot does not say what it is")
    apex.locations = left = [loc for loc in apex.locations if loc.path != source]
    if left:
        raise CannotSimulate("another apex stays on the path: what imports then is for the probe to say")
    _forget_apex(snap)


# ---------------------------------------------------------------- torch builds and the driver


def _install_torch_build(snap: Snapshot, names: list[str], index: str, no_deps: bool = False) -> None:
    tag = index.rstrip("/").rsplit("/", 1)[-1]
    match = re.fullmatch(r"cu(\d+)(\d)", tag)
    if not (match or tag == "cpu"):
        raise CannotSimulate(f"an index mpdoctor does not know: {index}")
    cuda = f"{match[1]}.{match[2]}" if match else None
    spec = next(_requirement(n) for n in names if canonical_name(_requirement(n).name) == "torch")
    pins = [s.version for s in spec.specifier if s.operator == "=="]
    version = (pins[0] if pins else "").split("+")[0]
    if not version:  # `pip install torch --index-url ...`: the newest, which the snapshot cannot name
        version = "latest"
    if cuda and cuda not in fixes.torch_variants(snap):
        raise CannotSimulate(f"torch's release table has no CUDA {cuda} build")
    local = f"+{tag}"
    # A forced reinstall over a torch that fails to import, or one meant to bring cuDNN back: cured only where
    # the recorded facts say the cause is in what pip writes (tests/simulated_installs.py).
    installs.repair_torch_import(snap, f"{version}{local}", cuda, no_deps)
    if cuda:
        installs.need_cudnn_pin(snap)
    torch = snap.torch if snap.torch.status == "imported" else TorchInfo(status="imported", imported_as="torch")
    if cuda is None:
        torch.cudnn = None  # a CPU build loads no cuDNN
    elif torch.cudnn is None and not no_deps:
        torch.cudnn = CUDNN_FROM_DEPENDENCIES  # over a CPU torch or none: the build's nvidia-cudnn dependency
    torch.version, torch.cuda = f"{version}{local}", cuda
    torch.arch_list = [f"sm_{cc}" for cc in sorted(fixes.torch_variants(snap).get(cuda, set()))] if cuda else []
    torch.cuda_warnings = [w for w in torch.cuda_warnings if "driver" not in w.lower()]
    torch.status, torch.probe = "imported", type(torch.probe)(status="ok")
    snap.torch = torch
    # The kernels measured the build that is gone: they are taken again with the new one. TORCH007 judges the
    # new build's architectures meanwhile.
    snap.kernels = type(snap.kernels)(status="not-run", detail="the torch build changed since they ran")
    dist = snap.distribution("torch")
    if dist is None:
        snap.environment.distributions.append(
            Distribution(name="torch", version=torch.version, location=installs.site_packages(snap), installer="pip")
        )
    else:
        dist.version = torch.version
    for name in names:
        req = _requirement(name)
        other = snap.distribution(req.name)
        if other is not None and canonical_name(req.name) != "torch":
            other.version = next((s.version for s in req.specifier if s.operator == "=="), other.version) + local
    start_cuda(snap)
