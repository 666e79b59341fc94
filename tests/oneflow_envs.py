"""Real throwaway environments on disk, in the OneFlow/OneDiff states the oneflow family judges.

Built on tests/apex_envs.py's venvs. The PyPI placeholder is the real wheel from the
registry. No real OneFlow build installs here (they live on GitHub release pages,
for Linux GPUs), so a *stand-in* plays a working one: a package with a compiled
`_oneflow_internal` core module and the Python attributes mpdoctor's probe reads,
behaving as OneFlow's sources say (its own autocast state, CPU autocast disabled
with a warning, strict dtype inference). It is labelled a stand-in wherever it
appears.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig

from apex_envs import EXT_SUFFIX, FIXTURES, Env, compile_shared

# `pip download oneflow==0.7.0` from PyPI (Apache-2.0), kept so the test runs offline.
PYPI_ONEFLOW_WHEEL = FIXTURES / "pypi" / "oneflow-0.7.0-py3-none-any.whl"
PYPI_ONEFLOW_SHA256 = "c6192c2d3540baa7745468e7334314e064c99fe6312c6c9f3b1769f4c44191a9"
STANDIN_VERSION = "0.9.1.dev20240802+cu118"

CORE_SOURCE = """\
#include <Python.h>
static struct PyModuleDef core = {PyModuleDef_HEAD_INIT, "_oneflow_internal", "stand-in core", -1, NULL};
PyMODINIT_FUNC PyInit__oneflow_internal(void) { return PyModule_Create(&core); }
"""

STANDIN_INIT = '''\
"""A stand-in for OneFlow, for mpdoctor's tests: not OneFlow. It has the attributes the probe reads."""
import warnings

from . import _oneflow_internal, cuda, nn, sysconfig, utils  # noqa: F401
from .version import __git_commit__, __version__  # noqa: F401

float16, float32 = "float16", "float32"
_state = {"enabled": False, "dtype": None}


def randn(*size, device="cpu"):
    import torch  # lazily, as nn.Linear: the stand-in's tensors are torch's
    return torch.randn(*size, device=device)


def is_autocast_enabled():
    return _state["enabled"]


class autocast:
    """OneFlow's autocast keeps its own state; on the CPU it warns and disables itself."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError("User specified autocast device_type must be 'cuda' or 'cpu'")
        if device_type == "cpu":
            warnings.warn("CPU autocast is not supported currently. Disabling autocast.")
            enabled = False
        self.enabled, self.dtype = enabled, dtype or float16

    def __enter__(self):
        self.saved = dict(_state)
        _state.update(enabled=self.enabled, dtype=self.dtype)
        return self

    def __exit__(self, *exc):
        _state.update(self.saved)
'''

STANDIN_NN = '''\
"""Linear that infers dtypes strictly, as OneFlow's functors do; torch does the arithmetic."""
KINDS = {"float32": "kFloat", "float16": "kFloat16"}


def _name(dtype):
    return str(dtype).split(".")[-1]


class Linear:
    def __init__(self, in_features, out_features):
        import torch  # lazily: under mock-torch, `import torch` at import time would be oneflow itself
        self.weight = torch.randn(out_features, in_features) * 0.1

    def to(self, device):
        self.weight = self.weight.to(device)
        return self

    def half(self):
        self.weight = self.weight.half()
        return self

    def __call__(self, x):
        import torch
        from oneflow import _state
        if _state["enabled"]:
            x = x.to(getattr(torch, _state["dtype"]))
        if x.dtype != self.weight.dtype:
            raise RuntimeError("InferDataType Failed. Expected %s, but got %s"
                               % (KINDS.get(_name(self.weight.dtype)), KINDS.get(_name(x.dtype))))
        return torch.nn.functional.linear(x, self.weight)
'''

STANDIN_SYSCONFIG = """\
from .version import __version__


def with_cuda():
    return "+cu" in __version__


def get_cuda_version():
    return 11080 if "+cu118" in __version__ else 0


def with_enterprise():
    return False
"""

# As oneflow's own python/oneflow/mock_torch/torch/__init__.py: every attribute is oneflow's.
MOCK_TORCH_INIT = """\
import oneflow


def __getattr__(name):
    return getattr(oneflow, name)
"""


def install_pypi_oneflow(env: Env) -> None:
    """The real PyPI oneflow 0.7.0 wheel, installed as `pip install oneflow` does."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(env.site),
            str(PYPI_ONEFLOW_WHEEL),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )


def install_onediff(env: Env, version: str = "1.2.0") -> None:
    """OneDiff as its wheel lays it out (stand-in code): oneflow_compile imports oneflow when called."""
    env.install(
        "onediff",
        version,
        {
            "onediff/__init__.py": f"__version__ = {version!r}\n",
            "onediff/infer_compiler/__init__.py": "def oneflow_compile(module, *, options=None):\n"
            "    import oneflow  # noqa: F401\n    return module\n",
        },
        summary="an out-of-the-box acceleration library for diffusion models",
        requires=("transformers>=4.27.1", "diffusers>=0.19.3", "accelerate", "torch"),
    )


def install_standin_oneflow(env: Env, version: str = STANDIN_VERSION, core: bool = True) -> None:
    """A working OneFlow stand-in; without ``core``, a build missing its native core."""
    files: dict[str, str | bytes] = {
        "oneflow/__init__.py": STANDIN_INIT,
        "oneflow/version.py": f"__version__ = {version!r}\n__git_commit__ = 'standin0'\n",
        "oneflow/nn.py": STANDIN_NN,
        "oneflow/sysconfig.py": STANDIN_SYSCONFIG,
        "oneflow/cuda.py": "def is_available():\n    return False\n\n\ndef device_count():\n    return 0\n",
        "oneflow/utils/__init__.py": "from . import tensor  # noqa: F401\n",
        "oneflow/utils/tensor.py": "def from_torch(tensor):\n    return tensor\n",
        "oneflow/mock_torch/__init__.py": "",
        "oneflow/mock_torch/torch/__init__.py": MOCK_TORCH_INIT,
    }
    env.install("oneflow", version, files, summary="stand-in for OneFlow (mpdoctor tests)")
    if core:
        include = sysconfig.get_paths()["include"]
        compile_shared(env.site / "oneflow" / f"_oneflow_internal{EXT_SUFFIX}", CORE_SOURCE, f"-I{include}")


def mock_torch_environment(env: Env) -> dict[str, str]:
    """What `eval $(python -m oneflow.mock_torch)` exports, pointing at this environment's oneflow."""
    return {
        "PYTHONPATH": str(env.site / "oneflow" / "mock_torch"),
        "ONEFLOW_MOCK_TORCH_LAZY": "False",
        "ONEFLOW_MOCK_TORCH_VERBOSE": "False",
    }
