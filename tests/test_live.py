"""The real probes on this machine, whatever it has: real torch (a CPU build in CI, a CUDA build on a GPU
machine), and NVML where an NVIDIA driver is installed. What the machine has is read independently of mpdoctor
(tests/conftest.py: ThisMachine); the tests whose premise is a machine without a driver are marked so."""

from __future__ import annotations

import json
import sys

import pytest

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.collect import take_snapshot
from mpdoctor.probes.machine import probe_nvml

# The premise is real torch in this environment: without it (a checkout tested without the torch CI installs),
# these tests are skipped, not a collection error.
torch = pytest.importorskip("torch")


def test_probe_reports_the_real_torch(live_report_json, this_machine):
    snap = json.loads(live_report_json)["snapshot"]
    facts = snap["torch"]
    assert facts["status"] == "imported"
    assert facts["version"] == torch.__version__
    assert facts["cuda"] == torch.version.cuda
    # Read in a child, not here: torch.cuda.is_available() would start CUDA's driver in the pytest process.
    assert facts["cuda_available"] is this_machine.torch["cuda_available"]
    assert facts["probe"]["status"] == "ok"
    names = {d["name"].lower() for d in snap["environment"]["distributions"]}
    assert {"torch", "typer", "rich", "packaging"} <= names
    assert snap["environment"]["python"]["executable"] == sys.executable


def test_a_healthy_cpu_environment_has_no_findings(live_report_json):
    findings = json.loads(live_report_json)["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []


@pytest.mark.needs_no_nvidia_driver
def test_nvml_is_absent_here_and_says_why():
    info = probe_nvml(timeout=10)
    assert info.status == "unavailable"
    assert info.reason == "LibraryNotFound"


def test_nvml_says_what_libnvidia_ml_itself_says(this_machine):
    """Any machine: the NVML probe (pynvml, in its child) agrees with libnvidia-ml.so.1 opened directly by ctypes."""
    info = probe_nvml(timeout=30)
    nvml = this_machine.nvml
    if not nvml["loads"]:
        assert (info.status, info.reason) == ("unavailable", "LibraryNotFound"), info
    elif nvml["error"]:  # the library loads, but NVML does not start (no device, driver not loaded...)
        assert info.status in ("unavailable", "error") and info.reason, info
    else:
        assert info.status == "ok", info
        assert info.driver_version == nvml["driver"] and len(info.gpus) == nvml["gpus"]
        # Each GPU read, or why not (NoPermission on another container's GPU): never an empty entry.
        assert all((gpu.uuid.startswith("GPU-") and gpu.name) or gpu.error for gpu in info.gpus), info.gpus


def test_take_snapshot_in_process():
    snap = take_snapshot(sys.executable, Budget.from_timeout(60))
    assert snap.torch.status == "imported"
    assert snap.environment.probe.status == "ok"
    assert snap.created
