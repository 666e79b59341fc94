"""Many CLI runs in one real process: ``mpdoctor.cli.app.run`` (the CLI's own parser and usage-error path) for each
argv, stderr captured per run. A process costs about a second here; a table of usage errors runs in one."""

from __future__ import annotations

import json
import subprocess
import sys

DRIVER = r"""
import contextlib, io, json, sys
import mpdoctor.cli  # noqa: F401  (registers every command)
from mpdoctor.cli.app import run
results = []
for argv in json.loads(sys.stdin.read()):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            run(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    results.append([argv, code, err.getvalue()])
print(json.dumps(results))
"""


def run_all(argvs: list[list[str]], cwd: str | None = None) -> list[tuple[list[str], int, str]]:
    """``[argv, exit status, stderr]`` for each argv, in order."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], input=json.dumps(argvs), capture_output=True, text=True, timeout=300, cwd=cwd
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
