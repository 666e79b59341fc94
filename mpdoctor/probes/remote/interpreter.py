"""The interpreter under diagnosis describes itself: version, prefix, PEP 508 markers.

Loaded beside ``target.py`` by the env part (stdlib only, Python 3.8+).
"""

import os
import platform
import sys

from . import sites


def python_facts():
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "is_conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "path": [p for p in sys.path if p],
        "externally_managed": sites.externally_managed(),
    }


def marker_environment():
    """The PEP 508 marker variables of this interpreter (as ``packaging`` computes them)."""
    impl = sys.implementation
    info = impl.version
    impl_version = "{0.major}.{0.minor}.{0.micro}".format(info)
    if info.releaselevel != "final":
        impl_version += info.releaselevel[0] + str(info.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }
