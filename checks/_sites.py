"""Where each installed copy of a package lives, who owns it, and whether a pip fix may touch it.

The probe records the kind of sys.path directory each distribution is in (``Distribution.site``,
``mpdoctor/probes/remote/sites.py``); a snapshot taken before it did is read from its paths here.
"""

from __future__ import annotations

import os
import re

from mpdoctor.snapshot import Distribution, Snapshot, canonical_name

# What pip itself needs to install anything: never advise removing the last of these.
PIP_NEEDS = frozenset({"pip", "setuptools", "wheel"})
# INSTALLER values of package managers other than pip (a distro's or conda's): their copies are theirs to change.
OTHER_MANAGERS = {"conda": "conda", "debian": "the distribution", "dpkg": "the distribution", "rpm": "the distribution"}

# Why a copy in a directory of this kind comes first on sys.path (it is first: imports take it).
WHY_FIRST = {
    "pythonpath": "PYTHONPATH entries come before every site directory on sys.path",
    "user": "the user site comes before site-packages on sys.path (PYTHONNOUSERSITE=1 or `python -s` leaves it out)",
    "environment": "this environment's own site-packages comes before the base interpreter's and the system's",
    "base": "the base interpreter's site-packages comes before the system's",
    "distro": "that directory comes first on sys.path",
    "other": "that directory comes first on sys.path",
}
PLACES = {
    "environment": "this environment's site-packages",
    "base": "the base interpreter's site-packages (a --system-site-packages venv sees it)",
    "user": "the user site",
    "distro": "the distribution's packages",
    "pythonpath": "a PYTHONPATH directory",
    "other": "a directory on sys.path",
}


def directory(dist: Distribution) -> str:
    """The sys.path directory a distribution's metadata is in (its ``.dist-info``'s parent)."""
    return os.path.normpath(os.path.dirname(dist.metadata_path) if dist.metadata_path else dist.location)


def kind(snap: Snapshot, dist: Distribution) -> str:
    """``Distribution.site``, or for an older snapshot the kind its directory's path shows."""
    if dist.site:
        return dist.site
    path, python = directory(dist), snap.environment.python
    pythonpath = [os.path.normpath(p) for p in snap.environment.env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if path in pythonpath:
        return "pythonpath"
    if re.search(r"/\.local/lib/[^/]+/site-packages$", path):
        return "user"
    prefix, base = (python.prefix, python.base_prefix) if python else ("", "")
    if prefix and _under(path, prefix):
        return "environment"
    if base and _under(path, base) and base != prefix:
        return "base"
    if _under(path, "/usr") and not _under(path, "/usr/local"):
        return "distro"
    # an environment's site-packages the snapshot's prefix does not name (a copied or constructed snapshot)
    return "environment" if os.path.basename(path) == "site-packages" else "other"


def _under(path: str, top: str) -> bool:
    top = os.path.normpath(top)
    return path == top or path.startswith(top.rstrip("/") + "/")


def manager(snap: Snapshot, dist: Distribution) -> str:
    """Who may remove this copy: "pip", or the package manager that owns it ("conda", "the distribution")."""
    installer = dist.installer.strip().lower()
    if installer in OTHER_MANAGERS:
        return OTHER_MANAGERS[installer]
    if kind(snap, dist) == "distro" and installer in ("", "debian", "rpm"):
        return "the distribution"  # dpkg writes no INSTALLER
    return "pip"


def in_target(snap: Snapshot, dist: Distribution) -> bool:
    """Is the copy in the target's own install directory, where its pip installs and uninstalls?"""
    return kind(snap, dist) == "environment"


def is_venv(snap: Snapshot) -> bool:
    python = snap.environment.python
    return bool(python and python.prefix and python.base_prefix and python.prefix != python.base_prefix)


def needed_by_pip(name: str) -> bool:
    return canonical_name(name) in PIP_NEEDS
