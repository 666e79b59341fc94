"""The part of a source file worth parsing: the statements around real uses (stdlib only, Python 3.8+).

The project scan (``scan.py``) used to ``ast.parse`` every file a byte search flagged:
in transformers 5.x that is 39 files, flagged mostly by ``maybe_autocast`` and by
comments, for 4 real uses, 0.64 s. This module narrows the parse without changing
the answer:

* ``readers``: which of the scan's readers a file needs, decided by byte searches
  exactly as the regular expressions they replace decided it (a regex walks every
  byte in Python's engine; ``in`` runs at memchr speed).
* ``code_hits``: where a use's key word (``autocast``, ``apex``, ...) stands as a
  whole word in code rather than inside a plain string or a comment. A use is an
  import, an attribute or a call, so its key word is a code token: a file with no
  hit holds no use. f-strings count as code (their braces hold expressions).
* ``window_source``: the top-level statements holding the hits (in a class, only
  its members holding them, under a stand-in ``class Name:`` line that keeps the
  class's name, which the code-path reader reports), and the top-level imports
  (it resolves names through them: ``import torch as th``), each at its own line
  numbers with blank lines between. ``ast.parse`` of that gives the nodes a
  parse of the whole file gives for those statements, at the same lines and depths
  and in the same breadth-first order, which is all the scan's readers look at.

Statement boundaries come from a small lexer: strings and comments masked (same
offsets, same newlines), then bracket depth and backslash continuations followed
line by line. Anything it cannot vouch for (form feeds, lone carriage returns, a
hit outside every statement, another encoding) sends the caller back to parsing
the whole file, as does a window that does not parse.

Known limits, none reachable in the tests' trees or transformers': an identifier
spelt with NFKC-equivalent characters (fullwidth letters) is a name the parser normalises
but no byte search finds; on Python 3.12+ an f-string nesting its own quote kind
(PEP 701) can mislead the lexer; a file too deeply nested for the parser is noted
as such only when the statements around its key words hold a use (the whole-file
parse noted it whenever the byte search flagged the file).
"""

import re
from bisect import bisect_right

# Strings (triple-quoted first) and comments. Unrolled loops, and a string left open ends at the end of its line
# (of the file, for a triple-quoted one) instead of failing: every attempt consumes what it scanned, so the scan
# stays linear on hostile input. Valid code has no open string, so for it this changes nothing.
TOKENS = re.compile(
    rb"#[^\r\n]*"
    rb'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*(?:"""|\Z)'
    rb"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*(?:'''|\Z)"
    rb'|"[^"\\\r\n]*(?:\\(?:\r\n|[\s\S])[^"\\\r\n]*)*(?:"|(?=[\r\n])|\Z)'
    rb"|'[^'\\\r\n]*(?:\\(?:\r\n|[\s\S])[^'\\\r\n]*)*(?:'|(?=[\r\n])|\Z)"
)
IDENTIFIER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") | frozenset(range(128, 256))
# A masked string keeps its opening quote (a line that starts with a string starts a statement) and its
# newlines; the rest becomes NUL, which no code line starts with (files holding NUL never get here).
STRING_MASK = bytes(10 if byte == 10 else 0 for byte in range(256))
COMMENT_MASK = bytes([32]) * 256
BRACKETS = bytes(40 if byte in b"([{" else 41 if byte in b")]}" else byte for byte in range(256))  # all as ( or )
CONTINUES = re.compile(rb"(?:else|elif|except|finally)(?![A-Za-z0-9_\x80-\xff])")
CLASS = re.compile(rb"class(?![A-Za-z0-9_\x80-\xff])")
STAND_IN = b"class _:\n"
CLASS_NAME = re.compile(rb"[ \t]*class[ \t]+([A-Za-z_][A-Za-z0-9_]*)")  # the stand-in keeps an ASCII class name
IMPORT = re.compile(rb"(?:import|from)[ \t]")

APEX_IMPORT = re.compile(rb"^[ \t]*(?:from|import)[ \t]+apex\b", re.MULTILINE)
# What each reader needs to see in a file before it looks (scan.py's APEX_IMPORT, TORCH_AMP and ONEFLOW, as byte
# searches: the same answers, at memchr speed), and the key words its uses stand on: (whole words, substrings).
KEYS = (
    # apex in any identifier, any case: the tests apex_guards reads (is_apex_available(), _APEX_AVAILABLE, HAS_APEX)
    ((b"apex",), (b"apex", b"APEX", b"Apex")),
    ((b"autocast", b"GradScaler", b"amp"), ()),
    ((b"autocast", b"backend"), (b"oneflow", b"onediff")),
    # scan.SITE_KEYS: the code-path reader reads a unit only when it names one of them
    (
        (
            b"autocast",
            b"GradScaler",
            b"amp",
            b"apex",
            b"clip_grad_norm_",
            b"clip_grad_value_",
            b"scale_loss",
            b"unscale_",
        ),
        (),
    ),
)
# Strings that name an apex module (find_spec("apex"), RequirementCache("apex.amp")): a test of apex's availability
# (apex_guards), a hit of the apex reader although a string; found at the string's opening quote.
QUOTED = (b'"apex"', b"'apex'", b'"apex.', b"'apex.")
COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


