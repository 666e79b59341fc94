"""Text cut into the lines a terminal, a log and the Python parser see: at ``\\n``, ``\\r\\n`` and ``\\r`` only.

Stdlib only, Python 3.8+: the probes in the target split what they read with it (an exception's message, a
RECORD file, a source file), and the host splits what they send back (a child's stderr, a traceback).

Why not ``str.splitlines``: it also ends a line at ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e``, NEL (U+0085) and the
line and paragraph separators (U+2028, U+2029). Text from outside mpdoctor may hold any of them, inside what is one
line everywhere else: ``RuntimeError: init failed\\x85 see docs`` is one line of a traceback, and a finding whose
title takes its last line lost ``init failed``; a form feed in a source file is whitespace to the parser, and a
quoted line taken by the parser's line number came from the wrong line after it. The reports show these characters
as their escapes (``render/sanitise.py``), so nothing is hidden by keeping them inside the line.
"""

import re

BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text):
    """``text``'s lines, as ``str.splitlines()`` gives them (no line ends; no empty last line for a final break),
    but broken at ``\\n``, ``\\r\\n`` and ``\\r`` only."""
    parts = BREAK.split(text)
    if parts[-1] == "":
        parts.pop()  # "a\\n" is one line, and "" none
    return parts
