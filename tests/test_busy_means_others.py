"""Busy means others: mpdoctor's own processes never disturb a CPU timing, and a neighbour only when cores run out.

Seen on an idle 16-core H200 machine (load average 0.15): the CPU timing set
rounds aside as disturbed because "3 other runnable processes" were seen, which
were mpdoctor's own (the kernel runner, a CUDA worker spinning on
``cudaEventSynchronize``, the host), and up to 12 CPU speed ratios became
inconclusive. Proven here:

* the rule itself (``load_sample.contended``, ``runnable``, ``Device.disturbed``) on
  constructed counts: a 2-core machine whose torch uses both cores is disturbed by
  one busy neighbour; a 16-core one whose torch uses 8 is not by 1-3;
* with real processes: a forked worker's family (its runner, the runner's other
  children and theirs, the host) is found from /proc and its spinning members are
  not counted as others, while a spinning process from elsewhere is;
* members that start after the family was looked up (a child, an orphan left in
  the runner's session, a thread) are family from the first sample that sees them;
* the real kernel probe, with a member of the runner's family spinning beside the
  CPU timing like a GPU worker, keeps its CPU speed ratios clear of disturbance.

No timing is asserted: only counts of processes that spin (always in state R)
and the rule's verdicts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from mpdoctor.probes.remote import kernel_measure, load_sample

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the rule, on constructed counts


def test_a_neighbour_disturbs_only_when_the_cores_run_out():
    # 2-core CI machine, torch on 2 threads: one busy neighbour really shares a core.
    assert load_sample.contended(others=1, family_running=0, demand=2, cpus=2)
    # 16 cores, torch on 8 threads: 1-3 runnable neighbours each have a core of their own.
    for others in (1, 2, 3):
        assert not load_sample.contended(others, 0, 8, 16)
        assert not load_sample.contended(others, 1, 8, 16)  # a CUDA worker spinning beside them too
    # ... until they and ours need more than there is.
    assert load_sample.contended(8, 1, 8, 16)
    assert load_sample.contended(1, 0, 16, 16)  # torch on every core: anyone else shares one
    # mpdoctor's own never disturb on their own, however many.
    assert not load_sample.contended(0, 12, 8, 16)
    # Nothing seen, or nothing known: no disturbance (unknown is not zero, and not load either).
    assert not load_sample.contended(None, 3, 8, 16)
    # Others seen but the cores (or the demand) unknown: any of them counts, as before.
    assert load_sample.contended(1, 0, 8, None)
    assert load_sample.contended(1, 0, None, 16)


class FakeFamily:
    """A stand-in :class:`family.Family` with a fixed count of runnable members.

    ``found``: what :meth:`family.Family.outsiders` finds when asked (None: every runnable task the counts
    call others), ``(others, newcomers)``.
    """

    def __init__(self, running, found=None):
        self.running_now, self.found, self.asked, self.looked = running, found, [], []

    def running(self, wanted=None):
        self.asked.append(wanted)
        return self.running_now

    def outsiders(self, wanted):
        self.looked.append(wanted)
        return (wanted, 0) if self.found is None else self.found


def fake_proc(monkeypatch, totals, own):
    """``/proc/loadavg``'s running count gives ``totals`` in turn; this process has ``own`` threads in R."""
    totals = list(totals)
    monkeypatch.setattr(load_sample, "_running_total", lambda: totals.pop(0) if len(totals) > 1 else totals[0])
    monkeypatch.setattr(load_sample, "_own_runnable", lambda: own)


