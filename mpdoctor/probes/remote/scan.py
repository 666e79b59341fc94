"""Find code that imports apex or uses torch's AMP, *inside the interpreter under diagnosis*.

Loaded beside ``target.py`` (stdlib only, Python 3.8+, judges nothing). Two scans:

* installed distributions that import apex (who will pick it up), run only when
  some apex is present;
* the user's project: apex.amp, torch.amp and OneFlow use (the readers: ``amp_uses.py``), and the
  code paths of mixed precision (``amp_sites``, ``code_paths.py``: each step with its function and the
  if/else branches above it, for the checks that judge paths rather than words: checks/_code.py). Which
  directory that is (``--project DIR``, the repository that holds the working directory, or the working
  directory) and what below it is never the user's code (other repositories, environments, caches) is
  ``project_root.py``'s rule; :func:`project_facts` applies it.

Both read source with ``ast``, never run it: a docstring that mentions
``from apex import amp`` is not an import. Both stop at a time and file budget,
saying so (the project scan names the files it did not read).

The project scan pays for what it finds: per file, a few byte searches (memchr
speed) decide which readers it needs, exactly as the regular expressions they
replace did; only a file whose key words stand in code (not in a string or a
comment) is parsed, and then only the statements around them (``windows.py``),
after a syntax check of the whole file that builds no syntax tree (``symtable``),
so a file that does not parse still reports nothing, as a whole-file parse did.
"""

import ast
import errno
import os
import re
import symtable
import time

from . import listing, project_root, windows
from ._portable import files, linebreaks, redact

# The readers of a parsed file, and their bounds, live beside this module; named here too, where they always were.
from .amp_uses import (  # noqa: F401
    BLOCK_FIELDS,
    ONEFLOW_PACKAGES,
    TORCH_AMP_MODULES,
    TORCH_AMP_NAMES,
    apex_imports,
    needs_whole_file,
    oneflow_uses,
    torch_amp_uses,
)
from .code_names import SITE_KEYS, TORCH_ROOTS  # noqa: F401
from .code_paths import (  # noqa: F401
    AUTOCAST_ARGS,
    DTYPES,
    LINE_BREAK,
    MAX_SITES,
    SCALER_ENABLED,
    amp_sites,
    both_systems,
)

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

SKIP_DISTRIBUTIONS = ("apex", "nvidia-apex", "torch", "pip", "setuptools", "mpdoctor")
APEX_IMPORT = windows.APEX_IMPORT
# What windows.readers decides with byte searches; kept as the reference for the tests.
TORCH_AMP = re.compile(rb"autocast|GradScaler|torch\.cuda\.amp|torch\.amp")
ONEFLOW = re.compile(rb"oneflow|onediff")
MAX_USES = 200
MAX_FILE = 4 << 20
MAX_SKIPPED = 50
MAX_OTHERS = 50  # other repositories named in the facts; the count says how many there were
# Files listed at most per second of the scan's budget, and never fewer than MIN_FILES (1.5 s: 3,000). The time
# budget follows --timeout (portable/limits.py); a cap that did not would stop a longer scan at the same file.
FILES_PER_SECOND = 2000
MIN_FILES = 3000
# Source the parser cannot be trusted with: Python 3.9+ raises RecursionError on an
# expression nested some 100,000 deep (a chain of attributes, calls or operators), and
# 3.8's parser crashes the interpreter with a segfault. Real code comes nowhere near
# either bound: a line this long, or this many lines that continue an expression.
MAX_LINE = 20000
CONTINUATION = re.compile(rb"\n[ \t]*[.+\-*/%&|^@]")
MAX_CONTINUATIONS = 20000


def _read(path, skipped=None, label=""):
    """The first MAX_FILE bytes of a regular file; None for anything else (a FIFO would block, a device never end).

    ``skipped`` collects "label: why" for files that are there but were not read.
    """
    try:
        return files.read_bytes(path, MAX_FILE, cut=True)
    except files.Refused as exc:
        if skipped is not None:
            skipped.append("%s: %s" % (label or path, exc.why))
        return None
    except OSError:
        return None


def _unsafe(source):
    """Why the parser cannot be trusted with ``source`` (see MAX_LINE); "" when it can."""
    # A line that long holds one of the newline-free spans found by these memchr probes, one every MAX_LINE/2
    # bytes; only then are the lines measured (a regex [^\n]{N} backtracks).
    half = MAX_LINE // 2
    if (
        any(source.find(b"\n", at, at + half + 1) < 0 for at in range(0, len(source) - half, half))
        and max(map(len, source.split(b"\n"))) > MAX_LINE
    ):
        return "a line longer than %d characters" % MAX_LINE
    if source.count(b"\n") > MAX_CONTINUATIONS and len(CONTINUATION.findall(source)) > MAX_CONTINUATIONS:
        return "more than %d lines continuing one expression" % MAX_CONTINUATIONS
    return ""


