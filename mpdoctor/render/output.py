"""Write reports so that nothing is destroyed and every failure is a one-line message.

``-o PATH`` and ``--save-snapshot PATH`` write through :func:`write_report`:

* only a regular file is ever replaced: a character device (``/dev/null``), a
  FIFO, a socket or a directory is refused (:func:`target_problem`), before any
  probing and again at the write;
* a symlink is written *through*: its target gets the report and the link stays
  a link (a dangling link creates its target);
* the file is replaced atomically (a temporary file beside the target, then
  ``rename``), so a reader never sees half a report; an existing file keeps its
  mode (and, when mpdoctor may set it, its owner); a new one gets the usual
  ``0666`` less the umask;
* text that cannot be UTF-8 (a lone surrogate from a non-UTF-8 path or a
  snapshot's ``\\ud800``) is written as a backslash escape, never an exception.

Errors (no space, a read-only filesystem, a size limit) raise :class:`OutputError`
with the reason; the CLI prints it and exits 2. Standard output gets the same
treatment from :func:`prepare_stdout` and :func:`stdout_problem`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

# What a failed write of the output means: the machine, not a bug in mpdoctor.
WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EFBIG, errno.EROFS, getattr(errno, "EDQUOT", errno.ENOSPC)}
)


class OutputError(OSError):
    """An output that was refused or could not be written; the message is for the user."""


def target_problem(path: str) -> str:
    """Why ``path`` cannot take a report (in words), or "" when it can. Symlinks are followed."""
    from mpdoctor.portable.files import kind  # here: start-up (prepare_stdout) loads no probe code

    if not path:
        return "an empty path"
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a symlink loop, a component that is a file...
        return exc.strerror or str(exc)
    if mode is not None and not stat.S_ISREG(mode):
        return f"is {kind(mode)}: mpdoctor replaces only regular files"
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        return f"no such directory {directory}"
    if not os.access(directory, os.W_OK):
        return f"directory {directory} is not writable"
    return ""


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_report(path: str, text: str) -> None:
    """Replace the regular file ``path`` (or its symlink's target) with ``text``, atomically."""
    import tempfile  # here, not at the top: every command's start-up imports this module for prepare_stdout

    problem = target_problem(path)
    if problem:
        raise OutputError(problem)
    real = os.path.realpath(path)
    try:
        old = os.stat(real)
    except FileNotFoundError:
        old = None
    data = text.encode("utf-8", errors="backslashreplace")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mpdoctor-", dir=os.path.dirname(real))
    except OSError as exc:
        raise OutputError(f"cannot create a file beside it: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode) if old else _new_file_mode())
            if old and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(handle.fileno(), old.st_uid, old.st_gid)
                except PermissionError:  # only root may give a file away; the mode is still kept
                    pass
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(exc.strerror or str(exc)) from None
        raise


def prepare_stdout() -> None:
    """Make standard output write what UTF-8 cannot hold (a lone surrogate) as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or exotic stream: leave it
                pass


def stdout_problem() -> str:
    """Flush standard output; why it failed ("No space left on device"), or "" when it did not.

    After a failure standard output is pointed at the null device, so that the
    interpreter's own flush at exit cannot fail a second time with a traceback.
    A reader that went away (``mpdoctor checks | head -1``: a broken pipe) is not
    a failure: it read what it wanted.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass
        if isinstance(exc, BrokenPipeError):
            return ""
        return getattr(exc, "strerror", None) or str(exc)
    return ""