def test_runnable_splits_the_machine_into_own_family_and_others(monkeypatch):
    fake_proc(monkeypatch, [6], own=2)
    assert load_sample.runnable(FakeFamily(3)) == {"others": 1, "family": 3, "own": 2}
    # Only ours runnable: the family is not even looked at.
    family = FakeFamily(5)
    fake_proc(monkeypatch, [2], own=2)
    assert load_sample.runnable(family) == {"others": 0, "family": 0, "own": 2} and family.asked == []
    # The family's threads could not be read: they count as others, as before there was a family.
    fake_proc(monkeypatch, [6], own=2)
    assert load_sample.runnable(FakeFamily(None)) == {"others": 4, "family": None, "own": 2}
    # A member asleep by the time its thread was read: a second count of the machine catches it, and nobody
    # is looked for.
    family = FakeFamily(3)
    fake_proc(monkeypatch, [6, 5], own=2)
    assert load_sample.runnable(family)["others"] == 0 and family.looked == []
    # The counts say 1 other, but no task outside the family is runnable when looked for: it was a moment's.
    fake_proc(monkeypatch, [6], own=2)
    family = FakeFamily(3, found=(0, 0))
    assert load_sample.runnable(family) == {"others": 0, "family": 3, "own": 2} and family.looked == [1]
    # The counts say 2 others; one is a member the family's cache did not know yet (forked a moment ago).
    fake_proc(monkeypatch, [6], own=2)
    assert load_sample.runnable(FakeFamily(2, found=(1, 1))) == {"others": 1, "family": 3, "own": 2}
    # /proc could not be listed: the counts stand.
    fake_proc(monkeypatch, [6], own=2)
    assert load_sample.runnable(FakeFamily(2, found=(None, 0))) == {"others": 2, "family": 2, "own": 2}
    # /proc does not tell: unknown, never zero.
    fake_proc(monkeypatch, [None], own=2)
    assert load_sample.runnable(FakeFamily(0)) == {"others": None, "family": None, "own": None}


def test_runnable_never_raises(monkeypatch):
    def broken():
        raise RuntimeError("odd /proc")

    monkeypatch.setattr(load_sample, "_running_total", broken)
    assert load_sample.runnable(FakeFamily(0)) == {"others": None, "family": None, "own": None}
    monkeypatch.setattr(load_sample, "_running_total", lambda: 9)
    monkeypatch.setattr(load_sample, "_own_runnable", lambda: 1)
    family = FakeFamily(0)
    family.running = lambda wanted=None: 1 / 0
    assert load_sample.runnable(family)["others"] is None


def stub_torch(threads):
    return types.SimpleNamespace(
        Generator=lambda: types.SimpleNamespace(manual_seed=lambda seed: None), get_num_threads=lambda: threads
    )


def test_device_disturbed_applies_the_rule_and_keeps_the_most_others_seen(monkeypatch):
    now = {}
    monkeypatch.setattr(load_sample, "runnable", lambda members=None: dict(now))
    monkeypatch.setattr(load_sample, "usable_cpus", lambda: 16)
    dev = kernel_measure.Device(stub_torch(8), "cpu", "quick")
    now.update(others=3, family=2, own=1)  # the H200 case: 3 runnable beside torch's 8 threads on 16 cores
    assert not dev.disturbed()
    now.update(others=7, family=2, own=1)  # 7 + 2 + 8 > 16
    assert dev.disturbed()
    now.update(others=0, family=9, own=8)  # ours alone: never
    assert not dev.disturbed()
    now.update(others=None, family=None, own=None)
    assert not dev.disturbed()
    assert dev.totals["runnable_others"] == 7  # the most seen, reported as before

    # The worker's own runnable threads count when more than torch's intra-op threads are.
    monkeypatch.setattr(load_sample, "usable_cpus", lambda: 4)
    dev = kernel_measure.Device(stub_torch(1), "cpu", "quick")
    now.update(others=1, family=0, own=4)
    assert dev.disturbed()
    now.update(others=1, family=0, own=1)
    assert not dev.disturbed()

    # 2-core CI machine, torch on both: one busy neighbour disturbs.
    monkeypatch.setattr(load_sample, "usable_cpus", lambda: 2)
    dev = kernel_measure.Device(stub_torch(2), "cpu", "quick")
    now.update(others=1, family=0, own=1)
    assert dev.disturbed()

    # A GPU's timings come from CUDA events: never disturbed, nothing sampled.
    gpu = kernel_measure.Device(stub_torch(2), "cuda:0", "quick")
    assert not gpu.disturbed() and gpu.totals["runnable_others"] is None


