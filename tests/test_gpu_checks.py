"""What the gpu family says, and the fixes it gives, on recorded topologies."""

from __future__ import annotations

import pytest

from helpers import fixture_path, load_fixture
from mpdoctor.doctor.judge import judge
from mpdoctor.snapshot import Distribution

TITAN_UUID = "GPU-b8c41e02-7d6a-4f3b-a9e5-2c0d8f1b7a64"
A100_UUID = "GPU-e4f5a6b7-c8d9-0e1f-2a3b-4c5d6e7f8091"


def finding(fixture, code, snap=None):
    (found,) = [f for f in judge(snap or load_fixture(fixture)) if f.code == code]
    return found


def commands(found):
    return [step.command for step in found.fix if step.command]


def test_incident_4_as_reported_names_both_cards_and_the_uuid_fix():
    found = finding("titan-1080ti-visible-devices-1", "GPU001")
    assert found.severity == "warning"
    assert found.title == (
        "CUDA_VISIBLE_DEVICES=1 made cuda:0 nvidia-smi GPU 0 (NVIDIA GeForce GTX 1080 Ti), "
        "not nvidia-smi GPU 1 (NVIDIA TITAN RTX)"
    )
    assert any("fp16 slow instead of tensor-cores" in line for line in found.evidence)
    assert commands(found) == ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", f"export CUDA_VISIBLE_DEVICES={TITAN_UUID}"]


def test_fastest_first_box_warns_about_order_and_the_mixed_pair():
    gpu001 = finding("titan-1080ti-fastest-first", "GPU001")
    assert gpu001.title.startswith("cuda:0 is nvidia-smi GPU 1 (NVIDIA TITAN RTX), not nvidia-smi GPU 0")
    assert f"export CUDA_VISIBLE_DEVICES={TITAN_UUID}" in commands(gpu001)
    gpu003 = finding("titan-1080ti-fastest-first", "GPU003")
    assert "cuda:1 NVIDIA GeForce GTX 1080 Ti: fp16 slow instead of tensor-cores" in gpu003.title
    assert commands(gpu003) == [f"export CUDA_VISIBLE_DEVICES={TITAN_UUID}"]


def test_pci_order_box_says_cuda0_is_the_weaker_card():
    found = finding("titan-1080ti-pci-order", "GPU002")
    assert found.title.startswith("cuda:0 is the NVIDIA GeForce GTX 1080 Ti, not the most capable visible GPU")
    assert commands(found) == [f"export CUDA_VISIBLE_DEVICES={TITAN_UUID}"]
    assert "torch.device('cuda:1')" in found.fix[1].text


def test_t4_before_a100_names_the_bf16_gap():
    found = finding("a100-t4-pci-order", "GPU002")
    assert "bf16 emulated instead of tensor-cores" in found.title and "tf32 no instead of tensor-cores" in found.title
    assert commands(found) == [f"export CUDA_VISIBLE_DEVICES={A100_UUID}"]


def test_cpu_torch_on_a_mixed_box_gets_an_info_about_order_only():
    found = finding("titan-rtx-1080ti-cpu-torch", "GPU001")
    assert found.severity == "info" and "may not be nvidia-smi GPU N" in found.title
    snap = load_fixture("titan-rtx-1080ti-cpu-torch")
    snap.environment.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    assert "GPU001" not in {f.code for f in judge(snap)}
    snap.environment.env.update(CUDA_DEVICE_ORDER="FASTEST_FIRST", CUDA_VISIBLE_DEVICES=TITAN_UUID)
    assert "GPU001" not in {f.code for f in judge(snap)}  # a UUID means the same card to everyone


@pytest.mark.parametrize(
    "fixture, severity, words",
    [
        ("cuda-hidden-by-env", "warning", "it is empty"),
        ("slurm-nodevfiles", "error", "Slurm"),
        ("visible-devices-unknown-uuid", "error", "no GPU has a UUID starting with"),
    ],
)
def test_hiding_every_gpu(fixture, severity, words):
    found = finding(fixture, "GPU005")
    assert found.severity == severity and words in found.title
    unset = "unset CUDA_VISIBLE_DEVICES" in commands(found)
    assert unset == (fixture != "slurm-nodevfiles")  # inside a Slurm job, unsetting reaches other jobs' GPUs
    assert "TORCH009" not in {f.code for f in judge(load_fixture(fixture))}  # one finding, not two


def test_slurm_fix_asks_for_gres_and_unknown_uuid_lists_the_real_ones():
    assert commands(finding("slurm-nodevfiles", "GPU005"))[0] == "srun --gres=gpu:1 --pty bash"
    evidence = finding("visible-devices-unknown-uuid", "GPU005").evidence
    assert f"nvidia-smi 1: NVIDIA TITAN RTX {TITAN_UUID}" in evidence


def test_dropped_entries_get_a_deduplicated_uuid_list():
    found = finding("visible-devices-duplicate", "GPU004")
    assert "repeats entry 0" in found.title
    assert commands(found)[0] == (
        "export CUDA_VISIBLE_DEVICES=GPU-00c7e5a1-3b2d-4e8f-9a6c-5d1e7f0b2c30,GPU-10c7e5a1-3b2d-4e8f-9a6c-5d1e7f0b2c31"
    )
    out_of_range = finding("visible-devices-out-of-range", "GPU004")
    assert "index 1 is out of range: there are 1 GPUs" in out_of_range.title


def test_mixing_indices_and_uuids_is_reported():
    snap = load_fixture("titan-1080ti-pci-order")
    snap.environment.env["CUDA_VISIBLE_DEVICES"] = f"0,{TITAN_UUID}"
    assert "mixes integer indices and UUIDs" in finding("", "GPU004", snap).title


def test_unknown_device_order_value():
    found = finding("device-order-typo", "GPU006")
    assert "'PCI_BUS'" in found.title and commands(found) == ["export CUDA_DEVICE_ORDER=PCI_BUS_ID"]


def test_gpus_missing_from_cuda_is_a_warning_but_foreign_gpus_only_info():
    found = finding("gpus-missing-from-cuda", "GPU007")
    assert found.severity == "warning" and "nvidia-smi 4, 5, 6, 7 unused" in found.title
    snap = load_fixture("gpus-missing-from-cuda")
    for gpu in snap.machine.nvml.gpus[4:]:
        gpu.error = "NoPermission: Insufficient Permissions"
    assert finding("", "GPU007", snap).severity == "info"


def test_two_mig_devices_selected():
    found = finding("h100-mig-two-selected", "GPU008")
    assert "selects 2 MIG devices" in found.title
    assert commands(found)[0].startswith("CUDA_VISIBLE_DEVICES=MIG-60a1b2c3")


def test_legacy_pynvml_names_who_pulls_it_in():
    found = finding("pynvml-legacy-shadows", "GPU009")
    assert found.severity == "warning" and "shadows nvidia-ml-py" in found.title
    assert "gpustat 1.1.1 requires pynvml>=11.5.0" in found.evidence
    (uninstall,) = commands(found)  # nvidia-ml-py is installed: removing the shadow is enough
    assert uninstall.endswith("-m pip uninstall -y pynvml")
    assert "gpustat" in found.fix[-1].text


def test_pynvml_shim_is_info_and_missing_nvidia_ml_py_is_installed():
    assert finding("pynvml-deprecated-shim", "GPU009").severity == "info"
    snap = load_fixture("pynvml-deprecated-shim")
    snap.environment.distributions = [
        d for d in snap.environment.distributions if d.name not in ("nvidia-ml-py", "pynvml")
    ]
    snap.environment.distributions.append(Distribution(name="pynvml", version="not-a-version"))
    found = finding("", "GPU009", snap)
    assert found.severity == "info"  # an unreadable version is not assumed to be the legacy one
    assert any(c.endswith("-m pip install nvidia-ml-py") for c in commands(found))


def test_container_without_nvml_is_told_to_add_the_utility_capability():
    found = finding("nvml-library-not-found", "DRV001")
    assert found.severity == "warning" and found.title.startswith("CUDA works but NVML does not")
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in commands(found)[0]


def test_healthy_topologies_have_no_gpu_findings():
    for fixture in ("h100-node-healthy", "laptop-rtx3060", "h100-mig-one-selected", "cpu-laptop"):
        assert not [f for f in judge(load_fixture(fixture)) if f.family == "gpu"], fixture


def test_a_mapping_that_raises_costs_the_table_and_gpu_checks_only(monkeypatch):
    from mpdoctor.doctor.diagnose import Options, diagnose
    from mpdoctor.analysis import gpu_map
    from mpdoctor.render.markdown import render_markdown

    def broken(self):
        raise KeyError("boom")

    monkeypatch.setattr(gpu_map._Mapper, "observed_rows", broken)
    report = diagnose(Options(python="python", snapshot=str(fixture_path("titan-1080ti-pci-order"))))
    assert report.gpus.devices == [] and "KeyError" in report.gpus.notes[0]
    crashed = {f.title.split()[1] for f in report.findings if f.code == "MPD001"}
    assert {"GPU001", "GPU002", "GPU004"} <= crashed
    assert all(code.startswith("GPU") for code in crashed)  # the torch, driver and stack checks ran as usual
    assert "device table could not be built" in render_markdown(report)


def test_same_architecture_with_less_memory_says_so():
    snap = load_fixture("h100-node-healthy")
    snap.machine.nvml.gpus[0].memory_total = snap.torch.devices[0].memory_total = 40 * 1024**3
    found = finding("", "GPU002", snap)
    assert "(40 GiB of memory instead of 80 GiB)" in found.title
