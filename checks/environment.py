"""environment: can mpdoctor see the Python environment at all, and is its metadata sound."""

from __future__ import annotations

import os
import re
import shlex
from typing import Iterator

from packaging.version import InvalidVersion, Version

from mpdoctor.checks import _sites, fixes
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Distribution, Snapshot

FAMILY = "environment"


@check(
    "ENV001",
    "environment-probe-failed",
    family=FAMILY,
    fires_on=("environment-probe-failed",),
    quiet_on=("torch-import-crash", "torch-missing"),
)
def environment_probe_failed(snap: Snapshot) -> Iterator[Finding]:
    """mpdoctor could not inventory the Python environment under diagnosis.

    ## Why it matters
    Without the package inventory, the checks that judge installed packages have
    nothing to judge, so their silence means "unknown", not "fine". Causes: a
    `--python` that is not a Python 3.8+ interpreter, an interpreter that crashes
    at start-up (a broken `.pth` file or sitecustomize), or one that hangs.

    ## Fix
    Run the interpreter by hand to see its error; point `--python` at the
    interpreter you train with.
    """
    env = snap.environment
    probe = env.probe
    if probe.status == "ok" and not env.distributions_error:
        return
    if probe.status == "not-run":
        return  # a snapshot made without this probe
    detail = probe.detail or env.distributions_error
    evidence = [f"probe status: {probe.status}" + (f" during step '{probe.step}'" if probe.step else "")]
    evidence += [line for line in (split_lines(probe.stderr_tail.strip())[-6:] or [env.distributions_error]) if line]
    yield error(
        f"cannot inventory the Python environment: {detail}",
        evidence,
        [
            fixes.inspect(
                "Run the interpreter by hand and read its error",
                fixes.python(snap, "-c", "import sys; print(sys.version)"),
            ),
            FixStep("mpdoctor needs Python 3.8 or newer on the --python it is given"),
        ],
    )


@check(
    "ENV002",
    "broken-distribution-metadata",
    family=FAMILY,
    fires_on=("precision-stack-conflicts",),
    quiet_on=("torch-leftover-directory", "cpu-laptop"),
)
def broken_distribution_metadata(snap: Snapshot) -> Iterator[Finding]:
    """An installed distribution has unreadable or incomplete metadata.

    ## Why it matters
    pip cannot upgrade or uninstall it cleanly, version checks cannot see it, and
    an import may pick up a half-installed package. Leftovers of an interrupted pip
    (directories starting with `~`) are the usual cause.

    ## Fix
    Delete the broken metadata directory (and the package files next to it), then
    reinstall the package.
    """
    for dist in snap.environment.distributions:
        if not dist.problems:
            continue
        name, version = _identity(dist)
        label = dist.name or (f"{name} (named by its metadata directory)" if name else "a distribution with no name")
        owner = _sites.manager(snap, dist)
        if owner != "pip":  # conda's or the distribution's files: theirs to repair, never rm -rf and pip
            yield warning(
                f"broken metadata for {label}: {'; '.join(dist.problems)}",
                [f"metadata directory: {dist.metadata_path or dist.location}", f"installed by {owner}"],
                [FixStep(f"Reinstall it with {owner}'s package manager, which owns it")],
            )
            continue
        yield warning(
            f"broken metadata for {label}: {'; '.join(dist.problems)}",
            [f"metadata directory: {dist.metadata_path or dist.location}"],
            [
                fixes.inspect(
                    "Look at the broken metadata directory",
                    "ls -la " + shlex.quote(dist.metadata_path or dist.location),
                )
            ]
            + ([FixStep("Remove it", "rm -rf " + shlex.quote(dist.metadata_path))] if dist.metadata_path else [])
            + ([_reinstall(snap, name, version)] if name else []),
        )


# A project name as pip writes it into a metadata directory's name (``six-1.16.0.dist-info``): pip's own
# ``~ix-1.16.0.dist-info`` leftovers, whose first letter it replaced, do not match.
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?$")