def test_a_window_does_not_count_the_family_as_others():
    before = {
        "time": 1.0,
        "busy": None,
        "total": None,
        "steal": None,
        "own": None,
        "procs_running": 5,
        "own_running": 1,
        "family_running": 3,
        "load1": 0.1,
    }
    after = dict(before, time=2.0, family_running=None)  # unreadable: counted as others, as before
    assert load_sample.runnable_others(before) == 1
    assert load_sample.runnable_others(after) == 4
    assert load_sample.window(before, dict(before, time=2.0))["runnable_others"] == 1


# ---------------------------------------------------------------- real processes

# Run as ``python -c RUNNER <directory>``: a stand-in kernel runner. It forks a
# spinning child that forks a spinning grandchild of its own (a device worker and
# what it starts), then a "worker" (a fork, so it shares the runner's command line,
# as the real CPU worker does) that samples ``load_sample`` in two phases: alone
# with its family, then, once the test has written ``go``, beside a spinner from
# elsewhere. Every spinner stops when its parent is gone, and after a minute anyway.
RUNNER = r"""
import json, os, sys, time
sys.path.insert(0, %(repo)r)
from mpdoctor.probes.remote import load_sample

out = sys.argv[1]

def publish(name, text):  # a file the test waits for appears whole, by rename: never read half written
    with open(os.path.join(out, name + ".part"), "w") as handle:
        handle.write(text)
    os.rename(os.path.join(out, name + ".part"), os.path.join(out, name))

def spin(seconds=60):
    parent, end, n = os.getppid(), time.monotonic() + seconds, 0
    while True:
        n += 1
        if n %% 200000 == 0 and (os.getppid() != parent or time.monotonic() > end):
            os._exit(0)

def fork(body):
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(0)
    return pid

def member():
    grandchild = fork(spin)
    publish("grandchild", str(grandchild))
    spin()

def samples(n=60):
    seen = []
    for _ in range(n):
        seen.append(load_sample.runnable())
        time.sleep(0.005)
    return seen

def worker():
    family = load_sample.family()
    family.refresh()
    first = samples()
    family.refresh()
    members = sorted(family.members)
    phase1 = {"runner": family.runner, "host": family.host, "members": members, "samples": first}
    publish("phase1.json", json.dumps(phase1))
    end = time.monotonic() + 60
    while not os.path.exists(os.path.join(out, "go")) and time.monotonic() < end:
        time.sleep(0.01)
    second = samples()
    family.refresh()
    publish("phase2.json", json.dumps({"members": sorted(family.members), "samples": second}))

sibling = fork(member)
publish("sibling", str(sibling))
while not os.path.exists(os.path.join(out, "grandchild")):
    time.sleep(0.01)
time.sleep(0.2)  # both spinning
done = fork(worker)
os.waitpid(done, 0)
"""

# A spinner that is no descendant of anyone here: forked twice, the middle process
# gone at once (it prints the spinner's pid first), in a session of its own.
UNRELATED = r"""
import os, sys, time
pid = os.fork()
if pid:
    print(pid, flush=True)
    os._exit(0)
os.setsid()
devnull = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(devnull, fd)
end, n = time.monotonic() + 60, 0
while True:
    n += 1
    if n % 200000 == 0 and (time.monotonic() > end or os.path.exists(sys.argv[1])):
        os._exit(0)
"""


