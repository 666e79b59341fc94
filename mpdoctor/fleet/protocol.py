"""How ranks meet in a c10d key-value store: the keys, heartbeats, gathering and the verdict.

Works over any object with the c10d ``Store`` methods it uses (``set``, ``get``,
``check``, ``add``): a ``torch.distributed.TCPStore`` in ``store_child``, the process
group's own store in ``mpdoctor.fleet_check()``, a real TCPStore in tests. It
never calls a collective and never blocks on a key that may not exist: it looks
with ``check`` (non-blocking) and waits by polling, up to a deadline, so a rank
that never arrives costs the others only the wait they chose. It starts no thread:
its callers poll (``Gatherer.poll``, ``Beater.tick``, ``Channel.verdict``) from one loop.

Keys, under ``mpdoctor-fleet/<run id>/``:

* ``hb/<rank>``: the rank's heartbeat (JSON: host, local rank, step in words (``steps``), seconds in it,
  a counter bumped every second, state running / crashed / done);
* ``report/<rank>``: the rank's report (JSON ``RankReport``, with its whole snapshot when it is the first of its
  group to claim ``rep/<group hash>``, or with ``--full-snapshots``); ``reported`` counts them, and
  ``arrivals`` lists their ranks (``append``), so rank 0 reads each new one without
  looking for every missing rank's key;
* ``verdict/<rank>``: rank 0's verdict for that rank (worst severity, how many ranks agree, differ,
  are missing), with the rank's *nonce*;
* ``ack``: ranks done with the verdict (printed, exiting): rank 0 waits for them before it exits,
  as its store (when it hosts it) must outlive their reads, and torchrun stops every
  worker once one exits with a failure.

The store has no authentication: anyone who reaches MASTER_PORT (or one bad rank)
can write any key. So a rank makes a random nonce, posts it with its report (and in
its heartbeats from then on), and accepts only a verdict that echoes it: a verdict
written before its report was in, or for another run, is refused, and the line a
rank prints is its own words around the verdict's checked numbers, never text from
the store. Its exit status is never better than its own findings. (Someone who can
also *read* the store can copy a nonce: run the fleet where only the job reaches the
port.) Every value read is checked against its bound (``portable/limits.py``), and a
key whose value was over it is not read again for a while, so junk costs its rank,
once, never rank 0's report. The checking of what is read, and the wording of a verdict, are in
``store_values`` (still importable from here).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from mpdoctor.fleet.model import PER_RANK
from mpdoctor.fleet.store_values import (  # noqa: F401  (the checking of values, moved there; still importable here)
    COUNTED,
    FOREIGN,
    MAX_COUNT,
    MAX_DEPTH,
    MAX_TEXT,
    MAX_VALUE,
    NONCE,
    SEVERITIES,
    STATES,
    UNCOUNTED,
    VERDICT_COUNTS,
    Malformed,
    accepted,
    decode,
    heartbeat_of,
    new_nonce,
    nonce_of,
    own_worst,
    unreadable_beat,
    verdict_line,
    verdict_of,
    worse,
)
from mpdoctor.portable import limits

PREFIX = "mpdoctor-fleet"
POLL = 0.2  # seconds between looks at the store while waiting
BEAT = 1.0  # seconds between heartbeats
SILENT = 5.0  # a heartbeat that has not moved for this long is a rank that stopped beating


def nonces_of(got: "Gathered") -> dict[int, str]:
    """Each rank's nonce, from its report or else its last heartbeat: the ranks the verdict counts."""
    found: dict[int, str] = {}
    for rank, beat in got.heartbeats.items():
        if isinstance(beat, dict) and isinstance(beat.get("nonce"), str) and NONCE.match(beat["nonce"]):
            found[rank] = beat["nonce"]
    for rank, report in got.reports.items():
        nonce = report.get("nonce") if isinstance(report, dict) else None
        if isinstance(nonce, str) and NONCE.match(nonce):
            found[rank] = nonce
    return found


