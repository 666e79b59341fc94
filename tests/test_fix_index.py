"""Every fix that pins a local torch build names the index that serves it, and keeps the build the user has.

PyPI has no local versions: ``pip install torch==2.13.0+cpu`` finds nothing there ("no matching distribution"),
only the PyTorch index of that label (https://download.pytorch.org/whl/cpu, .../cu126) has it. A command that
names only packages that index serves takes it as ``--index-url``; one that also names packages only PyPI has
adds it with ``--extra-index-url`` (with --index-url, pip would look for those on the torch index too).

Walked: every fix command of every snapshot fixture (and constructed variants that make the pins appear), the
fix commands of a real ``mpdoctor fleet compare`` run, and every fix command of every ``explain`` signature.
Also here: the fixes of issue 43 that these rules grew from (TORCH002's missing cuDNN, the minor-version note of
TORCH001/TORCH005, explain's cpu-half-matmul).
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from fixtures.base import capture, cuda_torch, dist, with_distributions, with_nvml, with_torch
from fixtures.machines import H100_NODE
from fix_simulator import apply, prove
from helpers import load_fixture, snapshot_fixture_names
from mpdoctor.cli import app
from mpdoctor.doctor.judge import judge
from mpdoctor.explain.known import all_signatures
from mpdoctor.findings import Finding
from mpdoctor.schema.serde import to_data
from mpdoctor.snapshot import Snapshot

TORCH_INDEX = "https://download.pytorch.org/whl"
# What the PyTorch index serves beside torch's own dependencies (written out here, not read from mpdoctor).
ON_TORCH_INDEX = {"torch", "torchvision", "torchaudio", "xformers", "triton"}
LOCAL_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)===?[^+\s]+\+(?P<label>cpu|cu\d+|rocm[\d.]+|xpu)$")


def _option(words: list[str], name: str) -> list[str]:
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == name]


def index_problems(command: str) -> list[str]:
    """What is wrong with how ``command`` gets its torch builds: a local pin without its index, or an --index-url
    that other packages of the command cannot be found on."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    if "pip" not in words or "install" not in words:
        return []
    args = words[words.index("install") + 1 :]
    named = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or not args[i - 1].startswith("--"))]
    problems = []
    main, extra = _option(args, "--index-url"), _option(args, "--extra-index-url")
    for word in named:
        pin = LOCAL_PIN.match(word)
        if pin and f"{TORCH_INDEX}/{pin['label']}" not in main + extra:
            problems.append(f"{word} without {TORCH_INDEX}/{pin['label']}: {command}")
    if any(url.startswith(TORCH_INDEX) for url in main):
        names = {re.split(r"[<>=!~;\[ ]", w, maxsplit=1)[0].lower() for w in named}
        if not names <= ON_TORCH_INDEX:
            problems.append(f"--index-url {main[0]} for {', '.join(sorted(names - ON_TORCH_INDEX))}: {command}")
    return problems


def commands_of(findings: list[Finding]) -> list[str]:
    return [step.command for f in findings for step in f.fix if step.command]


def _constructed() -> dict[str, Snapshot]:
    """Snapshots that make every pinning fix appear with a local build (constructed from the recorded captures)."""
    cpu = load_fixture("cpu-laptop")  # torch 2.13.0+cpu, recorded
    return {
        # transformers needs another torch (STACK001, torch kept): a PyPI package beside a local torch pin
        "transformers-wants-other-torch": with_distributions(cpu, dist("transformers", "4.44.2", ["torch>=99"])),
        # numpy pinned by a package while torch is kept: STACK001's "install what it needs while keeping torch"
        "needs-numpy": with_distributions(cpu, dist("accelerate", "1.0.0", ["numpy<2", "torch>=2.0"])),
        # torchvision built for torch 2.5.1 beside a CUDA torch: the same build's index for the older torch
        "torchvision-old-cuda": with_distributions(
            cuda_torch(load_fixture("h100-node-healthy"), version="2.13.0+cu126", cuda="12.6"),
            dist("torchvision", "0.20.1", ["torch==2.5.1"]),
        ),
    }


def _all_snapshots() -> list[tuple[str, Snapshot]]:
    return [(name, load_fixture(name)) for name in snapshot_fixture_names()] + list(_constructed().items())


