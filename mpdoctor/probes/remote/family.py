"""mpdoctor's own processes beside a kernel worker, whose runnable threads are never "others" (stdlib only, 3.8+).

A CPU kernel worker is a fork of the kernel runner. Its *family* is the runner,
every descendant of it (the other device workers, the counting child, an apex
load) and the runner's parent (the mpdoctor host), found from ``/proc`` and cached
(:class:`Family`). ``load_sample`` counts their runnable threads and CPU time apart
from everyone else's: busy means others.
"""

import os

from . import procfs

REFRESH_SAMPLES = 200  # the family is looked up again at least this often (samples), besides when it changed
REFRESH_GAP = 4  # ... and when non-family tasks seem runnable, at most once in this many samples
_FAMILY = None  # this process's Family (see family()); a forked child makes its own
_HAS_CHILDREN = None  # whether this kernel has /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)


def _ppid(pid):
    fields = procfs.stat_fields(procfs.read("/proc/%d/stat" % pid))
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def _tids(pid):
    try:
        return [int(tid) for tid in os.listdir("/proc/%d/task" % pid) if tid.isdigit()]
    except OSError:
        return None


def _children(pid):
    """``pid``'s children from ``/proc/<pid>/task/*/children``; None where the kernel has no such file."""
    global _HAS_CHILDREN
    if _HAS_CHILDREN is None:
        _HAS_CHILDREN = os.path.exists("/proc/self/task/%d/children" % os.getpid())
    if not _HAS_CHILDREN:
        return None
    out = set()
    for tid in _tids(pid) or ():
        text = procfs.read("/proc/%d/task/%d/children" % (pid, tid))
        out.update(int(child) for child in (text or "").split() if child.isdigit())
    return out


def _children_by_parent():
    """{ppid: [pid, ...]} of every process, from ``/proc/*/stat`` (the slow way)."""
    out = {}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return out
    for pid in pids:
        parent = _ppid(pid)
        if parent is not None:
            out.setdefault(parent, []).append(pid)
    return out


def descendants(root):
    """Every process below ``root`` (its children, theirs, ...), as a set of pids."""
    out, todo, by_parent = set(), [root], None
    while todo:
        pid = todo.pop()
        kids = _children(pid)
        if kids is None:
            by_parent = _children_by_parent() if by_parent is None else by_parent
            kids = by_parent.get(pid, ())
        for kid in kids:
            if kid not in out and kid != root:
                out.add(kid)
                todo.append(kid)
    return out


def runner_of(pid=None):
    """The process this one is a fork of (the kernel runner of a worker): its parent, when that runs
    the very same command line; None otherwise (e.g. a test calling the suite in-process).
    """
    pid = os.getpid() if pid is None else pid
    parent = _ppid(pid)
    if not parent or parent <= 1:
        return None
    mine = _cmdline(pid)
    return parent if mine and _cmdline(parent) == mine else None


class Family(object):
    """mpdoctor's own processes beside this one, whose runnable threads are not "others".

    When this process is a fork of a runner (:func:`runner_of`): the runner, every
    descendant of it (the other device workers, the counting child, an apex load)
    and the runner's parent (the mpdoctor host). This process itself is left out:
    its threads are counted apart. Otherwise the family is empty. The pids and
    their threads' stat files are cached (:meth:`refresh`): again when a thread
    ended, every REFRESH_SAMPLES samples, and when tasks outside it seem runnable
    (a worker started since, at most every REFRESH_GAP samples).
    """

    def __init__(self, pid=None):
        self.pid = os.getpid() if pid is None else pid
        self.runner = runner_of(self.pid)
        self.host = _ppid(self.runner) if self.runner else None
        self.members = frozenset()  # pids
        self.paths = []  # the stat file of every member's thread, the ones last seen running first
        self.unreadable = False  # some member's threads could not be listed: its running ones are unknown
        self.samples = 0  # since the last refresh
        self.looked_at = None  # the runnable tasks outside this process at the last refresh on their account
        self.stale = True

    def refresh(self):
        """Look up the members and their threads again."""
        members = set()
        if self.runner:
            members.add(self.runner)
            members.update(descendants(self.runner))
            if self.host and self.host > 0:
                members.add(self.host)
        members.discard(self.pid)
        paths, unreadable = [], False
        for pid in sorted(members):
            tids = _tids(pid)
            if tids is None:
                unreadable = unreadable or os.path.exists("/proc/%d" % pid)  # not merely ended
                continue
            paths.extend("/proc/%d/task/%d/stat" % (pid, tid) for tid in tids)
        self.members, self.paths, self.unreadable = frozenset(members), paths, unreadable
        self.samples, self.stale = 0, False

    def running(self, wanted=None):
        """Members' threads in state R now (None: unknown), looking no further once ``wanted`` are found."""
        self.samples += 1
        if self.stale or self.samples > REFRESH_SAMPLES:
            self.refresh()
        if self.unreadable:
            return None
        found, first, rest = 0, [], []
        for i, path in enumerate(self.paths):
            if wanted is not None and found >= wanted:
                rest.extend(self.paths[i:])
                break
            fields = procfs.stat_fields(procfs.read(path))
            if not fields:
                self.stale = True  # the thread ended (or its process did): look again next time
            elif fields[0] == "R":
                found += 1
                first.append(path)
                continue
            rest.append(path)
        self.paths = first + rest
        return found

    def cpu_ticks(self):
        """{pid: utime + stime} of every member now (all its threads); a member that cannot be read is left out."""
        if self.stale or self.samples > REFRESH_SAMPLES:
            self.refresh()
        out = {}
        for pid in self.members:
            fields = procfs.stat_fields(procfs.read("/proc/%d/stat" % pid))
            if len(fields) > 12 and fields[11].isdigit() and fields[12].isdigit():
                out[pid] = int(fields[11]) + int(fields[12])
        return out

    def may_look_again(self, candidates):
        """Tasks outside the family seem runnable: refresh, unless that was done a moment ago or the
        ``candidates`` (runnable tasks outside this process) are as many as at the last such look:
        a member started since would have changed that count.
        """
        if self.runner and self.samples >= REFRESH_GAP and candidates != self.looked_at:
            self.refresh()
            self.looked_at = candidates
            return True
        return False


def family():
    """This process's :class:`Family`, made on first use (and again in a forked child)."""
    global _FAMILY
    if _FAMILY is None or _FAMILY.pid != os.getpid():
        _FAMILY = Family()
    return _FAMILY
