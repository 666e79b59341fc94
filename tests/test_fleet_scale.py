"""`fleet compare` of many files judges each distinct content once, and says exactly what judging each would.

``mpdoctor.fleet.judging`` normalises identity facts out of a key (when the snapshot
was taken, ok probes' seconds, GPU UUIDs) and keys the non-kernel checks without the
kernels: these tests hold every fixture of the catalogue to that contract, and a
compare of constructed snapshot files to the plain path (``read_rank`` of each file).
The GPU nodes are constructed (this machine has none), labelled so.
"""

from __future__ import annotations

import copy
import json
import random
import re

import pytest

from fixtures import catalogue
from fixtures.base import capture, cuda_torch, with_env, with_kernels, with_nvml
from fixtures.machines import H100_NODE
from mpdoctor.checks.registry import builtin_registry
from mpdoctor.doctor.judge import judge, run_checks
from mpdoctor.fleet.compare import compare
from mpdoctor.fleet.fingerprint import rank_report
from mpdoctor.fleet.judging import RANK_ENV, UUID, ManyJudge, identity, renamed
from mpdoctor.fleet.model import fleet_data
from mpdoctor.fleet.offline import compare_files, read_rank
from mpdoctor.schema.serde import to_data
from mpdoctor.snapshot import KernelInfo, snapshot_from_data
from test_fleet_compare import gpu_kernels

NAMES = catalogue.names()


def other_identity(data: dict, seed: int) -> tuple[dict, dict[str, str]]:
    """``data`` as another rank would have it: another time, other ok-probe seconds, other GPU UUIDs (renamed)."""
    rng = random.Random(seed)
    names: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        old = match.group(0)
        new = names.setdefault(
            old.lower(), "-".join("".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12))
        )
        return new.upper() if old != old.lower() else new

    out = json.loads(UUID.sub(rename, json.dumps(data)))
    out["created"] = "2031-01-01T00:00:00+00:00"
    env = out.get("environment", {}).get("env")
    if isinstance(env, dict):  # the launcher's variables that number the rank (with_rank_env sets them)
        env.update({name: f"{name.lower()}-{seed}" for name in RANK_ENV if name in env})

    def retime(node):
        if isinstance(node, dict):
            if node.get("status") == "ok" and "seconds" in node and "step" in node:  # a ProbeRun
                node["seconds"] = round(rng.uniform(0.1, 9.0), 3)
            for value in node.values():
                retime(value)

    for section in ("environment", "torch", "machine"):
        retime(out.get(section))
    if isinstance(out.get("kernels"), dict):
        retime({"probe": out["kernels"].get("probe")})
    return out, names


def data_of(name: str) -> dict:
    """Fixture ``name`` as a rank of a Slurm job would have it: with the variables that number the rank."""
    data = to_data(catalogue.build(name))
    data["environment"]["env"].update({name: "0" for name in RANK_ENV})
    return data


@pytest.mark.parametrize("name", NAMES)
def test_identity_facts_change_no_finding_but_the_uuids_quoted(name):
    data = data_of(name)
    other, names = other_identity(data, 1)
    assert identity(other).texts == identity(data).texts
    expected = [renamed(f, names) for f in judge(snapshot_from_data(data))]
    assert judge(snapshot_from_data(other)) == expected


@pytest.mark.parametrize("name", NAMES)
def test_only_the_checks_that_need_kernels_read_them(name):
    snap = catalogue.build(name)
    if snap.kernels.status == "skipped":
        pytest.skip("no kernels to change")
    data = to_data(snap)
    for device in data["kernels"]["devices"]:
        for result in device["results"]:
            if result.get("seconds"):
                result["seconds"] *= 3.7
    rest = [c for c in builtin_registry().snapshot_checks() if "kernels" not in c.needs]
    assert run_checks(snapshot_from_data(data), rest) == run_checks(snap, rest)


def test_many_judge_judges_each_content_once_and_agrees_with_judge():
    many = ManyJudge()
    for n, name in enumerate(NAMES):
        data = data_of(name)
        for version in (data, other_identity(data, n)[0], copy.deepcopy(data)):
            snap = snapshot_from_data(version)
            assert many.judge(snap, identity(version)) == judge(snap), name
    assert many.judged == len({json.dumps(identity(data_of(n)).texts, sort_keys=True) for n in NAMES})


def node(n: int, gpus: int = 4):
    """Constructed: node n of a GPU fleet, its own UUIDs and kernel times; node 2 has NVIDIA_TF32_OVERRIDE=0."""
    snap = cuda_torch(with_nvml(capture("cpu-laptop"), H100_NODE[:gpus], driver="550.54.14", cuda="12.4"))
    data = to_data(snap)
    data, _ = other_identity(data, 100 + n)
    snap = snapshot_from_data(data)
    if n == 2:
        snap = with_env(snap, NVIDIA_TF32_OVERRIDE="0")
    return snap


def test_compare_of_many_files_is_the_plain_compare_of_each(tmp_path):
    paths = []
    for n in range(4):
        base = node(n)
        for local in range(4):
            snap = with_kernels(
                base, gpu_kernels(base, {3: 2.0} if n == 1 else {}) if local == 0 else KernelInfo(status="skipped")
            )
            snap = with_env(snap, SLURM_PROCID=str(4 * n + local), SLURM_LOCALID=str(local))  # as srun sets them
            path = tmp_path / f"node{n}-rank{local}.json"
            path.write_text(json.dumps(to_data(snap)))
            paths.append(str(path))
    fast = fleet_data(compare_files(paths))
    plain = fleet_data(compare([read_rank(p, rank) for rank, p in enumerate(paths)], len(paths), "compare"))
    fast.pop("created"), plain.pop("created")
    assert fast == plain
    assert {f["code"] for f in fast["findings"]} >= {"FLEET005", "FLEET006"}


def test_compare_files_judges_repeated_contents_once(tmp_path, monkeypatch):
    judged = []
    original = ManyJudge._run

    def counting(snap, checks, uuids):
        judged.append(len(checks))
        return original(snap, checks, uuids)

    monkeypatch.setattr(ManyJudge, "_run", staticmethod(counting))
    paths = []
    for n in range(3):
        data = to_data(node(n))
        for local in range(5):
            path = tmp_path / f"n{n}r{local}.json"
            path.write_text(json.dumps(data))
            paths.append(str(path))
    compare_files(paths)
    # Nodes 0 and 1 differ only in UUIDs and timings: one content; node 2 has its variable. Two parts each.
    assert len(judged) == 2 * 2


def test_the_json_is_redacted_in_one_pass_as_it_was_in_two(tmp_path):
    from mpdoctor.fleet.model import redacted_fleet
    from mpdoctor.render.fleet import render_fleet_json, render_fleet_json_redacted

    secret = with_env(
        node(0),
        NCCL_IB_HCA="mlx5",
        HF_TOKEN="hf_abcdefghijklmnopqrstuvwxyz123456",
        TORCH_URL="https://user:hunter2@example.com/x",
    )
    report = compare([rank_report(0, "a", 0, secret, []), rank_report(1, "b", 0, node(1), [])], 2, "compare")
    assert render_fleet_json_redacted(report) == render_fleet_json(redacted_fleet(report))
    assert "hunter2" not in render_fleet_json_redacted(report)