def _parse(source, path, skipped=None, label=""):
    """The file's syntax tree; None when it is not Python, or too deeply nested to parse safely (noted)."""
    reason = _unsafe(source)
    if not reason:
        try:
            return ast.parse(source, filename=path)
        except (SyntaxError, ValueError):
            return None
        except (RecursionError, MemoryError):  # nested too deeply for the parser: this file only
            reason = "nested too deeply for the parser"
    if skipped is not None:
        skipped.append("%s: %s, not parsed" % (label or path, reason))
    return None


# ---------------------------------------------------------------- installed distributions


def _python_files(dist, location):
    """The .py files a distribution installed, from its RECORD (read directly: it is much faster)."""
    try:
        record = dist.read_text("RECORD")
    except Exception:
        record = None
    if record is None:  # an egg-info install lists its files elsewhere; let importlib.metadata find them
        try:
            return [str(entry.locate()) for entry in dist.files or [] if str(entry).endswith(".py")]
        except Exception:
            return []
    paths = (line.rsplit(",", 2)[0].strip('"') for line in linebreaks.split_lines(record))
    return [os.path.join(location, path) for path in paths if path.endswith(".py") and not path.startswith("..")]


def installed_uses(budget):
    """Installed distributions whose code imports apex: who switches to apex when it imports."""
    import importlib.metadata as metadata

    deadline = time.monotonic() + budget
    uses, unscanned, scanned = [], [], 0
    for dist in metadata.distributions():
        try:
            name, version = dist.metadata["Name"] or "", dist.metadata["Version"] or ""
        except Exception:
            continue
        if "".join("-" if ch in "_." else ch for ch in name.lower()) in SKIP_DISTRIBUTIONS:
            continue
        if time.monotonic() > deadline:
            unscanned.append(name)
            continue
        scanned += 1
        location = str(dist.locate_file(""))
        for path in _python_files(dist, location):
            source = _read(path)
            # The byte search is a memchr; the regex only runs on the few files that mention apex.
            if not source or b"apex" not in source or not APEX_IMPORT.search(source):
                continue
            tree = _parse(source, path)
            if tree is None:
                continue
            lines = linebreaks.split_lines(source.decode("utf-8", "replace"))  # the parser's lines, as in _uses
            for use in apex_imports(tree, lines):
                use.update({"distribution": name, "version": version, "file": os.path.relpath(path, location)})
                uses.append(use)
    return {"uses": uses[:MAX_USES], "distributions_scanned": scanned, "unscanned": unscanned}


# ---------------------------------------------------------------- the user's project


READERS = (
    ("apex_uses", apex_imports),
    ("torch_amp_uses", torch_amp_uses),
    ("oneflow_uses", oneflow_uses),
    ("amp_sites", amp_sites),
)
USE_LIMITS = {"amp_sites": MAX_SITES}
WHOLE = "parse the whole file"


def _uses(tree, source, readers):
    # The parser's lines (a form feed or U+2028 is no line break to it): a node's line number picks the line it
    # counted, where str.splitlines would pick one above it.
    lines = linebreaks.split_lines(source.decode("utf-8", "replace"))
    return {
        key: read(tree, lines, source) if read is amp_sites else read(tree, lines)
        for wanted, (key, read) in zip(readers, READERS)
        if wanted
    }


