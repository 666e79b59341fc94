"""Which directory is "your project", the one the project scan reads (stdlib only, Python 3.8+).

Findings such as APEX006 say "your code imports apex.amp": they must only ever cite
code that is the user's. The rule, decided here and nowhere else (docs/check.md,
"Your project"):

1. ``--project DIR``: DIR, exactly as given (the host has checked that it is a
   readable directory; :func:`problem` is that check).
2. Else, the working directory inside a repository (it, or a directory above it
   and below the home directory, holds ``.git`` or ``.hg``): that repository,
   from its root, the working directory's own files read first.
3. Else the working directory itself: a project root when it holds a project
   file (``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``requirements*.txt``,
   ...), your scripts when it holds ``.py`` files at its top, and otherwise not a
   project at all (a home directory, a shared /tmp, a folder of clones).
4. Below the root, never your code, never walked: another repository's root (a
   directory holding ``.git`` or ``.hg``: a clone, a submodule, a vendored
   checkout), listed in the report; under a root that is neither a repository
   nor holds a project file (a folder of scripts, or no project at all) also a
   directory holding ``pyproject.toml``, ``setup.py`` or ``setup.cfg`` (an
   unpacked sdist, a repository downloaded as a zip), listed likewise;
   environments (``pyvenv.cfg``, ``conda-meta``), ``site-packages`` and
   ``dist-packages``, caches and build output (``listing.py``). Under a root that
   is a project, a directory holding a project file is one of its own packages
   (a monorepo), and is read.
5. Nothing at all when the root would be the filesystem root, or the working
   directory lies inside installed packages (a path through site-packages or
   dist-packages): that code is the installed-code scan's, not yours.

Why the repository's root and not the working directory's subtree (2): code is
run from anywhere in its repository (``cd scripts; python train.py`` imports
``../model.py`` through its sys.path or an editable install), and a ``from apex
import amp`` in ``repo/model.py`` breaks it all the same. Reading the working
directory's subtree first keeps a scan cut short by its budget on the files
closest to the user. The search upward stops below the home directory: a home
directory kept in git (dotfiles) is not the project of every folder in it.
"""

import fnmatch
import os

REPOSITORY_MARKERS = (".git", ".hg")  # a file too: a submodule's or a worktree's .git is a file
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "environment.yml", "environment.yaml")
PROJECT_PATTERNS = ("requirements*.txt",)
NESTED_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")  # what makes a folder below another project
INSTALLED = ("site-packages", "dist-packages")
SHOWN_NAMES = 3

GIVEN = "given with --project"


def problem(path):
    """Why ``path`` cannot be ``--project``'s directory, in words; "" when it can."""
    if not path:
        return "--project needs a directory"
    if not os.path.exists(path):
        return "--project %s: no such directory" % path
    if not os.path.isdir(path):
        return "--project %s: not a directory" % path
    try:
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError as exc:
        return "--project %s: cannot be read: %s" % (path, exc.strerror or exc)
    return ""


def _has_any(directory, names):
    return [name for name in names if os.path.lexists(os.path.join(directory, name))]


def repository_root(cwd):
    """The nearest directory at or above ``cwd`` that is a repository's root, below the home directory; ""."""
    home = os.path.realpath(os.path.expanduser("~"))
    here = cwd
    while True:
        if _has_any(here, REPOSITORY_MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here or os.path.realpath(parent) == home or os.path.dirname(parent) == parent:
            return ""  # stop below home and never take the filesystem root
        here = parent


def project_files(directory):
    """The project files ``directory`` holds at its top (pyproject.toml, requirements.txt, ...)."""
    found = _has_any(directory, PROJECT_FILES)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    return found + [name for name in names if any(fnmatch.fnmatch(name, p) for p in PROJECT_PATTERNS)]


def _top_scripts(directory):
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if e.name.endswith(".py") and e.is_file())
    except OSError:
        return []


def _names(names):
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (", ..." if len(names) > SHOWN_NAMES else "")


def choose(cwd, given=""):
    """The project root for a run from ``cwd``: a dict with

    ``root`` (the directory to read, "" for none), ``reason`` (why, in words; or why nothing is read),
    ``first`` (a directory below the root to read first, or ""), and ``nested_projects`` (whether folders
    holding a project file below the root are other projects, rule 4).
    """
    if given:
        root = os.path.abspath(given)
        return {"root": root, "reason": GIVEN, "first": "", "nested_projects": False}
    parts = os.path.normpath(cwd).split(os.sep)
    installed = [part for part in parts if part in INSTALLED]
    if installed:
        return {
            "root": "",
            "reason": "the working directory is inside installed packages (%s), not your code; "
            "use --project DIR" % installed[0],
            "first": "",
            "nested_projects": False,
        }
    repository = repository_root(cwd)
    if repository:
        if repository == cwd:
            reason = "the working directory: the root of a repository"
            first = ""
        else:
            first = cwd
            reason = "the repository that holds the working directory, %s/ read first" % os.path.relpath(
                cwd, repository
            )
        return {"root": repository, "reason": reason, "first": first, "nested_projects": False}
    files = project_files(cwd)
    if files:
        reason = "the working directory: it holds %s" % _names(files)
        return {"root": cwd, "reason": reason, "first": "", "nested_projects": False}
    scripts = _top_scripts(cwd)
    if scripts:
        reason = "the working directory: it holds Python files (%s)" % _names(scripts)
        return {"root": cwd, "reason": reason, "first": "", "nested_projects": True}
    reason = "the working directory, which is no project: no repository, project file or Python file at its top"
    return {"root": cwd, "reason": reason, "first": "", "nested_projects": True}
