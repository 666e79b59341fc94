"""The NCCL version as the imported torch loads it: ``torch.cuda.nccl.version()``.

Runs inside the target interpreter (the torch part of ``target.py``), so it stays
stdlib-only and Python 3.8-compatible, and touches only the torch it is handed. The
NCCL torch loads is not always the ``nvidia-nccl-*`` wheel pip lists: a system NCCL
earlier on LD_LIBRARY_PATH wins (NVIDIA/nccl#1381), and that is what the ranks' NCCLs
must agree on. Reading it starts no CUDA context.
"""

import importlib


def nccl_version(torch):
    """ "2.21.5", or "" when this torch has no NCCL (CPU and ROCm builds raise, and that is no error)."""
    try:
        importlib.import_module("torch.cuda.nccl")  # the submodule, which `import torch` may not load
        version = torch.cuda.nccl.version()
    except Exception:
        return ""
    if isinstance(version, tuple) and version:  # (2, 21, 5); a prerelease may add a suffix part
        return ".".join(str(part) for part in version)
    if isinstance(version, int) and not isinstance(version, bool) and version > 0:
        # Older torch returns NCCL_VERSION_CODE: major*10000 + minor*100 + patch since NCCL 2.9, major*1000 before.
        major, rest = (version // 10000, version % 10000) if version >= 20900 else (version // 1000, version % 1000)
        return "%d.%d.%d" % (major, rest // 100, rest % 100)
    return ""


def with_nccl(facts, torch):
    """The torch build facts, with ``nccl`` (empty when this torch has none)."""
    facts["nccl"] = nccl_version(torch)
    return facts
