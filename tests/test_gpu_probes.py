"""GPU facts from the probes: torch's per-ordinal device properties and NVML's MIG devices.

No GPU here, so a real throwaway venv carries the stand-in ``torch`` of
``tests/cuda_standin.py``, which answers the CUDA calls with the recorded facts of
incident 4's box (TITAN RTX numbered first by CUDA) and keeps real torch's fork rule;
the real probe runs in that interpreter. NVML is a stand-in module with pynvml's call
signatures and error classes.
"""

from __future__ import annotations

import os
import types

import pynvml
import pytest

import cuda_standin
from conftest import dist_info
from helpers import load_fixture
from mpdoctor.doctor.judge import judge
from mpdoctor.probes.environment import probe_environment
from mpdoctor.probes.kernels import probe_kernels_and_torch
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.machine import nvml_facts, nvml_record
from mpdoctor.probes.remote.target import device_facts


@pytest.fixture(scope="module")
def cuda_torch_python(fake_venv):
    return cuda_standin.python(fake_venv)


def test_probe_records_each_cuda_ordinal_with_uuid_and_pci(cuda_torch_python):
    _, torch = probe_environment(cuda_torch_python, Budget.from_timeout(60))
    assert torch.probe.status == "ok", torch.probe
    assert torch.runtime_device_count == 2
    first, second = torch.devices
    assert (first.ordinal, first.name, first.compute_capability) == (0, "NVIDIA TITAN RTX", "7.5")
    assert first.uuid == "b8c41e02-7d6a-4f3b-a9e5-2c0d8f1b7a64" and first.pci_bus_id == "0000:81:00.0"
    assert (first.memory_total, first.multiprocessor_count, first.is_integrated) == (24 * 2**30, 72, False)
    assert second.pci_bus_id == "0000:02:00.0"


def test_the_kernel_runner_gives_the_same_torch_facts_from_one_import(cuda_torch_python):
    """With kernels on, the runner is the torch part: its facts must equal the separate part's."""
    _, alone = probe_environment(cuda_torch_python, Budget.from_timeout(60))
    kernels, combined, steps = probe_kernels_and_torch(cuda_torch_python, Budget.from_timeout(60), "quick")
    assert combined.probe.status == "ok", combined.probe
    assert combined.devices == alone.devices and combined.runtime_device_count == 2
    assert (combined.version, combined.cuda, combined.arch_list) == (alone.version, alone.cuda, alone.arch_list)
    assert combined.cuda_available is True and combined.device_count == 2
    assert "apex_loads" in steps.data  # the apex extension loads ran there too
    assert [device.device for device in kernels.devices] == ["cpu", "cuda:0", "cuda:1"]


@pytest.mark.parametrize("fault,status", [("abort", "crashed"), ("hang", "timeout")])
def test_cuda_init_that_dies_in_the_kernel_runner_is_torch010(cuda_torch_python, monkeypatch, fault, status):
    monkeypatch.setenv("FAKE_TORCH_CUDA_INIT", fault)
    kernels, torch, _ = probe_kernels_and_torch(cuda_torch_python, Budget.from_timeout(4), "quick")
    assert torch.status == "imported" and torch.version == "2.13.0+cu126"
    assert (torch.probe.status, torch.probe.step) == (status, "cuda"), torch.probe
    assert [device.device for device in kernels.devices] == ["cpu"]  # the CPU still gets measured
    snap = load_fixture("cpu-laptop")
    snap.torch = torch
    assert "TORCH010" in {f.code for f in judge(snap, select=["TORCH010"])}


def test_probed_devices_against_recorded_nvml_find_incident_4(cuda_torch_python, monkeypatch):
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        monkeypatch.delenv(name, raising=False)  # the probe reads the real environment
    snap = load_fixture("titan-1080ti-fastest-first")
    snap.environment, snap.torch = probe_environment(cuda_torch_python, Budget.from_timeout(60))
    findings = {f.code: f for f in judge(snap, select=["GPU"])}
    assert set(findings) == {"GPU001", "GPU003"}
    assert findings["GPU001"].title.startswith("cuda:0 is nvidia-smi GPU 1 (NVIDIA TITAN RTX)")


def test_a_device_whose_properties_fail_is_recorded_and_the_others_kept(fake_venv, monkeypatch):
    venv = fake_venv("fake-cuda-torch-broken", cuda_standin.files(with_dist_info=False))
    monkeypatch.setenv("FAKE_TORCH_BROKEN_DEVICE", "1")
    _, torch = probe_environment(str(fake_venv.python(venv)), Budget.from_timeout(60))
    assert torch.probe.status == "ok" and torch.runtime_device_count == 3
    assert [d.ordinal for d in torch.devices] == [0, 1]
    assert "unspecified launch failure" in torch.fact_errors["device 2"]


