"""Real torch's fork rule, and mpdoctor's process model held to it.

On an H200 with torch 2.11 the kernel runner touched CUDA before forking its GPU
workers, and real torch refused CUDA in every one of them ("Cannot re-initialize CUDA
in forked subprocess"): the GPU was never measured. ``TABLE`` is the rule as measured
there (shared/captures/README.md); ``tests/cuda_standin.py`` is a stand-in torch that
keeps it, since this machine has no GPU. These tests check the stand-in against the
table in real processes, then run mpdoctor's real kernel runner and environment probe
in its venv: with a poisoning call injected at interpreter start (a sitecustomize), the
CUDA workers must carry real torch's refusal and mpdoctor must blame itself (MPD003),
not the GPU (PREC009); with none, or with one that the runner's own
``PYTORCH_NVML_BASED_CUDA_CHECK=1`` makes safe (``is_available()``), every CUDA worker
must get past device start.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict

import pytest

import cuda_standin
from helpers import load_fixture
from mpdoctor.doctor.judge import judge
from mpdoctor.probes.environment import probe_environment
from mpdoctor.probes.kernels import probe_kernels_and_torch
from mpdoctor.probes.budget import Budget

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
# call in the parent before fork() (None: nothing), child can use CUDA, with PYTORCH_NVML_BASED_CUDA_CHECK=1
TABLE = [
    (None, True, True),
    ("torch.cuda.is_available()", False, True),
    ("torch.cuda.device_count()", True, True),
    ("torch.cuda.get_arch_list()", False, False),
    ("torch.backends.cudnn.version()", False, False),
    ("torch._C._cuda_getDeviceCount()", False, False),
    ("torch.cuda.nccl.version()", True, True),
]
CELLS = [(call, nvml, ok) for call, plain, with_nvml in TABLE for nvml, ok in ((False, plain), (True, with_nvml))]
# The kernel runner runs with PYTORCH_NVML_BASED_CUDA_CHECK=1 whatever the user's is (kernel_runner.runner_environment):
# what poisons it at start is what poisons with the variable set, under either setting of the user's.
POISONING = [(call, nvml) for call, _, with_nvml in TABLE if not with_nvml for nvml in (False, True)]
# What poisons the user's own processes but not the runner: the variable makes it safe.
MADE_SAFE = [call for call, plain, with_nvml in TABLE if not plain and with_nvml]


def cell_id(call, nvml):
    return (call or "nothing") + (" NVML" if nvml else "")


# The parent makes the call, forks; the child starts CUDA as the measurement did, then reads what survives.
FORK_ONCE = r"""
import json, os, sys
import torch
if sys.argv[1]:
    eval(sys.argv[1])
pid = os.fork()
if pid == 0:
    try:
        torch.zeros(1, device="cuda")
        error = ""
    except RuntimeError as exc:
        error = str(exc)
    print(json.dumps({"error": error, "bad_fork": torch._C._cuda_isInBadFork(),
                      "available": torch.cuda.is_available(), "count": torch.cuda.device_count(),
                      "runtime_count": torch._C._cuda_getDeviceCount()}))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
"""

# Makes the call named in STANDIN_POISON_AT_START as the interpreter starts: before the runner forks anything.
SITECUSTOMIZE = """\
import os

if os.environ.get("STANDIN_POISON_AT_START"):
    import torch

    eval(os.environ["STANDIN_POISON_AT_START"])
