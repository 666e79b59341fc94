"""environment: can mpdoctor see the Python environment at all, and is its metadata sound."""

from __future__ import annotations

import shlex
from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.findings import Finding, Step, error, warning
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot

FAMILY = "environment"


@check("ENV001", "environment-probe-failed", family=FAMILY,
       fires_on=("environment-probe-failed",),
       quiet_on=("torch-import-crash", "torch-missing"))
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
    evidence += [line for line in (probe.stderr_tail.strip().splitlines()[-6:] or [env.distributions_error]) if line]
    yield error(
        f"cannot inventory the Python environment: {detail}",
        evidence,
        [fixes.inspect("Run the interpreter by hand and read its error",
                       fixes.python(snap, "-c", "import sys; print(sys.version)")),
         Step("mpdoctor needs Python 3.8 or newer on the --python it is given")],
    )


@check("ENV002", "broken-distribution-metadata", family=FAMILY,
       fires_on=("precision-stack-conflicts",),
       quiet_on=("torch-leftover-directory", "cpu-laptop"))
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
        label = dist.name or "a distribution with no name"
        yield warning(
            f"broken metadata for {label}: {'; '.join(dist.problems)}",
            [f"metadata directory: {dist.metadata_path or dist.location}"],
            [fixes.inspect("Look at the broken metadata directory", "ls -la " + shlex.quote(dist.metadata_path or dist.location))]
            + ([Step("Remove it", "rm -rf " + shlex.quote(dist.metadata_path))] if dist.metadata_path else [])
            + ([Step("Reinstall the package", fixes.pip(snap, "install", "--force-reinstall", "--no-deps", dist.name))]
               if dist.name else []),
        )
