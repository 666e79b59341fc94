"""The mapping from CUDA ordinals to physical GPUs, on recorded topologies and edited copies of them."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import load_fixture
from mpdoctor.doctor.judge import judge
from mpdoctor.analysis.gpu_map import effective_order, gpu_view, strip_prefix, visible_devices_as_meant
from mpdoctor.snapshot import CudaDevice

TITAN_UUID = "GPU-b8c41e02-7d6a-4f3b-a9e5-2c0d8f1b7a64"  # nvidia-smi 1 on incident 4's box
GTX_UUID = "GPU-5d2e7a3c-1f0b-9c4e-8a21-6b3f0d9e4c17"  # nvidia-smi 0


def table(view):
    return [(row.cuda_ordinal, row.nvml_index, row.matched_by) for row in view.devices]


def test_fastest_first_maps_by_uuid_and_says_cuda0_is_nvidia_smi_1():
    view = gpu_view(load_fixture("titan-1080ti-fastest-first"))
    assert table(view) == [(0, 1, "uuid"), (1, 0, "uuid")]
    first = view.devices[0]
    assert first.name == "NVIDIA TITAN RTX" and first.uuid == TITAN_UUID and first.expected_nvml_index == 0
    assert (first.fp16, first.bf16, first.tf32, first.fp8) == ("tensor-cores", "emulated", "no", "no")
    assert view.devices[1].fp16 == "slow"  # GTX 1080 Ti, sm_61


def test_pci_order_maps_cuda0_to_nvidia_smi_0():
    view = gpu_view(load_fixture("titan-1080ti-pci-order"))
    assert view.order == "PCI_BUS_ID"
    assert table(view) == [(0, 0, "uuid"), (1, 1, "uuid")]
    assert all(row.expected_nvml_index == row.nvml_index for row in view.devices)


def test_pci_bus_id_is_the_fallback_when_torch_has_no_uuid():
    snap = load_fixture("titan-1080ti-fastest-first")
    for dev in snap.torch.devices:
        dev.uuid = ""  # torch 2.8+ without a UUID match: PCI ids still tie them
    assert table(gpu_view(snap)) == [(0, 1, "pci-bus-id"), (1, 0, "pci-bus-id")]


def test_old_torch_is_matched_by_properties_when_unique():
    view = gpu_view(load_fixture("titan-1080ti-visible-devices-1"))
    assert table(view)[0] == (0, 0, "properties")
    assert view.devices[0].expected_nvml_index == 1  # CUDA_VISIBLE_DEVICES=1, read as nvidia-smi's 1
    assert view.devices[1].not_visible_reason == "not selected by CUDA_VISIBLE_DEVICES"


def test_identical_gpus_without_ids_fall_back_to_order_rules_and_say_so():
    snap = load_fixture("h100-node-healthy")
    for dev in snap.torch.devices:
        dev.uuid = dev.pci_bus_id = ""
    view = gpu_view(snap)
    assert [row.matched_by for row in view.visible] == ["order-rules"] * 8
    assert [row.nvml_index for row in view.visible] == list(range(8))
    assert any("identical" in note and "PCI order" in note for note in view.notes)


def test_mig_device_is_tied_to_its_parent_gpu_by_its_mig_uuid():
    view = gpu_view(load_fixture("h100-mig-two-selected"))
    (row,) = view.visible
    assert row.mig and row.nvml_index == 6 and row.uuid.startswith("MIG-6")
    assert row.name.endswith("MIG 2g.20gb") and row.memory_total == 20 * 1024**3
    reasons = {r.nvml_index: r.not_visible_reason for r in view.hidden}
    assert reasons[7].startswith("in MIG mode") and reasons[0] == "not selected by CUDA_VISIBLE_DEVICES"
    assert [e.kind for e in view.selected] == ["mig-uuid", "mig-uuid"]


def test_cpu_only_torch_on_a_mixed_box_predicts_nothing_and_explains():
    view = gpu_view(load_fixture("titan-rtx-1080ti-cpu-torch"))
    assert view.visible == []
    assert {row.not_visible_reason for row in view.hidden} == {"torch is a CPU-only build"}
    assert any("cannot be predicted" in note for note in view.notes)


def test_without_torch_uuid_selection_is_predicted_exactly():
    snap = load_fixture("torch-missing")
    snap.environment.env["CUDA_VISIBLE_DEVICES"] = f"{TITAN_UUID[:12]},{GTX_UUID}"
    view = gpu_view(snap)
    assert [(r.cuda_ordinal, r.nvml_index, r.source, r.matched_by) for r in view.visible] == [
        (0, 1, "predicted", "uuid"),
        (1, 0, "predicted", "uuid"),
    ]


def test_without_torch_pci_order_is_predicted_from_bus_ids_not_nvml_indices():
    snap = load_fixture("torch-missing")
    gpus = snap.machine.nvml.gpus
    gpus[0].pci_bus_id, gpus[1].pci_bus_id = "0000:81:00.0", "0000:02:00.0"  # NVML order is not PCI order here
    snap.environment.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    view = gpu_view(snap)
    assert [(r.cuda_ordinal, r.nvml_index) for r in view.visible] == [(0, 1), (1, 0)]


def test_repeated_entry_stops_the_prediction():
    view = gpu_view(load_fixture("visible-devices-duplicate"))
    assert [r.nvml_index for r in view.visible] == [0, 1]
    assert any("repeats a GPU" in note for note in view.notes)


def test_hidden_reasons_cover_each_cause():
    assert {r.not_visible_reason for r in gpu_view(load_fixture("cuda-hidden-by-env")).hidden} == {
        "CUDA_VISIBLE_DEVICES hides every GPU"
    }
    missing = gpu_view(load_fixture("gpus-missing-from-cuda")).hidden
    assert [r.nvml_index for r in missing] == [4, 5, 6, 7]
    assert all("not mounted" in r.not_visible_reason for r in missing)


def test_a_driver_too_old_for_torchs_cuda_is_the_reason_gpus_are_hidden():
    reason = "torch's CUDA 13.0 needs a newer driver (this one supports CUDA 12.2)"
    view = gpu_view(load_fixture("h100-driver-too-old"))  # identical GPUs: still predicted, with the reason
    assert all(row.source == "predicted" for row in view.visible) and reason in view.notes[0]
    snap = load_fixture("h100-driver-too-old")
    snap.machine.nvml.gpus = load_fixture("titan-1080ti-pci-order").machine.nvml.gpus  # a mixed box: no prediction
    assert {row.not_visible_reason for row in gpu_view(snap).hidden} == {reason}


def test_unusable_nvml_leaves_cuda_devices_unmatched_and_says_why():
    view = gpu_view(load_fixture("nvml-no-permission"))
    (row,) = view.devices
    assert row.cuda_ordinal == 0 and row.nvml_index is None and row.name == "NVIDIA GeForce RTX 4090"
    assert row.bf16 == "tensor-cores"  # from torch's compute capability
    assert any("NoPermission" in note for note in view.notes)


def test_no_gpus_anywhere_is_an_empty_view():
    view = gpu_view(load_fixture("cpu-laptop"))
    assert view.devices == [] and view.notes == []


@pytest.mark.parametrize(
    "raw, order",
    [
        (None, "FASTEST_FIRST"),
        ("", "FASTEST_FIRST"),
        ("PCI_BUS_ID", "PCI_BUS_ID"),
        (" PCI_BUS_ID ", "PCI_BUS_ID"),
        ("FASTEST_FIRST", "FASTEST_FIRST"),
        ("pci_bus_id", "unknown"),
        ("PCI_BUS", "unknown"),
    ],
)
def test_effective_order(raw, order):
    assert effective_order(raw) == order


def test_uuid_prefixes_compare_case_insensitively_without_prefix():
    assert strip_prefix("GPU-ABcd") == strip_prefix("abcd") == strip_prefix("MIG-abcd")


@pytest.mark.parametrize(
    "raw, meant",
    [
        ("1", TITAN_UUID),
        ("1,0,1", f"{TITAN_UUID},{GTX_UUID}"),
        ("0,7,1", f"{GTX_UUID},{TITAN_UUID}"),  # the invalid entry is dropped, the rest kept
        ("GPU-b8c4,0", f"{TITAN_UUID},{GTX_UUID}"),
        ("nonsense", ""),
    ],
)
def test_visible_devices_as_meant_reads_integers_as_nvidia_smi_indices(raw, meant):
    snap = load_fixture("titan-1080ti-fastest-first")
    snap.environment.env["CUDA_VISIBLE_DEVICES"] = raw
    assert visible_devices_as_meant(snap) == meant


def test_cuda_device_rows_without_nvml_gpus_keep_torch_facts():
    snap = load_fixture("cpu-laptop")
    snap.torch.devices = [CudaDevice(ordinal=0, name="Orin", compute_capability="8.7", uuid="abc")]
    (row,) = gpu_view(snap).devices
    assert (row.cuda_ordinal, row.name, row.uuid, row.bf16) == (0, "Orin", "abc", "tensor-cores")


TOPOLOGIES = [
    "titan-1080ti-fastest-first",
    "h100-mig-two-selected",
    "torch-missing",
    "a100-t4-pci-order",
    "nvml-timeout",
    "titan-1080ti-visible-devices-1",
]
BASES = {name: load_fixture(name) for name in TOPOLOGIES}
ENV_TEXT = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.text(alphabet="0123456789,-+ GPUMIGabcdef", max_size=30),
    st.sampled_from(
        ["PCI_BUS_ID", "FASTEST_FIRST", "NoDevFiles", "-1", "", f"{TITAN_UUID},{GTX_UUID}", "MIG-6", "1,0,1"]
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TOPOLOGIES), ENV_TEXT, ENV_TEXT)
def test_any_environment_gives_a_consistent_view_and_never_raises(name, cvd, order):
    snap = copy.deepcopy(BASES[name])
    env = snap.environment.env
    for key, value in (("CUDA_VISIBLE_DEVICES", cvd), ("CUDA_DEVICE_ORDER", order)):
        env.pop(key, None)
        if value is not None:
            env[key] = value
    view = gpu_view(snap)
    ordinals = [row.cuda_ordinal for row in view.visible]
    assert ordinals == list(range(len(ordinals)))  # cuda:0, cuda:1, ... with no gaps, first
    assert view.devices[: len(ordinals)] == view.visible
    tied = [row.nvml_index for row in view.devices if row.nvml_index is not None and not row.mig]
    assert len(tied) == len(set(tied))  # no physical GPU appears twice
    assert all(row.not_visible_reason for row in view.hidden)
    assert "MPD001" not in {f.code for f in judge(snap)}  # and no check crashes on it either