"""


@pytest.fixture(scope="module")
def standin(fake_venv):
    return cuda_standin.python(fake_venv)


def _environ(nvml):
    env = {k: v for k, v in os.environ.items() if k != NVML_CHECK}
    return {**env, NVML_CHECK: "1"} if nvml else env


@pytest.mark.parametrize("call,nvml,ok", CELLS, ids=[cell_id(c, n) for c, n, _ in CELLS])
def test_the_standin_keeps_the_measured_fork_rule(standin, tmp_path, call, nvml, ok):
    out = subprocess.run(
        [standin, "-c", FORK_ONCE, call or ""],
        capture_output=True,
        text=True,
        timeout=60,
        env=_environ(nvml),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    child = json.loads(out.stdout)
    assert child["error"] == ("" if ok else cuda_standin.FORK_ERROR)
    assert child["bad_fork"] is (not ok)
    # The counts survive a bad fork: real torch answers them from what its parent cached.
    assert (child["available"], child["count"], child["runtime_count"]) == (True, 2, 2)


def test_the_standins_refusal_is_real_torchs_text_from_the_h200_capture(standin, tmp_path):
    """The installed stand-in, run in a real poisoned fork, refuses in the words real torch used on the H200."""
    recorded = load_fixture("h200-fork-refused")
    out = subprocess.run(
        [standin, "-c", FORK_ONCE, "torch.cuda.is_available()"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_environ(False),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "RuntimeError: " + json.loads(out.stdout)["error"] == recorded.torch.fact_errors["device 0"]


# ---------------------------------------------------------------- mpdoctor's real probes on the stand-in


@pytest.fixture(scope="module")
def probes(standin, tmp_path_factory):
    """probes(kind, call, nvml): the real kernel runner ("kernels") or environment probe ("environment"), run
    in the stand-in venv with ``call`` made at interpreter start; memoised, so each run happens once.

    Its PYTHONPATH also holds an ``amp_C.py``, which the torch part takes for an apex extension and
    imports in a forked worker, and every process that imports the stand-in logs its forks and
    poisoning calls (``STANDIN_TORCH_LOG``); the result carries that log as {pid: [event, ...]}.
    """
    site = tmp_path_factory.mktemp("poison-at-start")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (site / "amp_C.py").write_text("")
    runs = {}

    def run(kind, call=None, nvml=False):
        key = (kind, call, nvml)
        if key not in runs:
            log = site / ("%s-%d.log" % (kind, len(runs)))
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv(NVML_CHECK, raising=False)
                if nvml:
                    mp.setenv(NVML_CHECK, "1")
                mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
                mp.setenv("STANDIN_POISON_AT_START", call or "")
                mp.setenv("STANDIN_TORCH_LOG", str(log))
                result = (
                    probe_kernels_and_torch(standin, Budget.from_timeout(60), "quick")
                    if kind == "kernels"
                    else probe_environment(standin, Budget.from_timeout(60))
                )
            events = defaultdict(list)
            for line in log.read_text().splitlines() if log.exists() else []:
                pid, _, event = line.partition(" ")
                events[int(pid)].append(event)
            runs[key] = result, dict(events)
        return runs[key]

    return run


def _forks_after_poisoning(events):
    """{pid: events} of the processes that forked after a poisoning call of their own."""
    late = {}
    for pid, seen in events.items():
        poisoned = [i for i, e in enumerate(seen) if e.startswith("poison")]
        if poisoned and "fork" in seen[poisoned[0] :]:
            late[pid] = seen
    return late


@pytest.mark.parametrize("call,nvml", POISONING, ids=[cell_id(c, n) for c, n in POISONING])
def test_a_poisoning_call_before_the_runner_forks_leaves_every_cuda_worker_refused(probes, call, nvml):
    (kernels, torch, _), _ = probes("kernels", call, nvml)
    cuda = [d for d in kernels.devices if d.device.startswith("cuda")]
    assert [d.device for d in cuda] == ["cuda:0", "cuda:1"]  # counted from the count the parent cached
    for device in cuda:
        assert device.status == "error" and cuda_standin.FORK_ERROR in device.detail, device
        assert not device.results
    # What the H200 recorded: the count, but no device's properties.
    assert torch.cuda_available is True and torch.devices == []
    assert torch.fact_errors["device 0"] == "RuntimeError: " + cuda_standin.FORK_ERROR


@pytest.mark.parametrize("call,nvml", POISONING, ids=[cell_id(c, n) for c, n in POISONING])
def test_mpdoctor_blames_itself_not_the_gpu_for_a_refused_worker(probes, call, nvml):
    (kernels, torch, _), _ = probes("kernels", call, nvml)
    snap = load_fixture("cpu-laptop")
    snap.kernels, snap.torch = kernels, torch
    findings = judge(snap, select=["PREC"])
    codes = {f.code for f in findings}
    assert "PREC009" not in codes, [f.title for f in findings]
    titles = [f.title for f in findings if f.code == "MPD003"]
    for name in ("cuda:0", "cuda:1"):
        assert any(t.startswith("mpdoctor could not measure " + name) for t in titles), titles


def _workers_started_their_devices(kernels):
    cuda = {d.device: d for d in kernels.devices if d.device.startswith("cuda")}
    assert list(cuda) == ["cuda:0", "cuda:1"]
    for device in cuda.values():
        assert "forked subprocess" not in device.detail, device
        assert device.init_seconds is not None and device.bf16_supported is True
        # Past device start, the stand-in's first kernel is where it stops.
        assert any(r.status == "error" and cuda_standin.NO_KERNELS in r.detail for r in device.results)
    return cuda


@pytest.mark.parametrize("call", MADE_SAFE)
def test_a_call_the_nvml_check_makes_safe_at_start_costs_the_runner_nothing(probes, call):
    """A sitecustomize calling is_available() (the user has no PYTORCH_NVML_BASED_CUDA_CHECK): the runner's
    own NVML check keeps its forks clean, and its children still judge CUDA as the user's code does."""
    (kernels, torch, _), events = probes("kernels", call)
    _workers_started_their_devices(kernels)
    (runner,) = [pid for pid, seen in events.items() if "import" in seen]
    assert not any(e.startswith("poison") for e in events[runner]), events[runner]
    assert _forks_after_poisoning(events) == {}
    # The counting child put the user's view back: its first CUDA call, is_available(), counted through the
    # CUDA runtime, as it does without the variable (with it, NVML counts and cudnn.version() poisons first).
    assert _first_poison_of_the_counting_child(events) == "poison torch._C._cuda_getDeviceCount()"
    assert torch.cuda_available is True and len(torch.devices) == 2


