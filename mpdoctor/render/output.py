"""Write reports so that nothing is destroyed and every failure is a one-line message.

``-o PATH`` and ``--save-snapshot PATH`` write through :func:`write_report`:

* only a regular file is ever replaced: a character device (``/dev/null``), a
  FIFO, a socket or a directory is refused (:func:`target_problem`), before any
  probing and again at the write;
* a symlink is written *through*: its target gets the report and the link stays
  a link (a dangling link creates its target); but not one that someone else owns in
  a shared sticky directory such as ``/tmp`` (the rule of Linux's
  ``fs.protected_symlinks``, which a rename onto the resolved path would bypass:
  another user's link there could aim the report at any file of yours);
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
from typing import Callable

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
    planted = _planted_link(path)
    if planted:
        return planted
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


def _planted_link(path: str) -> str:
    """Why the symlink ``path`` must not be followed (``fs.protected_symlinks``' rule), or "".

    A link in a sticky, world-writable directory is followed only when this user or the directory's owner
    owns it: the kernel refuses to open through any other, and so does mpdoctor, which renames onto the
    resolved path rather than opening through the link.
    """
    try:
        link = os.lstat(path)
        if not stat.S_ISLNK(link.st_mode):
            return ""
        folder = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return ""
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if shared and link.st_uid not in (os.geteuid(), folder.st_uid):
        return (
            f"is a symbolic link owned by another user (uid {link.st_uid}) in a shared sticky directory: "
            "not followed (the rule of the kernel's fs.protected_symlinks)"
        )
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
    """Make the standard streams safe to use: closed ones read and write the null device, and what UTF-8 cannot
    hold (a lone surrogate) is written as a backslash escape.

    Started with a stream closed (``mpdoctor check >&-``, ``explain - <&-``), Python sets ``sys.stdout`` (or
    ``sys.stdin``, ``sys.stderr``) to None and the first write would be an AttributeError. Nobody can read
    what goes there, so it goes to the null device: the command runs as usual and exits with the status its
    report deserves, and a closed stdin reads as empty. A new descriptor is opened rather than descriptor 1
    reused: an early probe (``probes.prescan``) may already hold that number for one of its own files.
    """
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            try:
                setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115 (lives as long as we do)
            except OSError:
                pass
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or exotic stream: leave it
                pass


def reader_gone(exc: BaseException) -> bool:
    """Whether a failed write to standard output means nobody reads it any more: a pipe whose reader ended
    (``| head -1``) or a stream that was closed. Those end the output, not the run; a full disk does not."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.EPIPE, errno.EBADF)
    return isinstance(exc, ValueError) and "closed file" in str(exc)  # "I/O operation on closed file"


def to_stdout(write: Callable[[], object]) -> None:
    """Run ``write`` (which writes the report to standard output), then flush it. When the reader went away
    (:func:`reader_gone`) the rest of the output goes to the null device, quietly: the reader had what it wanted,
    as with git or grep, and the command still exits with the status its report deserves. Any other failure
    (no space left) propagates, and the CLI reports it."""
    try:
        write()
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        if not reader_gone(exc):
            raise
        _silence_stdout()


def _silence_stdout() -> None:
    """Point standard output at the null device, so that no later write or flush (the interpreter's own at exit
    included) fails again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no descriptor to point anywhere: replace the stream itself
        try:
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        except OSError:
            pass


def stdout_problem() -> str:
    """Flush standard output; why it failed ("No space left on device"), or "" when it did not.

    After a failure standard output is pointed at the null device, so that the
    interpreter's own flush at exit cannot fail a second time with a traceback.
    A reader that went away (``mpdoctor checks | head -1``: a broken pipe) or a
    closed stream is not a failure: it read what it wanted.
    """
    if sys.stdout is None:  # started with stdout closed and never prepared (prepare_stdout)
        return ""
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        _silence_stdout()
        if reader_gone(exc):
            return ""
        return getattr(exc, "strerror", None) or str(exc)
    return ""
