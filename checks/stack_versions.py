"""precision stack: do the installed packages that touch mixed precision agree with each other.

Like ``pip check``, but scoped to the packages that take part in fp16/bf16 work,
evaluated with the target interpreter's own markers, and with fixes that keep the
installed torch where it is.
"""

from __future__ import annotations

import re
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
        if dist.name and (
            name not in found or (not readable_version(found[name].version) and readable_version(dist.version))
        ):
            found[name] = dist
    return found


def readable_version(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def pinnable_version(snap: Snapshot, name: str) -> str:
    """The version of ``name`` to pin in a fix: for torch the one that imports, else the first readable one; ""
    when none is a version (a pin pip would refuse: ``torch==not.a.version!!``)."""
    if canonical_name(name) == "torch" and snap.torch.status == "imported" and readable_version(snap.torch.version):
        return snap.torch.version
    dist = _installed(snap).get(canonical_name(name))
    return dist.version if dist and readable_version(dist.version) else ""


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
        # No torch to keep: the requirement is torch itself, from the index of the build this machine needs (TORCH001's).
        return [
            fixes.install_torch_step(
                snap, f"Install the torch {conflict.requirer.name} needs (TORCH001 says why this build)", wanted
            )
        ]
    if conflict.required == "torch":
        # Keep torch; move the package that disagrees to a release built for it.
        return [
            FixStep(
                f"Keep torch {torch} and move {conflict.requirer.name} to a release that "
                "supports it (pip refuses rather than changing torch)",
                _install(snap, "--upgrade", conflict.requirer.name, *pin_torch),
            ),
            fixes.alternative(
                f"Or install the torch {conflict.requirer.name} was built for"
                + (f", the same build as yours ({_label(torch)})" if _label(torch) else ""),
                fixes.pip(snap, "install", _same_build(wanted, torch), *fixes.torch_index(torch)),
            ),
        ]
    return [
        FixStep(
            f"Install what {conflict.requirer.name} needs" + (" while keeping torch" if pin_torch else ""),
            _install(snap, wanted, *_with_safetensors(snap, conflict.required), *pin_torch),
        )
    ]


def _install(snap: Snapshot, *args: str) -> str:
    """``pip install ARGS``, with the PyTorch index a local torch build pinned in them comes from (PyPI has none)."""
    specs = [a for a in args if not a.startswith("-")]
    return fixes.pip(snap, "install", *args, *fixes.index_for(specs))


def _label(version: str) -> str:
    label = fixes.local_label(version)
    return f"+{label}" if label else ""


def _same_build(wanted: str, installed: str) -> str:
    """``wanted`` (``torch==2.5.1``) as the build variant installed (``torch==2.5.1+cpu``): with the index of that
    build (``fixes.torch_index``), pip cannot swap a CPU build for PyPI's CUDA one, or a CUDA build for another."""
    req = Requirement(wanted)
    pins = [s for s in req.specifier if s.operator == "==" and "+" not in s.version and "*" not in s.version]
    if len(pins) == 1 and len(req.specifier) == 1 and _label(installed):
        return f"{req.name}=={pins[0].version}{_label(installed)}"
    return wanted


def _with_safetensors(snap: Snapshot, name: str) -> list[str]:
    """safetensors beside a transformers or diffusers installed without it: that would be STACK002's next finding."""
    wanted = canonical_name(name) in ("transformers", "diffusers") and not snap.distribution("safetensors")
    return ["safetensors"] if wanted else []


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
