"""The default ``--timeout``, the limits the environment probe's parts enforce themselves, and every bound on
what mpdoctor reads from a child, a target interpreter, a fleet's store or a model folder, and the length each
kind of outside text is kept to (the tables at the end).

Declared once, here, because both sides need them: the host's ``Budget``
(``mpdoctor/probes/budget.py``, which tables every limit) derives its
``apex_users``, ``project_scan``, ``apex_loads`` and ``apex_load_each`` with
:func:`handed_limits` and hands them to a part on its command line; ``target.py``
falls back on the same function, for ``DEFAULT_TIMEOUT``, only where a part is
started without them (by hand, or with a JSON object it cannot read). So no number
is repeated on either side. Stdlib only (it imports nothing), Python 3.8+, like the
rest of this package.
"""

DEFAULT_TIMEOUT = 60.0  # s: --timeout's default (check, explain --check, fleet), declared here only


def handed_limits(timeout):
    """The limits a part enforces itself for a ``--timeout`` of ``timeout`` seconds (see budget.py's table).

    ``apex_users`` and ``project_scan``: the env part's scans (``Budget.env_limits``);
    ``apex_loads`` and ``apex_load_each``: the torch part's apex loads (``Budget.torch_limits``).
    """
    apex_loads = min(20.0, timeout / 3)
    return {
        "apex_users": min(3.0, timeout / 4),
        # 1.5 s up to the default --timeout, then in proportion to it (T/40): a longer --timeout reads more of a
        # large project; below 9 s, a sixth of it, as before
        "project_scan": max(min(1.5, timeout / 6), timeout / 40),
        "apex_loads": apex_loads,
        "apex_load_each": min(apex_loads, max(1.0, min(10.0, apex_loads / 3))),
    }


# ---------------------------------------------------------------- every bound on what mpdoctor reads
#
# What a child process, a target interpreter, a fleet's store or a model folder hands mpdoctor is read to
# these bounds, and nothing past them: each is far above what a healthy source writes (said beside it), so
# only a broken or hostile one meets it, and where one is met the report says what was cut. One table, here,
# read by both sides (the host, and the target interpreter through ``_mpdoctor_portable``).

# A child's output (mpdoctor/probes/child.py: every probe, the fleet's store child). Its stdout and stderr go
# to temporary files; a child that floods them (a `--python` whose startup prints in a loop: 220 MB/s, up to
# 2 GB/s into the page cache) has its files cut whenever one holds CHILD_SPOOL bytes (half of it where the file
# system punches holes), so the temporary directory never holds more than about that (plus what it writes in one
# look, WATCH_EVERY): the last CHILD_KEPT
# bytes are kept (a probe's result is on its last line), and the result says how many were cut. A healthy probe
# writes a few KB.
CHILD_KEPT = 16 << 20
CHILD_SPOOL = 32 << 20

# What the target interpreter reports of an installed distribution (probes/remote/target.py): each cut
# where it is read, and the cut named in the distribution's problems. The longest real ones: names under
# 100 characters, versions under 60, a few hundred requirement lines (apache-airflow[all]).
DIST_METADATA = 16 << 20  # bytes of a METADATA (or any dist-info file) read at all: with its README, under 1 MB
DIST_NAME = 200  # characters of a distribution's Name
DIST_VERSION = 200  # characters of its Version
DIST_REQUIRES = 1000  # requirement lines of one distribution
DIST_REQUIRE = 500  # characters of one requirement line
DIST_SUMMARY = 300  # characters of its Summary
DIST_PATH = 4096  # characters of its location or metadata path (PATH_MAX)
DIST_DIRECT_URL = 1000  # characters of its direct_url.json
DIST_INSTALLER = 100  # characters of its INSTALLER file: a tool's name (pip, uv, conda), a word
DISTRIBUTIONS = 20000  # distributions listed (a large conda environment has about 1,500)

# Step files (probes/remote/supervise.py's reader, on both sides): a line is one step's JSON. A line longer
# than STEP_LINE is skipped unread, as a line cut by a crash is; at most STEP_FILE bytes of a file are read.
# The largest real step, the distribution list, is about 2 MB for 1,500 distributions.
STEP_LINE = 64 << 20
STEP_FILE = 256 << 20

