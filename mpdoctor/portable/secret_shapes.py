"""What reads as a secret by its shape, not its name, for ``redact``: a run of letters and digits that reads as
random (a key, a token, a UUID; not a word or a version), a URL path segment that reads as a token, and a URL
that names a package index, whose path segments are judged so.

Portable (see ``__init__``): stdlib only, Python 3.8+, loaded in the target interpreter too.
"""

import re

# A package index (pip, conda, a private mirror) whose URL may carry a token in its path: by its host, a directory
# of its path, or the option or variable that names it (``PIP_INDEX_URL=``, ``--extra-index-url``, ``channels:``).
_INDEX_HOSTS = tuple(
    "pypi fury.io gemfury cloudsmith anaconda conda jfrog artifactory nexus devpi pkg.dev packagecloud repo registry "
    "npm pkgs.".split()
)
_INDEX_DIRS = frozenset("pypi conda basic whl wheels repository repositories artifactory npm channel channels".split())
_INDEX_CONTEXT = re.compile(r"(?i)index|channel|find.links|repo|registry|(?<![A-Za-z0-9])-[if][ \t=]")
# A path segment, or a run of letters and digits, that reads as random: pieces (split at - _ ~) that mix letters
# and digits, or mixed-case runs that change case often; a key, a token, a UUID does, a word or a version does not.
_SEGMENT = re.compile(r"[A-Za-z0-9_\-~=+]{12,256}\Z")
_PIECES = re.compile(r"[\-_~=+]+")


def _classes(run):
    """How many times ``run`` changes between upper case, lower case and digit, and how many of each it has."""
    changes, last, counts = 0, None, [0, 0, 0]
    for ch in run:
        kind = 0 if ch.isdigit() else 1 if ch.isupper() else 2
        counts[kind] += 1
        changes += last is not None and kind != last
        last = kind
    return changes, counts


def _random(run):
    """True when a run of 20 or more letters and digits reads as a key: all three kinds, often changing."""
    run = run[:256]
    changes, (digits, upper, lower) = _classes(run)
    return len(run) >= 20 and digits >= 2 and upper >= 2 and lower >= 2 and changes * 4 >= len(run)


def _random_piece(piece):
    if len(piece) >= 4 and not piece.isalpha() and not piece.isdigit():
        return True  # letters and digits mixed: 1a2b3c4d, Cnry1aB3
    return len(piece) >= 16 and _random(piece + "00")  # long mixed case: AbCdEfGhIjKlMnOp


def _tokenish(segment):
    """True when a URL path segment reads as a token (an index's /<token>/ or /t/<token>/), not a name."""
    if not _SEGMENT.match(segment):
        return False
    return sum(len(piece) for piece in _PIECES.split(segment) if _random_piece(piece)) >= 10


def _is_index(host, segments, before):
    """True when the URL (``host``, its path ``segments``, the text ``before`` it on its line) names a package
    index: its path segments are judged as tokens."""
    host = host.lower()
    if any(mark in host for mark in _INDEX_HOSTS):
        return True
    if any(segment in _INDEX_DIRS for segment in segments):
        return True
    named = [segment for segment in segments if segment]
    if "simple" in named[-2:] or named[:1] == ["t"]:  # pip's /simple/ or /simple/<project>/; Anaconda's /t/<token>/
        return True
    return _INDEX_CONTEXT.search(before) is not None
