"""Other Python interpreters (3.8, 2.7, ...) for the tests that need one, found as a user's shell finds them.

Never a hard-coded location: ``pythonX.Y`` on PATH first, then pyenv's versions (``pyenv root``, else
``$PYENV_ROOT``, else ``~/.pyenv``). A candidate counts only when it runs: a pyenv shim for a version that is
not selected exits non-zero. Tests skip, saying so, when none is found.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
from typing import List, Optional


def _pyenv_roots() -> List[str]:
    roots = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        try:
            out = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                roots.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass  # a broken pyenv is no pyenv
    roots += [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    return [root for i, root in enumerate(roots) if root and root not in roots[:i]]


def _runs(candidate: str) -> bool:
    try:
        return subprocess.run([candidate, "-c", ""], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=None)
def find_python(version: str) -> Optional[str]:
    """A working interpreter of ``version`` ("3.8", "2.7"), or None when this machine has none."""
    candidates = [shutil.which(f"python{version}")]
    for root in _pyenv_roots():
        for pattern in (f"{version}", f"{version}.*"):
            candidates += sorted(glob.glob(os.path.join(root, "versions", pattern, "bin", f"python{version}")))
    for candidate in candidates:
        if candidate and _runs(candidate):
            return candidate
    return None


def find_pythons(*versions: str) -> List[str]:
    """Every one of ``versions`` this machine has, in the order asked."""
    return [python for python in (find_python(v) for v in versions) if python]
