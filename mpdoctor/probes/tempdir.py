"""Whether this machine gives mpdoctor a temporary file: every child's output goes to one."""

from __future__ import annotations

import os
import tempfile


def temp_problem() -> str:
    """Why no temporary file can be made here, in words for the user, or "" when one can.

    Every child's output goes to temporary files, so without a writable temporary
    directory nothing can be probed; saying so up front beats a traceback later.
    """
    try:
        with tempfile.TemporaryFile():
            pass
    except OSError as exc:
        where = tempfile.tempdir or os.environ.get("TMPDIR") or "/tmp"
        return (
            f"no writable temporary directory ({where}: {exc.strerror or exc}); "
            "set TMPDIR to a directory you can write to"
        )
    return ""
