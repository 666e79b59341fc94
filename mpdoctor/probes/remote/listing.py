"""The working directory's Python files, listed and read for the project scan (stdlib only, Python 3.8+).

A project the size of transformers holds some 3,000 files, so the per-file system
calls count: the listing comes from ``os.scandir``, whose entries already say which
names are plain regular files, and such a file is read by ``files.read_bytes``
without its stat before opening: one ``open``, one ``fstat`` and (nearly always)
one ``read``. Anything else (a symlink, a FIFO named ``evil.py``, a device) gets
that look before it is opened.
"""

import os
import time

from ._portable import files

SKIP_DIRECTORIES = ("node_modules", "site-packages", "dist-packages", "__pycache__", "build", "dist")


def skip_directory(root, name):
    if name.startswith(".") or name in SKIP_DIRECTORIES:
        return True
    path = os.path.join(root, name)
    # A virtualenv or conda environment inside the project is not the project's code.
    return os.path.exists(os.path.join(path, "pyvenv.cfg")) or os.path.isdir(os.path.join(path, "conda-meta"))


def python_files(top, deadline, max_files):
    """([(path, listed as a regular file)], why the listing stopped early or "").

    The order of ``os.walk(top)`` with sorted names: a directory's files, then its subdirectories in turn;
    hidden directories, environments and symlinked directories are not entered.
    """
    found, stopped, stack = [], "", [top]
    while stack:
        root = stack.pop()
        if root != top and time.monotonic() > deadline:
            stopped = "%s and the directories after it: not listed, the scan ran out of time" % os.path.relpath(
                root, top
            )
            break
        try:
            with os.scandir(root) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        below = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not skip_directory(root, entry.name) and not entry.is_symlink():
                    below.append(entry.path)
            elif entry.name.endswith(".py"):
                found.append((entry.path, entry.is_file(follow_symlinks=False)))
        stack.extend(reversed(below))
        if len(found) > max_files:
            stopped = "files after the first %d: not listed, the scan reads at most %d" % (max_files, max_files)
            break
    return found[:max_files], stopped


def read(path, regular, limit):
    """The first ``limit`` bytes of ``path``: one open, one fstat and one read where the listing saw a regular
    file (``regular``), else ``files.read_bytes``'s checks first (a symlink, a FIFO, a device)."""
    return files.read_bytes(path, limit, cut=True, listed_regular=regular)
