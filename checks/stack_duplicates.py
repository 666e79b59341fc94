"""precision stack: one package installed twice, in one directory or shadowing another copy (STACK003).

Copies in different site directories are how Python is meant to work (a venv over its base,
the user site over the system); only a second copy in one directory, or a shadow at another
version, is worth a word, and pip never removes what another package manager owns.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from packaging.version import Version

from mpdoctor.checks import _sites, fixes
from mpdoctor.checks.registry import check
from mpdoctor.checks.stack_versions import FAMILY, readable_version, in_scope
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.snapshot import Distribution, Snapshot, canonical_name


@check(
    "STACK003",
    "duplicate-distribution",
    family=FAMILY,
    fires_on=("precision-stack-conflicts", "h200-fork-refused"),
    quiet_on=("pynvml-legacy-shadows", "apex-checkout-in-cwd"),
)
def duplicate_distribution(snap: Snapshot) -> Iterator[Finding]:
    """A package is installed twice in one directory, or a copy of another version shadows it.

    ## Why it matters
    Two metadata directories of one package in the same site-packages (left by an
    interrupted pip) make pip and the checks read one version while the files on disk
    may be the other's. Copies in different directories are how Python is meant to
    work (a venv made with `--system-site-packages` shadows the base's copies, the
    user site shadows the system's): imports take the copy first on sys.path, so at
    another version the one you run is not the one you may think you run. A copy of
    the same version shadowing another is not reported.

    ## Fix
    A same-directory duplicate: remove the extra metadata and reinstall the package
    once. A shadow: nothing to do if the first copy is the one you want; otherwise
    keep the user site or the PYTHONPATH directory out of the way, or install the
    version you want where pip installs. A copy that the distribution's package
    manager or conda owns, pip itself, or a copy outside this environment is never
    to be removed with pip.
    """
    groups: dict[str, list[Distribution]] = defaultdict(list)
    for dist in snap.environment.distributions:
        if dist.name:
            groups[canonical_name(dist.name)].append(dist)
    for name, dists in sorted(groups.items()):
        if len(dists) < 2:
            continue
        by_directory: dict[str, list[Distribution]] = defaultdict(list)
        for dist in dists:  # in sys.path order, as importlib.metadata lists them
            by_directory[_sites.directory(dist)].append(dist)
        for copies in by_directory.values():
            if len(copies) > 1:
                yield from _same_directory(snap, name, copies)
        yield from _shadowed(snap, name, [copies[0] for copies in by_directory.values()])


def _copy(snap: Snapshot, dist: Distribution) -> str:
    owner = _sites.manager(snap, dist)
    return (
        f"{dist.name} {dist.version or '?'} in {dist.metadata_path or dist.location} "
        f"({_sites.PLACES[_sites.kind(snap, dist)]}; installed by {dist.installer or 'an unrecorded installer'}"
        + (f", owned by {owner}" if owner != "pip" else "")
        + ")"
    )


def _same_directory(snap: Snapshot, name: str, copies: list[Distribution]) -> Iterator[Finding]:
    """Two or more metadata directories of one package in one site directory."""
    versions = {d.version for d in copies}
    owners = {_sites.manager(snap, d) for d in copies}
    where = _sites.directory(copies[0])
    evidence = [_copy(snap, d) for d in copies]
    if owners != {"pip"}:
        # dpkg ships some packages with both a .dist-info and an .egg-info of one install (Debian's
        # python3-cryptography): one install, two records. Only different versions say something broke.
        if len(versions) == 1:
            return
        owner = ", ".join(sorted(o for o in owners if o != "pip"))
        yield info(
            f"{copies[0].name} has {len(copies)} metadata records of different versions in {where}, owned by {owner}",
            evidence + [f"pip must not remove them: {owner} installed them"],
            [
                FixStep(
                    f"Repair it with {owner}'s package manager"
                    + (" (on Debian, `dpkg -S PATH` names the package to reinstall)" if "distribution" in owner else "")
                )
            ],
        )
        return
    make = error if name == "torch" else warning
    keep = max(copies, key=lambda d: Version(d.version) if readable_version(d.version) else Version("0"))
    extra = [d for d in copies if d is not keep]
    title = f"{copies[0].name} is installed {len(copies)} times in one directory: " + ", ".join(
        d.version or "?" for d in copies
    )
    evidence += [f"{where}: an interrupted pip install or upgrade leaves two metadata directories like this"]
    if not _sites.in_target(snap, keep):
        yield make(
            title,
            evidence
            + [
                f"{where} is not this environment's own site-packages: its pip refuses to remove from it "
                f'("Not uninstalling {keep.name} at {where}, outside environment {_prefix(snap)}")'
            ],
            [
                FixStep(
                    f"Repair it with the interpreter that installed into {where}: remove the extra metadata, then "
                    f"reinstall {keep.name} {keep.version} with its pip"
                )
            ],
        )
        return
    spec = f"{keep.name}=={keep.version}" if readable_version(keep.version) else keep.name
    yield make(
        title,
        evidence,
        [
            FixStep(
                f"Remove the metadata of the other {'copy' if len(extra) == 1 else 'copies'} (pip and imports read whichever the directory lists first)",
                fixes.command("rm", "-rf", *(d.metadata_path for d in extra)),
            ),
            FixStep(
                f"Reinstall {keep.name} {keep.version} over what is left, so its files match its metadata",
                fixes.pip(snap, "install", "--force-reinstall", "--no-deps", spec, *fixes.torch_index(keep.version)),
            ),
        ],
    )


def _prefix(snap: Snapshot) -> str:
    return snap.environment.python.prefix if snap.environment.python else "?"


def _shadowed(snap: Snapshot, name: str, firsts: list[Distribution]) -> Iterator[Finding]:
    """Copies in different directories: the first on sys.path wins; report it only when versions differ."""
    winner, others = firsts[0], [d for d in firsts[1:] if d.version != firsts[0].version]
    if not others:
        return  # the same version wherever imports look: nothing to confuse
    place = _sites.kind(snap, winner)
    by_design = place == "environment" and all(_sites.kind(snap, d) == "base" for d in others)
    stack = in_scope(name)
    if by_design and not stack:
        return  # a venv's own copy over the base's is what --system-site-packages is for
    make = warning if stack and not by_design else info
    hidden = ", ".join(f"{d.version or '?'} in {_sites.PLACES[_sites.kind(snap, d)]}" for d in others)
    yield make(
        f"{winner.name} {winner.version} in {_sites.PLACES[place]} shadows {hidden}: imports get {winner.version}",
        [_copy(snap, d) for d in firsts]
        + [
            f"`import {name.replace('-', '_')}` takes the copy first on sys.path, {_sites.directory(winner)}: {_sites.WHY_FIRST[place]}"
        ],
        _shadow_fix(snap, winner, others),
    )


def _shadow_fix(snap: Snapshot, winner: Distribution, others: list[Distribution]) -> list[FixStep]:
    """Ways to the copy you want that remove nothing pip may not remove."""
    place, wanted = _sites.kind(snap, winner), others[0]
    steps = [FixStep(f"Nothing to change if {winner.name} {winner.version} is the one you want")]
    if place == "user":
        steps.append(
            fixes.alternative(
                f"Or, to import the {wanted.version} copy, keep the user site out of this interpreter's imports",
                fixes.export("PYTHONNOUSERSITE", "1"),
            )
        )
    elif place == "pythonpath":
        steps.append(
            fixes.alternative(
                f"Or, to import the {wanted.version} copy, take {_sites.directory(winner)} out of PYTHONPATH "
                f"(or {winner.name} out of that directory)"
            )
        )
    elif place == "environment" and _sites.manager(snap, winner) == "pip" and not _sites.needed_by_pip(winner.name):
        steps.append(
            fixes.alternative(
                f"Or install {wanted.version} in this environment instead",
                fixes.pip(snap, "install", f"{winner.name}=={wanted.version}", *fixes.torch_index(wanted.version)),
            )
        )
    elif place == "other":
        steps.append(
            fixes.alternative(
                f"Or, to import the {wanted.version} copy, take {_sites.directory(winner)} off sys.path "
                f"(a .pth file or the working directory puts it there)"
            )
        )
    return steps
