"""Code that runs *inside the interpreter under diagnosis*, never in mpdoctor's own process.

The host (``mpdoctor.probes``) starts it with :func:`mpdoctor.probes.child.remote_argv`,
which loads this directory as one private package, ``_mpdoctor_remote``, in a child
of the target interpreter. So every module here:

* imports only the standard library and its siblings (relatively: ``from . import
  redact``); the target may have nothing else, and a test enforces it;
* runs on Python 3.8 and newer (the oldest interpreter mpdoctor diagnoses);
* judges nothing: it writes facts as JSON lines and lets the host make sense of them.

The host may import these modules too (tests, shared constants such as the kernel
suite's op names, and ``redact``, which masks secrets on both sides).
"""
