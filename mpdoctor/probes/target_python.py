"""Which interpreter ``--python`` names: one resolution for the CLI and for the early start of ``check``."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Optional


def find_python(given: Optional[str]) -> tuple[str, str]:
    """``(path, "")`` for the interpreter ``--python given`` names (None: mpdoctor's own), or ``("", problem)``.

    A name without a path separator is looked up on PATH, as a shell would; the
    path comes back normalised (:func:`normalised`). ``problem`` is in words for a
    usage error.
    """
    if given is None:
        return sys.executable, ""
    if not given.strip():  # `--python "$UNSET_VAR"`: never silently diagnose mpdoctor's own interpreter instead
        return "", "--python needs an interpreter (a path or a name on PATH), not an empty string"
    found = shutil.which(given) if os.sep not in given else (given if os.path.exists(given) else None)
    if not found:
        return "", f"--python {given}: no such interpreter"
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        return "", f"--python {given}: not an executable file"
    return normalised(found), ""


def normalised(path: str) -> str:
    """``project/../bare/bin/python`` as ``bare/bin/python``: without ``.`` or ``..`` (relative stays relative:
    the interpreter makes its own sys.executable absolute, and the early probe of ``check`` is claimed only
    for the very same path).

    Not realpath: a venv's ``bin/python`` is a symlink chosen on purpose (to the base
    interpreter), and it is the link, run by its own path, that puts the venv's
    site-packages on sys.path; its target would diagnose the base interpreter instead.
    normpath is only a string operation, and ``link/..`` is not the link's parent when
    ``link`` is a symlink to a directory, so the path as given is kept unless the
    normalised one names the same file.
    """
    plain = os.path.normpath(path)
    try:
        return plain if plain == path or os.path.samefile(plain, path) else path
    except OSError:
        return path