def wait_for(path: Path, seconds: float = 60.0) -> Path:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never came"
        time.sleep(0.02)
    return path


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_the_runners_children_are_family_and_a_process_from_elsewhere_is_not(tmp_path):
    runner = subprocess.Popen([sys.executable, "-c", RUNNER % {"repo": str(REPO)}, str(tmp_path)])
    unrelated = None
    stop = tmp_path / "stop"
    try:
        phase1 = json.loads(wait_for(tmp_path / "phase1.json").read_text())
        sibling = int((tmp_path / "sibling").read_text())
        grandchild = int((tmp_path / "grandchild").read_text())
        started = subprocess.run(
            [sys.executable, "-c", UNRELATED, str(stop)], capture_output=True, text=True, timeout=30, check=True
        )
        unrelated = int(started.stdout.split()[0])
        time.sleep(0.2)  # spinning
        (tmp_path / "go").touch()
        phase2 = json.loads(wait_for(tmp_path / "phase2.json").read_text())
    finally:
        stop.touch()
        if unrelated is not None:
            kill(unrelated)
        runner.wait(timeout=90)
    # Who is family: the runner, its children and theirs, and its parent (here: this test, the "host").
    assert phase1["runner"] == runner.pid and phase1["host"] == os.getpid()
    assert {runner.pid, os.getpid(), sibling, grandchild} <= set(phase1["members"])
    assert unrelated not in phase2["members"]
    # The two family spinners are always runnable (state R): counted as family, not as others. Before
    # "busy means others" every sample counted them as others: 2 or more each time. Noise from other
    # users of this machine only adds to others, so the median sample is compared, not the minimum.
    first = phase1["samples"]
    assert all(s["own"] is not None and s["family"] is not None and s["others"] is not None for s in first)
    assert median([s["family"] for s in first]) >= 2
    # The spinner from elsewhere is always runnable too, and is another's: counted as others.
    second = phase2["samples"]
    assert median([s["others"] for s in second]) >= 1
    assert median([s["family"] for s in second]) >= 2
    # Every sample adds up: others + family + own is what the machine had runnable (0 at most once).
    for s in first + second:
        assert s["others"] >= 0 and s["family"] >= 0 and s["own"] >= 1


# Run as ``python -c NEWCOMERS <directory>`` in a session of its own, as the host starts the kernel runner: a
# stand-in runner forks a worker, which looks its family up; only then does the runner start three members that
# spin (always in state R): a child, an orphan (its parent gone at once: no longer below the runner, still in
# its session) and a thread of its own. The worker samples at once, three times (before "busy means others"
# learned to judge each runnable task as it is seen, the family was looked up again no sooner than the fourth),
# and once more after that. Every spinner stops when ``stop`` exists, and after 30 s anyway.
NEWCOMERS = r"""
import json, os, sys, threading, time
sys.path.insert(0, %(repo)r)
from mpdoctor.probes.remote import load_sample

out = sys.argv[1]
stop = os.path.join(out, "stop")

def publish(name, text):
    with open(os.path.join(out, name + ".part"), "w") as handle:
        handle.write(text)
    os.rename(os.path.join(out, name + ".part"), os.path.join(out, name))

def spin(seconds=30):
    end, n = time.monotonic() + seconds, 0
    while True:
        n += 1
        if n %% 100000 == 0 and (os.path.exists(stop) or time.monotonic() > end):
            return

def fork(body):
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(0)
    return pid

looked, started = os.pipe(), os.pipe()

def worker():
    family = load_sample.family()
    family.refresh()
    known = sorted(family.members)
    os.write(looked[1], b".")
    pids = json.loads(os.read(started[0], 4096).decode())
    samples = [load_sample.runnable() for _ in range(3)]
    later = load_sample.runnable()
    publish("seen.json", json.dumps(
        {"known": known, "pids": pids, "samples": samples, "later": later, "members": sorted(family.members)}
    ))

def middle():
    os.write(handover[1], str(fork(spin)).encode())

done = fork(worker)
os.read(looked[0], 1)
child = fork(spin)
handover = os.pipe()
os.waitpid(fork(middle), 0)
orphan = int(os.read(handover[0], 64).decode())
threading.Thread(target=spin, daemon=True).start()
time.sleep(0.1)  # all three spinning
os.write(started[1], json.dumps({"child": child, "orphan": orphan}).encode())
os.waitpid(done, 0)
os._exit(0)
"""

# A spinner until the file sys.argv[1] exists, and 30 s at most.
SPINNER = """
import os, sys, time
end = time.monotonic() + 30
while not os.path.exists(sys.argv[1]) and time.monotonic() < end:
    pass
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_members_started_after_the_family_was_looked_up_are_family_at_once(tmp_path):
    """A member forked (or a thread started) a moment after the family's last look is never an "other".

    Before, the family was looked up again only every few samples, and only when the count of runnable
    tasks changed: a kernel worker's child started in between counted as another process, and on a 2-core
    machine two timing rounds were set aside for it. Each of the three spinners here is always runnable,
    so every sample must count all three as family; before, the first three counted them as others.

    The host's other children are not the runner's (another probe, say): a spinner this test starts beside
    the runner is always runnable too, and every sample counts it among the others.
    """
    stop = tmp_path / "stop"
    neighbour = subprocess.Popen([sys.executable, "-c", SPINNER, str(stop)])
    runner = subprocess.Popen(
        [sys.executable, "-c", NEWCOMERS % {"repo": str(REPO)}, str(tmp_path)], start_new_session=True
    )
    seen = None
    try:
        seen = json.loads(wait_for(tmp_path / "seen.json", 30).read_text())
    finally:
        stop.touch()
        runner.wait(timeout=60)
        neighbour.wait(timeout=60)
        for pid in seen["pids"].values() if seen else ():
            kill(pid)
    child, orphan = seen["pids"]["child"], seen["pids"]["orphan"]
    assert child not in seen["known"] and orphan not in seen["known"]  # both started after the look
    for sample in seen["samples"] + [seen["later"]]:
        assert sample["family"] is not None and sample["family"] >= 3, seen
        assert sample["others"] is not None and sample["others"] >= 1 and sample["own"] >= 1, seen
    assert {child, orphan} <= set(seen["members"])  # and the family was looked up again since
    assert neighbour.pid not in seen["members"] and os.getpid() in seen["members"]


# ---------------------------------------------------------------- the real kernel probe

# In the kernel runner only (``kernel_runner`` is in its argv), before it imports
# torch: fork a child that spins like a CUDA worker waiting on its GPU, until the
# runner is gone (the host kills the runner's process group then). It writes its
# pid, and about every 0.1 s the time (CLOCK_MONOTONIC, the same in every process):
# the test's proof that it was spinning until the end.
SPINNING_SIBLING = r"""
import os, sys, time
if "kernel_runner" in sys.argv and os.environ.get("MPDOCTOR_TEST_SPIN_DIR"):
    _dir = os.environ["MPDOCTOR_TEST_SPIN_DIR"]
    _pid = os.fork()
    if _pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)  # the host waits for the runner's pipes to close: not for us
            parent, end, n, beat = os.getppid(), time.monotonic() + 120, 0, 0.0
            while True:
                n += 1
                if n % 20000 == 0:
                    now = time.monotonic()
                    if os.getppid() != parent or now > end:
                        break
                    if now - beat > 0.1:
                        beat = now
                        with open(os.path.join(_dir, "beat.part"), "w") as handle:
                            handle.write(repr(now))
                        os.rename(os.path.join(_dir, "beat.part"), os.path.join(_dir, "beat"))
        finally:
            os._exit(0)
    with open(os.path.join(_dir, "spinner"), "w") as handle:
        handle.write(str(_pid))