def readers(source):
    """(apex, torch AMP, OneFlow, code paths): which readers a file needs, as APEX_IMPORT, TORCH_AMP and ONEFLOW
    decide; code paths are read where apex or torch AMP is, or gradients are clipped (a scaler may come from
    another file)."""
    apex = b"apex" in source and APEX_IMPORT.search(source) is not None
    torch_amp = (
        b"autocast" in source
        or b"GradScaler" in source
        or (b".amp" in source and (b"torch.amp" in source or b"torch.cuda.amp" in source))
    )
    paths = apex or torch_amp or b"clip_grad_" in source or b"import amp" in source  # from torch.cuda import amp
    return (apex, torch_amp, b"oneflow" in source or b"onediff" in source, paths)


def plain_utf8(source):
    """Whether ``source`` is UTF-8 the way the parser reads it by default: no other coding cookie, no NUL."""
    second = source.find(b"\n", source.find(b"\n") + 1)
    cookie = COOKIE.search(source[:second] if second >= 0 else source)
    if (
        cookie
        and cookie.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8")
        and not cookie.group(1).lower().startswith(b"utf-8-")
    ):
        return False
    if b"\0" in source:
        return False
    if source.isascii():
        return True
    try:  # the parser forgives a bad byte in a comment, not in code: leave such a file to it
        source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def key_offsets(source, words, substrings=()):
    """Offsets of each of ``words`` standing as a whole word, and of each of ``substrings`` anywhere."""
    found = []
    for key in words:
        start = source.find(key)
        while start >= 0:
            end = start + len(key)
            if (not start or source[start - 1] not in IDENTIFIER) and (
                end == len(source) or source[end] not in IDENTIFIER
            ):
                found.append(start)
            start = source.find(key, end)
    for key in substrings:
        start = source.find(key)
        while start >= 0:
            found.append(start)
            start = source.find(key, start + len(key))
    return sorted(set(found))


def lex(source):
    """(masked source, starts, ends): strings and comments masked; the spans of those that hold no code."""
    pieces, starts, ends, done = [], [], [], 0
    for match in TOKENS.finditer(source):
        start, end = match.span()
        pieces.append(source[done:start])
        token = match.group()
        if token[:1] == b"#":
            pieces.append(token.translate(COMMENT_MASK))
            starts.append(start)
            ends.append(end)
        else:
            pieces.append(token[:1] + token[1:].translate(STRING_MASK))
            # An f-string's braces hold code (so does a t-string's); `if"x"` looks like one too: counting it as
            # code only costs a parse, never a missed use.
            prefix = source[max(0, start - 2) : start]
            prefix = prefix[-1:] if not prefix[:1].isalpha() else prefix if prefix[-1:].isalpha() else b""
            if not set(prefix) & set(b"fFtT"):
                starts.append(start)
                ends.append(end)
        done = end
    pieces.append(source[done:])
    return b"".join(pieces), starts, ends


def code_hits(offsets, starts, ends):
    """The offsets that fall outside every plain string and comment."""
    hits = []
    for offset in offsets:
        index = bisect_right(starts, offset) - 1
        if index < 0 or offset >= ends[index]:
            hits.append(offset)
    return hits


def hits(source, readers):
    """(offsets of the wanted readers' key words that stand in code, the masked source); ([], b"") for none."""
    words, substrings = set(), set()
    for wanted, (whole, parts) in zip(readers, KEYS):
        if wanted:
            words.update(whole)
            substrings.update(parts)
    offsets = key_offsets(source, sorted(words), sorted(substrings))
    quoted = key_offsets(source, (), QUOTED) if readers[0] else []
    if not offsets and not quoted:  # the common case: a word like maybe_autocast flagged the file; no lexing needed
        return [], b""
    masked, starts, ends = lex(source)
    opening = set(starts)
    found = code_hits(offsets, starts, ends) + [offset for offset in quoted if offset in opening]
    return sorted(set(found)), masked


