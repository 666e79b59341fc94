"""Which kind of site directory each installed distribution lives in, and whether pip may change this Python.

Loaded beside ``target.py`` by the env part (stdlib only, Python 3.8+). Two copies of one
package in different site directories are how Python is meant to work (a venv made with
``--system-site-packages`` shadows the base's copies; the user site shadows the system's),
so the checks need to know *which* directory each copy is in, not only that there are two.

Kinds, as ``site_kind`` names them:

* ``environment``: the target's own install directory (sysconfig's purelib/platlib): the
  venv's site-packages in a venv, else the interpreter's own, where its pip installs;
* ``base``: the base interpreter's site directory that a ``--system-site-packages`` venv sees;
* ``user``: the user site (``~/.local/lib/pythonX.Y/site-packages``, or under PYTHONUSERBASE);
* ``distro``: a directory of the operating system's package manager (under /usr, not
  /usr/local: Debian's /usr/lib/python3/dist-packages, Fedora's /usr/lib64/...);
* ``pythonpath``: an entry of the PYTHONPATH environment variable;
* ``other``: anything else on sys.path (a .pth file's directory, the working directory).
"""

import os
import sys


def _real(path):
    try:
        return os.path.normcase(os.path.realpath(os.path.abspath(path)))
    except (OSError, ValueError):  # a path with a NUL byte, an unreadable link
        return path


def _under(path, top):
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def in_venv():
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix)


def _system(path):
    """A directory of the operating system's packages: under /usr, not /usr/local."""
    return _under(path, "/usr") and not _under(path, "/usr/local")


def context():
    """What ``site_kind`` compares a distribution's directory with, gathered once."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    user = ""
    if getattr(site, "ENABLE_USER_SITE", False):
        try:
            user = site.getusersitepackages()
        except Exception:  # a home that cannot be resolved
            user = ""
    try:
        site_dirs = list(site.getsitepackages())
    except Exception:  # some embedded Pythons' site module has none
        site_dirs = []
    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {
        "own": {_real(paths[k]) for k in ("purelib", "platlib") if paths.get(k)},
        "user": _real(user) if user else "",
        "site_dirs": {_real(p) for p in site_dirs},
        "pythonpath": {_real(p) for p in pythonpath},
        "prefix": _real(sys.prefix),
        "venv": in_venv(),
        "system_python": _system(_real(getattr(sys, "base_prefix", sys.prefix))),
    }


def site_kind(location, ctx):
    """The kind of site directory ``location`` is (see the module's docstring)."""
    path = _real(location)
    if path in ctx["pythonpath"]:
        return "pythonpath"
    if ctx["user"] and path == ctx["user"]:
        return "user"
    if path in ctx["own"]:
        # A distro's Python installs with its own package manager into its own purelib (Arch:
        # /usr/lib/python3.X/site-packages); a venv's own directory is never the distro's.
        return "distro" if ctx["system_python"] and not ctx["venv"] and _system(path) else "environment"
    if path in ctx["site_dirs"]:
        if ctx["venv"] and _under(path, ctx["prefix"]):
            return "environment"
        if ctx["system_python"] and _system(path):
            return "distro"
        return "base" if ctx["venv"] else "environment"
    return "other"


def externally_managed():
    """PEP 668: the stdlib directory holds EXTERNALLY-MANAGED, and this is no venv (a venv never is)."""
    import sysconfig

    if in_venv():
        return False
    try:
        return os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
    except Exception:  # a sysconfig without a stdlib path
        return False