def test_the_rule_itself_catches_what_it_is_for():
    assert index_problems("python -m pip install torch==2.13.0+cpu")
    assert index_problems("python -m pip install transformers torch==2.13.0+cpu --index-url " + TORCH_INDEX + "/cpu")
    assert index_problems("python -m pip install torch==2.13.0+cu126 --index-url " + TORCH_INDEX + "/cpu")
    assert not index_problems("python -m pip install torchvision torch==2.13.0+cpu --index-url " + TORCH_INDEX + "/cpu")
    assert not index_problems(
        "python -m pip install transformers torch==2.13.0+cpu --extra-index-url " + TORCH_INDEX + "/cpu"
    )


def test_every_check_fix_that_pins_a_local_torch_build_names_its_index():
    pinned, problems = 0, []
    for name, snap in _all_snapshots():
        for command in commands_of(judge(snap)):
            pinned += any(LOCAL_PIN.match(w) for w in shlex.split(command) if "pip" in command)
            problems += [f"{name}: {p}" for p in index_problems(command)]
    assert problems == []
    assert pinned >= 5  # the walk saw local pins: STACK001 (three ways), TORCH002, TORCH008


def test_fleet_compare_pins_a_local_torch_from_its_index(tmp_path):
    """A real `mpdoctor fleet compare` of two saved nodes, one with another torch build (constructed nodes)."""
    paths = []
    for n, version in enumerate(("2.13.0+cu130", "2.13.0+cu130", "2.12.1+cu128")):
        snap = cuda_torch(with_nvml(capture("cpu-laptop"), H100_NODE[:1], driver="580.65.06", cuda="13.0"), version)
        snap.distribution("torch").version = version  # what pip lists, as the fingerprint compares it
        path = tmp_path / f"node{n}.json"
        path.write_text(json.dumps(to_data(snap)))
        paths.append(str(path))
    result = CliRunner().invoke(app, ["fleet", "compare", *paths, "--format", "json", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    commands = [step["command"] for f in data["findings"] for step in f["fix"] if step["command"]]
    torch_pins = {
        f["title"].split(":")[0]: step["command"]
        for f in data["findings"]
        for step in f["fix"]
        if "torch==" in (step["command"] or "")
    }
    # what pip lists (package torch) and what imports (torch): each finding's fix is the reference's build
    assert torch_pins == {
        title: "python -m pip install torch==2.13.0+cu130 --index-url " + TORCH_INDEX + "/cu130"
        for title in ("package torch differs", "torch differs")
    }
    assert [p for c in commands for p in index_problems(c)] == []


def test_every_explain_fix_that_pins_a_local_torch_build_names_its_index():
    commands = [
        fix.command
        for signature in all_signatures()
        for fix in signature.fixes + tuple(f for alt in signature.alternatives for f in alt.fixes)
        if fix.command
    ]
    assert len(commands) > 50
    assert [p for c in commands for p in index_problems(c)] == []


# ---------------------------------------------------------------- the fixes themselves


def test_stack001_keeps_the_build_installed_in_every_way():
    [finding] = [f for f in judge(load_fixture("precision-stack-conflicts")) if f.code == "STACK001"]
    keep, other = commands_of([finding])
    assert keep.endswith("install --upgrade torchvision torch==2.13.0+cpu --index-url " + TORCH_INDEX + "/cpu")
    # the torch torchvision was built for, as the CPU build the user has: PyPI's torch 2.5.1 is a CUDA build
    assert other.endswith("install torch==2.5.1+cpu --index-url " + TORCH_INDEX + "/cpu")
    snap = _constructed()["transformers-wants-other-torch"]
    [finding] = [f for f in judge(snap) if f.code == "STACK001"]
    assert commands_of([finding])[0].endswith(
        "install --upgrade transformers torch==2.13.0+cpu --extra-index-url " + TORCH_INDEX + "/cpu"
    )


def test_stack001_installs_a_missing_torch_from_the_index_this_machine_needs():
    [finding] = [f for f in judge(load_fixture("oneflow-pypi-cpu")) if f.code == "STACK001" and "torch" in f.title]
    assert commands_of([finding])[0].endswith("install torch --index-url " + TORCH_INDEX + "/cpu")


def _driver_535(name: str) -> Snapshot:
    snap = load_fixture(name)
    assert snap.machine.nvml.driver_version == "535.113.01"  # CUDA 12.2: no torch 2.13 build is that old
    return snap


@pytest.mark.parametrize("name, code", [("titan-rtx-1080ti-cpu-torch", "TORCH005"), ("torch-missing", "TORCH001")])
def test_a_build_under_minor_version_compatibility_says_so_and_what_gives_full_support(name, code):
    snap = _driver_535(name)
    [finding] = [f for f in judge(snap) if f.code == code]
    [install] = [s for s in finding.fix if s.command and "cu126" in s.command]
    assert "runs under CUDA minor-version compatibility, without PTX JIT" in install.text
    assert "driver 560.28.03 or newer gives it full support" in install.text
    assert "TORCH006" in install.text
    # and it is so: after the install, TORCH006 warns, and after the driver it names, it does not
    after = apply(snap, [install])
    assert [f.severity for f in judge(after) if f.code == "TORCH006"] == ["warning"]
    results = prove(snap, finding, judge)
    assert all(r.verdict in ("proven", "no-command") for r in results)
    assert any("TORCH006" in r.announced for r in results)
    from mpdoctor.checks import fixes

    upgraded = apply(snap, [fixes.driver_upgrade_step(snap, "12.6"), install])
    assert not [f for f in judge(upgraded) if f.code == "TORCH006"]


def test_a_build_the_driver_fully_supports_has_no_such_note():
    [finding] = [f for f in judge(load_fixture("visible-devices-duplicate")) if f.code == "TORCH001"]
    [install] = [s for s in finding.fix if s.command and "--index-url" in s.command]
    assert "cu130" in install.command and "minor-version" not in install.text


# TORCH002: a CUDA torch whose cuDNN is gone. Constructed: the CPU capture's torch record turned into 2.8.0+cu128
# failing to import, with the Requires-Dist lines a CUDA wheel of torch carries (nvidia-* wheels pinned, for Linux):
# five of torch 2.8.0's lines from PyPI, verbatim (`pip install --dry-run --no-deps --report - torch==2.8.0` reads
# the metadata alone).
CUDA_WHEEL_REQUIRES = [
    "filelock",
    'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-nccl-cu12==2.27.3; platform_system == "Linux" and platform_machine == "x86_64"',
]


def _torch_missing_library(library: str, requires=CUDA_WHEEL_REQUIRES) -> Snapshot:
    snap = load_fixture("torch-import-error")
    message = f"{library}: cannot open shared object file: No such file or directory"
    snap = with_torch(snap, error_type="ImportError", error_message=message, error_traceback="")
    for d in snap.environment.distributions:
        if d.name == "torch":
            d.version, d.requires = "2.8.0+cu128", list(requires)
    return snap


@pytest.mark.parametrize(
    "library, wanted",
    [
        ("libcudnn.so.9", "nvidia-cudnn-cu12==9.10.2.21"),
        ("libcudnn_graph.so.9", "nvidia-cudnn-cu12==9.10.2.21"),
        ("libcublasLt.so.12", "nvidia-cublas-cu12==12.8.4.1"),
        ("libcudart.so.12", "nvidia-cuda-runtime-cu12==12.8.90"),
        ("libnccl.so.2", "nvidia-nccl-cu12==2.27.3"),
    ],
)
def test_torch002_reinstalls_the_dependency_that_ships_the_missing_library(library, wanted):
    [finding] = [f for f in judge(_torch_missing_library(library)) if f.code == "TORCH002"]
    [reinstall] = [s for s in finding.fix if s.command and "install" in s.command]
    assert reinstall.command.endswith(f"install --force-reinstall --no-deps {wanted}")
    assert "torch==" not in reinstall.command


def test_torch002_reinstalls_torch_itself_when_no_dependency_ships_the_library():
    """A CPU build asking for cuDNN has another build's files (the recorded fixture): torch, from its index."""
    [finding] = [f for f in judge(load_fixture("torch-import-error")) if f.code == "TORCH002"]
    assert commands_of([finding])[-1].endswith(
        "install --force-reinstall --no-deps torch==2.13.0+cpu --index-url " + TORCH_INDEX + "/cpu"
    )
    # a dependency that does not apply to this platform is not the one to reinstall
    other_os = [r.replace('"Linux"', '"Windows"') for r in CUDA_WHEEL_REQUIRES]
    [finding] = [f for f in judge(_torch_missing_library("libcudnn.so.9", other_os)) if f.code == "TORCH002"]
    assert "nvidia-cudnn" not in commands_of([finding])[-1]


def test_explain_cpu_half_matmul_puts_the_code_fix_first_and_keeps_the_build():
    [signature] = [s for s in all_signatures() if s.id == "cpu-half-matmul"]
    assert "float32" in signature.fixes[0].text and signature.fixes[0].command is None
    upgrades = [f for f in signature.fixes if f.command and "torch" in f.command and "install" in f.command]
    assert upgrades and all("--index-url" in f.command for f in upgrades)
    assert all("CUDA build" in f.text for f in upgrades)  # says how a CUDA build keeps its own index