def _identity(dist: Distribution) -> tuple[str, str]:
    """The name and version to reinstall: the metadata's, else what its directory's name says.

    Metadata that lost its Name (or its METADATA file) still sits in ``NAME-VERSION.dist-info`` (or
    ``NAME-VERSION-pyX.Y.egg-info``): without that name the fix could only delete the metadata, leaving the
    package's files on disk with nothing that records them.
    """
    stem, _, suffix = os.path.basename(dist.metadata_path.rstrip("/")).rpartition(".")
    parts = stem.split("-") if suffix in ("dist-info", "egg-info") else []
    name = dist.name or (parts[0] if parts and _NAME.match(parts[0]) else "")
    version = dist.version or (parts[1] if len(parts) > 1 else "")
    try:
        Version(version)
    except InvalidVersion:
        version = ""
    return name, version


def _reinstall(snap: Snapshot, name: str, version: str) -> FixStep:
    """Reinstall the version that was there (an unpinned one would upgrade it, and a torch from PyPI is another
    build), from the PyTorch index when that version is a local build (``2.13.0+cpu``)."""
    spec = f"{name}=={version}" if version else name
    return FixStep(
        f"Reinstall {name} {version}".rstrip()
        + (" (its metadata names no version: the latest)" if not version else ""),
        fixes.pip(snap, "install", "--force-reinstall", "--no-deps", spec, *fixes.torch_index(version)),
    )


@check(
    "ENV003",
    "project-scan-incomplete",
    family=FAMILY,
    needs=("project",),
    fires_on=("project-scan-incomplete",),
    quiet_on=("cpu-laptop", "apex-amp-removed"),
)
def project_scan_incomplete(snap: Snapshot) -> Iterator[Finding]:
    """The scan of your project's code left files unread, stopped at its budget, or failed.

    ## Why it matters
    The checks that read your code (apex.amp imports, torch AMP mixed with apex,
    OneFlow uses) only know the files the scan read: a use in a file it skipped
    is missed, so their silence about it means "unknown". Files are skipped when
    they are not regular files (a FIFO would block the scan, a device never
    ends) or are too deeply nested to parse safely (a generated file with one
    400,000-character line); the scan stops at its time and file budget in a very
    large tree.

    A scan that stopped early or failed is a warning: an error in the code it never
    read (an `apex.amp` import that fails) would otherwise leave a clean report and
    a green exit status. A few files skipped for what they are is an info.

    ## Fix
    Give the scan more time (`--timeout`: the scan's budget and file cap grow with
    it), or point it at the training code (`--project DIR`) rather than a large tree
    above it; keep generated files, pipes and devices out of it; or check the
    skipped files for apex and OneFlow uses by hand.
    """
    scan = snap.environment.project
    if not (scan.truncated or scan.error or scan.skipped_files):
        return
    files = f"{scan.files_scanned} Python file{'' if scan.files_scanned == 1 else 's'}"
    evidence = [f"{files} read under {scan.root or 'the working directory'}"]
    if scan.error:
        evidence.append(f"the scan failed: {scan.error}")
    if scan.truncated:
        evidence.append("the scan stopped at its time or file budget")
    evidence += [f"skipped {entry}" for entry in scan.skipped_files[:5]]
    if len(scan.skipped_files) > 5:
        evidence.append(f"... and {len(scan.skipped_files) - 5} more skipped")
    what = (
        "failed"
        if scan.error
        else "stopped early"
        if scan.truncated
        else f"left {len(scan.skipped_files)} file{'s' if len(scan.skipped_files) != 1 else ''} unread"
    )
    steps = []
    if scan.truncated:
        steps.append(
            FixStep(
                "Give the scan more time: its time budget and its file cap grow with --timeout",
                fixes.mpdoctor_check(snap, timeout=fixes.more_time(snap, 600)),
            )
        )
    steps += [
        (fixes.alternative if steps else FixStep)(
            ("Or point" if steps else "Point")
            + " mpdoctor at your training code (--project DIR, or run it from that directory), with generated "
            "files, pipes and devices kept out of it"
        ),
        fixes.alternative("Or look for apex and OneFlow imports in the skipped files by hand"),
    ]
    # A scan that stopped or failed may have missed an error in the code it never read: not a detail.
    make = warning if scan.truncated or scan.error else info
    yield make(
        f"the scan of your project's code {what}: checks that read your code may miss a use in it", evidence, steps
    )
