"""The commands that start mpdoctor's code in a child interpreter, and the environment the child gets.

``remote_argv`` runs a module of ``mpdoctor/probes/remote/`` in the interpreter under diagnosis (BOOTSTRAP: its
two directories loaded by path as private packages); ``own_argv`` runs a module of this very mpdoctor in its own
interpreter (OWN_BOOTSTRAP). Neither lets a file in the working directory run first, and ``child_env`` keeps
PYTHONPATH from naming that directory. ``child.run_child`` runs the commands; everything here only builds them.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping, Optional

from mpdoctor import portable
from mpdoctor.probes import remote

# Loads mpdoctor/portable/ and then mpdoctor/probes/remote/ in the target interpreter as two private packages,
# `_mpdoctor_portable` and `_mpdoctor_remote`, by path (their __init__.py files are sys.argv[1] and [2]: see
# package_inits): neither the target's sys.path nor another installed mpdoctor can interfere, and their modules
# import each other relatively (remote reaches portable through one bridge, remote/_portable.py). Tests that drive
# remote modules by hand in another interpreter start their code with this too.
LOAD_PACKAGES = """\
import importlib, importlib.util, os, sys
for name, init in (("_mpdoctor_portable", sys.argv[1]), ("_mpdoctor_remote", sys.argv[2])):
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[os.path.dirname(init)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
"""

# Runs ``_mpdoctor_remote.<sys.argv[3]>.main(sys.argv[4:])``. Kept to syntax that old interpreters parse, so a
# Python 2 fails with a readable error.
BOOTSTRAP = (
    """\
import sys
if sys.version_info < (3, 8):
    sys.stderr.write("Python %d.%d is too old: mpdoctor can diagnose Python 3.8 or newer\\n" % sys.version_info[:2])
    sys.exit(3)
if sys.path and sys.path[0] == "":
    del sys.path[0]  # `-c` put the working directory first; a training script would not
import os
if "MPDOCTOR_PYTHONPATH" in os.environ:  # run_child left out the entries naming the working directory: see child_env
    os.environ["PYTHONPATH"] = os.environ.pop("MPDOCTOR_PYTHONPATH")  # the fact the probe reports is the user's
"""
    + LOAD_PACKAGES
    + """\
importlib.import_module("_mpdoctor_remote." + sys.argv[3]).main(sys.argv[4:])
# Every result is in a step file, flushed line by line, or on stdout: flush that and end here. A normal exit
# would first collect every object torch created (a third of a second after `import torch`) for nobody.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""
)


# Runs ``<sys.argv[2]>.main(sys.argv[3:])`` of this very mpdoctor (its package's parent is sys.argv[1]) in
# mpdoctor's own interpreter, exiting with what main returns. Not `python -m`, which puts the working directory
# first on sys.path, so that a `shutil.py` or `json.py` where the job is launched would run inside the child; and
# not `-I` (isolated mode), which would also drop PYTHONPATH and the user's site-packages, where torch (which the
# store child imports) or mpdoctor itself may be installed.
OWN_BOOTSTRAP = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]  # `-c` put the working directory first
sys.path.insert(0, sys.argv[1])  # this mpdoctor, ahead of any other on the path
import importlib
sys.exit(importlib.import_module(sys.argv[2]).main(sys.argv[3:]))
"""


def own_argv(module: str, *args: str) -> list[str]:
    """The command that runs ``<module>.main(args)`` (``mpdoctor.fleet.store_child``) in mpdoctor's own interpreter.

    The module comes from this very mpdoctor, and nothing from the working directory runs first (OWN_BOOTSTRAP).
    """
    # mpdoctor/portable/__init__.py -> the directory holding the mpdoctor package
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(portable.__file__))))
    return [sys.executable, "-c", OWN_BOOTSTRAP, package_parent, module, *args]


def child_env(env: Optional[Mapping[str, str]], cwd: Optional[str] = None) -> Optional[dict]:
    """``env`` (None: this process's) for a child, without the PYTHONPATH entries that name its working directory.

    Such an entry (``.``, an empty one, ``./`` or the directory's own path) puts the directory's files ahead of
    the standard library in every Python the child starts, before any line of mpdoctor's runs (``sitecustomize``
    is imported at startup): a ``shutil.py``, ``json.py`` or ``torch/`` where the job is launched would run
    inside it. Every other entry is kept, in its order, subdirectories of the working directory included: a
    cluster's module system or a hand-built torch is often found through PYTHONPATH, and so is OneFlow's
    ``mock_torch`` in a ``./.venv``; the target interpreter must import the torch the job imports. The user's
    value goes along as MPDOCTOR_PYTHONPATH, which BOOTSTRAP puts back, so the environment the probe reports is
    the user's. Returns None (inherit unchanged) when ``env`` is None and nothing needs to change.
    """
    source = os.environ if env is None else env
    value = source.get("PYTHONPATH")
    try:
        here = os.path.realpath(cwd or os.getcwd())
    except OSError:  # the working directory was removed: no file in it can be imported either
        return None if env is None else dict(env)
    kept = [] if value is None else [entry for entry in value.split(os.pathsep) if not _names(entry, here)]
    if value is None or os.pathsep.join(kept) == value:
        return None if env is None else dict(env)
    result = dict(source)
    result["MPDOCTOR_PYTHONPATH"] = value
    if kept:
        result["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del result["PYTHONPATH"]
    return result


def _names(entry: str, directory: str) -> bool:
    """Whether the path entry ``entry`` (a relative one, or the empty one, taken from ``directory``) is it."""
    return os.path.realpath(os.path.join(directory, entry)) == directory


def package_inits() -> list[str]:
    """The two __init__.py files LOAD_PACKAGES takes, in its order: mpdoctor/portable's, mpdoctor/probes/remote's."""
    return [portable.__file__, remote.__file__]


def remote_argv(python: str, module: str, *args: str) -> list[str]:
    """The command that runs ``mpdoctor.probes.remote.<module>.main(args)`` in the interpreter ``python``."""
    return [python, "-c", BOOTSTRAP, *package_inits(), module, *args]