def test_old_torch_properties_without_uuid_or_pci_give_empty_fields():
    props = types.SimpleNamespace(
        name="Tesla V100-SXM2-16GB", major=7, minor=0, total_memory=16 * 2**30, multi_processor_count=80
    )
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda i: props))
    facts = device_facts(torch, 0)
    assert facts["uuid"] == "" and facts["pci_bus_id"] == "" and facts["is_integrated"] is None
    assert facts["compute_capability"] == "7.0" and facts["multiprocessor_count"] == 80


def test_module_origin_shows_a_legacy_pynvml_package_shadowing_nvidia_ml_py(fake_venv):
    # pynvml 11.x ships a pynvml/ package; nvidia-ml-py ships pynvml.py: the package wins.
    venv = fake_venv(
        "pynvml-legacy",
        {
            "pynvml/__init__.py": "",
            "pynvml.py": "",
            **dist_info("pynvml", "11.5.3"),
            **dist_info("nvidia-ml-py", "12.575.51"),
        },
    )
    env, _ = probe_environment(str(fake_venv.python(venv)), Budget.from_timeout(60))
    assert env.module_origins["pynvml"].endswith("pynvml/__init__.py")
    snap = load_fixture("h100-node-healthy")
    snap.environment = env
    (finding,) = judge(snap, select=["GPU009"])
    assert finding.severity == "warning" and "shadows nvidia-ml-py" in finding.title


def _nvml_with_mig():
    not_found = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
    not_supported = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    migs = {1: ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-aaaa"), 2: ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-bbbb")}

    def raise_(exc):
        raise exc

    def mig_mode(h):
        return [1, 1] if h == 0 else (raise_(not_supported) if h == 1 else [0, 0])

    return types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "570.133.20",
        nvmlSystemGetNVMLVersion=lambda: "12.570.133.20",
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
        nvmlDeviceGetCount=lambda: 3,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: migs[h - 100][0] if h >= 100 else "NVIDIA A100-SXM4-40GB",
        nvmlDeviceGetUUID=lambda h: migs[h - 100][1] if h >= 100 else f"GPU-{h}",
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=f"00000000:{h + 7:02X}:00.0".encode()),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=(20 if h >= 100 else 40) * 2**30),
        nvmlDeviceGetCudaComputeCapability=lambda h: (8, 0),
        nvmlDeviceGetMigMode=mig_mode,
        nvmlDeviceGetMaxMigDeviceCount=lambda h: 7,
        # Slots 1 and 2 hold MIG devices; empty slots raise NotFound.
        nvmlDeviceGetMigDeviceHandleByIndex=lambda h, i: 100 + i if i in migs else raise_(not_found),
    )


def test_nvml_records_mig_mode_and_each_mig_device():
    info = nvml_facts(_nvml_with_mig)
    assert info.status == "ok", info
    mig_gpu, old_gpu, off_gpu = info.gpus
    assert mig_gpu.mig_enabled is True
    assert [(m.index, m.uuid, m.memory_total) for m in mig_gpu.mig_devices] == [
        (1, "MIG-aaaa", 20 * 2**30),
        (2, "MIG-bbbb", 20 * 2**30),
    ]
    assert mig_gpu.mig_devices[0].name.endswith("MIG 3g.20gb")
    assert old_gpu.mig_enabled is None and old_gpu.mig_devices == []  # NotSupported: a GPU without MIG
    assert off_gpu.mig_enabled is False
    assert mig_gpu.pci_bus_id == "0000:07:00.0"


def test_the_nvml_childs_record_has_exactly_the_snapshots_fields():
    """The NVML child prints plain data that the host loads as NvmlInfo: a misspelt key would be dropped silently."""
    from dataclasses import fields

    from mpdoctor.snapshot import MigDevice, NvmlGpu, NvmlInfo

    record = nvml_record(_nvml_with_mig(), asker=os.getpid())
    names = lambda cls: {f.name for f in fields(cls)}  # noqa: E731
    assert set(record) == names(NvmlInfo) - {"reason", "detail", "seconds"}  # set on failure; seconds by the host
    for gpu in record["gpus"]:
        assert set(gpu) == names(NvmlGpu) - {"error"}
        for mig in gpu["mig_devices"]:
            assert set(mig) == names(MigDevice)
