"""What the env part reads of the installation: its distributions, the environment variables, module origins.

Loaded beside ``target.py`` (stdlib only, Python 3.8+, judges nothing), whose env part writes each as a step.
Every installed distribution's metadata is read without trusting it: each field is cut to its bound
(``portable/limits.py``) and the cut is named in the distribution's ``problems``; text is redacted. Only the
environment variables that change how devices are enumerated, how precision behaves or where packages come
from are kept, their values redacted.
"""

import os
import warnings

from ._portable import limits as bound  # every bound on what is read here (portable/limits.py)
from ._portable import redact

# Environment variables that change how devices are enumerated or how precision
# behaves, plus the ones that tell where packages come from.
ENV_PREFIXES = (
    "CUDA_",
    "NVIDIA_",
    "TORCH",
    "PYTORCH_",
    "NCCL_",
    "CUDNN_",
    "CUBLAS",
    "HIP_",
    "ROCR_",
    "ROCM_",
    "HSA_",
    "ONEFLOW_",
    "ONEDIFF_",
    "ACCELERATE_",
    "HF_",
    "TRANSFORMERS_",
    "DIFFUSERS_",
    "XFORMERS_",
    "APEX_",
    "DS_",
    "SLURM_",
    "PIP_",
    "CONDA_",
    "OMP_",
    "MKL_",
    "KMP_",
)
ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PATH")


def _read_text(dist, name):
    try:
        return dist.read_text(name)
    except Exception:  # unreadable files count as absent
        return None


def distribution_facts(dist, sites=None):
    """Facts about one installed distribution. Don't crash on broken metadata.

    ``sites``: ``sites.context()``, to say which kind of site directory it is in ("" without it).
    """
    problems = []
    meta_path = str(getattr(dist, "_path", "") or "")
    try:
        meta = dist.metadata
        name = meta["Name"] if meta is not None else None
        version = meta["Version"] if meta is not None else None
        summary = meta["Summary"] if meta is not None else None
    except Exception as exc:
        name = version = summary = None
        problems.append("metadata unreadable: %s" % redact.redact_clip(exc, bound.ERROR_TEXT, tail=True))
    if not name:
        problems.append("no Name in metadata")
    if not version:
        problems.append("no Version in metadata")
    name = _bounded(name, bound.DIST_NAME, "Name", problems)
    version = _bounded(version, bound.DIST_VERSION, "Version", problems)
    try:
        requires = []
        for index, line in enumerate(dist.requires or []):  # a generator: the bound stops reading it, too
            if index == bound.DIST_REQUIRES:
                problems.append("more than %d Requires-Dist lines: the rest not read" % bound.DIST_REQUIRES)
                break
            requires.append(line)
    except Exception as exc:
        requires = []
        problems.append("requirements unreadable: %s" % redact.redact_clip(exc, bound.ERROR_TEXT, tail=True))
    try:
        location = str(dist.locate_file(""))
    except Exception:
        location = os.path.dirname(meta_path)
    direct_url = _read_text(dist, "direct_url.json")
    return {
        "name": name,
        "version": version,
        "location": location[: bound.DIST_PATH],
        "metadata_path": meta_path[: bound.DIST_PATH],
        "summary": _clip(summary or "", bound.DIST_SUMMARY),
        "requires": [_clip(r, bound.DIST_REQUIRE) for r in requires],
        "installer": (_read_text(dist, "INSTALLER") or "")[: bound.DIST_INSTALLER].strip(),
        "direct_url": _clip(direct_url, bound.DIST_DIRECT_URL) if direct_url else "",
        "site": _sites().site_kind(location, sites) if sites else "",
        "problems": problems,
    }


def _bounded(text, limit, field, problems):
    """``text`` (a metadata field) cut to ``limit`` characters, the cut named in ``problems``, redacted."""
    text = str(text or "")
    if len(text) > limit:
        problems.append("%s is %d characters long: the first %d kept" % (field, len(text), limit - 3))
        return redact.redact_clip(text, limit - 3)  # and "...": ``limit`` in all
    return text


def _clip(text, limit):
    """``text`` redacted and cut to ``limit`` characters in all, its end kept ("..." marks the cut)."""
    return redact.redact_clip(text, limit - 3 if len(str(text)) > limit else limit, tail=True)


def distributions():
    import importlib.metadata as metadata

    sites = _sites().context()
    found = []
    for dist in metadata.distributions():
        if len(found) == bound.DISTRIBUTIONS:  # one broken environment must not cost the report its bound
            break
        found.append(distribution_facts(dist, sites))
    return found


def environment_variables():
    names = sorted(name for name in os.environ if name.startswith(ENV_PREFIXES) or name in ENV_NAMES)
    return {name: redact.redact_env_value(name, os.environ[name]) for name in names}


# Top-level modules whose origin tells which distribution really provides them.
MODULES = ("pynvml",)


def module_origins():
    """Where each of MODULES would be imported from, without importing it."""
    import importlib.util

    origins = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pynvml's deprecation shim warns from its finder
        for name in MODULES:
            try:
                spec = importlib.util.find_spec(name)
            except Exception:  # a broken finder or package counts as not importable
                spec = None
            origins[name] = (spec.origin or "") if spec is not None else ""
    return origins


def _sites():
    """``sites.py``, imported on first use (the torch part, which imports this module with target.py, needs none)."""
    from . import sites

    return sites