"""

ATTEMPTS = 4  # other users of this machine may load it for a while: the claim is about an idle machine


def stat_fields(path: str) -> list[str]:
    try:
        text = Path(path).read_text(encoding="latin-1")
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()


class Observer:
    """Looks at the whole machine every 50 ms from this process, independently of ``load_sample``.

    Others: runnable threads outside the kernel runner's process group (the host
    starts it in a session of its own, so its workers and the spinner share its
    group) and outside this process (the host). ``busy`` is the share of looks
    that saw any.
    """

    def __init__(self):
        import threading

        self.looks, self.seen, self.stop = 0, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def runner_group(self) -> int | None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            fields = stat_fields(f"/proc/{pid}/stat")
            if len(fields) > 2 and fields[1] == str(os.getpid()):
                try:
                    if b"kernel_runner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        return int(fields[2])
                except OSError:
                    pass
        return None

    def look(self, group: int) -> bool:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            fields = stat_fields(f"/proc/{pid}/stat")
            if len(fields) < 3 or fields[2] == str(group) or pid == str(os.getpid()):
                continue
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            if any(stat_fields(f"/proc/{pid}/task/{tid}/stat")[:1] == ["R"] for tid in tasks):
                return True
        return False

    def run(self):
        group = None
        while not self.stop.wait(0.02):
            group = group or self.runner_group()
            if group is not None:
                self.looks += 1
                self.seen += self.look(group)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    @property
    def busy(self) -> float:
        return self.seen / self.looks if self.looks else 1.0


def test_cpu_ratios_stay_conclusive_beside_mpdoctors_own_busy_children(tmp_path, monkeypatch):
    """The real probe on an idle machine, with one of the runner's children spinning beside the CPU timing.

    Before "busy means others" that spinner was runnable at every sample, every round
    was set aside and every CPU ratio was inconclusive ("another process was runnable
    in 2 of 2 timing rounds"), on any machine. Now only processes from elsewhere
    disturb, and only when the cores run out. (With torch on one thread, see below,
    it is the second half of the rule that clears the spinner here; that it is not
    counted as another at all is the test above's.)

    This machine is shared, so an independent observer watches for processes from
    elsewhere: an attempt it saw busy proves nothing either way and another is made;
    when every attempt was busy the test is skipped, saying so.
    """
    pytest.importorskip("torch")
    from mpdoctor.analysis.kernel_view import speed_of
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.kernels import probe_kernels
    from mpdoctor.snapshot import Snapshot

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SPINNING_SIBLING), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    # One intra-op thread. On this 2-core machine a family member spinning beside a torch that uses both
    # cores really does take one of the timing's cores, and the rule rightly calls that contention (as a
    # CUDA worker spinning on a 16-core machine whose torch used all 16 would be). With one thread the
    # timing needs one core and the spinner has the other, as a spinning CUDA worker has one of 16
    # beside a torch on 8: the case seen on the H200, scaled down. Any process from elsewhere that is
    # runnable then still disturbs (1 + 1 + 1 > 2), as it should.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tried = []
    for attempt in range(ATTEMPTS):
        spin_dir = tmp_path / f"spin{attempt}"
        spin_dir.mkdir()
        monkeypatch.setenv("MPDOCTOR_TEST_SPIN_DIR", str(spin_dir))
        with Observer() as observer:
            info = probe_kernels(sys.executable, Budget.from_timeout(60), "quick")
        ended = time.monotonic()
        assert info.status == "ok", (info.status, info.detail)
        (device,) = info.devices
        assert device.device == "cpu" and device.status == "ok", (device.status, device.detail)
        # The spinner was there, a child of the runner, and spinning until about when the runner ended
        # (the timing ends just before): a loose bound, only that it did not stop early.
        assert (spin_dir / "spinner").exists()
        last_beat = float((spin_dir / "beat").read_text())
        assert last_beat > ended - 5 - (device.load.seconds or 0), (ended, last_beat)
        snap = Snapshot(kernels=info)
        ratios = [(r, speed_of(snap, device, r)) for r in device.results if r.dtype != "float32"]
        ratios = [(r, s) for r, s in ratios if s is not None]
        assert ratios  # ratios were measured at all
        disturbed = [f"{r.op}/{r.dtype}/{r.backend}: {s.disturbed}" for r, s in ratios if s.disturbed]
        load = device.load
        clear = not disturbed and load.rounds_disturbed <= load.rounds // 4
        if clear:
            return
        tried.append(
            f"attempt {attempt}: others runnable in {observer.busy:.0%} of the observer's looks; "
            f"{len(disturbed)} of {len(ratios)} ratios disturbed, {load.rounds_disturbed} of "
            f"{load.rounds} rounds; {disturbed[:2]}"
        )
        # Only an attempt in which the observer saw no process from elsewhere runnable at all is held to be idle:
        # it looks every 20 ms and the worker between every round, so a blip it saw once may be what the worker
        # saw twice, and proves nothing either way.
        assert observer.seen, f"an idle machine, yet disturbed: {tried[-1]}"
    pytest.skip("the machine was busy with other processes in every attempt: " + " | ".join(tried))
