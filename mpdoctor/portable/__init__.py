"""Stdlib-only Python 3.8+ code that runs both in mpdoctor and inside the interpreter under diagnosis.

Its modules serve both homes: the host imports them as ``mpdoctor.portable``
(redaction for every report, the untrusting file reader for the snapshot loader
and the checkpoint audit, the limits the Budget hands to the target), and
:func:`mpdoctor.probes.child.remote_argv` loads this directory in the target as the
private package ``_mpdoctor_portable``, before ``_mpdoctor_remote``, whose modules
reach it through ``mpdoctor/probes/remote/_portable.py``. So every module here
(``tests/test_architecture.py`` holds them to it):

* imports only the standard library and its own siblings, relatively
  (``from . import redact``): never mpdoctor, never the remote probes, never a
  third-party package, which the target may not have;
* parses and runs on Python 3.8 and newer (the oldest interpreter mpdoctor diagnoses);
* keeps no state that would differ between its two homes: constants and pure
  functions (plus what they compute on demand), nothing set up by one side for the other.
"""
