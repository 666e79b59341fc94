"""Read a file without trusting it: regular files only, and never more than a limit.

Stdlib only, Python 3.8+: the project scan and the inventory use it *inside the
interpreter under diagnosis*, and the host (the snapshot loader, the checkpoint
audit) uses it too.

Why it is needed: ``open()`` on a FIFO blocks until some writer comes, a
character device such as ``/dev/zero`` never ends, and ``st_size`` says nothing
about either. So a path is looked at with ``stat`` first (which never blocks, and
spares a device the open), opened with ``O_NONBLOCK`` (a FIFO that appears in
between opens at once instead of blocking), checked again with ``fstat`` on the
open descriptor, and read to at most ``limit + 1`` bytes.
"""

import json
import os
import stat

from . import limits  # the bounds (portable/limits.py), relative: this package is loaded by path in the target

KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class Refused(ValueError):
    """A path that was not read: not a regular file, or larger than the limit.

    The message says which and names the path; ``why`` is the reason alone.
    """

    def __init__(self, path, why):
        ValueError.__init__(self, "%s is %s" % (path, why))
        self.why = why


def kind(mode):
    """What a file of this st_mode is, in words ("a FIFO (named pipe)"); "a regular file" for one."""
    for test, words in KINDS:
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def not_regular(path):
    """Why ``path`` (symlinks followed) is not a regular file, or "" when it is one or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return ""
    return "" if stat.S_ISREG(mode) else kind(mode)


def read_bytes(path, limit, cut=False, listed_regular=False):
    """The regular file ``path``'s bytes, at most ``limit`` of them.

    Raises ``Refused`` for anything that is not a regular file, and for a file of
    more than ``limit`` bytes unless ``cut`` (then its first ``limit`` bytes are
    returned); ``OSError`` when it cannot be opened or read. ``listed_regular``: a
    directory listing just showed a regular file (not a link), so the stat before
    opening is skipped; the one after opening still refuses anything else.
    """
    why = "" if listed_regular else not_regular(path)
    if why:
        raise Refused(path, "%s, not a regular file" % why)
    # O_NONBLOCK: a FIFO swapped in after the check must not block the open
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the stat above
            raise Refused(path, "%s, not a regular file" % kind(info.st_mode))
        want = min(info.st_size, limit) + 1  # one read for a file that does not change; a short read is its end
        first = os.read(fd, want)
        chunks, size = [first], len(first)
        while len(first) == want and size <= limit:  # it grew since the fstat, or is longer than the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if size > limit and not cut:
        raise Refused(path, "larger than %d bytes" % limit)
    return data[:limit]


def guard_metadata():
    """Make ``importlib.metadata`` refuse a distribution file that is not a regular file.

    A FIFO named ``METADATA`` in a ``*.dist-info`` directory blocks every reader
    of the environment's metadata (the inventory, apex's and OneFlow's lookups)
    until a probe's time runs out. Once this has run in a process, reading such a
    file raises ``Refused`` instead, which those readers record as the
    distribution's problem. Files that are regular, missing or directories are
    read as before.
    """
    try:
        from importlib import metadata
    except ImportError:  # Python before 3.8 has no importlib.metadata: nothing reads it
        return
    original = metadata.PathDistribution.read_text
    if getattr(original, "mpdoctor_guarded", False):
        return

    def read_text(self, filename):
        base = getattr(self, "_path", None)
        if isinstance(base, (str, os.PathLike)) and filename:
            path = os.path.join(os.fspath(base), filename)
            why = not_regular(path)
            if why and why != "a directory":
                raise Refused(path, "%s, not a regular file: not read" % why)
            size = os.path.getsize(path) if not why and os.path.exists(path) else 0
            if size > limits.DIST_METADATA:  # parsed whole, at some 15 times its size in memory
                raise Refused(path, "%d bytes, over the %d read: not read" % (size, limits.DIST_METADATA))
        return original(self, filename)

    read_text.mpdoctor_guarded = True
    metadata.PathDistribution.read_text = read_text


def json_value(data, max_depth=64, max_digits=40):
    """JSON text (str or bytes) as Python data, parsed without trusting it; ValueError says what is wrong.

    Beyond what ``json.loads`` refuses: nesting deeper than ``max_depth`` (every
    later walk over the data, validation, redaction or rendering, may recurse), an
    integer of more than ``max_digits`` digits (Python refuses over 4,300 digits
    with an exception of its own, and no real field needs more than a byte count),
    and ``NaN`` or ``Infinity``, which are not JSON.
    """

    def bounded_int(text):
        if len(text) > max_digits and len(text.lstrip("-")) > max_digits:  # (the first test is the quick one)
            raise ValueError("an integer of %d digits (at most %d are read)" % (len(text.lstrip("-")), max_digits))
        return int(text)

    def no_constant(name):
        raise ValueError("%s is not JSON" % name)

    try:
        value = json.loads(data, parse_int=bounded_int, parse_constant=no_constant)
    except RecursionError:
        raise ValueError("nested too deeply (at most %d levels are read)" % max_depth)
    stack = [(value, 1)]
    while stack:  # by hand, not recursion: the check must not need the depth it is checking
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise ValueError("nested too deeply (at most %d levels are read)" % max_depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return value


def read_json(path, limit, max_depth=64, max_digits=40):
    """The JSON in the regular file ``path`` (at most ``limit`` bytes), parsed as ``json_value`` parses it.

    The one way mpdoctor reads a JSON file it was handed (a snapshot, a report, an index): raises ``Refused``
    (not a regular file, too large), ``OSError`` (cannot be read) or ``ValueError`` (not UTF-8 text, not JSON,
    too deep, an integer too long; ``json.JSONDecodeError`` says where).
    """
    # UTF-8 as JSON files are (RFC 8259): json.loads would also take bytes in UTF-16 or UTF-32, guessed from them.
    return json_value(read_bytes(path, limit).decode("utf-8"), max_depth, max_digits)