@dataclass
class Gathered:
    """What rank 0 found in the store by the deadline."""

    reports: dict[int, Any] = field(default_factory=dict)  # rank -> the JSON of its report
    heartbeats: dict[int, dict] = field(default_factory=dict)  # rank -> its last heartbeat, for the others
    silent: dict[int, float] = field(default_factory=dict)  # rank -> seconds its heartbeat had not moved
    seconds: float = 0.0
    unreadable: dict[int, str] = field(default_factory=dict)  # rank -> why the report it sent could not be read

    def has(self, rank: int) -> bool:
        """Whether ``rank``'s report was read: in ``reports``, or found unreadable."""
        return rank in self.reports or rank in self.unreadable

    def to_data(self) -> dict:
        return {
            "reports": {str(k): v for k, v in self.reports.items()},
            "heartbeats": {str(k): v for k, v in self.heartbeats.items()},
            "silent": {str(k): v for k, v in self.silent.items()},
            "unreadable": {str(k): v for k, v in self.unreadable.items()},
            "seconds": self.seconds,
        }

    @classmethod
    def from_data(cls, data: dict) -> "Gathered":
        return cls(
            reports={int(k): v for k, v in data.get("reports", {}).items()},
            unreadable={int(k): v for k, v in data.get("unreadable", {}).items()},
            heartbeats={int(k): v for k, v in data.get("heartbeats", {}).items()},
            silent={int(k): v for k, v in data.get("silent", {}).items()},
            seconds=data.get("seconds", 0.0),
        )


def group_key(report: dict) -> str:
    """The group rank 0 will put this report in (its fingerprint without the per-rank fields), as a short hash."""
    print_ = report.get("fingerprint") if isinstance(report.get("fingerprint"), dict) else {}
    same = {name: value for name, value in print_.items() if name not in PER_RANK}
    return hashlib.sha256(json.dumps(same, sort_keys=True).encode()).hexdigest()[:24]