def test_the_users_own_nvml_check_is_put_back_in_the_runners_children(probes):
    """With the user's PYTORCH_NVML_BASED_CUDA_CHECK=1, the counting child keeps it: is_available() counts
    through NVML there and never reaches the CUDA runtime's count."""
    (kernels, _, _), events = probes("kernels", None, True)
    _workers_started_their_devices(kernels)
    assert _first_poison_of_the_counting_child(events) == "poison torch.backends.cudnn.version()"


def _first_poison_of_the_counting_child(events) -> str:
    """The first poisoning call of the one process that read the cuDNN version: the counting child."""
    (seen,) = [seen for seen in events.values() if "poison torch.backends.cudnn.version()" in seen]
    return next(e for e in seen if e.startswith("poison"))


def test_the_runners_environment_is_the_users_plus_the_nvml_check():
    from mpdoctor.probes.remote import kernel_runner

    env = kernel_runner.runner_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", NVML_CHECK: "1", kernel_runner.USERS_NVML_CHECK: "unset"}
    env = kernel_runner.runner_environment({NVML_CHECK: "0"})
    assert env == {NVML_CHECK: "1", kernel_runner.USERS_NVML_CHECK: "=0"}


def test_the_real_runner_forks_cuda_workers_that_start_their_devices(probes):
    (kernels, torch, steps), events = probes("kernels")
    _, alone = probes("environment")[0]
    assert kernels.status == "ok" and torch.probe.status == "ok", (kernels, torch.probe)
    cuda = _workers_started_their_devices(kernels)
    assert (cuda["cuda:0"].name, cuda["cuda:0"].compute_capability) == ("NVIDIA TITAN RTX", "7.5")
    assert (cuda["cuda:1"].name, cuda["cuda:1"].compute_capability) == ("NVIDIA GeForce GTX 1080 Ti", "6.1")
    assert torch.devices and torch.devices == alone.devices
    assert torch.arch_list and torch.arch_list == alone.arch_list and torch.cudnn == alone.cudnn == 90100
    assert not any("forked subprocess" in e for e in torch.fact_errors.values()), torch.fact_errors
    assert steps.data["apex_loads"]["amp_C"]["status"] == "ok"  # the apex load fork ran
    # The runner (the one process that imported torch) forked, and never poisoned.
    (runner,) = [pid for pid, seen in events.items() if "import" in seen]
    assert events[runner].count("fork") >= 5 and not any(e.startswith("poison") for e in events[runner])
    assert _forks_after_poisoning(events) == {}
    snap = load_fixture("cpu-laptop")
    snap.kernels, snap.torch = kernels, torch
    assert not {"MPD003", "PREC009"} & {f.code for f in judge(snap, select=["PREC"])}


def test_the_environment_probes_torch_part_forks_for_apex_before_it_touches_cuda(probes):
    (_, torch), events = probes("environment")
    assert torch.probe.status == "ok" and [d.name for d in torch.devices] == [
        "NVIDIA TITAN RTX",
        "NVIDIA GeForce GTX 1080 Ti",
    ]
    (part,) = [pid for pid, seen in events.items() if "import" in seen]
    seen = events[part]
    assert "fork" in seen and any(e.startswith("poison") for e in seen), seen  # both happened, in that order
    assert _forks_after_poisoning(events) == {}
