"""Judge many snapshots, each distinct content once: how ``fleet compare`` takes a thousand saved snapshots.

The snapshots of one job's ranks differ mostly in facts that only name the rank,
never in what a check judges: when the snapshot was taken, how long each probe that
succeeded took, the variables the launcher sets to number the rank (``RANK_ENV``),
and the UUIDs of the node's GPUs. Those are normalised out of a
key; snapshots with the same key get the findings of the first one judged, with
its UUIDs renamed to theirs (a check compares UUIDs and quotes them, never orders
or reads inside them). The microkernels' timings differ on every node too, but
only the checks that declare ``needs=("kernels",)`` read them, so the other checks
are keyed without the kernels, and the kernel checks (cheap) with them.

The result is exactly ``mpdoctor.doctor.judge.judge`` of each snapshot:
tests/test_fleet_scale.py holds every fixture of the catalogue to it, with its
identity facts changed, and a fleet compare to the judging of every file.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Iterable

from mpdoctor.checks.registry import CHECK_CRASHED, Check, Outcome, builtin_registry
from mpdoctor.doctor.judge import about_the_run
from mpdoctor.findings import Finding, triage
from mpdoctor.snapshot import Snapshot

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
PROBES = (
    ("environment", "probe"),
    ("torch", "probe"),
    ("kernels", "probe"),
    ("environment", "oneflow", "runtime", "probe"),
    ("machine", "nvml"),
)  # objects with status and seconds
KERNELS = "kernels"
# Variables the launcher sets to name the rank itself (its number, its node, its error file): no check reads them.
RANK_ENV = (
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_TASK_PID",
    "SLURM_GTIDS",
    "SLURM_TOPOLOGY_ADDR",
    "SLURMD_NODENAME",
    "TORCHELASTIC_ERROR_FILE",
)


@dataclasses.dataclass
class Identity:
    """A snapshot's sections as text with its identity facts normalised out, and where those facts were."""

    texts: dict[str, str]  # section -> its JSON text, identity facts normalised out
    uuids: list[str]  # its UUIDs (lower case), in order of appearance: the texts hold their places
    own: dict[str, tuple[str, ...]]  # section -> its UUIDs as written, in order
    normalised: dict[str, list[tuple[str, ...]]]  # section -> the paths in it of the values normalised out

    def section_key(self, name: str) -> tuple:
        """Equal for two sections whose JSON is equal but for the values at ``normalised[name]``."""
        return name, self.texts.get(name), self.own.get(name, ())


def _without_timing(data: dict, path: tuple[str, ...]) -> dict:
    """``data`` with the ``seconds`` of the object at ``path`` set to 0 when its status is ok (copied, not changed)."""
    node = data.get(path[0])
    if not isinstance(node, dict):
        return data
    if len(path) == 1:
        if node.get("status") == "ok" and "seconds" in node:
            return {**data, path[0]: {**node, "seconds": 0}}
        return data
    inner = _without_timing(node, path[1:])
    return data if inner is node else {**data, path[0]: inner}


def identity(data: dict) -> Identity:
    """``data`` with its identity facts normalised out: no ``created``, ok probes' seconds 0, RANK_ENV, UUIDs numbered.

    UUIDs become their place in order of appearance (and their letter case), so two
    snapshots whose GPUs differ only in UUIDs have the same texts.
    """
    order: dict[str, int] = {}
    texts, own, normalised = {}, {}, {}
    for name, value in data.items():
        if name == "created":
            continue
        changed: list[tuple[str, ...]] = []
        for path in PROBES:
            if path[0] == name:
                before, value = value, _without_timing({name: value}, path)[name]
                if value is not before:
                    changed.append(path[1:] + ("seconds",))
        if name == "environment" and isinstance(value, dict) and isinstance(value.get("env"), dict):
            env = value["env"]
            if any(variable in env for variable in RANK_ENV):
                changed.append(("env",))
                value = {**value, "env": {k: "<rank>" if k in RANK_ENV else v for k, v in env.items()}}
        mine: list[str] = []

        def token(match: re.Match) -> str:
            text = match.group(0)
            lower = text.lower()
            place = order.setdefault(lower, len(order))
            mine.append(text)
            return f"<uuid {place}{'l' if text == lower else 'u' if text == text.upper() else 'm'}>"

        plain = ""  # the installed distributions (most of the text) name no GPU: kept as they are, not searched
        if name == "environment" and isinstance(value, dict) and "distributions" in value:
            plain = json.dumps(value["distributions"], separators=(",", ":"))
            value = {k: v for k, v in value.items() if k != "distributions"}
        texts[name] = UUID.sub(token, json.dumps(value, separators=(",", ":"))) + "\n" + plain
        own[name], normalised[name] = tuple(mine), changed
    return Identity(texts, list(order), own, normalised)


def _renamed_text(text: str, names: dict[str, str]) -> str:
    def rename(match: re.Match) -> str:
        found = match.group(0)
        new = names.get(found.lower())
        if new is None:
            return found
        return new.upper() if found != found.lower() else new  # names hold lower case; mixed case is never seen

    return UUID.sub(rename, text)


def renamed(finding: Finding, names: dict[str, str]) -> Finding:
    """``finding`` with each UUID (lower-case key of ``names``) replaced by its new name."""
    return dataclasses.replace(
        finding,
        title=_renamed_text(finding.title, names),
        evidence=[_renamed_text(line, names) for line in finding.evidence],
        fix=[
            dataclasses.replace(
                step,
                text=_renamed_text(step.text, names),
                command=_renamed_text(step.command, names) if step.command else step.command,
            )
            for step in finding.fix
        ],
    )


def _mentions_uuid(finding: Finding) -> bool:
    return any(
        UUID.search(text)
        for text in [finding.title, *finding.evidence]
        + [part for step in finding.fix for part in (step.text, step.command or "")]
    )


@dataclasses.dataclass
class _Judged:
    uuids: list[str]  # the UUIDs of the snapshot judged, in order of appearance
    verdicts: dict[str, list[Outcome]]  # check code -> its verdicts
    named: set[str]  # codes whose findings quote a UUID: renamed for each snapshot that shares them


class ManyJudge:
    """``judge(snapshot, select, ignore)`` for many snapshots, each distinct content judged once."""

    def __init__(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> None:
        self.checks = [c for c in builtin_registry().select(list(select), list(ignore)) if c.runs_on_snapshot]
        self.parts = {
            "kernels": [c for c in self.checks if KERNELS in c.needs],
            "rest": [c for c in self.checks if KERNELS not in c.needs],
        }
        self.memo: dict[tuple[str, str], _Judged] = {}
        self.judged = 0  # snapshots whose checks actually ran (some part of them), for the bench

    def judge(self, snap: Snapshot, ident: Identity) -> list[Finding]:
        """The findings of ``snap`` (whose JSON's identity is ``ident``), as ``judge(snap)`` gives them."""
        texts, uuids = ident.texts, ident.uuids
        by_code: dict[str, list[Outcome]] = {}
        ran = False
        for part, checks in self.parts.items():
            if not checks:
                continue
            key = (
                part,
                "\n".join(text for name, text in sorted(texts.items()) if part == "kernels" or name != KERNELS),
            )
            judged = self.memo.get(key)
            if judged is None:
                judged = self.memo[key] = self._run(snap, checks, uuids)
                ran = True
            by_code.update(self._for(judged, uuids))
        self.judged += ran
        verdicts = [v for check in self.checks for v in by_code.get(check.code, [])]
        fired = {v.finding.code for v in verdicts if v.finding.code != CHECK_CRASHED.code}
        return triage(
            [v.finding for v in verdicts if not fired.intersection(v.superseded_by)] + about_the_run(snap, self.checks)
        )

    @staticmethod
    def _run(snap: Snapshot, checks: list[Check], uuids: list[str]) -> _Judged:
        verdicts = {check.code: check.verdicts(snap) for check in checks}
        named = {code for code, found in verdicts.items() if any(_mentions_uuid(v.finding) for v in found)}
        return _Judged(uuids, verdicts, named)

    @staticmethod
    def _for(judged: _Judged, uuids: list[str]) -> dict[str, list[Outcome]]:
        if not judged.named or judged.uuids == uuids:
            return judged.verdicts
        names = dict(zip(judged.uuids, uuids))
        out = dict(judged.verdicts)
        for code in judged.named:
            out[code] = [Outcome(renamed(v.finding, names), v.superseded_by) for v in judged.verdicts[code]]
        return out
