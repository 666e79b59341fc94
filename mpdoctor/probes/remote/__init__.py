"""Code that runs *inside the interpreter under diagnosis*, never in mpdoctor's own process.

The host (``mpdoctor.probes``) starts it with :func:`mpdoctor.probes.child.remote_argv`,
which loads this directory as one private package, ``_mpdoctor_remote``, in a child
of the target interpreter. So every module here:

* imports only the standard library and its siblings (relatively: ``from . import
  steps``); the target may have nothing else, and a test enforces it;
* reaches the code it shares with the host (``mpdoctor/portable``: redaction, the
  untrusting file reader, the limits) only through the bridge ``_portable``
  (``from ._portable import redact``), which the bootstrap makes point at the
  private package ``_mpdoctor_portable`` it loaded first;
* runs on Python 3.8 and newer (the oldest interpreter mpdoctor diagnoses);
* judges nothing: it writes facts as JSON lines and lets the host make sense of them.

The host may import these modules too (tests, and shared constants such as the
kernel suite's op names and the step names); what both sides *use* lives in
``mpdoctor.portable``, not here.
"""
