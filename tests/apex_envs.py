"""Real throwaway Python environments on disk, in the install states the apex family judges.

Each environment is a real venv (no pip, so it is quick to make) whose site-packages
gets real files: distributions with dist-info metadata and RECORD, package trees,
compiled extension modules built with the C compiler, .pth files. mpdoctor's real
probe then runs in it through ``--python``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
# The unrelated "apex" sdist from PyPI (MIT licensed), exactly as `pip download apex==0.9.10dev`
# fetched it, so the test is the real registry package and runs offline.
PYPI_APEX_SDIST = FIXTURES / "pypi" / "apex-0.9.10dev.tar.gz"
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
# The symbol from NVIDIA/apex#1677: what an extension built against an older torch asks for.
STALE_TORCH_SYMBOL = "_ZN3c106detail19maybe_wrap_dim_slowEllb"

NVIDIA_INIT = """\
import logging
import warnings

# May help avoid undefined symbol errors https://pytorch.org/cppdocs/notes/faq.html#undefined-symbol-errors-from-pytorch-aten
import torch

__all__ = ["optimizers", "normalization"]
"""
FUSED_LAYER_NORM = """\
import importlib

fused_layer_norm_cuda = None


class FusedRMSNorm:
    def forward(self, input):
        global fused_layer_norm_cuda
        fused_layer_norm_cuda = importlib.import_module("fused_layer_norm_cuda")


class FusedLayerNorm(FusedRMSNorm):
    pass
"""
# transformers 4.52.4's own lines: modeling_t5.py swaps in apex's FusedRMSNorm when it
# imports; trainer.py imports apex.amp at module level when apex looks installed.
T5_SWAP = """\
class T5LayerNorm:
    pass


try:
    from apex.normalization import FusedRMSNorm

    T5LayerNorm = FusedRMSNorm  # noqa

    logger.info("Discovered apex.normalization.FusedRMSNorm - will use it instead of T5LayerNorm")
except ImportError:
    # using the normal T5LayerNorm
    pass
except Exception:
    logger.warning("discovered apex but it failed to load, falling back to T5LayerNorm")
    pass
"""
TRAINER_AMP = """\
import importlib.util


def is_apex_available():
    return importlib.util.find_spec("apex") is not None


if is_apex_available():
    from apex import amp
"""


@dataclass
class Env:
    root: Path
    python: Path
    site: Path

    def write(self, relative: str, content: str | bytes) -> Path:
        path = self.site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content))
        return path

    def install(
        self, name: str, version: str, files: dict[str, str | bytes], summary: str = "", requires: tuple[str, ...] = ()
    ) -> None:
        """A distribution as pip leaves it: its files, and a dist-info with METADATA, RECORD, INSTALLER."""
        for relative, content in files.items():
            self.write(relative, content)
        info = f"{name.replace('-', '_')}-{version}.dist-info"
        metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}"]
        metadata += [f"Requires-Dist: {req}" for req in requires]
        self.write(f"{info}/METADATA", "\n".join(metadata) + "\n")
        self.write(f"{info}/INSTALLER", "pip\n")
        record = [f"{relative},," for relative in files] + [
            f"{info}/{name},," for name in ("METADATA", "INSTALLER", "RECORD")
        ]
        self.write(f"{info}/RECORD", "\n".join(record) + "\n")


def make_env(root: Path, torch: bool = False) -> Env:
    """A fresh venv; with ``torch``, the test interpreter's packages (torch among them) are visible too."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    site = Path(next((root / "lib").glob("python3*/site-packages")))
    env = Env(root, root / "bin" / "python", site)
    if torch:
        env.write("_test_packages.pth", sysconfig.get_paths()["purelib"] + "\n")
    return env


def nvidia_apex_files(amp: bool = False, extensions: dict[str, str | bytes] | None = None) -> dict:
    """NVIDIA apex's layout: modern (optimizers, normalization) or older with amp; extensions at top level."""
    files = {
        "apex/__init__.py": NVIDIA_INIT,
        "apex/normalization/__init__.py": "from .fused_layer_norm import FusedLayerNorm, FusedRMSNorm\n",
        "apex/normalization/fused_layer_norm.py": FUSED_LAYER_NORM,
        "apex/optimizers/__init__.py": "",
    }
    if amp:
        files["apex/amp/__init__.py"] = (
            "def initialize(model, optimizer, opt_level='O1'):\n    return model, optimizer\n"
        )
    files.update(extensions or {})
    return files


def install_nvidia_apex(env: Env, **kwargs) -> None:
    env.install(
        "apex",
        "0.1",
        nvidia_apex_files(**kwargs),
        summary="PyTorch Extensions written by NVIDIA",
        requires=("packaging>20.6",),
    )


def install_transformers(env: Env, version: str = "4.44.2") -> None:
    env.install(
        "transformers",
        version,
        {
            "transformers/__init__.py": "",
            "transformers/models/__init__.py": "",
            "transformers/models/t5/__init__.py": "",
            "transformers/models/t5/modeling_t5.py": "import logging\nlogger = logging.getLogger(__name__)\n\n\n"
            + T5_SWAP,
            "transformers/trainer.py": TRAINER_AMP,
        },
    )


def install_pypi_apex(env: Env) -> None:
    """The real PyPI "apex" sdist, installed the way `pip install --no-deps apex` would."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(env.site),
            str(PYPI_APEX_SDIST),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def compile_shared(out: Path, source: str, *flags: str, directory: Path | None = None) -> Path:
    """Compile C source into a real ELF shared object (e.g. an extension that cannot load)."""
    work = directory or out.parent
    src = work / (out.name.split(".")[0] + ".c")
    src.write_text(source)
    subprocess.run([compiler(), "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True, capture_output=True)
    return out


def stale_extension(path: Path) -> Path:
    """An extension as built against an older torch: it needs a symbol this torch does not export."""
    return compile_shared(
        path, f"extern void {STALE_TORCH_SYMBOL}(void);\nvoid use(void) {{ {STALE_TORCH_SYMBOL}(); }}\n"
    )


def cuda11_extension(path: Path, libdir: Path) -> Path:
    """An extension linked against CUDA 11's runtime (a stand-in libcudart.so.11.0 with that soname)."""
    libdir.mkdir(parents=True, exist_ok=True)
    compile_shared(
        libdir / "libcudart.so.11.0",
        "int cudaRuntimeGetVersion(int *v) { *v = 11080; return 0; }\n",
        "-Wl,-soname,libcudart.so.11.0",
    )
    return compile_shared(
        path,
        "extern int cudaRuntimeGetVersion(int *);\nint version(void) { int v; cudaRuntimeGetVersion(&v); return v; }\n",
        f"-L{libdir}",
        "-l:libcudart.so.11.0",
    )
