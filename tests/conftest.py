"""Shared fixtures for the mpdoctor test suite."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Mapping, Optional, Union

import pytest

# The interpreter the test venv was made from: throwaway venvs are made from it
# too, so they do not inherit this venv's packages (torch, mpdoctor...).
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable

FileContent = Optional[Union[str, bytes]]  # None: make a directory


def dist_info(name: str, version: str, extra: str = "") -> dict[str, FileContent]:
    """The files of a minimal, real installed distribution ``name`` ``version``."""
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}"
    return {f"{name.replace('-', '_')}-{version}.dist-info/METADATA": metadata}


class FakeVenvFactory:
    """Makes real venvs (``python -m venv --without-pip``) with fake packages in them.

    Each named venv is created once per session; asking again returns the same one.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[str, Path] = {}

    @staticmethod
    def python(venv: Path) -> Path:
        return venv / "bin" / "python"

    def site_packages(self, venv: Path) -> Path:
        out = subprocess.run(
            [str(self.python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return Path(out.stdout.strip())

    def __call__(self, name: str, files: Optional[Mapping[str, FileContent]] = None) -> Path:
        """The venv ``name`` with ``files`` (paths relative to its site-packages) in it."""
        if name in self._made:
            return self._made[name]
        venv = self.root / name
        subprocess.run(
            [BASE_PYTHON, "-m", "venv", "--without-pip", str(venv)],
            check=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")},
        )
        site = self.site_packages(venv)
        for rel, content in (files or {}).items():
            path = site / rel
            if content is None:
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        self._made[name] = venv
        return venv


@pytest.fixture(scope="session")
def fake_venv(tmp_path_factory: pytest.TempPathFactory) -> FakeVenvFactory:
    """Factory: ``fake_venv("name", {"pkg/__init__.py": "...", **dist_info("pkg", "1.0")})``."""
    return FakeVenvFactory(tmp_path_factory.mktemp("venvs"))


# ---------------------------------------------------------------- what this machine has
#
# Most of the suite runs the real probes on whatever machine runs it: a CPU box in CI,
# sometimes a GPU machine with an NVIDIA driver and a CUDA torch. A test whose premise
# needs the absence of something (no NVIDIA driver, a CPU-only torch) is marked, and
# skips where the thing is present with a reason naming what was found; other tests
# read these facts to expect what this machine really has. Each fact is read once per
# session, lazily, in a child process, independently of mpdoctor's own probes (ctypes
# on libnvidia-ml, torch's own attributes), and never in the pytest process: no CUDA is
# started here, and a child forked from here later is not affected.

_NVML_READER = r"""
import ctypes, json
out = {"loads": False, "error": "", "driver": "", "gpus": None}
try:
    lib = ctypes.CDLL("libnvidia-ml.so.1")
except OSError as exc:
    out["error"] = str(exc)
else:
    out["loads"] = True
    init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
    code = init()
    if code:
        out["error"] = "nvmlInit returned %d" % code
    else:
        buf = ctypes.create_string_buffer(96)
        if lib.nvmlSystemGetDriverVersion(buf, 96) == 0:
            out["driver"] = buf.value.decode()
        count = ctypes.c_uint(0)
        if (getattr(lib, "nvmlDeviceGetCount_v2", None) or lib.nvmlDeviceGetCount)(ctypes.byref(count)) == 0:
            out["gpus"] = count.value
        lib.nvmlShutdown()
print(json.dumps(out))
"""

_TORCH_READER = r"""
import importlib, json, warnings
out = {"imports": False, "error": ""}
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
else:
    out.update(imports=True, version=torch.__version__, cuda=getattr(torch.version, "cuda", None) or "",
               hip=getattr(torch.version, "hip", None) or "", nccl="")
    try:
        importlib.import_module("torch.cuda.nccl")
        version = torch.cuda.nccl.version()
        out["nccl"] = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    except Exception:
        pass  # a CPU or ROCm build has none
    out["cuda_available"] = bool(torch.cuda.is_available())  # honours CUDA_VISIBLE_DEVICES, as the probes do
    out["cuda_devices"] = torch.cuda.device_count() if out["cuda_available"] else 0
print(json.dumps(out))
"""


def _read_in_child(code: str) -> dict:
    import json

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"the machine reader failed (exit {result.returncode}): {result.stderr[-2000:]}")


class ThisMachine:
    """What this machine has, as the test interpreter (``sys.executable``) sees it; each part read on first use."""

    def __init__(self) -> None:
        self._nvml: Optional[dict] = None
        self._torch: Optional[dict] = None

    @property
    def nvml(self) -> dict:
        """``loads`` (libnvidia-ml.so.1 opens), ``error``, ``driver`` ("580.159.03"), ``gpus`` (NVML's count)."""
        if self._nvml is None:
            self._nvml = _read_in_child(_NVML_READER)
        return self._nvml

    @property
    def torch(self) -> dict:
        """``imports``, ``version``, ``cuda`` ("" for a CPU build), ``hip``, ``nccl`` ("" for none),
        ``cuda_available``, ``cuda_devices``."""
        if self._torch is None:
            self._torch = _read_in_child(_TORCH_READER)
        return self._torch

    @property
    def has_nvidia_driver(self) -> bool:
        return bool(self.nvml["loads"])

    @property
    def cuda_torch(self) -> bool:
        return bool(self.torch.get("cuda") or self.torch.get("hip"))

    @property
    def cuda_device_names(self) -> list[str]:
        """The devices torch numbers here, as the kernel runner names them: ["cuda:0", ...]; [] without CUDA."""
        return [f"cuda:{n}" for n in range(self.torch.get("cuda_devices") or 0)]

    def describe_nvml(self) -> str:
        nvml = self.nvml
        if not nvml["loads"]:
            return f"libnvidia-ml.so.1 does not load here ({nvml['error']})"
        if nvml["error"]:
            return f"libnvidia-ml.so.1 loads here, but {nvml['error']}"
        gpus = nvml["gpus"]
        return (
            f"libnvidia-ml.so.1 loads here: NVIDIA driver {nvml['driver'] or '?'}, "
            f"{'?' if gpus is None else gpus} GPU{'' if gpus == 1 else 's'}"
        )

    def describe_torch(self) -> str:
        t = self.torch
        if not t["imports"]:
            return f"torch does not import in {sys.executable} ({t['error']})"
        build = (
            f"built for CUDA {t['cuda']}"
            if t["cuda"]
            else f"built for ROCm {t['hip']}"
            if t["hip"]
            else "a CPU-only build"
        )
        extra = []
        if t["cuda"] or t["hip"]:
            extra.append(
                f"{t['cuda_devices']} device{'' if t['cuda_devices'] == 1 else 's'} visible"
                if t["cuda_available"]
                else "no device visible"
            )
            extra.append(f"NCCL {t['nccl']}" if t["nccl"] else "no NCCL")
        return f"torch {t['version']} is {build}" + (f" ({', '.join(extra)})" if extra else "")


_THIS_MACHINE = ThisMachine()


def this_machine() -> ThisMachine:
    """The session's one :class:`ThisMachine` (for module-level use; tests can take the fixture instead)."""
    return _THIS_MACHINE


@pytest.fixture(scope="session", name="this_machine")
def this_machine_fixture() -> ThisMachine:
    """What this machine has (NVIDIA driver, torch build): tests expect from it rather than assume a CPU box."""
    return _THIS_MACHINE


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_no_nvidia_driver: the test's premise is a machine where "
        "libnvidia-ml.so.1 does not load; skipped, saying what loaded, elsewhere",
    )
    config.addinivalue_line(
        "markers",
        "needs_cpu_torch: the test's premise is a CPU-only torch (no CUDA, no NCCL) "
        "in the test interpreter; skipped, naming the build found, elsewhere",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Read only for the tests marked: a run that selects none of them never starts the readers.
    if item.get_closest_marker("needs_no_nvidia_driver") and _THIS_MACHINE.has_nvidia_driver:
        pytest.skip(f"needs a machine without an NVIDIA driver: {_THIS_MACHINE.describe_nvml()}")
    if item.get_closest_marker("needs_cpu_torch") and _THIS_MACHINE.cuda_torch:
        pytest.skip(f"needs a CPU-only torch: {_THIS_MACHINE.describe_torch()}")


@pytest.fixture(scope="session")
def live_report_json() -> str:
    """One real `mpdoctor check --format json` of this machine, shared by tests."""
    from helpers import run_cli

    result = run_cli("check", "--format", "json", "--fail-on", "never", "--timeout", "60")
    assert result.returncode == 0, result.stderr
    return result.stdout


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now (for a c10d store or a fleet rank 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def store():
    """A client of a real torch.distributed.TCPStore served in this process, as a fleet's ranks see it."""
    torch_distributed = pytest.importorskip("torch.distributed")
    port = free_port()
    server = torch_distributed.TCPStore(
        "127.0.0.1", port, None, True, timedelta(seconds=10), wait_for_workers=False, multi_tenant=True
    )
    client = torch_distributed.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=10))
    yield client
    del client, server
