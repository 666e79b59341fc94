"""A real OneFlow environment from the package index, built once and reused, in the states a user meets.

OneFlow 0.9.0 has a CUDA 11 wheel for CPython 3.10 on PyPI (965 MB) that needs
nvidia-cudnn-cu11 and nvidia-cublas-cu11 beside it and numpy < 2. This module
builds that venv with ``pip`` from the index, into a cache keyed by the pins
(``~/.cache/mpdoctor-tests/oneflow-<hash>``, or ``$MPDOCTOR_ONEFLOW_ENV``), and
derives the other states from the one install, cheaply:

* ``full``: oneflow, onediff, the nvidia wheels, numpy < 2: imports on a CPU
  machine (the driver warning on stderr, no CUDA);
* ``no-cudnn``: the same without the nvidia wheels. oneflow's files are *hard*
  linked (its core finds cuDNN through ``$ORIGIN``, which a symlink would lead
  back to the full venv), the rest symlinked: the real ``ImportError``;
* ``numpy2``: the same with numpy 2 installed in place of numpy < 2.

No torch: torch 2.13.0 for 3.10 on PyPI is a CUDA 13 wheel (527 MB) whose
``nvidia-cudnn-cu13==9.20.0.48`` is not on the index, so it cannot import here,
and the CPU wheels live on download.pytorch.org only. OneDiff is installed
without its dependencies (transformers, diffusers, torch), as its metadata is
all the checks read.

``environment()`` returns the root or raises ``Unavailable`` with why (no
Python 3.10, pip failed or ran out of time, ``MPDOCTOR_ONEFLOW_BUILD=0``):
tests skip with that reason, never fail because the index was slow.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from interpreters import find_python

PYTHON = "3.10"
PINS = (
    "oneflow==0.9.0",
    "onediff==1.2.0",
    "nvidia-cudnn-cu11==8.9.6.50",
    "nvidia-cublas-cu11==11.11.3.6",
    "nvidia-cuda-nvrtc-cu11==11.8.89",  # nvidia-cudnn-cu11 requires it
    "numpy==1.26.4",
    # oneflow's own requirements; its generated protobuf code needs protobuf < 4
    "protobuf==3.20.3",
    "pillow",
    "requests",
    "rich",
    "tqdm",
)
NUMPY2 = "numpy==2.2.6"
NVIDIA = "nvidia"
BUILD_TIMEOUT = float(os.environ.get("MPDOCTOR_ONEFLOW_BUILD_TIMEOUT", "1500"))
STATES = ("full", "no-cudnn", "numpy2")


class Unavailable(Exception):
    """The real OneFlow environment cannot be had here; the message says why."""


def cache_root() -> Path:
    """Where the environment lives: ``$MPDOCTOR_ONEFLOW_ENV``, else a directory named by the pins' hash."""
    if os.environ.get("MPDOCTOR_ONEFLOW_ENV"):
        return Path(os.environ["MPDOCTOR_ONEFLOW_ENV"])
    key = hashlib.sha256(json.dumps([PYTHON, PINS, NUMPY2]).encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "mpdoctor-tests" / f"oneflow-{key}"


def python(root: Path, state: str) -> str:
    return str(root / state / "bin" / "python")


def site(root: Path, state: str) -> Path:
    return root / state / "lib" / f"python{PYTHON}" / "site-packages"


def _run(argv, deadline: float, what: str) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Unavailable(f"building the real OneFlow environment ran out of time before {what}")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=left)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what} took longer than the {BUILD_TIMEOUT:.0f} s build limit") from None
    if done.returncode != 0:
        raise Unavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-600:]}")


def _derive(full_site: Path, root: Path, state: str, base: str, deadline: float) -> None:
    """A venv without pip whose site-packages links to the full one's, but for the nvidia wheels or numpy."""
    _run([base, "-m", "venv", "--without-pip", str(root / state)], deadline, f"creating the {state} venv")
    target = site(root, state)
    for entry in sorted(full_site.iterdir()):
        name = entry.name.lower()
        if name.startswith(NVIDIA) and state == "no-cudnn":
            continue
        if name.startswith("numpy") and state == "numpy2":
            continue
        if name.startswith("oneflow") and state == "no-cudnn":
            # a hard-linked copy: $ORIGIN is this directory, and there is no cuDNN beside it
            shutil.copytree(entry, target / entry.name, copy_function=os.link)
        elif not (target / entry.name).exists():
            # relative, so that the links survive the rename from the build directory to the cache root
            (target / entry.name).symlink_to(os.path.relpath(entry, target))
    if state == "numpy2":
        pip = [python(root, "full"), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
        _run(pip + ["--target", str(target), NUMPY2], deadline, f"pip install {NUMPY2}")


def _build(root: Path) -> None:
    base = find_python(PYTHON)
    if base is None:
        raise Unavailable(f"no Python {PYTHON} here (on PATH or in pyenv): OneFlow 0.9.0 has no wheel for newer")
    deadline = time.monotonic() + BUILD_TIMEOUT
    building = root.with_name(root.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    started = time.monotonic()
    _run([base, "-m", "venv", str(building / "full")], deadline, "creating the venv")
    pip = [python(building, "full"), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
    _run(pip + list(PINS), deadline, "pip install " + " ".join(PINS))
    for state in STATES[1:]:
        _derive(site(building, "full"), building, state, base, deadline)
    (building / "built.json").write_text(
        json.dumps({"python": PYTHON, "pins": PINS, "numpy2": NUMPY2, "seconds": round(time.monotonic() - started)})
    )
    # only pip's console scripts name the build path (the tests run `python -m pip`), links are relative
    building.rename(root)


def environment() -> Path:
    """The root of the built environment (built now when missing), or raise Unavailable saying why."""
    root = cache_root()
    if (root / "built.json").exists():
        return root
    if os.environ.get("MPDOCTOR_ONEFLOW_BUILD", "1") == "0":
        raise Unavailable(f"not built at {root}, and MPDOCTOR_ONEFLOW_BUILD=0 forbids building it")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / (root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session building it: wait, then use its build
        if not (root / "built.json").exists():
            shutil.rmtree(root, ignore_errors=True)
            _build(root)
    return root