def _window_tree(source, path, readers):
    """The syntax tree of the statements around the file's uses (see ``windows.py``); None when it can hold none
    (its key words all sit in strings and comments), WHOLE when only a parse of the whole file can say."""
    if _unsafe(source) or len(source) >= MAX_FILE or not windows.plain_utf8(source):  # a cut file, another encoding
        return WHOLE
    hits, masked = windows.hits(source, readers)
    if not hits:
        return None
    window = windows.window_source(source, masked, hits)
    if window is None:
        return WHOLE
    try:
        return ast.parse(window, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return WHOLE


def _file_uses(source, path, readers, skipped, label):
    """{reader's key: uses} of a flagged file, exactly as ``_parse`` of the whole file gives them.

    A file not worth a parse gives none; otherwise only the statements around its uses are parsed. When they
    hold a use, the whole file is checked to be Python by ``symtable`` (parsed in C, no syntax tree built):
    a file that is not Python reports nothing, as its whole-file parse did.
    """
    tree = _window_tree(source, path, readers)
    if tree is None:
        return {}
    if tree is not WHOLE:
        uses = _uses(tree, source, readers)
        if not any(uses.values()):
            return uses
        if both_systems(uses.get("amp_sites", ())) or (uses.get("apex_uses") and needs_whole_file(tree)):
            tree = WHOLE  # the call chains between them, or who calls an apex import, need every function
    if tree is not WHOLE:
        try:
            symtable.symtable(source, path, "exec")
            return uses
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass  # not Python (the parse below says None), or a file ast.parse forgives and symtable does not
    tree = _parse(source, path, skipped, label)
    return {} if tree is None else _uses(tree, source, readers)


def _not_read(facts, labels, budget, limit):
    """Name the files the scan ran out of time for, as many as ``limit`` notes hold, then how many more."""
    room = limit - len(facts["skipped_files"])
    room = len(labels) if len(labels) <= room else max(1, room - 1)
    why = "not read, the scan ran out of its %.1f s budget" % budget
    facts["skipped_files"] += ["%s: %s" % (label, why) for label in labels[:room]]
    if len(labels) > room:
        facts["skipped_files"].append("%d more files: %s" % (len(labels) - room, why))


def file_cap(budget):
    """How many files a scan of ``budget`` seconds lists at most (FILES_PER_SECOND, at least MIN_FILES)."""
    return max(MIN_FILES, int(FILES_PER_SECOND * budget))


def project_facts(cwd, budget, skip=(), given=""):
    """The project scan of a run from ``cwd``: the root ``project_root.choose`` picks (``given``: --project's
    directory), and why, then :func:`project_uses` of it."""
    chosen = project_root.choose(cwd, given)
    if not chosen["root"]:
        facts = project_uses("", budget)
        facts["skipped"] = chosen["reason"]
        return facts
    if given and project_root.problem(chosen["root"]):  # checked by the host; gone or changed since
        facts = project_uses("", budget)
        facts["skipped"] = project_root.problem(chosen["root"])
        return facts
    facts = project_uses(
        chosen["root"],
        budget,
        file_cap(budget),
        skip,
        first=chosen["first"],
        nested_projects=chosen["nested_projects"],
    )
    facts["root_reason"] = chosen["reason"]
    return facts


def project_uses(top, budget, max_files=MIN_FILES, skip=(), first="", nested_projects=False):
    """apex imports, torch AMP use and OneFlow use in the code under ``top``, the project's root.

    ``first``: a directory below ``top`` read first; ``nested_projects``: folders holding a project file below
    ``top`` are other projects (see ``listing.python_files``). Other repositories are never read.
    """
    deadline = time.monotonic() + budget
    facts = {
        "root": top,
        "files_found": 0,
        "files_scanned": 0,
        "truncated": False,
        "apex_uses": [],
        "torch_amp_uses": [],
        "oneflow_uses": [],
        "amp_sites": [],
        "skipped_files": [],
        "other_repositories": [],
        "other_repositories_total": 0,
    }
    if not top or os.path.dirname(top) == top:  # never walk a whole filesystem from /
        facts["skipped"] = (
            "the filesystem root is never scanned whole; run mpdoctor from your project, or use --project DIR"
        )
        return facts
    paths, stopped, others = listing.python_files(top, deadline, max_files, first, nested_projects)
    facts["files_found"] = len(paths)
    facts["other_repositories"] = others[:MAX_OTHERS]
    facts["other_repositories_total"] = len(others)
    facts["truncated"] = bool(stopped)
    skip = tuple(os.path.join(path, "") for path in skip)
    prefix = os.path.join(top, "")

    def relative(path):  # the listing yields top + sep + the rest; relpath is slow, called 3,000 times
        return path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, top)

    for number, (path, regular) in enumerate(paths):
        if time.monotonic() > deadline:
            facts["truncated"] = True
            _not_read(
                facts,
                [relative(p) for p, _ in paths[number:] if not p.startswith(skip)],
                budget,
                MAX_SKIPPED - bool(stopped),
            )
            break
        if path.startswith(skip):
            continue
        try:
            source = listing.read(path, regular, MAX_FILE)
        except files.Refused as exc:
            facts["skipped_files"].append("%s: %s" % (relative(path), exc.why))
            continue
        except OSError as exc:  # permission denied: unread, and ENV003 says so (a broken link is no file at all)
            if exc.errno != errno.ENOENT and len(facts["skipped_files"]) < MAX_SKIPPED:
                facts["skipped_files"].append("%s: cannot be read (%s)" % (relative(path), exc.strerror or exc))
            continue
        facts["files_scanned"] += 1
        readers = windows.readers(source)
        if not any(readers):
            continue
        label = relative(path)
        for key, uses in _file_uses(source, path, readers, facts["skipped_files"], label).items():
            facts[key] += [dict(use, file=label) for use in uses]
    for key, _ in READERS:
        facts[key] = facts[key][: USE_LIMITS.get(key, MAX_USES)]
    facts["skipped_files"] = facts["skipped_files"][: MAX_SKIPPED - bool(stopped)] + ([stopped] if stopped else [])
    return facts
