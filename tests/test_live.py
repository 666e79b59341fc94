"""The real probes on this machine: real torch on the CPU, no NVIDIA driver."""

from __future__ import annotations

import json
import sys

import torch

from helpers import live_report_json  # noqa: F401

from mpdoctor.probes.collect import take_snapshot
from mpdoctor.probes.machine import probe_nvml


def test_probe_reports_the_real_torch(live_report_json):
    snap = json.loads(live_report_json)["snapshot"]
    facts = snap["torch"]
    assert facts["status"] == "imported"
    assert facts["version"] == torch.__version__
    assert facts["cuda"] == torch.version.cuda
    assert facts["cuda_available"] is torch.cuda.is_available()
    assert facts["probe"]["status"] == "ok"
    names = {d["name"].lower() for d in snap["environment"]["distributions"]}
    assert {"torch", "typer", "rich", "packaging"} <= names
    assert snap["environment"]["python"]["executable"] == sys.executable


def test_a_healthy_cpu_environment_has_no_findings(live_report_json):
    findings = json.loads(live_report_json)["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []


def test_nvml_is_absent_here_and_says_why():
    info = probe_nvml(timeout=10)
    assert info.status == "unavailable"
    assert info.reason == "LibraryNotFound"


def test_take_snapshot_in_process():
    snap = take_snapshot(sys.executable, timeout=60)
    assert snap.torch.status == "imported"
    assert snap.environment.probe.status == "ok"
    assert snap.created
