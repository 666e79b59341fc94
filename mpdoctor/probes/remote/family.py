"""mpdoctor's own processes beside a kernel worker, whose runnable threads are never "others" (stdlib only, 3.8+).

A CPU kernel worker is a fork of the kernel runner. Its *family* is the runner,
every descendant of it (the other device workers, the counting child, an apex
load), every process in the runner's own session or process group (the host
starts it in a session of its own; an orphan of it stays there) and the runner's
parent (the mpdoctor host), found from ``/proc`` and cached (:class:`Family`).
``load_sample`` counts their runnable threads and CPU time apart from everyone
else's: busy means others. A member started since the cache was made, or a
thread a member started since, is recognised when it is seen runnable
(:meth:`Family.outsiders`): never an "other", not even for one sample.
"""

import os

from . import procfs

REFRESH_SAMPLES = 200  # the family is looked up again at least this often (samples), besides when it changed
KNOWN_OUTSIDERS = 64  # the most runnable outsiders' threads remembered, to be looked at first next time
_FAMILY = None  # this process's Family (see family()); a forked child makes its own
# Fields of /proc/<pid>/stat after the command name (procfs.stat_fields): 0 state, 1 ppid, 2 pgrp, 3 session,
# 17 num_threads.
_STATE, _PPID, _PGRP, _SESSION, _THREADS = 0, 1, 2, 3, 17
_HAS_CHILDREN = None  # whether this kernel has /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)


def _stat(pid):
    return procfs.stat_fields(procfs.read("/proc/%d/stat" % pid))


def _ppid(pid):
    fields = _stat(pid)
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


def _running_threads(pid, fields):
    """How many of process ``pid``'s threads are in state R (its ``fields`` say it has one: no more reads)."""
    if fields[_THREADS] == "1":
        return int(fields[_STATE] == "R")
    return len(_running_tids(pid))


