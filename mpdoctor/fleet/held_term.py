"""The launcher's SIGTERM, held from the first instant of a fleet run's rank 0.

torchrun's agent sends SIGTERM to every surviving worker as soon as one worker exits
non-zero. A job script that fails at once (``exit 3``, a bad ``WORLD_SIZE``) does so
within a tenth of a second: before rank 0's ``mpdoctor fleet`` has imported its
command, let alone its own handler (``mpdoctor.fleet.cut_short.Stop``), and rank 0
died printing nothing, the very failure its report must name. So the CLI holds the
first SIGTERM of a rank 0 from its first lines (:func:`hold`): the time it came is kept
(:func:`pending`) for ``Stop`` to take up, and a second SIGTERM ends the process at
once through the CLI's own handler, as without this.

Stdlib only, importing nothing of mpdoctor (the fleet package itself imports nothing): it runs before
anything else is loaded.
"""

import os
import signal
import time

# The variables a launcher gives each process its global rank in: torchrun, Slurm, Open MPI, MPICH/PMI, PMIx.
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")

_state = {"at": None, "fallback": None}


def is_rank_zero(environ=None):
    """Whether a launcher started this process as global rank 0 (the first rank variable set says)."""
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = environ.get(name)
        if value is not None:
            return value.strip() == "0"
    return False


def hold(fallback):
    """Hold the first SIGTERM from now on; a second one goes to ``fallback`` (the CLI's handler)."""
    _state["at"], _state["fallback"] = None, fallback
    signal.signal(signal.SIGTERM, _held)


def _held(signum, frame):
    if _state["at"] is None:
        _state["at"] = time.time()
        return
    fallback = _state["fallback"]
    if callable(fallback):
        fallback(signum, frame)
    raise SystemExit(128 + signum)


def is_holding(handler):
    """Whether ``handler`` (what ``signal.signal`` returned) is this module's."""
    return handler is _held


def pending():
    """The time.time() of a SIGTERM held and not yet taken up, or None."""
    return _state["at"]


def fallback():
    """The handler a second SIGTERM goes to."""
    return _state["fallback"]


def release():
    """Give SIGTERM back to the CLI's handler (a process that is not rank 0 after all); a SIGTERM held meanwhile is
    delivered to it now, ending the process as it would have."""
    if not is_holding(signal.getsignal(signal.SIGTERM)):
        return
    signal.signal(signal.SIGTERM, _state["fallback"] or signal.SIG_DFL)
    if _state["at"] is not None:
        _state["at"] = None
        os.kill(os.getpid(), signal.SIGTERM)