def _continued(masked, offset):
    """Whether the line before ``offset`` ends in a backslash (in code: masked strings and comments have none)."""
    return masked[offset - 2 : offset] == b"\\\n" or masked[offset - 3 : offset] == b"\\\r\n"


def logical_lines(masked, brackets, indent, start, end):
    """(offset, first bytes) of each line in ``masked[start:end]`` that starts a logical line at exactly ``indent``.

    Only the lines at that indentation are visited (a regular expression finds them); the bracket depth
    before each comes from counting in ``brackets`` since ``start``, which must be outside every bracket.
    """
    pattern = re.compile(b"\n" + re.escape(indent) + rb"(?=[^ \t\r\n\0])")
    offsets = [0] if not start and not indent and masked[:1] not in (b"", b" ", b"\t", b"\r", b"\n") else []
    offsets += [match.start() + 1 for match in pattern.finditer(masked, start, end)]
    found, depth, done = [], 0, start
    for offset in offsets:
        depth += brackets.count(b"(", done, offset) - brackets.count(b")", done, offset)
        done = offset
        if depth <= 0 and not _continued(masked, offset):
            found.append((offset, masked[offset + len(indent) : offset + len(indent) + 16]))
    return found


def statements(lines):
    """The logical lines that start a statement: not the def under a decorator, not an else or except."""
    found, decorated = [], False
    for offset, head in lines:
        if not decorated and not CONTINUES.match(head):
            found.append(offset)
        decorated = head[:1] == b"@"
    return found


BODY = re.compile(rb"\n([ \t]+)(?=[^ \t\r\n\0])")


def _members(masked, brackets, heads, start, end, hits):
    """(start, end) of the members of the class statement at ``start`` that hold ``hits``; None when it is no class,
    or a hit is in its header (a decorator, a base class)."""
    heads = [head for head in heads if head[:1] != b"@"]
    if not heads or not CLASS.match(heads[0]):
        return None
    depth, done, indent, first = 0, start, b"", -1
    for match in BODY.finditer(masked, start, end):  # the first indented logical line: the body's indentation
        offset = match.start() + 1
        depth += brackets.count(b"(", done, offset) - brackets.count(b")", done, offset)
        done = offset
        if depth <= 0 and not _continued(masked, offset):
            indent, first = match.group(1), offset
            break
    if not indent or hits[0] < first:
        return None
    members = statements(logical_lines(masked, brackets, indent, start, end))
    if not members or members[0] != first:
        return None
    picked = sorted({bisect_right(members, hit) - 1 for hit in hits})
    return [(members[i], members[i + 1] if i + 1 < len(members) else end) for i in picked]


def window_source(source, masked, hits):
    """Source holding only the statements around ``hits``, at their own line numbers; None when unsure."""
    if b"\f" in source or source.count(b"\r") != source.count(b"\r\n"):  # another idea of where lines begin
        return None
    brackets = masked.translate(BRACKETS)
    lines = logical_lines(masked, brackets, b"", 0, len(masked))
    tops = statements(lines)
    if not tops or hits[0] < tops[0]:
        return None
    line_offsets = [offset for offset, _ in lines]
    groups = {}
    for hit in hits:
        groups.setdefault(bisect_right(tops, hit) - 1, []).append(hit)
    # The top-level imports too: the code-path reader resolves names through them (`import torch as th`).
    heads = dict(lines)
    imports = {index for index, top in enumerate(tops) if IMPORT.match(heads.get(top, b""))}
    pieces, at = [], [0, 0]  # the line and the offset the next piece starts at

    def add(start, end, stand_in=b""):
        line = at[0] + masked.count(b"\n", at[1], start)  # windows come in order: count each newline once
        pieces.append(b"\n" * (line - 1 - at[0]) + stand_in if stand_in else b"\n" * (line - at[0]))
        pieces.append(source[start:end])
        at[:] = [line + masked.count(b"\n", start, end), end]

    for index in sorted(set(groups) | imports):
        start = tops[index]
        end = tops[index + 1] if index + 1 < len(tops) else len(source)
        if index not in groups:
            add(start, end)
            continue
        first, last = bisect_right(line_offsets, start) - 1, bisect_right(line_offsets, end - 1)
        heads = [head for _, head in lines[first:last]]
        members = _members(masked, brackets, heads, start, end, groups[index])
        if members is None:
            add(start, end)
            continue
        header = next(offset for offset, head in lines[first:last] if head[:1] != b"@")
        name = CLASS_NAME.match(masked, header)
        stand_in = b"class %s:\n" % name.group(1) if name else STAND_IN
        for number, (member, stop) in enumerate(members):
            add(member, stop, stand_in=b"" if number else stand_in)
    return b"".join(pieces)
