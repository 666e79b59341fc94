"""NCCL as torch loads it: ``torch.cuda.nccl.version()``, read by the real torch probe in the target interpreter.

The test interpreter's own torch is read for real: a CPU build (CI) has no NCCL, and the
probe records none, and no error; a CUDA build's NCCL is recorded as torch itself
reports it. A stand-in torch package (a real directory on PYTHONPATH, labelled so)
stands for a CUDA build whose NCCL says 2.21.5, on any machine.
"""

from __future__ import annotations

import sys

import pytest

from mpdoctor.probes.budget import Budget
from mpdoctor.probes.environment import run_part, torch_facts
from mpdoctor.probes.remote import steps as names

STAND_IN = {
    "torch/__init__.py": "__version__ = '2.13.0+cu130'\nfrom . import version, backends, cuda\n",
    "torch/version.py": "cuda = '13.0'\nhip = None\ngit_version = 'stand-in'\n",
    "torch/backends/__init__.py": "from . import cudnn\n",
    "torch/backends/cudnn.py": "def version():\n    return 91002\n",
    "torch/cuda/__init__.py": "def get_arch_list():\n    return ['sm_90']\n"
    "def is_available():\n    return False\n"
    "def device_count():\n    return 0\n",
    "torch/cuda/nccl.py": "def version():\n    return (2, 21, 5)\n",
}


def torch_probe(python: str):
    budget = Budget.from_timeout(60)
    result, steps = run_part(python, names.PART_TORCH, budget.part, budget.torch_limits())
    return torch_facts(result, steps)


@pytest.mark.needs_cpu_torch  # its premise: this torch has no NCCL
def test_a_cpu_torch_has_no_nccl_and_that_is_no_error():
    info = torch_probe(sys.executable)
    assert info.status == "imported", info.probe
    assert info.nccl == "" and "nccl" not in info.fact_errors


def test_the_nccl_this_torch_loads_is_recorded_as_torch_reports_it(this_machine):
    """Any machine: the probe's NCCL is what torch.cuda.nccl.version() says in a child of its own ("" for none)."""
    info = torch_probe(sys.executable)
    assert info.status == "imported", info.probe
    assert info.nccl == this_machine.torch["nccl"] and "nccl" not in info.fact_errors
    if this_machine.torch["cuda"] and this_machine.torch["nccl"]:
        assert info.nccl.count(".") >= 2  # "2.27.7", not NCCL_VERSION_CODE


def test_the_nccl_torch_loads_is_recorded(tmp_path, monkeypatch):
    for name, text in STAND_IN.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    info = torch_probe(sys.executable)
    assert (info.status, info.version) == ("imported", "2.13.0+cu130"), info.probe
    assert info.nccl == "2.21.5"
