"""Import apex's compiled extensions, *inside the interpreter under diagnosis*, after torch.

Loaded beside ``target.py`` by the torch part of the environment probe (stdlib
only, Python 3.8+, judges nothing). torch is imported first, as apex's
maintainers ask; each extension is then imported in a forked child with a time
limit, so an extension built against another torch that aborts or hangs the
interpreter costs only its own result.
"""

import json
import os
import select
import signal
import sys
import time


def _clip(text, limit=2000):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def load_extensions(names, budget):
    """Import each extension in a forked child; a crash or hang costs only that extension.

    One import may take a third of the budget (at most 10 s), so a single hang
    leaves time for the rest.

    Returns {name: {"status": ok|error|crashed|timeout|not-tried, "detail": text}}.
    """
    if not names:
        return {}
    if not hasattr(os, "fork"):
        return {name: {"status": "not-tried", "detail": "this platform cannot fork"} for name in names}
    results = {}
    step_timeout = max(1.0, min(10.0, budget / 3))
    deadline = time.monotonic() + budget
    pending = list(names)
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            for name in pending:
                results[name] = {"status": "not-tried", "detail": "out of time"}
            break
        done = _load_batch(pending, min(step_timeout, left))
        results.update(done)
        pending = [name for name in pending if name not in results]
    return results


def _load_batch(names, step_timeout):
    """One forked child imports names in turn until one crashes or hangs."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, report one JSON line per module, never return
        os.close(read_end)
        import faulthandler

        faulthandler.disable()  # a crash is reported by the parent; no traceback dump on our stderr
        for name in names:
            try:
                __import__(name)
                record = {"name": name, "status": "ok", "detail": ""}
            except BaseException as exc:
                record = {"name": name, "status": "error", "detail": _clip("%s: %s" % (type(exc).__name__, exc))}
            os.write(write_end, (json.dumps(record) + "\n").encode("utf-8"))
        os._exit(0)
    os.close(write_end)
    results, buffer = {}, b""
    try:
        while len(results) < len(names):
            ready, _, _ = select.select([read_end], [], [], step_timeout)
            current = names[len(results)]
            if not ready:
                os.kill(pid, signal.SIGKILL)
                results[current] = {"status": "timeout", "detail": "import did not finish in %.0f s" % step_timeout}
                break
            chunk = os.read(read_end, 65536)
            if not chunk:
                results[current] = {"status": "crashed", "detail": _death(pid)}
                pid = 0
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                record = json.loads(line.decode("utf-8"))
                results[record.pop("name")] = record
    finally:
        os.close(read_end)
        if pid:
            os.waitpid(pid, 0)
    return results


def _death(pid):
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "the interpreter died with %s while importing it" % name
    return "the interpreter exited with status %d while importing it" % os.WEXITSTATUS(status)
