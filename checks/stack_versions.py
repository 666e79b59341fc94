"""precision stack: do the installed packages that touch mixed precision agree with each other.

Like ``pip check``, but scoped to the packages that take part in fp16/bf16 work,
evaluated with the target interpreter's own markers, and with fixes that keep the
installed torch where it is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterator, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from mpdoctor.checks import fixes
from mpdoctor.checks._apex import is_pypi_namesake
from mpdoctor.checks._oneflow import without_core
from mpdoctor.checks._common import requirement_applies
from mpdoctor.findings import Finding, FixStep, error, warning
from mpdoctor.checks.registry import check, defer
from mpdoctor.snapshot import Distribution, Snapshot, canonical_name

FAMILY = "stack"

# Packages that take part in mixed precision, directly or as torch's ABI partners.
PRECISION_STACK = frozenset(
    canonical_name(n)
    for n in """
    torch torchvision torchaudio triton numpy xformers flash-attn flash-attn-3 transformers
    accelerate diffusers deepspeed bitsandbytes apex nvidia-apex onediff onediffx oneflow
    nexfort safetensors peft torchao lightning pytorch-lightning vllm timm
""".split()
)
# Compiled against one exact torch: a version mismatch breaks imports or kernels.
TORCH_ABI_PARTNERS = frozenset({"torchvision", "torchaudio", "xformers", "flash-attn", "apex", "torchao", "vllm"})


def in_scope(name: str) -> bool:
    name = canonical_name(name)
    # torch's CUDA libraries (nvidia-cudnn-cu12 ...), not the NVML bindings.
    return name in PRECISION_STACK or (name.startswith("nvidia-") and name != "nvidia-ml-py")


def _installed(snap: Snapshot) -> dict[str, Distribution]:
    """Name -> distribution; the first one on sys.path wins, as for imports.

    A copy whose Version is not a version (a stray dist-info: ``not.a.version!!``) does
    not hide the copies after it: the first with a readable version is the one judged,
    so junk metadata cannot hide an unmet requirement (STACK003 reports the copies).
    """
    found: dict[str, Distribution] = {}
    for dist in snap.environment.distributions:
        name = canonical_name(dist.name)
        if dist.name and (name not in found or (not _readable(found[name].version) and _readable(dist.version))):
            found[name] = dist
    return found


def _readable(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def pinnable_version(snap: Snapshot, name: str) -> str:
    """The version of ``name`` to pin in a fix: for torch the one that imports, else the first readable one; ""
    when none is a version (a pin pip would refuse: ``torch==not.a.version!!``)."""
    if canonical_name(name) == "torch" and snap.torch.status == "imported" and _readable(snap.torch.version):
        return snap.torch.version
    dist = _installed(snap).get(canonical_name(name))
    return dist.version if dist and _readable(dist.version) else ""


class Conflict:
    """One requirement of an installed package that the environment does not meet."""

    def __init__(self, requirer: Distribution, req: Requirement, installed: Optional[Distribution]):
        self.requirer, self.req, self.installed = requirer, req, installed

    @property
    def required(self) -> str:
        return canonical_name(self.req.name)

    def describe(self) -> str:
        have = (
            f"{self.installed.name} {self.installed.version} is installed" if self.installed else "it is not installed"
        )
        return f"{self.requirer.name} {self.requirer.version} requires {self.req}, but {have}"


# The name at the start of a requirement, matched as packaging's own parser matches it (`WS? IDENTIFIER`,
# the same two patterns), so it is the name Requirement(line).name would give for any line that parses.
REQUIREMENT_NAME = re.compile(r"[ \t]*(\b[a-zA-Z0-9][a-zA-Z0-9._-]*\b)")


def _requirements(requirer: Distribution) -> Iterator[Requirement]:
    """The requirements of ``requirer`` that take part in the precision stack, parsed only when they do.

    A package outside the stack matters only through what it requires of the stack: for it, a line naming a
    package outside the stack is skipped on its name alone (Requirement() costs ~25 us a line, and an
    environment of 2,000 packages has some 7,000 lines, nearly all outside the stack).
    """
    every = in_scope(requirer.name)
    for line in requirer.requires:
        if not every:
            name = REQUIREMENT_NAME.match(line)
            if name and not in_scope(name.group(1)):
                continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue  # unparseable metadata is ENV002's business, not a conflict
        yield req


def find_conflicts(snap: Snapshot) -> list[Conflict]:
    installed = _installed(snap)
    markers = snap.environment.markers
    conflicts = []
    for requirer in installed.values():
        # Not the packages their names promise, so not part of the precision stack: installing what they
        # require (a web framework, a placeholder's pins) helps no one. APEX001 and ONEFLOW001 say what they are.
        if is_pypi_namesake(requirer):
            continue
        if canonical_name(requirer.name) == "oneflow" and without_core(snap):
            continue
        for req in _requirements(requirer):
            if not (in_scope(requirer.name) or in_scope(req.name)) or not requirement_applies(req, markers):
                continue
            have = installed.get(canonical_name(req.name))
            if have is None:
                conflicts.append(Conflict(requirer, req, None))
                continue
            try:
                ok = req.specifier.contains(Version(have.version), prereleases=True)
            except InvalidVersion:
                continue  # a legacy version string cannot be compared; do not guess
            if not ok:
                conflicts.append(Conflict(requirer, req, have))
    return conflicts


def _fix(snap: Snapshot, conflict: Conflict) -> list[FixStep]:
    torch = pinnable_version(snap, "torch")
    pin_torch = [f"torch=={torch}"] if torch else []
    wanted = f"{conflict.req.name}{conflict.req.specifier}"
    if conflict.required == "torch" and conflict.installed is None:
        # No torch to keep: the requirement is torch itself (TORCH001 says which build fits this machine).
        return [
            FixStep(
                f"Install the torch {conflict.requirer.name} needs (TORCH001 names the build for this machine)",
                fixes.pip(snap, "install", wanted),
            )
        ]
    if conflict.required == "torch":
        # Keep torch; move the package that disagrees to a release built for it.
        return [
            FixStep(
                f"Keep torch {torch} and move {conflict.requirer.name} to a release that "
                "supports it (pip refuses rather than changing torch)",
                fixes.pip(snap, "install", "--upgrade", conflict.requirer.name, *pin_torch),
            ),
            fixes.alternative(
                f"Or install the torch {conflict.requirer.name} was built for", fixes.pip(snap, "install", wanted)
            ),
        ]
    return [
        FixStep(
            f"Install what {conflict.requirer.name} needs" + (" while keeping torch" if pin_torch else ""),
            fixes.pip(snap, "install", wanted, *pin_torch),
        )
    ]


def _install_once(snap: Snapshot, name: str) -> FixStep:
    version = pinnable_version(snap, name)
    return FixStep("Install it once", fixes.pip(snap, "install", f"{name}=={version}" if version else name))


@check(
    "STACK001",
    "precision-stack-conflict",
    family=FAMILY,
    defers_to=("STACK002",),
    fires_on=("precision-stack-conflicts", "oneflow-pypi-cpu"),
    quiet_on=("onediff-without-oneflow", "apex-amp-removed", "h100-node-healthy"),
)
def precision_stack_conflict(snap: Snapshot) -> Iterator[Finding]:
    """An installed package that takes part in mixed precision has an unmet requirement.

    ## Why it matters
    Packages compiled against one torch (torchvision, xformers, flash-attn, apex...)
    fail to import or crash in their kernels with another; others misbehave in
    subtler ways. pip installs whatever it is told, so these mismatches are common
    after a `pip install -U torch` or an unpinned install.

    ## Fix
    Keep the torch you chose and move the other package to a matching release, with
    torch pinned in the same pip command so that pip cannot change it. A missing
    safetensors is STACK002's, which says what it costs, unless STACK002 is ignored.
    """
    for conflict in find_conflicts(snap):
        severe = conflict.required == "torch" and canonical_name(conflict.requirer.name) in TORCH_ABI_PARTNERS
        severe = severe or conflict.installed is None
        make = error if severe else warning
        finding = make(
            conflict.describe(),
            [f"{conflict.requirer.name} metadata: {conflict.requirer.metadata_path}"],
            _fix(snap, conflict),
        )
        yield (
            defer(finding, "STACK002") if conflict.required == "safetensors" and conflict.installed is None else finding
        )


@check(
    "STACK002",
    "safetensors-missing",
    family=FAMILY,
    fires_on=("precision-stack-conflicts",),
    quiet_on=("apex-incident1", "oneflow-incident2"),
)
def safetensors_missing(snap: Snapshot) -> Iterator[Finding]:
    """transformers or diffusers is installed without safetensors.

    ## Why it matters
    Without safetensors, model weights are loaded through pickle (`torch.load`),
    which is slower, unsafe with untrusted files, and for many repositories that
    ship only `.safetensors` files fails outright or loads a partial model whose
    dtypes differ from what you asked for.

    ## Fix
    Install safetensors.
    """
    if snap.distribution("safetensors"):
        return
    users = [d for d in (snap.distribution("transformers"), snap.distribution("diffusers")) if d]
    if users:
        names = " and ".join(f"{d.name} {d.version}" for d in users)
        yield warning(
            f"{names} installed without safetensors",
            [f"{d.name} {d.version} at {d.location}" for d in users] + ["no safetensors distribution installed"],
            [FixStep("Install safetensors", fixes.pip(snap, "install", "safetensors"))],
        )


@check(
    "STACK003",
    "duplicate-distribution",
    family=FAMILY,
    fires_on=("precision-stack-conflicts", "h200-fork-refused"),
    quiet_on=("pynvml-legacy-shadows", "apex-checkout-in-cwd"),
)
def duplicate_distribution(snap: Snapshot) -> Iterator[Finding]:
    """The same package is installed more than once on sys.path.

    ## Why it matters
    Python imports the first copy on sys.path, while pip and the other checks may
    read the metadata of another: the version you think you run is not the one you
    run. A leftover `~orch`-style directory from an interrupted pip is a common
    cause, as is a user-site install shadowing a venv.

    ## Fix
    Uninstall until none is left, then install once.
    """
    groups: dict[str, list[Distribution]] = defaultdict(list)
    for dist in snap.environment.distributions:
        if dist.name:
            groups[canonical_name(dist.name)].append(dist)
    for name, dists in sorted(groups.items()):
        if len(dists) < 2:
            continue
        make = error if name == "torch" else warning
        first = dists[0]
        yield make(
            f"{first.name} is installed {len(dists)} times: " + ", ".join(d.version or "?" for d in dists),
            [f"{d.name} {d.version} in {d.metadata_path or d.location}" for d in dists]
            + [f"`import {name.replace('-', '_')}` uses the first of these on sys.path"],
            [
                FixStep(
                    "Remove every copy (repeat until pip says it is not installed)",
                    fixes.pip(snap, "uninstall", "-y", first.name),
                ),
                _install_once(snap, first.name),
            ],
        )
