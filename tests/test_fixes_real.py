"""The fixes mpdoctor prints, run for real: each state built in a real venv, each fix pasted into a shell.

For every code whose fix this machine can carry out (pip from PyPI, files and directories; no GPU, no driver, no
CUDA torch download), a test builds the state for real (a package installed by the venv's own pip, a wheel with
crafted metadata, a damaged dist-info, a source checkout in the working directory, C extensions compiled here against
another torch, what `pip uninstall torch` leaves behind), checks that mpdoctor reports it, runs the commands of the
fix's first way (and of the alternatives this machine can run) as a user would paste them, and checks again: the
finding is gone, no new warning or error came, pip runs, and what the fix promises works (`import pynvml` gets
NVIDIA's bindings, `import torch` still imports torch). ``proves`` records the codes; docs/checks.md lists them, and
the last test holds the two to each other. The fixes this machine cannot run are the fix simulator's
(tests/test_fix_simulator.py).

The venvs are copies of one fresh venv; torch, where a state needs it, is this test run's own, linked in through a
.pth file (``real_envs.torch_site``): seconds instead of a 900 MB install, and out of reach of any fix run here.
Where the fix itself must uninstall and install torch (TORCH011), torch is put in the venv as pip installed it, by
hard links (``real_envs.install_copy``), and the fix's install takes this machine's own torch wheel, pinned.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import apex_envs
from mpdoctor.checks import _apex
from real_envs import (
    PROVEN_BY_RUNNING,
    add_site,
    child_env,
    copy_venv,
    findings,
    install_copy,
    local_wheels,
    make_venv,
    make_wheel,
    pip,
    prove_fix,
    proves,
    runs,
    site_packages,
    torch_site,
)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "checks.md"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A fresh venv with pip, made once: every test works on a copy."""
    root = tmp_path_factory.mktemp("fresh")
    make_venv(root / "v")
    return root / "v"


