"""The source tree a build sees: the files git would ship from this working tree, copied elsewhere.

Tracked files, and untracked ones git does not ignore (a new module not yet added is shipped, a ``build/``,
``.venv`` or cache is not), as they are on disk now: a build from the copy cannot pick up a stale earlier build
output, and tests what a commit of this tree would hold. Outside a git checkout (an unpacked sdist), the tree
less what a checkout holds that a build must not see.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Outside git: what a checkout holds that a build must not see (earlier builds, the venv, caches).
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")


def shipped_files() -> list[str] | None:
    """Paths relative to the repository root, or None outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    return sorted({name for name in listed.stdout.decode().split("\0") if name})


def source_copy(dest: Path) -> Path:
    """The source tree, copied to ``dest`` (which must not exist yet)."""
    names = shipped_files()
    if names is None:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*NOT_SOURCE))
        return dest
    for name in names:
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not shipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest
