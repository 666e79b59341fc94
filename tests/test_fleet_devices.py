"""Which GPU each local rank selects (after CUDA_VISIBLE_DEVICES), and FLEET008 when a rank has none of its own.

The GPU nodes are constructed (this machine has none): the recorded CPU capture with
NVML GPUs and a CUDA torch grafted on (tests/fixtures), as each rank's own probe would
have seen them under its own environment. A rank's kernel probe, narrowed to its GPU,
runs for real in the stand-in CUDA torch (tests/cuda_standin.py).
"""

from __future__ import annotations

import os

from fixtures.base import capture, cuda_torch, with_env, with_kernels, with_nvml
from fixtures.machines import H100_NODE
from mpdoctor.fleet.compare import compare
from mpdoctor.fleet.devices import Selection, narrowed_env, own_gpu_kernels, select_device
from mpdoctor.fleet.fingerprint import rank_report
from mpdoctor.snapshot import DeviceKernels, KernelInfo


def node(visible: str | None = None, order=None, gpus: int = 8):
    """Constructed: an H100 node as a rank sees it; ``order``: the NVML indices CUDA numbers cuda:0, cuda:1..."""
    snap = with_nvml(capture("cpu-laptop"), H100_NODE[:gpus], driver="550.54.14", cuda="12.4")
    if visible is not None:
        snap = with_env(snap, CUDA_VISIBLE_DEVICES=visible)
    return cuda_torch(snap, order=order)


def test_each_local_rank_selects_its_own_gpu():
    snap = node()
    chosen = [select_device(snap, local) for local in range(8)]
    assert [c.device for c in chosen] == [f"cuda:{n}" for n in range(8)]
    assert [c.uuid for c in chosen] == [g.uuid for g in H100_NODE]
    assert chosen[3].narrowed == H100_NODE[3].uuid and not chosen[3].problem


def test_cuda_visible_devices_by_uuid_is_followed():
    picked = [H100_NODE[5], H100_NODE[2]]
    snap = node(",".join(g.uuid for g in picked), order=[5, 2])
    assert [select_device(snap, local).uuid for local in (0, 1)] == [g.uuid for g in picked]
    assert select_device(snap, 1).device == "cuda:1"


def test_fewer_visible_devices_than_local_ranks_is_a_problem_not_a_crash():
    snap = node("0,1", order=[0, 1])
    chosen = select_device(snap, 3)
    assert chosen.problem == (
        "LOCAL_RANK=3 selects cuda:3, but only 2 devices are visible to this rank (CUDA_VISIBLE_DEVICES=0,1)"
    )
    assert chosen.device == "cuda:1" and chosen.narrowed == ""  # what LOCAL_RANK % 2 would use; never timed


def test_a_rank_without_gpus_selects_nothing():
    assert select_device(capture("cpu-laptop"), 2) == Selection()


def test_fleet_names_ranks_beyond_their_visible_gpus_and_ranks_sharing_one():
    # Node a: 4 local ranks, every rank given the same 2 GPUs. Node b: rank per GPU, but ranks 4 and 5 given GPU 0.
    reports = [rank_report(local, "node-a", local, node("0,1", order=[0, 1]), []) for local in range(4)]
    shared = node(H100_NODE[0].uuid, order=[0])
    reports += [rank_report(4 + local, "node-b", 0, shared, []) for local in range(2)]
    report = compare(reports, 6, "slurm")
    found = [f for f in report.findings if f.code == "FLEET008"]
    assert [f.title for f in found] == [
        "ranks 2-3 (2 ranks on 1 node): LOCAL_RANK selects no GPU of its own",
        f"ranks 4-5 on node-b select the same GPU ({H100_NODE[0].uuid})",
    ]
    assert found[0].evidence[0] == (
        "rank 2 on node-a (local rank 2): LOCAL_RANK=2 selects cuda:2, but only 2 "
        "devices are visible to this rank (CUDA_VISIBLE_DEVICES=0,1)"
    )
    # The ranks that have a GPU of their own are not blamed.
    assert not [f for f in compare(reports[:2], 2, "slurm").findings if f.code == "FLEET008"]


def test_each_rank_kernels_show_on_its_own_device_in_the_fleet():
    snaps = []
    for local in range(2):
        snap = node()
        run = DeviceKernels(device=f"cuda:{local}", name=snap.torch.devices[local].name, bf16_native=True, status="ok")
        snaps.append(with_kernels(snap, KernelInfo(status="ok", devices=[run])))
    prints = [rank_report(local, "node-a", local, snap, []).fingerprint for local, snap in enumerate(snaps)]
    assert [(p.device, p.bf16_native) for p in prints] == [("cuda:0", True), ("cuda:1", True)]


def test_the_narrowed_environment_is_the_childs_only(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    env = narrowed_env("GPU-1234 it's")
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-1234 it's" and os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"} == {
        k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"
    }


def test_a_rank_times_its_own_gpu_under_the_jobs_name_for_it(fake_venv, monkeypatch):
    """The stand-in CUDA torch (two GPUs, CUDA_VISIBLE_DEVICES read as CUDA reads it): the rank whose LOCAL_RANK
    selects cuda:1 runs the kernel probe narrowed to that GPU's UUID; the child sees it alone, as its cuda:0, and
    the facts and the progress call it cuda:1 from the start."""
    import cuda_standin
    from mpdoctor.fleet.activity import check_step
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.progress import ProgressBoard

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # the rank's own view: both GPUs
    gtx = Selection("cuda:1", "NVIDIA GeForce GTX 1080 Ti", "6.1", "GPU-5d2e7a3c-1f0b-9c4e-8a21-6b3f0d9e4c17")
    board, steps = ProgressBoard(), []
    original = board.update

    def update(name, *args, **kwargs):  # what the heartbeat would have said while it ran
        original(name, *args, **kwargs)
        steps.append(check_step(board.tasks()))

    board.update = update
    info = own_gpu_kernels(cuda_standin.python(fake_venv), Budget.from_timeout(60), "quick", gtx, board)
    assert info.status == "ok", (info.detail, info.probe)
    assert [(d.device, d.name, d.compute_capability) for d in info.devices] == [("cuda:1", gtx.name, "6.1")]
    assert [t.name for t in board.tasks()] == ["torch", "kernels cuda:1"]  # no CPU run, no cuda:0
    assert "running kernels on cuda:1" in steps
    # A UUID this machine does not have: the probe saw no device, and says so rather than reporting nothing.
    gone = own_gpu_kernels(
        cuda_standin.python(fake_venv), Budget.from_timeout(60), "quick", Selection("cuda:1", uuid="GPU-ffff")
    )
    assert gone.status == "error" and not gone.devices
    assert gone.detail == (
        "the kernel probe, given only cuda:1's GPU (CUDA_VISIBLE_DEVICES=GPU-ffff), saw no CUDA device"
    )


def test_a_rank_kernel_probe_asked_for_no_cpu_times_no_cpu(this_machine):
    """Real torch on this machine: the runner told `no-cpu` times this machine's CUDA devices only (none on a CPU
    box, so no device at all) and says it ran fine; the same runner without it times the CPU first, then the same
    CUDA devices (so the switch, not the machine, is what left the CPU out)."""
    import sys

    import pytest

    pytest.importorskip("torch")
    from mpdoctor.probes.budget import Budget
    from mpdoctor.probes.kernels import probe_kernels_and_torch

    cudas = this_machine.cuda_device_names  # read by torch in a child of its own, not by mpdoctor's probes
    gpus_only, torch, _ = probe_kernels_and_torch(sys.executable, Budget.from_timeout(60), "quick", cpu=False)
    assert gpus_only.status == "ok", (gpus_only.detail, gpus_only.probe)
    assert [device.device for device in gpus_only.devices] == cudas, gpus_only.devices
    assert gpus_only.cuda_available is bool(cudas)
    assert all(device.status == "ok" for device in gpus_only.devices), gpus_only.devices
    assert torch.probe.status == "ok"  # the torch facts come from the same import either way
    everything, _, _ = probe_kernels_and_torch(sys.executable, Budget.from_timeout(60), "quick")
    assert [device.device for device in everything.devices] == ["cpu", *cudas]
    assert everything.devices[0].status == "ok"
