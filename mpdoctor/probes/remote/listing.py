"""The working directory's Python files, listed and read for the project scan (stdlib only, Python 3.8+).

A project the size of transformers holds some 3,000 files, so the per-file system
calls count: the listing comes from ``os.scandir``, whose entries already say which
names are plain regular files, and such a file is read with one ``open``, one
``fstat`` and (nearly always) one ``read``. Anything else (a symlink, a FIFO named
``evil.py``, a device) goes through ``files.read_bytes``, which looks before it opens.
"""

import os
import stat
import time

from . import files

SKIP_DIRECTORIES = ("node_modules", "site-packages", "dist-packages", "__pycache__", "build", "dist")
FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


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
            stopped = "%s and the directories after it: not listed, the scan ran out of time" % os.path.relpath(root, top)
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
    """The first ``limit`` bytes of ``path``, as ``files.read_bytes(path, limit, cut=True)`` gives them."""
    if not regular:
        return files.read_bytes(path, limit, cut=True)
    fd = os.open(path, FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the listing
            raise files.Refused(path, "%s, not a regular file" % files.kind(info.st_mode))
        want = min(info.st_size, limit) + 1
        data = os.read(fd, want)
        if len(data) < want:  # a short read of a regular file is its end
            return data
        chunks, size = [data], len(data)
        while size <= limit:  # it grew since the fstat, or is longer than the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)[:limit]