class Channel:
    """The fleet's keys in one store."""

    def __init__(self, store: Any, run_id: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.store, self.prefix, self.clock = store, f"{PREFIX}/{run_id}/", clock
        self.shunned: dict[str, tuple[float, float, str]] = {}  # name -> (look again at, backoff, why)

    def _key(self, name: str) -> str:
        return self.prefix + name

    def _has(self, name: str) -> bool:
        return bool(self.store.check([self._key(name)]))

    def _read(self, name: str, bound: int) -> bytes:
        """The bytes at ``name`` (which must exist), at most ``bound`` of them, else Malformed.

        c10d's ``get`` reads a value whole, so a value over its bound is read this once: the key is then left
        alone for ``limits.STORE_BACKOFF`` seconds, doubling each time it is still over (up to
        ``STORE_BACKOFF_MAX``), and raises Malformed with why, unread, meanwhile.
        """
        now = self.clock()
        shunned = self.shunned.get(name)
        if shunned is not None and now < shunned[0]:
            raise Malformed(shunned[2])
        raw = self.store.get(self._key(name))
        raw = raw if isinstance(raw, (bytes, bytearray)) else str(raw).encode("utf-8", "replace")
        if len(raw) > bound:
            backoff = min(limits.STORE_BACKOFF_MAX, 2 * shunned[1]) if shunned else limits.STORE_BACKOFF
            why = f"{len(raw)} bytes, more than the {bound} read"
            self.shunned[name] = (self.clock() + backoff, backoff, why)
            raise Malformed(why)
        self.shunned.pop(name, None)
        return bytes(raw)

    def _get_json(self, name: str, bound: int = MAX_VALUE) -> Any:
        """The value at ``name``, parsed without trusting it: raises Malformed (see ``decode``)."""
        return decode(self._read(name, bound), bound)

    def _set_json(self, name: str, value: Any) -> None:
        self.store.set(self._key(name), json.dumps(value, separators=(",", ":")))

    def _count(self, name: str) -> Optional[int]:
        """A counter's value (0 when absent), read with ``get``; None when the key holds no integer.

        Never ``add(key, 0)`` to read one: on a key that a rank set to something else ("abc"), c10d's server
        fails to parse it and closes this connection, and with it every later read of this rank.
        """
        if not self._has(name):
            return 0
        try:
            text = self._read(name, limits.STORE_COUNTER).decode("ascii", "replace")
        except Malformed:
            return None
        return int(text) if re.fullmatch(r"-?[0-9]{1,18}", text.strip()) else None

    def _add(self, name: str, amount: int) -> Optional[int]:
        """Add to a counter; None, and nothing added, when the key holds no integer (see ``_count``)."""
        if self._count(name) is None:
            return None
        return int(self.store.add(self._key(name), amount))

    # ------------------------------------------------------------ every rank

    def heartbeat(self, rank: int, beat: dict) -> None:
        self._set_json(f"hb/{rank}", beat)

    def beat_of(self, rank: int) -> Optional[dict]:
        """A rank's last heartbeat, checked (None when it has none); Malformed when it is not one."""
        return heartbeat_of(self._get_json(f"hb/{rank}", limits.STORE_BEAT)) if self._has(f"hb/{rank}") else None

    def claim(self, key: str) -> bool:
        """True for the first rank to claim ``key`` (an atomic counter: exactly one rank gets True)."""
        return self._add(f"rep/{key}", 1) == 1

    def post_report(self, rank: int, report: Any, full_snapshots: bool = False, nonce: str = "") -> None:
        """The rank's report, with its ``nonce`` (which its verdict must echo); a whole snapshot in it goes from
        its group's first rank only, or with ``full_snapshots``."""
        if nonce and isinstance(report, dict):
            report = {**report, "nonce": nonce}
        if (
            isinstance(report, dict)
            and "snapshot" in report
            and not full_snapshots
            and not self.claim(group_key(report))
        ):
            report = {name: value for name, value in report.items() if name != "snapshot"}
        self._set_json(f"report/{rank}", report)
        try:  # the arrivals list lets rank 0 read new reports without looking for every rank's key
            self.store.append(self._key("arrivals"), f"{rank},")
        except (AttributeError, RuntimeError, NotImplementedError):
            pass  # a store without append: rank 0 looks for every missing rank's key instead
        self._add("reported", 1)

    def verdict(self, rank: int) -> Optional[dict]:
        """Rank 0's verdict for ``rank`` when it is there (one look, no wait), checked (``verdict_of``), with its
        nonce; raises Malformed for one that is not a verdict. Whether it is this rank's: ``accepted``."""
        name = f"verdict/{rank}"
        return verdict_of(self._get_json(name, limits.STORE_VERDICT)) if self._has(name) else None

    def wait_verdict(self, rank: int, nonce: str, until: float) -> Optional[dict]:
        """Rank 0's verdict for ``rank`` that echoes ``nonce``, or None when none has come by ``until``."""
        while self.clock() < until:
            verdict = self.verdict(rank)
            if verdict is not None and accepted(verdict, nonce) != FOREIGN:
                return verdict
            time.sleep(POLL)
        return None

    def ack(self) -> None:
        """Say this rank is done with the verdict (it has printed it and is exiting)."""
        self._add("ack", 1)

    # ------------------------------------------------------------ rank 0

    def arrived(self, world_size: int, got: "Gathered") -> list[int]:
        """Ranks whose report is in and not yet read: from the arrivals list, else by looking for each key."""
        try:
            if self._has("arrivals"):
                # Each rank appends "rank,": longer than every rank twice over is junk, read once (``_read``).
                bound = world_size * limits.STORE_ARRIVAL + limits.STORE_ARRIVAL_SLACK
                text = self._read("arrivals", bound).decode("ascii", "replace")
                # at most 9 digits: a rank is below the world size, and "9" * 5000 is no rank (nor an int() to do)
                listed = {int(part) for part in text.split(",") if re.fullmatch(r"[0-9]{1,9}", part.strip())}
                return sorted(r for r in listed if not got.has(r) and 0 <= r < world_size)
        except (AttributeError, RuntimeError, ValueError):  # Malformed is a ValueError
            pass
        return [r for r in range(world_size) if not got.has(r) and self._has(f"report/{r}")]

    def gather(self, world_size: int, until: float) -> "Gathered":
        """Every rank's report, until all reported (or crashed) or ``until``; the heartbeats of the rest."""
        gatherer = Gatherer(self, world_size)
        while not gatherer.poll(until):
            time.sleep(POLL)
        return gatherer.got

    def post_verdicts(self, verdict: dict, nonces: dict[int, str], world_size: int) -> None:
        """Rank 0's verdict, once per other rank, each with that rank's nonce (null: judged without its report)."""
        keys, values = [], []
        for rank in range(1, world_size):
            keys.append(self._key(f"verdict/{rank}"))
            values.append(json.dumps({**verdict, "nonce": nonces.get(rank)}, separators=(",", ":")))
        for start in range(0, len(keys), 512):  # one round trip per 512 ranks where the store has multi_set
            chunk = slice(start, start + 512)
            try:
                self.store.multi_set(keys[chunk], values[chunk])
            except (AttributeError, RuntimeError, NotImplementedError):
                for key, value in zip(keys[chunk], values[chunk]):
                    self.store.set(key, value)

    def acks(self) -> int:
        return self._count("ack") or 0

    def wait_acks(self, expected: int, until: float) -> int:
        """Wait until ``expected`` ranks are done with the verdict (its store must outlive their reads), or ``until``."""
        while True:
            acks = self.acks()
            if acks >= expected or self.clock() >= until:
                return acks
            time.sleep(POLL)


class Gatherer:
    """Rank 0's gathering, one look at a time (``poll``), so one loop can also beat and read its parent's files."""

    def __init__(self, channel: Channel, world_size: int) -> None:
        self.channel, self.world_size = channel, world_size
        self.got = Gathered()
        self.start = channel.clock()
        self.moved: dict[int, tuple[int, float]] = {}  # rank -> (last beat counter, when it last changed)
        self.seen_count, self.next_beats = -1, self.start
        self.garbled: set[int] = set()  # ranks whose last heartbeat was unreadable: given up like a crashed one
        self.finished = False
        self.next_scan = self.start  # when the counter is junk: when to look for new reports next

    def poll(self, until: float) -> bool:
        """One look at the store; True once every rank reported (or crashed) or ``until`` passed."""
        if self.finished:
            return True
        channel, got = self.channel, self.got
        now = channel.clock()
        count = channel._count("reported")
        # Look when the counter moved; when it is junk, once a second (or less often when a look takes long).
        if (count is not None and count != self.seen_count) or (count is None and now >= self.next_scan):
            self.seen_count = count
            looked = channel.clock()
            for rank in channel.arrived(self.world_size, got):
                try:
                    report = channel._get_json(f"report/{rank}", limits.STORE_REPORT)
                    if not isinstance(report, dict):
                        raise Malformed(f"expected an object, got {type(report).__name__}")
                    got.reports[rank] = report
                except Malformed as exc:  # costs this rank only: it is named with why, and no longer waited for
                    got.unreadable[rank] = str(exc)
            self.next_scan = now + max(BEAT, 5 * (channel.clock() - looked))
        pending = [r for r in range(self.world_size) if not got.has(r)]
        if now >= self.next_beats or not pending or now >= until:
            # Heartbeats of the missing ranks, once a second, or less often when one pass takes long
            # (thousands of missing ranks): at most a fifth of rank 0's time goes to them.
            passed = channel.clock()
            for rank in pending:
                try:
                    beat = channel.beat_of(rank)
                except Malformed as exc:  # no mpdoctor wrote it: the rank is named with why, and not waited for
                    beat = unreadable_beat(str(exc))
                    self.garbled.add(rank)
                else:
                    self.garbled.discard(rank)
                if beat is not None:
                    got.heartbeats[rank] = beat
                    counter = beat.get("beat", 0)
                    if rank not in self.moved or self.moved[rank][0] != counter:
                        self.moved[rank] = (counter, now)
                    got.silent[rank] = round(now - self.moved[rank][1], 1)
            self.next_beats = now + max(BEAT, 5 * (channel.clock() - passed))
        crashed = {r for r in pending if got.heartbeats.get(r, {}).get("state") == "crashed"} | self.garbled
        if set(pending) - crashed and now < until:
            return False
        for rank in [*got.reports, *got.unreadable]:
            got.heartbeats.pop(rank, None)
            got.silent.pop(rank, None)
        got.seconds = round(channel.clock() - self.start, 2)
        self.finished = True
        return True


class Beater:
    """A rank's heartbeat: its step and how long it has been in it, posted on each change and by ``tick`` every second."""

    def __init__(self, channel: Channel, rank: int, host: str, local_rank: int) -> None:
        self.channel, self.rank = channel, rank
        self.beat = {
            "host": host,
            "local_rank": local_rank,
            "step": "connecting",
            "step_seconds": 0.0,
            "beat": 0,
            "state": "running",
            "detail": "",
        }
        self.since = self.last = time.monotonic()

    def step(self, step: str) -> None:
        if step and step != self.beat["step"]:
            self.beat["step"], self.since = step, time.monotonic()
            self.post()

    def tick(self) -> None:
        if time.monotonic() - self.last >= BEAT:
            self.post()

    def sign(self, nonce: str) -> None:
        """Carry the rank's nonce from now on (its report or its failure is posted): rank 0 echoes it."""
        self.beat["nonce"] = nonce

    def post(self, **changes: Any) -> None:
        self.beat.update(
            {name: value[:MAX_TEXT] if isinstance(value, str) else value for name, value in changes.items()}
        )
        self.beat["beat"] += 1
        self.last = time.monotonic()
        self.beat["step_seconds"] = round(self.last - self.since, 1)
        try:
            self.channel.heartbeat(self.rank, dict(self.beat))
        except Exception:  # noqa: BLE001 - a lost store costs the heartbeat, and rank 0 reports the silence
            pass
