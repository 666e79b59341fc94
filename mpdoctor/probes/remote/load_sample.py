"""What else the machine was doing while the CPU kernels were timed. Runs in the target interpreter.

Stdlib only, Python 3.8+. Linux facts from ``/proc`` (elsewhere every field is
None: unknown, never zero): :func:`sample` reads the counters at one moment and
:func:`window` turns two samples into what happened between them:

* ``others_cores``: CPU time used by every other process, in cores (1.0: one
  core kept busy). The machine's busy time (``/proc/stat``) less this
  process's own (``/proc/self/stat``, all its threads) and its family's (each
  member's ``/proc/<pid>/stat``, for the members alive at both samples).
* ``steal``: the fraction of the machine's time the hypervisor gave to other
  guests (``/proc/stat``'s steal column).
* ``runnable_others``: the most runnable tasks seen at a sample that were
  neither this process's own threads nor mpdoctor's other processes (its
  :class:`family.Family`): ``procs_running`` less our threads and the family's in state R.
* ``load1``: the 1-minute load average, for the report (it lags: a busy loop
  started a second ago barely moves it).

Busy means others: mpdoctor's own processes (the kernel runner, its other
workers and children, the mpdoctor host that started it) are never "others",
and a runnable neighbour on a machine with idle cores is no contention:
:func:`contended` says whether the runnable tasks seen could not all have a
core beside a timing's own threads.

It measures; the host decides what counts as disturbed.
"""

import os

from . import procfs
from .family import family

_CLOCK = None


def _clock_ticks():
    global _CLOCK
    if _CLOCK is None:
        try:
            _CLOCK = float(os.sysconf("SC_CLK_TCK"))
        except (ValueError, OSError, AttributeError):
            _CLOCK = 100.0
    return _CLOCK


