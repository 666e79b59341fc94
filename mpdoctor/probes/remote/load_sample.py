"""What else the machine was doing while the CPU kernels were timed. Runs in the target interpreter.

Stdlib only, Python 3.8+. Linux facts from ``/proc`` (elsewhere every field is
None: unknown, never zero): :func:`sample` reads the counters at one moment and
:func:`window` turns two samples into what happened between them:

* ``others_cores``: CPU time used by every other process, in cores (1.0: one
  core kept busy). The machine's busy time (``/proc/stat``) less this
  process's own (``/proc/self/stat``, all its threads).
* ``steal``: the fraction of the machine's time the hypervisor gave to other
  guests (``/proc/stat``'s steal column).
* ``runnable_others``: the most runnable tasks seen at a sample that were not
  this process's own threads (``procs_running`` less our threads in state R).
* ``load1``: the 1-minute load average, for the report (it lags: a busy loop
  started a second ago barely moves it).

It measures; the host decides what counts as disturbed.
"""

import os

_CLOCK = None


def _clock_ticks():
    global _CLOCK
    if _CLOCK is None:
        try:
            _CLOCK = float(os.sysconf("SC_CLK_TCK"))
        except (ValueError, OSError, AttributeError):
            _CLOCK = 100.0
    return _CLOCK


def _read(path):
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def _stat_fields(text):
    """The fields of a /proc/*/stat line after the command name (which may hold spaces)."""
    return text[text.rfind(")") + 2:].split() if text and ")" in text else []


def _own_runnable():
    """How many of this process's threads are running or runnable right now (state R)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    count = 0
    for task in tasks:
        fields = _stat_fields(_read("/proc/self/task/%s/stat" % task))
        if fields and fields[0] == "R":
            count += 1
    return count


def sample():
    """The counters now: a dict of plain numbers (None where this system does not tell)."""
    import time

    out = {"time": time.monotonic(), "busy": None, "total": None, "steal": None, "own": None,
           "procs_running": None, "own_running": None, "load1": None}
    stat = _read("/proc/stat")
    if stat:
        for line in stat.splitlines():
            parts = line.split()
            if parts and parts[0] == "cpu" and len(parts) >= 5:
                ticks = [int(value) for value in parts[1:] if value.isdigit()]
                idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
                steal = ticks[7] if len(ticks) > 7 else 0
                # guest time is already counted in user: the first 8 columns are the whole
                out["total"] = sum(ticks[:8])
                out["busy"] = out["total"] - idle - steal
                out["steal"] = steal
            elif parts and parts[0] == "procs_running" and len(parts) > 1 and parts[1].isdigit():
                out["procs_running"] = int(parts[1])
    own = _stat_fields(_read("/proc/self/stat"))
    if len(own) > 12 and own[11].isdigit() and own[12].isdigit():
        out["own"] = int(own[11]) + int(own[12])  # utime + stime, every thread of this process
    if out["procs_running"] is not None:
        out["own_running"] = _own_runnable()
    load = _read("/proc/loadavg")
    try:
        out["load1"] = float(load.split()[0]) if load else None
    except (ValueError, IndexError):
        pass
    return out


def runnable_others(now):
    """Runnable tasks at sample ``now`` that are not this process's threads (None: unknown)."""
    if now.get("procs_running") is None or now.get("own_running") is None:
        return None
    return max(0, now["procs_running"] - now["own_running"])


def window(before, after, samples=()):
    """What happened between two samples (see the module's docstring), as plain data.

    ``samples`` are more samples taken in between: their runnable counts count too.
    """
    seconds = after["time"] - before["time"]
    out = {"seconds": round(seconds, 4), "others_cores": None, "steal": None, "runnable_others": None,
           "load1": after.get("load1"), "cpus": os.cpu_count()}
    have = all(s.get(key) is not None for s in (before, after) for key in ("busy", "total", "own"))
    if have and seconds > 0:
        ticks = _clock_ticks()
        busy = after["busy"] - before["busy"]
        own = after["own"] - before["own"]
        out["others_cores"] = round(max(0.0, (busy - own) / ticks / seconds), 3)
        total = after["total"] - before["total"]
        if total > 0:
            out["steal"] = round((after["steal"] - before["steal"]) / float(total), 3)
    counts = [n for n in (runnable_others(s) for s in list(samples) + [before, after]) if n is not None]
    if counts:
        out["runnable_others"] = max(counts)
    return out


def runnable_now():
    """Runnable tasks now that are not this process's threads, cheaply (``/proc/loadavg``); None: unknown."""
    text = _read("/proc/loadavg")
    try:
        running = int(text.split()[3].partition("/")[0]) if text else None
    except (ValueError, IndexError):
        running = None
    own = _own_runnable() if running is not None else None
    return None if own is None else max(0, running - own)