@pytest.fixture(scope="module")
def torch_dir(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    return torch_site(tmp_path_factory.mktemp("torch") / "site")


@pytest.fixture
def venv(fresh, tmp_path):
    """A copy of the fresh venv (seconds cheaper than a new one), in a working directory of its own."""
    work = tmp_path / "work"
    work.mkdir()
    return copy_venv(fresh, tmp_path / "v"), work


def with_torch(python: Path, torch_dir: Path) -> Path:
    add_site(python, torch_dir, "_torch")
    assert runs(python, "import torch; torch.ones(2).sum()").returncode == 0
    return python


def torch_works(python: Path) -> bool:
    return runs(python, "import torch; assert float(torch.ones(2, dtype=torch.bfloat16).sum()) == 2").returncode == 0


# ---------------------------------------------------------------- apex


@pytest.fixture(scope="module")
def pypi_apex_wheel(tmp_path_factory) -> Path:
    """The real PyPI "apex" sdist (a Pyramid toolkit) built into a wheel once, by this test run's pip."""
    out = tmp_path_factory.mktemp("apex-wheel")
    pip(sys.executable, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(apex_envs.PYPI_APEX_SDIST))
    (wheel,) = out.glob("apex-*.whl")
    return wheel


@proves("APEX001")
def test_pypi_apex_is_uninstalled_by_its_fix(venv, pypi_apex_wheel):
    python, work = venv
    pip(python, "install", "--no-deps", str(pypi_apex_wheel))  # as `pip install apex` leaves it, less its web deps
    # what code that asks "is apex installed?" sees (importing it fails: No module named 'pyramid_mailer')
    found = "import importlib.util, sys; sys.exit(importlib.util.find_spec('apex') is None)"
    assert runs(python, found).returncode == 0
    prove_fix(python, "APEX001", cwd=work)
    assert runs(python, found).returncode == 1


@proves("APEX002")
def test_python_only_nvidia_apex_is_uninstalled_by_its_fix(venv, torch_dir, tmp_path):
    python, work = with_torch(venv[0], torch_dir), venv[1]
    wheel = make_wheel(
        tmp_path, "apex", "0.1", files=apex_envs.nvidia_apex_files(), summary="PyTorch Extensions written by NVIDIA"
    )
    pip(python, "install", "--no-deps", str(wheel))
    prove_fix(python, "APEX002", cwd=work)
    assert runs(python, "import apex").returncode != 0 and torch_works(python)


# An extension module of apex's as a build against an older torch leaves it: real C, compiled here against this
# Python's headers and linked to this torch's libc10, calling c10's maybe_wrap_dim_slow as torch < 2.1 exported it
# (NVIDIA/apex#1677). This torch exports only the templated one, so importing it fails as a stale build fails.
STALE_EXTENSION = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern long %(symbol)s(long dim, long rank, _Bool wrap_scalar);

static PyObject *wrap_dim(PyObject *self, PyObject *args) {
    long dim, rank;
    if (!PyArg_ParseTuple(args, "ll", &dim, &rank))
        return NULL;
    return PyLong_FromLong(%(symbol)s(dim, rank, 1));
}

static PyMethodDef methods[] = {{"wrap_dim", wrap_dim, METH_VARARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, methods};

PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&module); }
"""


@pytest.fixture(scope="module")
def stale_apex_wheel(tmp_path_factory) -> Path:
    """NVIDIA apex with its three core extensions compiled against another torch, as a platform wheel."""
    import sysconfig

    from packaging import tags

    torch = pytest.importorskip("torch")
    include = Path(sysconfig.get_paths()["include"])
    if not apex_envs.compiler() or not (include / "Python.h").is_file():
        pytest.skip("no C compiler or no Python headers to build an extension with")
    out = tmp_path_factory.mktemp("stale-apex")
    libs = Path(torch.__file__).parent / "lib"
    extensions = {}
    for name in _apex.CORE_EXTENSIONS:
        source = STALE_EXTENSION % {"name": name, "symbol": apex_envs.STALE_TORCH_SYMBOL}
        built = apex_envs.compile_shared(
            out / f"{name}{apex_envs.EXT_SUFFIX}", source, f"-I{include}", f"-L{libs}", "-lc10", directory=out
        )
        extensions[name + apex_envs.EXT_SUFFIX] = built.read_bytes()
    files = apex_envs.nvidia_apex_files(extensions=extensions)
    tag = str(next(iter(tags.sys_tags())))
    return make_wheel(out, "apex", "0.1", files=files, summary=_apex.NVIDIA_SUMMARY, tag=tag)


@proves("APEX003")
def test_an_apex_built_against_another_torch_is_removed_by_its_alternative(venv, torch_dir, stale_apex_wheel):
    python, work = with_torch(venv[0], torch_dir), venv[1]
    pip(python, "install", "--no-deps", str(stale_apex_wheel))
    # the state, as the user meets it: torch imports, apex's extension does not
    loaded = runs(python, "import torch, amp_C")
    assert loaded.returncode != 0 and f"undefined symbol: {apex_envs.STALE_TORCH_SYMBOL}" in loaded.stderr, loaded
    # its first way builds apex from GitHub with nvcc (no CUDA here); the second, removing apex, runs here
    before, after, commands = prove_fix(python, "APEX003", cwd=work, way=1)
    (finding,) = findings(before, "APEX003")
    assert apex_envs.STALE_TORCH_SYMBOL in finding["title"], finding["title"]  # the import's own words
    assert not findings(after, "APEX002"), "removing apex left a Python-only apex behind"
    assert runs(python, "import amp_C").returncode != 0 and runs(python, "import apex").returncode != 0
    assert torch_works(python)


@proves("APEX009")
def test_an_apex_checkout_in_the_working_directory_is_moved_away(venv):
    python, work = venv
    (work / "apex" / "apex" / "amp").mkdir(parents=True)
    (work / "apex" / "setup.py").write_text("from setuptools import setup\nsetup(name='apex')\n")
    (work / "apex" / "apex" / "__init__.py").write_text("")
    prove_fix(python, "APEX009", cwd=work)
    assert not (work / "apex").exists()


# ---------------------------------------------------------------- pynvml


@proves("GPU009")
@pytest.mark.parametrize(
    "installed",
    [
        ("pynvml==11.5.0",),  # its own old bindings, nothing else
        ("nvidia-ml-py", "pynvml==11.5.0"),  # its pynvml/ package shadows nvidia-ml-py's pynvml.py
        ("pynvml==13.0.1",),  # the shim, which brings nvidia-ml-py
    ],
)
def test_the_deprecated_pynvml_is_replaced_by_nvidia_ml_py(venv, installed):
    python, work = venv
    for spec in installed:  # in this order: a later install of the other is what users do
        pip(python, "install", spec)
    prove_fix(python, "GPU009", cwd=work)
    # what the fix promises: `import pynvml` gets NVIDIA's bindings, from nvidia-ml-py
    origin = runs(python, "import pynvml; print(pynvml.__file__)")
    assert origin.returncode == 0 and origin.stdout.strip().endswith("/pynvml.py"), origin
    assert "nvidia-ml-py" in pip(python, "list")


# ---------------------------------------------------------------- metadata


def metadata_dir(python: Path, name: str) -> Path:
    (found,) = site_packages(python).glob(f"{name}-*.dist-info")
    return found


@proves("ENV002")
@pytest.mark.parametrize("damage", ["no Version", "no METADATA", "garbled"])
def test_broken_metadata_is_removed_and_the_package_reinstalled(venv, damage):
    python, work = venv
    pip(python, "install", "six==1.16.0")
    metadata = metadata_dir(python, "six") / "METADATA"
    if damage == "no Version":
        metadata.write_text(re.sub(r"(?m)^Version: .*\n", "", metadata.read_text()))
    elif damage == "no METADATA":
        metadata.unlink()
    else:
        metadata.write_bytes(b"\xff\xfe\x00garbage\x00" * 10)
    prove_fix(python, "ENV002", cwd=work)
    assert runs(python, "import six").returncode == 0
    assert re.search(r"(?m)^six +1\.16\.0$", pip(python, "list")), "six 1.16.0 is not installed again"


# ---------------------------------------------------------------- the precision stack

# pip's retries against an index this machine cannot reach (the PyTorch index of a `torch==V+cpu` pin: the local
# build here is already installed, so pip needs nothing from it) only cost time; the commands run as printed.
NO_RETRIES = child_env(PIP_RETRIES="0")


@proves("STACK001")
@pytest.mark.parametrize(
    "requires, installed, torch",
    [
        (["numpy<2.3"], ["numpy==2.4.6"], True),  # a release too new for a package, beside torch: the fix pins torch
        (["safetensors>=0.4", "numpy>=2"], ["numpy==2.4.6"], False),  # a requirement not installed at all
    ],
)
def test_an_unmet_requirement_is_met_by_its_fix(venv, torch_dir, tmp_path, requires, installed, torch):
    python, work = venv
    if torch:
        with_torch(python, torch_dir)
    for spec in installed:
        pip(python, "install", spec)
    # a tiny package with crafted requirements, installed as pip installs any wheel (--no-deps keeps them unmet)
    pip(python, "install", "--no-deps", str(make_wheel(tmp_path, "mpd-needs", "1.0", requires=requires)))
    before, _, commands = prove_fix(python, "STACK001", cwd=work, env=NO_RETRIES, title="mpd-needs 1.0 requires")
    if torch:
        assert any("torch==" in c for c in commands), commands  # torch pinned in the same command
        assert torch_works(python)
    check_again = pip(python, "check")
    assert "mpd-needs" not in check_again, check_again


@proves("STACK002")
def test_safetensors_is_installed_by_its_fix(venv, tmp_path):
    python, work = venv
    # transformers' own files do not matter here: its metadata, requiring safetensors as transformers does
    wheel = make_wheel(tmp_path, "transformers", "4.44.2", requires=["safetensors>=0.4.1"])
    pip(python, "install", "--no-deps", str(wheel))
    before, _, _ = prove_fix(python, "STACK002", cwd=work)
    assert not findings(before, "STACK001")  # the missing safetensors is STACK002's alone
    assert runs(python, "import safetensors").returncode == 0


@proves("APEX005")
def test_a_library_swapping_its_norms_for_apex_is_cured_by_removing_apex(venv, torch_dir, tmp_path):
    python, work = with_torch(venv[0], torch_dir), venv[1]
    apex = make_wheel(
        tmp_path, "apex", "0.1", files=apex_envs.nvidia_apex_files(), summary="PyTorch Extensions written by NVIDIA"
    )
    # transformers 4.44's T5 (its real guarded `from apex.normalization import FusedRMSNorm`), as a wheel
    files = {
        "transformers/__init__.py": "",
        "transformers/models/__init__.py": "",
        "transformers/models/t5/__init__.py": "",
        "transformers/models/t5/modeling_t5.py": apex_envs.T5_SWAP,
    }
    transformers = make_wheel(tmp_path, "transformers", "4.44.2", files=files, requires=["safetensors>=0.4.1"])
    pip(python, "install", "--no-deps", str(apex), str(transformers))
    pip(python, "install", "safetensors")
    prove_fix(python, "APEX005", cwd=work)
    assert runs(python, "import apex").returncode != 0 and torch_works(python)


# ---------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def local_torch(tmp_path_factory) -> dict:
    """What a fix that installs torch may install here: this test run's torch, from a wheel on this machine's disk
    (pinned by a constraint, so a bare `pip install torch` gets exactly it). The environment to run fixes in."""
    torch = pytest.importorskip("torch")
    if not local_wheels("torch", torch.__version__):
        pytest.skip(f"no torch {torch.__version__} wheel in pip's find-links here: installing it would download it")
    constraints = tmp_path_factory.mktemp("constraints") / "torch.txt"
    constraints.write_text(f"torch=={torch.__version__}\n")
    return child_env(PIP_RETRIES="0", PIP_CONSTRAINT=str(constraints))


@proves("TORCH011")
def test_a_torch_directory_left_by_an_uninstall_is_replaced_by_a_working_torch(venv, local_torch):
    python, work = venv
    site = site_packages(python)
    installed = install_copy(python, "torch")  # torch and its requirements, as pip installed them
    # a library copied into torch/lib by hand: pip's uninstall removes what it installed and leaves the directory
    (site / "torch" / "lib" / "libcustom_ops.so").write_bytes(b"\x7fELF")
    pip(python, "uninstall", "-y", "torch")
    assert not (site / "torch" / "__init__.py").exists() and (site / "torch").is_dir()
    commands = prove_fix(python, "TORCH011", cwd=work, env=local_torch)[2]
    assert any(" install torch" in command for command in commands), commands
    # torch is back where it was, as a package that works, beside the requirements it had
    origin = runs(python, "import torch; print(torch.__file__)")
    assert origin.stdout.strip() == str(site / "torch" / "__init__.py"), origin
    assert torch_works(python)
    listed = pip(python, "list")
    assert all(re.search(rf"(?im)^{re.escape(name)} ", listed) for name in installed), listed


# ---------------------------------------------------------------- what docs/checks.md says of it


def listed(label: str) -> list[str]:
    (line,) = [line for line in DOCS.read_text().splitlines() if line.startswith(f"- {label}: ")]
    return re.findall(r"`([A-Z]+\d+)`", line)


def test_docs_list_the_codes_proven_by_running_and_by_simulation_only():
    import test_env_shadowing  # noqa: F401 (its STACK003 proof registers itself)
    import test_fix_simulator

    running = sorted(PROVEN_BY_RUNNING)
    assert listed("Proven by running") == running
    simulated = {
        finding.code
        for _, finding, results in test_fix_simulator._outcomes()
        if (first := test_fix_simulator.first_fix(results)) and first.verdict == "proven"
    }
    assert listed("Proven by simulation only") == sorted(simulated - set(running))