# The fleet's c10d store (mpdoctor/fleet/protocol.py). The store has no authentication: anyone who reaches
# MASTER_PORT can write any key, and c10d's get reads a value whole. So each value is checked against its
# bound once read, and a key whose value was over it is not read again for a while (STORE_BACKOFF seconds,
# doubling up to STORE_BACKOFF_MAX): junk in the store costs one read, not one read per look.
STORE_REPORT = 16 << 20  # a rank's report: 3 KB, with its whole snapshot some 100 KB
STORE_BEAT = 64 << 10  # a heartbeat: about 130 bytes
STORE_VERDICT = 4 << 10  # a rank's verdict: about 200 bytes
STORE_COUNTER = 32  # a counter (`reported`, `ack`, a group's claim): an integer of at most 18 digits
STORE_ARRIVAL = 12  # bytes per rank of the arrivals list ("1023," is 5), plus STORE_ARRIVAL_SLACK
STORE_ARRIVAL_SLACK = 1 << 10
STORE_BEAT_TEXT = 2000  # characters kept of a heartbeat's host, step or detail: each a few words
STORE_BACKOFF = 1.0
STORE_BACKOFF_MAX = 30.0

# CUDA_VISIBLE_DEVICES (mpdoctor/analysis/visible_devices.py): entries read. A node has at most a few dozen
# devices (16 GPUs, 7 MIG instances each); an 80,000-entry value once took 32 s to judge.
VISIBLE_ENTRIES = 1024

# `mpdoctor audit` (mpdoctor/checkpoint_audit/): an index or model_index.json (weightfile.py). The largest
# real index (a 400B model's) is under 3 MB.
AUDIT_INDEX = 64 << 20


# ---------------------------------------------------------------- text kept from outside
#
# What mpdoctor keeps of a text it did not write (an exception's message, a warning, a line of someone's code, a
# string a library reports about itself, a line of a log) is redacted, then cut to one of these
# (``redact.redact_clip``: redacting first, so a cut never leaves half a token) and marked where cut. One bound
# per kind of text, named by what it bounds, so two texts of one kind are cut alike wherever they are read;
# tests/test_limits_vocabulary.py fails on a text bound spelled anywhere else. (The widths mpdoctor lays its own
# output out in, a Markdown cell, a trace table's cell, are layout, and stay with what lays it out.)

# A line of code or of a .pth file quoted as evidence (the project and installed-code scans, an apex .pth line):
# a line a person writes is under 100 characters (PEP 8 asks 79, black 88), a .pth line a path or an import or
# two; a minified or generated line shows where a use is, no more, and 2,000 sites of a project cost a snapshot
# at most 600 KB of it.
CODE_LINE = 300
# A process's command line named in a note (a process of a probe's that outlived it, stopped by mpdoctor): its
# program and first arguments say which one it was.
PROCESS_COMMAND = 200
# One exception's ``Type: message`` where collecting one fact failed, kept as that fact's error or that step's
# detail (a torch call, a OneFlow attribute, apex's find_spec, unreadable metadata, a supervised step or kernel
# test that raised, the fleet's store child). The message's first lines are the diagnosis, and a snapshot may
# hold dozens of these: a few lines each.
ERROR_TEXT = 600
# The message of a failure that is itself the finding: importing torch, OneFlow or an apex extension, a probe
# part that raised, a checkpoint torch would not load, mpdoctor's own internal error or explain's check. torch's
# longest real ones are about 1,000 characters (weights_only's refusal of a global; an undefined symbol with its
# library's path), so a message is kept whole, with room for a long qualified name in it.
FAILURE_TEXT = 4000
# The end of a traceback kept beside such a failure: its last frames, where it happened, some 20 of them.
TRACEBACK = 4000
# One warning's text (torch's at import, OneFlow's, SDPA's why-not for a kernel, autocast's in a kernel test):
# torch's longest, which names the capabilities its build has and a pip command per CUDA build that has this
# GPU's, runs to several hundred characters.
WARNING_TEXT = 1000
# A string a library reports about itself (OneFlow's version, git commit, CUDA version, build configuration):
# a version or a one-line description.
REPORTED_VALUE = 300
# One line of the text given to ``mpdoctor explain``, as its signatures' regexes see it and as a match shows it:
# a log line is seldom over a few hundred characters; past this one, a line is data (a tensor printed whole,
# base64), and what a regex may cost grows with it (tests/test_explain_scan_bound.py).
LOG_LINE = 4096
