"""Import apex's compiled extensions, *inside the interpreter under diagnosis*, after torch.

Loaded beside ``target.py`` by the torch part of the environment probe (stdlib
only, Python 3.8+, judges nothing). torch is imported first, as apex's
maintainers ask; then one supervised job (``supervise.py``) imports the
extensions in a forked worker, one step each, with the time limits it is handed, so
an extension built against another torch that aborts or hangs the interpreter
costs only its own result: a fresh worker goes on with the next one.
"""

import os
import tempfile
import time

from . import supervise
from ._portable import limits, redact

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

STEP = "import %s"  # one step per extension; its own names, so none can clash with the supervisor's records
WORDING = {
    "crashed": "the interpreter %(how)s while importing it",
    "timeout": "the import did not finish within %(limit)s s and was killed",
    "deadline": "the import was still running when the time for loading extensions ran out, and was killed",
}


def load_each(names, limit, budget):
    """Import each of ``names`` in a forked worker; a crash or hang costs only that extension.

    One import may take ``limit`` s, all of them ``budget`` s: the host's
    ``apex_load_each`` and ``apex_loads`` (mpdoctor/probes/budget.py), handed to
    the torch part on its command line; nothing is derived here.

    Returns {name: {"status": ok|error|crashed|timeout|not-tried, "detail": text}}.
    """
    names = list(dict.fromkeys(names))  # each name once, in order
    if not names:
        return {}
    if not hasattr(os, "fork"):
        return {name: {"status": "not-tried", "detail": "this platform cannot fork"} for name in names}
    deadline = time.monotonic() + budget
    handle, path = tempfile.mkstemp(prefix="mpdoctor-loads-", suffix=".jsonl")
    os.close(handle)
    try:
        # Each failure costs a restart, so there can be as many as there are extensions.
        job = supervise.Job(path, lambda: _plan(names), limit, deadline, max_restarts=len(names), wording=WORDING)
        supervise.run([job])
        data = supervise.read_steps(path)[0]
    finally:
        os.unlink(path)
    unreached = "out of time" if time.monotonic() >= deadline else job.detail
    results = {}
    for name in names:
        result = data.get(STEP % name)
        if isinstance(result, dict):
            results[name] = {"status": str(result.get("status")), "detail": str(result.get("detail", ""))}
        else:
            results[name] = {"status": "not-tried", "detail": unreached}
    return results


def _plan(names):
    """The worker's plan (built in the worker): one import per step."""
    import faulthandler

    faulthandler.disable()  # a crash is reported by the supervisor; no traceback dump on our stderr
    return [(STEP % name, _importer(name)) for name in names]


def _importer(name):
    def load():
        try:
            __import__(name)
        except BaseException as exc:  # a broken extension can raise SystemExit too
            return {"status": "error", "detail": redact_clip("%s: %s" % (type(exc).__name__, exc), limits.FAILURE_TEXT)}
        return {"status": "ok", "detail": ""}

    return load
