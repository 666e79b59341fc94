"""The remote modules' one way to ``mpdoctor/portable``: ``from ._portable import redact``.

In the target, the bootstrap (:data:`mpdoctor.probes.child.BOOTSTRAP`) has loaded
``mpdoctor/portable`` by path as the private package ``_mpdoctor_portable`` before
this package, ``_mpdoctor_remote``. In mpdoctor's own process (tests, and host code
that imports a remote module for a shared constant) this package is
``mpdoctor.probes.remote`` and the portable one is ``mpdoctor.portable``. Choosing
here, by this package's name, keeps one module object per file in each process:
no file is loaded twice under two names, and nothing aliases ``sys.modules``. It
is the one remote module allowed absolute imports of these two packages.
"""

if __name__.startswith("_mpdoctor_remote"):
    from _mpdoctor_portable import (
        files,
        kernel_names,
        limits,
        linebreaks,
        redact,
        secret_formats,
        secret_names,
        secret_patterns,
        secret_shapes,
    )
else:
    from mpdoctor.portable import (
        files,
        kernel_names,
        limits,
        linebreaks,
        redact,
        secret_formats,
        secret_names,
        secret_patterns,
        secret_shapes,
    )

__all__ = [
    "files",
    "kernel_names",
    "limits",
    "linebreaks",
    "redact",
    "secret_formats",
    "secret_names",
    "secret_patterns",
    "secret_shapes",
]
