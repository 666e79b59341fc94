"""The working directory's Python files, listed and read for the project scan (stdlib only, Python 3.8+).

A project the size of transformers holds some 3,000 files, so the per-file system
calls count: the listing comes from ``os.scandir``, whose entries already say which
names are plain regular files, and such a file is read by ``files.read_bytes``
without its stat before opening: one ``open``, one ``fstat`` and (nearly always)
one ``read``. Anything else (a symlink, a FIFO named ``evil.py``, a device) gets
that look before it is opened.

What is never walked (``project_root.py`` states the whole rule): hidden
directories, environments, installed packages, caches and build output
(:func:`skip_directory`), and, told apart once their entries are listed (no
system call more), other repositories' roots and, where asked, other projects.
"""

import os
import time

from . import project_root
from ._portable import files

# Hidden directories (.git, .tox, .nox, .venv, .cache, .eggs, .mypy_cache ...) are skipped by their dot.
SKIP_DIRECTORIES = ("node_modules", "site-packages", "dist-packages", "__pycache__", "build", "dist", "__pypackages__")
SKIP_SUFFIXES = (".egg-info", ".dist-info", ".egg")


def skip_directory(root, name):
    if name.startswith(".") or name in SKIP_DIRECTORIES or name.endswith(SKIP_SUFFIXES):
        return True
    path = os.path.join(root, name)
    # A virtualenv or conda environment inside the project is not the project's code.
    return os.path.exists(os.path.join(path, "pyvenv.cfg")) or os.path.isdir(os.path.join(path, "conda-meta"))


def other_project(names, nested_projects):
    """Whether a directory whose entries are ``names`` is another repository's root, or (``nested_projects``)
    another project's; never a directory's own look-up: its listing already says."""
    if any(marker in names for marker in project_root.REPOSITORY_MARKERS):
        return True
    return nested_projects and any(name in names for name in project_root.NESTED_PROJECT_FILES)


def python_files(top, deadline, max_files, first="", nested_projects=False):
    """([(path, listed as a regular file)], why the listing stopped early or "", [other projects' directories]).

    The order of ``os.walk(top)`` with sorted names: a directory's files, then its subdirectories in turn;
    hidden directories, environments and symlinked directories are not entered, nor another repository's
    root below ``top`` (or another project's, with ``nested_projects``), which goes to the third list,
    relative to ``top``. ``first``: a directory below ``top`` listed before the rest (the working directory).
    """
    found, others = [], []
    stopped = ""
    for start, leave_out in ((first, ""), (top, first)) if first else ((top, ""),):
        stopped = _walk(top, start, leave_out, deadline, max_files, nested_projects, found, others)
        if stopped:
            break
    return found[:max_files], stopped, others


def _walk(top, start, leave_out, deadline, max_files, nested_projects, found, others):
    """List ``start``'s subtree into ``found`` (see python_files), not entering ``leave_out``; why it stopped."""
    stack = [start]
    while stack:
        root = stack.pop()
        if root != start and time.monotonic() > deadline:
            return "%s and the directories after it: not listed, the scan ran out of time" % os.path.relpath(root, top)
        try:
            with os.scandir(root) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        if root != start and other_project([entry.name for entry in entries], nested_projects):
            others.append(os.path.relpath(root, top))
            continue
        below = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not skip_directory(root, entry.name) and not entry.is_symlink() and entry.path != leave_out:
                    below.append(entry.path)
            elif entry.name.endswith(".py"):
                found.append((entry.path, entry.is_file(follow_symlinks=False)))
        stack.extend(reversed(below))
        if len(found) > max_files:
            return "files after the first %d: not listed, the scan reads at most %d" % (max_files, max_files)
    return ""


def read(path, regular, limit):
    """The first ``limit`` bytes of ``path``: one open, one fstat and one read where the listing saw a regular
    file (``regular``), else ``files.read_bytes``'s checks first (a symlink, a FIFO, a device)."""
    return files.read_bytes(path, limit, cut=True, listed_regular=regular)