def _own_runnable():
    """How many of this process's threads are running or runnable right now (state R)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    count = 0
    for task in tasks:
        fields = procfs.stat_fields(procfs.read("/proc/self/task/%s/stat" % task))
        if fields and fields[0] == "R":
            count += 1
    return count


def _running_total():
    """Runnable tasks on the machine now (``/proc/loadavg``'s "running/total"); None: unknown."""
    text = procfs.read("/proc/loadavg")
    try:
        return int(text.split()[3].partition("/")[0]) if text else None
    except (ValueError, IndexError):
        return None


def usable_cpus():
    """The CPUs this process may run on (its affinity), else the machine's; None: unknown."""
    try:
        return len(os.sched_getaffinity(0)) or None
    except (AttributeError, OSError, ValueError):
        return os.cpu_count()


def runnable(members=None):
    """Runnable tasks now, cheaply: ``{"others", "family", "own"}`` (None in each that /proc does not tell).

    ``own``: this process's threads in state R; ``family``: those of ``members``
    (a :class:`family.Family`, this process's by default); ``others``: every other one
    on the machine. When the family's threads cannot be read, ``family`` is None
    and ``others`` counts them too (as it did before there was a family). Never raises.

    The counts come from ``/proc/loadavg`` and the family's cached threads, a few
    reads. Only when they say that others are runnable are those looked for
    (:meth:`family.Family.outsiders`): ``others`` is then what both say, and a member
    the cache did not know yet (a child forked a moment ago) is ``family``.
    """
    out = {"others": None, "family": None, "own": None}
    try:
        total = _running_total()
        own = _own_runnable() if total is not None else None
        if own is None:
            return out
        out["own"] = own
        candidates = max(0, total - own)
        if not candidates:
            out.update(others=0, family=0)  # nothing but us: no need to look at the family at all
            return out
        members = family() if members is None else members
        ours = members.running(candidates)
        if ours is None:
            out["others"] = candidates
            return out
        others = candidates - ours
        if others > 0:
            # A member that was runnable at the first count and asleep when its thread was read would
            # pass for another process: count the machine again and keep the smaller number.
            again = _running_total()
            if again is not None:
                others = min(others, again - own - ours)
        if others > 0:
            # Still someone else, by the counts: find them. Only tasks outside the family that are runnable
            # when looked at are others; a member the family's cache does not know yet is family.
            found, newcomers = members.outsiders(others)
            if found is not None:
                others, ours = min(others, found), ours + newcomers
        out.update(others=max(0, others), family=ours)
    except Exception:  # noqa: BLE001 - a sample must never cost the timing
        pass
    return out


def contended(others, family_running, demand, cpus):
    """Would a timing that needs ``demand`` cores share them? Busy means others, and only when they crowd.

    True only when tasks that are not mpdoctor's own are runnable (``others`` > 0)
    and they, mpdoctor's other runnable threads (``family_running``) and the
    timing's ``demand`` could not all have a core of the ``cpus`` usable:
    ``others + family_running + demand > cpus``. ``others`` None or 0: False (as
    the report has it: nothing seen is no disturbance); ``cpus`` or ``demand``
    unknown: any other runnable task counts.
    """
    if not others:
        return False
    if not cpus or demand is None:
        return True
    return others + (family_running or 0) + demand > cpus


def sample():
    """The counters now: a dict of plain numbers (None where this system does not tell)."""
    import time

    out = {
        "time": time.monotonic(),
        "busy": None,
        "total": None,
        "steal": None,
        "own": None,
        "procs_running": None,
        "own_running": None,
        "family_running": None,
        "load1": None,
    }
    stat = procfs.read("/proc/stat")
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
    own = procfs.stat_fields(procfs.read("/proc/self/stat"))
    if len(own) > 12 and own[11].isdigit() and own[12].isdigit():
        out["own"] = int(own[11]) + int(own[12])  # utime + stime, every thread of this process
    try:
        # mpdoctor's own processes' CPU time is not "others'" either (a GPU worker spin-waits on a core)
        out["family_ticks"] = family().cpu_ticks()
    except Exception:  # noqa: BLE001 - unknown, never raised
        out["family_ticks"] = None
    if out["procs_running"] is not None:
        out["own_running"] = _own_runnable()
    if out["own_running"] is not None:
        candidates = out["procs_running"] - out["own_running"]
        try:
            out["family_running"] = family().running(candidates) if candidates > 0 else 0
        except Exception:  # noqa: BLE001 - unknown, never raised
            pass
    load = procfs.read("/proc/loadavg")
    try:
        out["load1"] = float(load.split()[0]) if load else None
    except (ValueError, IndexError):
        pass
    return out


def runnable_others(now):
    """Runnable tasks at sample ``now`` that are neither this process's threads nor its family's (None: unknown).

    A sample without ``family_running`` (or with None: unreadable) counts the family as others.
    """
    if now.get("procs_running") is None or now.get("own_running") is None:
        return None
    return max(0, now["procs_running"] - now["own_running"] - (now.get("family_running") or 0))


def window(before, after, samples=()):
    """What happened between two samples (see the module's docstring), as plain data.

    ``samples`` are more samples taken in between: their runnable counts count too.
    """
    seconds = after["time"] - before["time"]
    out = {
        "seconds": round(seconds, 4),
        "others_cores": None,
        "steal": None,
        "runnable_others": None,
        "load1": after.get("load1"),
        "cpus": os.cpu_count(),
    }
    have = all(s.get(key) is not None for s in (before, after) for key in ("busy", "total", "own"))
    if have and seconds > 0:
        ticks = _clock_ticks()
        busy = after["busy"] - before["busy"]
        own = after["own"] - before["own"]
        first, last = before.get("family_ticks"), after.get("family_ticks")
        if isinstance(first, dict) and isinstance(
            last, dict
        ):  # members alive at both ends; a short-lived one is missed
            own += sum(max(0, last[pid] - first[pid]) for pid in last if pid in first)
        out["others_cores"] = round(max(0.0, (busy - own) / ticks / seconds), 3)
        total = after["total"] - before["total"]
        if total > 0:
            out["steal"] = round((after["steal"] - before["steal"]) / float(total), 3)
    counts = [n for n in (runnable_others(s) for s in list(samples) + [before, after]) if n is not None]
    if counts:
        out["runnable_others"] = max(counts)
    return out


def runnable_now():
    """Runnable tasks now that are neither this process's threads nor its family's, cheaply; None: unknown."""
    return runnable()["others"]
