"""The apex family on real throwaway environments: the real probe through ``--python``, then the checks.

Each test builds an environment on disk (tests/apex_envs.py) in one of the install
states of incident 1 and its relatives, runs `mpdoctor check --python` on it from a
project directory, and reads the findings and the recorded facts from the JSON.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import textwrap

import pytest

from apex_envs import (
    EXT_SUFFIX,
    PYPI_APEX_SDIST,
    STALE_TORCH_SYMBOL,
    compiler,
    cuda11_extension,
    install_nvidia_apex,
    install_pypi_apex,
    install_transformers,
    make_env,
    stale_extension,
)
from helpers import run_cli
from mpdoctor.doctor.judge import judge
from mpdoctor.probes.remote import apex as target_apex
from mpdoctor.snapshot import Distribution, snapshot_from_data

needs_cc = pytest.mark.skipif(compiler() is None, reason="needs a C compiler to build real extension modules")


def check(env, project, *extra, timeout="30"):
    """`mpdoctor check --python ENV` run from ``project``; returns (findings by code, snapshot)."""
    result = run_cli(
        "check",
        "--python",
        str(env.python),
        "--no-kernels",
        "--format",
        "json",
        "--fail-on",
        "never",
        "--timeout",
        timeout,
        *extra,
        cwd=str(project),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    codes: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        codes.setdefault(finding["code"], []).append(finding)
    return codes, snapshot_from_data(report["snapshot"])


def apex_codes(codes):
    return sorted(code for code in codes if code.startswith("APEX"))


def commands(finding):
    return [step["command"] for step in finding["fix"] if step.get("command")]


@pytest.fixture
def project(tmp_path):
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def write(directory, name, text):
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_the_pypi_namesake_from_the_registry_is_named_and_removed(tmp_path, project):
    assert (
        hashlib.sha256(PYPI_APEX_SDIST.read_bytes()).hexdigest()
        == "48aa6d9e805e661e609161bd52e0d02d89a9a32f32dc29cde6c950df58129119"
    )
    env = make_env(tmp_path / "env")
    install_pypi_apex(env)
    write(project, "train.py", "from apex import amp\n")
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX001", "APEX006"]
    (finding,) = codes["APEX001"]
    assert finding["severity"] == "warning" and "Pyramid" in finding["title"]
    evidence = " ".join(finding["evidence"])
    assert "Pyramid toolkit to add Velruse" in evidence and "pyramid_mailer.interfaces" in evidence
    assert f"{env.python} -m pip uninstall -y apex" in commands(finding)[0]
    assert "train.py:1 `from apex import amp`" in evidence  # the code that expected NVIDIA apex
    (amp,) = codes["APEX006"]
    assert amp["severity"] == "error" and "cannot import name 'amp' from 'apex'" in amp["title"]
    assert snap.environment.apex.resolution == "package" and snap.environment.apex.extensions == []
    # a pip venv: no conda command, which would act on whatever conda env the shell has active
    assert not [c for found in codes.values() for f in found for c in commands(f) if c.startswith("conda")]
    # the same facts in a conda env whose torch conda installed: conda-forge's build, into this env by its prefix
    conda_env = copy.deepcopy(snap)
    conda_env.environment.python.is_conda = True
    conda_env.environment.python.prefix = "/opt/conda/envs/train"
    site = "/opt/conda/envs/train/lib/python3.11/site-packages"
    torch = Distribution(name="torch", version="2.4.1", location=site, installer="conda", site="environment")
    conda_env.environment.distributions = [d for d in conda_env.environment.distributions if d.name != "torch"]
    conda_env.environment.distributions.append(torch)
    (again,) = judge(conda_env, select=["APEX001"])
    conda = [c for c in (step.command or "" for step in again.fix) if c.startswith("conda")]
    assert conda == ["conda install -p /opt/conda/envs/train -y -c conda-forge nvidia-apex"], conda
    conda_env.environment.apex.conda_packages = ["nvidia-apex-0.1-py311_0.json"]  # and conda holds an apex of its own
    (again,) = judge(conda_env, select=["APEX001"])
    assert "conda remove -p /opt/conda/envs/train -y nvidia-apex" in [step.command for step in again.fix]
    torch.installer = "pip"  # beside a pip torch, conda-forge's apex would bring a second torch: not offered
    (pip_torch,) = judge(conda_env, select=["APEX001"])
    assert not [step for step in pip_torch.fix if (step.command or "").startswith("conda install")]


def test_python_only_apex_and_transformers_before_the_fixes(tmp_path, project, this_machine):
    """Incident 1's environment on this machine's torch: apex without kernels, and transformers that swaps them in.

    The environment sees the test interpreter's torch: a CPU build in CI (APEX002 a warning), a CUDA build on a
    GPU machine (the incident itself: APEX002 an error). Both verdicts are also judged on the recorded facts below.
    """
    env = make_env(tmp_path / "env", torch=True)
    install_nvidia_apex(env)
    install_transformers(env, "4.44.2")
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX002", "APEX005", "APEX006"]
    (norms,) = codes["APEX005"]
    assert "transformers 4.44.2 will swap in apex's fused norms" in norms["title"]
    assert "expected scalar type Float but found Half" in norms["title"]
    assert "transformers/models/t5/modeling_t5.py:10 `from apex.normalization import FusedRMSNorm`" in " ".join(
        norms["evidence"]
    )
    assert any("pip uninstall -y apex" in c for c in commands(norms))
    assert any("'transformers>=5.8.0'" in c for c in commands(norms))
    (amp,) = codes["APEX006"]
    assert amp["severity"] == "error" and amp["title"].startswith("transformers 4.44.2 imports apex.amp")
    assert any("'transformers>=4.53.0'" in c for c in commands(amp))
    (python_only,) = codes["APEX002"]
    assert (snap.torch.cuda or "") == this_machine.torch["cuda"]  # the probe read this machine's torch build
    if this_machine.torch["cuda"]:
        # A CUDA torch: the swapped-in norm fails at the first GPU forward, an error.
        assert python_only["severity"] == "error"
        assert "No module named 'fused_layer_norm_cuda'" in python_only["title"]
    else:
        # A CPU-only torch, where apex's norms fall back to Python: a warning.
        assert python_only["severity"] == "warning" and "Python-only" in python_only["title"]

    users = {use.file: use for use in snap.environment.apex.users}
    swap, trainer = users["transformers/models/t5/modeling_t5.py"], users["transformers/trainer.py"]
    assert (swap.guarded, swap.lazy, swap.conditional, swap.names) == (True, False, False, ["FusedRMSNorm"])
    assert (trainer.guarded, trainer.conditional, trainer.module, trainer.names) == (False, True, "apex", ["amp"])
    assert snap.environment.apex.subpackages == ["normalization", "optimizers"]

    # The same facts with a CUDA torch: the swapped-in norm fails at the first GPU forward.
    gpu = copy.deepcopy(snap)
    gpu.torch.cuda = "12.4"
    (python_only,) = [f for f in judge(gpu, select=["APEX002"])]
    assert python_only.severity == "error" and "No module named 'fused_layer_norm_cuda'" in python_only.title
    assert "CUDA 12.4 toolkit" in python_only.fix[-1].text
    # And with a CPU-only torch: a warning, whatever this machine's torch is.
    cpu = copy.deepcopy(snap)
    cpu.torch.cuda = ""
    (python_only,) = [f for f in judge(cpu, select=["APEX002"])]
    assert python_only.severity == "warning" and "Python-only" in python_only.title


def test_transformers_with_the_fixes_is_left_alone(tmp_path, project):
    env = make_env(tmp_path / "env")
    install_nvidia_apex(env, extensions={"apex_C.py": "", "amp_C.py": "", "fused_layer_norm_cuda.py": ""})
    env.install(
        "transformers",
        "5.8.0",
        {"transformers/__init__.py": "", "transformers/trainer.py": "def train():\n    from apex import amp\n"},
    )
    codes, snap = check(env, project)
    assert apex_codes(codes) == []
    (use,) = snap.environment.apex.users
    assert use.lazy and use.distribution == "transformers"


@needs_cc
def test_extension_built_against_another_torch(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    stale_extension(env.site / f"amp_C{EXT_SUFFIX}")
    install_nvidia_apex(env, extensions={"apex_C.py": "", "fused_layer_norm_cuda.py": ""})
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX003"]
    (finding,) = codes["APEX003"]
    assert finding["severity"] == "error"
    assert finding["title"] == f"apex's amp_C was built against another torch: undefined symbol {STALE_TORCH_SYMBOL}"
    loads = {ext.name: ext for ext in snap.environment.apex.extensions}
    assert loads["amp_C"].load_status == "error" and "undefined symbol" in loads["amp_C"].load_detail
    assert loads["apex_C"].load_status == "ok" and loads["fused_layer_norm_cuda"].load_status == "ok"
    assert isinstance(loads["amp_C"].needed, list) and loads["apex_C"].needed is None  # a real ELF; a .py
    assert snap.torch.status == "imported" and snap.torch.probe.status == "ok"


def test_a_crashing_and_a_hanging_extension_cost_only_themselves(tmp_path, project):
    env = make_env(tmp_path / "env", torch=True)
    install_nvidia_apex(
        env,
        extensions={
            "apex_C.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
            "amp_C.py": "import time\ntime.sleep(600)\n",
            "fused_layer_norm_cuda.py": "",
        },
    )
    codes, snap = check(env, project, timeout="12")  # 4 s for the loads, 1.3 s for each
    loads = {ext.name: ext for ext in snap.environment.apex.extensions}
    assert loads["apex_C"].load_status == "crashed" and "SIGSEGV" in loads["apex_C"].load_detail
    assert loads["amp_C"].load_status == "timeout"
    assert loads["fused_layer_norm_cuda"].load_status == "ok"
    assert snap.torch.status == "imported" and snap.torch.probe.status == "ok"  # torch's facts survive
    (finding,) = codes["APEX003"]
    assert "apex_C, amp_C" in finding["title"]


@needs_cc
def test_extension_built_for_cuda_11(tmp_path, project, this_machine):
    """An extension linking CUDA 11's runtime, beside this machine's torch: a CPU build (CI) or a CUDA build."""
    torch_cuda = this_machine.torch["cuda"]
    if torch_cuda.split(".")[0] == "11":
        pytest.skip(
            f"needs a torch not built for CUDA 11 (the stand-in extension's CUDA): {this_machine.describe_torch()}"
        )
    env = make_env(tmp_path / "env", torch=True)
    cuda11_extension(env.site / f"fused_layer_norm_cuda{EXT_SUFFIX}", tmp_path / "cuda11")
    install_nvidia_apex(env, extensions={"apex_C.py": "", "amp_C.py": ""})
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX004"]  # not also APEX003: the CUDA mismatch is the cause
    (finding,) = codes["APEX004"]
    torch_text = f"CUDA {torch_cuda}" if torch_cuda else "no CUDA (a CPU-only or ROCm build)"
    assert (snap.torch.cuda or "") == torch_cuda  # the probe read this machine's torch build
    assert finding["title"] == f"apex was built for CUDA 11, but torch uses {torch_text}"
    assert "libcudart.so.11.0: cannot open shared object file" in " ".join(finding["evidence"])
    (ext,) = [e for e in snap.environment.apex.extensions if e.name == "fused_layer_norm_cuda"]
    assert "libcudart.so.11.0" in ext.needed and ext.load_status == "error"


@needs_cc
@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf to compare with")
def test_elf_needed_agrees_with_readelf(tmp_path):
    library = cuda11_extension(tmp_path / "ext.so", tmp_path / "lib")
    import torch

    torch_c = torch._C.__file__
    for path in (str(library), torch_c):
        listing = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
        expected = [line.split("[", 1)[1].rstrip("]") for line in listing.splitlines() if "(NEEDED)" in line]
        assert target_apex.elf_needed(path) == expected and expected
    assert target_apex.elf_needed(__file__) is None  # not ELF
    (tmp_path / "short.so").write_bytes(b"\x7fELF\x02\x01")
    assert target_apex.elf_needed(str(tmp_path / "short.so")) is None  # truncated: no facts, no exception


def test_code_mixing_apex_amp_and_torch_amp(tmp_path, project):
    env = make_env(tmp_path / "env")
    install_nvidia_apex(env, amp=True, extensions={"apex_C.py": "", "amp_C.py": "", "fused_layer_norm_cuda.py": ""})
    write(
        project,
        "src/train.py",
        """\
        import torch
        from apex import amp

        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
        scaler = torch.cuda.amp.GradScaler()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(batch)
        """,
    )
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX007", "APEX008"]
    evidence = " ".join(codes["APEX007"][0]["evidence"])
    assert "src/train.py:4: `model, optimizer = amp.initialize(" in evidence and "src/train.py:5" in evidence
    assert codes["APEX008"][0]["severity"] == "info"
    spellings = {use.what for use in snap.environment.project.torch_amp_uses}
    assert spellings == {"torch.cuda.amp.GradScaler", "torch.autocast"}


def test_source_checkout_in_the_working_directory(tmp_path, project):
    env = make_env(tmp_path / "env")
    write(project, "apex/setup.py", "from setuptools import setup\n")
    write(project, "apex/apex/__init__.py", "")
    write(project, "apex/apex/amp/__init__.py", "")
    write(project, "apex/tests/test_amp.py", "from apex import amp\n")  # apex's own code, not the user's
    codes, snap = check(env, project)
    assert apex_codes(codes) == ["APEX009"]
    (finding,) = codes["APEX009"]
    assert "in scripts run from the working directory gets a source checkout of NVIDIA apex" in finding["title"]
    assert any(c.startswith("mv ") and c.endswith("apex.disabled") for c in commands(finding))
    assert snap.environment.project.apex_uses == []


def test_a_second_apex_in_the_working_directory_shadows_the_installed_one(tmp_path, project):
    env = make_env(tmp_path / "env")
    install_nvidia_apex(env, extensions={"apex_C.py": "", "amp_C.py": "", "fused_layer_norm_cuda.py": ""})
    write(project, "apex/__init__.py", "")
    codes, _ = check(env, project)
    assert apex_codes(codes) == ["APEX009"]
    assert "import " + str(project / "apex") + ", not the installed apex" in codes["APEX009"][0]["title"]


def test_no_apex_no_findings_and_no_scan_of_installed_code(tmp_path, project):
    env = make_env(tmp_path / "env")
    install_transformers(env)
    codes, snap = check(env, project)
    assert apex_codes(codes) == []
    assert not snap.environment.apex.users_scanned and snap.environment.apex.resolution == "none"


def test_secrets_in_scanned_code_are_redacted(tmp_path, project):
    env = make_env(tmp_path / "env")
    write(project, "train.py", "from apex import amp  # HF_TOKEN=hf_CanaryCanaryCanaryCanary42\n")
    result = run_cli("check", "--python", str(env.python), "--no-kernels", "--format", "json", cwd=str(project))
    assert "train.py:1" in result.stdout and "CanaryCanary" not in result.stdout