def _running_tids(pid, skip=()):
    """The stat files of process ``pid``'s threads in state R now, but those in ``skip`` (not read at all)."""
    paths = ("/proc/%d/task/%d/stat" % (pid, tid) for tid in _tids(pid) or ())
    return [path for path in paths if path not in skip and procfs.stat_fields(procfs.read(path))[:1] == ["R"]]


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
    descendant of it (the other device workers, the counting child, an apex load),
    every process in the session or process group the runner leads, and the
    runner's parent (the mpdoctor host). This process itself is left out: its
    threads are counted apart. Otherwise the family is empty. The pids and their
    threads' stat files are cached (:meth:`refresh`): again when a thread ended,
    every REFRESH_SAMPLES samples, and when a member the cache does not know was
    seen runnable (:meth:`outsiders`).
    """

    def __init__(self, pid=None):
        self.pid = os.getpid() if pid is None else pid
        self.runner = runner_of(self.pid)
        self.host = _ppid(self.runner) if self.runner else None
        runner = _stat(self.runner) if self.runner else []
        # The session and the process group the runner leads (the host starts it with setsid): everything in
        # them is the runner's, an orphan whose parent ended included. One it merely shares (the runner of a
        # test, started in the test's session) holds others too, and says nothing.
        led = [field == str(self.runner) for field in runner[_PGRP : _SESSION + 1]]
        self.group = self.runner if led[:1] == [True] else None
        self.session = self.runner if led[1:] == [True] else None
        self.members = frozenset()  # pids
        self.paths = []  # the stat file of every member's thread, the ones last seen running first
        self.known = frozenset()  # the same, as a set
        self.unreadable = False  # some member's threads could not be listed: its running ones are unknown
        self.samples = 0  # since the last refresh
        self.stale = True
        self.seen_outside = []  # stat files of threads outside the family last seen runnable: looked at first
        self.adopted = set()  # members that outsiders() found and refresh() would not: orphans in the runner's session

    def refresh(self):
        """Look up the members and their threads again."""
        members = set()
        if self.runner:
            members.add(self.runner)
            members.update(descendants(self.runner))
            # Those seen in the runner's session or group since (an orphan is no descendant): while still there.
            self.adopted = set(pid for pid in self.adopted if self._led(_stat(pid)))
            members.update(self.adopted)
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
        self.members, self.paths, self.known, self.unreadable = frozenset(members), paths, frozenset(paths), unreadable
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

    def _led(self, fields):
        """Whether a process whose stat ``fields`` these are is in the session or process group the runner leads."""
        return len(fields) > _SESSION and (
            (self.session is not None and fields[_SESSION] == str(self.session))
            or (self.group is not None and fields[_PGRP] == str(self.group))
        )

    def owns(self, pid, stats):
        """Whether process ``pid`` is a member now: cached, in the runner's session or group, or below the
        runner by its parent chain. ``stats``: {pid: stat fields} of the processes seen (the chain's too).
        """
        if not self.runner:
            return False
        if pid in self.members or pid == self.runner:
            return True
        chain = set()
        while pid > 1 and pid not in chain and len(chain) < 64:
            fields = stats.get(pid)
            if not fields:
                return False
            if self._led(fields):
                return True
            chain.add(pid)
            pid = int(fields[_PPID]) if fields[_PPID].isdigit() else 0
            if pid == self.host:  # the host's other children (another probe, say) are not the runner's
                return False
            if pid == self.runner or pid == self.pid or (pid in self.members and pid != self.host):
                return True
        return False

    def outsiders(self, wanted):
        """Threads outside this process and the family in state R now, looking no further once ``wanted``
        are found; and the family's runnable threads the cache did not know: ``(others, newcomers)``.
        ``(None, 0)``: ``/proc`` cannot be listed.

        For when the counts say that someone else is runnable: the tasks themselves are found, and each is
        judged as it is seen. A process of the family started since the last :meth:`refresh` (a worker's
        child, an orphan in the runner's session) or a thread a member started since is a newcomer, counted
        as family, and the cache is made again at the next sample; one that was runnable for a moment only
        (a kernel thread's few microseconds, a member caught between being counted and being read) is gone
        by now and is nobody's. Those found last time are looked at first: a busy neighbour usually still is.
        """
        seen, outside = set(), []
        for path in self.seen_outside:
            if len(outside) >= wanted:
                break
            pid = int(path.split("/")[2])
            if pid not in seen and pid not in self.members:
                seen.add(pid)
                outside.extend(_running_tids(pid))
        if len(outside) >= wanted:
            self.seen_outside = outside[:KNOWN_OUTSIDERS]
            return len(outside), 0
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return None, 0
        # Every process's stat first (one read each): whether it is the family's needs its parents'.
        stats = {}
        for pid in pids:
            fields = _stat(pid)
            if len(fields) > _THREADS:
                stats[pid] = fields
        newcomers = 0
        for pid, fields in stats.items():
            if pid == self.pid:
                continue  # this process's threads are counted apart
            if self.owns(pid, stats):
                # A member started since the last look, or a thread a member started since: family all the
                # same, and the family is looked up again at the next sample.
                if pid not in self.members:
                    started, self.stale = _running_threads(pid, fields), True
                    self.adopted.add(pid)
                else:
                    started = len(_running_tids(pid, self.known))
                    self.stale = self.stale or started > 0
                newcomers += started
            elif pid not in seen and len(outside) < wanted:
                if fields[_THREADS] != "1":
                    outside.extend(_running_tids(pid))
                elif fields[_STATE] == "R":
                    outside.append("/proc/%d/task/%d/stat" % (pid, pid))
        self.seen_outside = outside[:KNOWN_OUTSIDERS]
        return len(outside), newcomers


def family():
    """This process's :class:`Family`, made on first use (and again in a forked child)."""
    global _FAMILY
    if _FAMILY is None or _FAMILY.pid != os.getpid():
        _FAMILY = Family()
    return _FAMILY
