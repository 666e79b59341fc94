"""Helpers for the adversarial tests: run the real CLI against hostile inputs, and what no run may ever do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
# A hang guard, not a timing assertion: a run that blocks on a FIFO would otherwise block the suite forever.
HANG = 120


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def mpdoctor(
    *args: str, cwd: Optional[Path] = None, env: Optional[dict] = None, timeout: float = HANG, **kwargs
) -> subprocess.CompletedProcess:
    """``python -m mpdoctor ARGS`` as a real process (text output)."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args],
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env if env is not None else clean_env(),
        **kwargs,
    )


def assert_clean(result: subprocess.CompletedProcess, *codes: int) -> None:
    """Exit with one of ``codes`` (never 3, the internal-error code), and no traceback on stderr."""
    stderr = result.stderr if isinstance(result.stderr, str) else result.stderr.decode("utf-8", "replace")
    assert result.returncode in codes, (result.returncode, stderr[-2000:])
    assert "Traceback" not in stderr and "internal error" not in stderr and "Exception ignored" not in stderr, stderr[
        -2000:
    ]
