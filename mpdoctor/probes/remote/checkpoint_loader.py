"""List pickled checkpoints' tensors, *inside the interpreter under diagnosis*, safely.

Run by ``mpdoctor.checkpoint_audit.pickles`` through the same bootstrap as ``target.py``
(stdlib plus the target's torch, Python 3.8+, POSIX: it forks), in a child process
with a timeout. Only ``torch.load(weights_only=True)`` is ever used: a checkpoint
that needs a full unpickle is refused, because unpickling runs arbitrary code.
``mmap=True`` keeps a multi-GB file off the heap; the old tar format cannot be
mapped and is read without it.

One process serves every pickle of an audit: it imports torch once (``IMPORT_FILE``
says how that went), then reads the files in ``workers`` forked workers
(``supervise.py``), each with a step file of its own (``WORKER_FILE``) holding one
step per file: the file's index in the request, begun before ``torch.load`` and
ended with what it found, flushed at once. A file that crashes its worker or
overruns ``file_limit`` is recorded as crashed or timed out, and a fresh worker
goes on with the next file, so one bad file costs only itself; the host reads
the step files as they grow, and whatever was flushed survives this process.

The command line names one request file (JSON, written by the host):
``{"files": [path, ...], "workers": n, "file_limit": seconds}``; the step files
go beside it.
"""

import gc
import json
import os
import re
import sys
import time

from . import supervise
from ._portable import limits, linebreaks, redact

MAX_TENSORS = 200000
# Containers and tensors looked at per file. A pickle may hold one list many times over (its memo makes that cheap to
# write): 100 references to a list of 100 references, twelve levels deep, would be 10**24 visits.
MAX_VISITS = 2000000
IMPORT_FILE = "import.jsonl"  # one step, IMPORT: {"ok": true} or why torch could not be imported
IMPORT = "import"
WORKER_FILE = "worker-%d.jsonl"  # WORKER_FILE % n: worker n's files, one step each, named by the file's index
# How the supervisor words a file that ended its worker: "torch.load was killed by SIGSEGV".
WORDING = {"crashed": "%(how)s", "deadline": "did not finish within the audit's time and was killed"}
# Terminal escapes (colours, cursor moves) and other control characters: a message is data, not terminal input.
CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
# The line that says what was refused ("unsupported GLOBAL posix.system"): it goes first, whatever comes before it.
CAUSE = re.compile(r"GLOBAL|[Gg]lobal|[Uu]npickl")


class TooMany(ValueError):
    """A file whose objects are too many to walk: not a checkpoint, or one built to make its reader hang."""


def _walk(obj, prefix, out, torch, depth=0, visits=None):
    """Every tensor in nested dicts, lists and tuples, named by its dotted path."""
    visits = [0] if visits is None else visits
    visits[0] += 1
    if visits[0] > MAX_VISITS:
        raise TooMany(
            "more than %d objects in nested lists and dicts (the same ones referenced many times over): "
            "not a state dict" % MAX_VISITS
        )
    if len(out) >= MAX_TENSORS or depth > 12:
        return
    if isinstance(obj, torch.Tensor):
        out.append(
            [prefix, str(obj.dtype).replace("torch.", ""), list(obj.shape), int(obj.numel()) * int(obj.element_size())]
        )
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _walk(value, "%s.%s" % (prefix, key) if prefix else str(key), out, torch, depth + 1, visits)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _walk(value, "%s.%d" % (prefix, index) if prefix else str(index), out, torch, depth + 1, visits)


def message(exc):
    """``exc``'s message as one line: control characters gone, the line naming the cause first, redacted, bounded."""
    lines = [" ".join(line.split()) for line in linebreaks.split_lines(CONTROL.sub("", str(exc)))]
    lines = [line for line in lines if line]
    ordered = [line for line in lines if CAUSE.search(line)] + [line for line in lines if not CAUSE.search(line)]
    return redact.redact_text(" ".join(ordered))[: limits.FAILURE_TEXT]


def import_torch():
    """(torch, None), or (None, why) as data: no torch here, or a torch that cannot import, is not a file's fault."""
    gc.disable()  # `import torch` makes objects by the hundred thousand, none garbage: collecting only costs time
    try:
        import torch
    except BaseException as exc:  # SystemExit and friends from a broken torch too
        return None, {"ok": False, "stage": "import", "type": type(exc).__name__, "message": message(exc)}
    finally:
        gc.enable()
    gc.freeze()  # what the import made stays out of every later collection, and unshared by the workers' forks
    return torch, None


def load(path, torch):
    """The tensors of one pickled checkpoint, as data."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except TypeError:  # a torch before weights_only (1.13) or mmap (2.1)
        if "weights_only" in str(sys.exc_info()[1]):
            raise RuntimeError("this torch has no weights_only loading; mpdoctor will not unpickle without it")
        state = torch.load(path, map_location="cpu", weights_only=True)
    except RuntimeError as exc:
        if "mmap" not in str(exc):
            raise
        state = torch.load(path, map_location="cpu", weights_only=True)  # the old, unmappable format
    tensors = []
    _walk(state, "", tensors, torch)
    return {"ok": True, "tensors": tensors, "truncated": len(tensors) >= MAX_TENSORS}


def load_step(path, torch):
    """One file's step: its tensors, or why torch.load refused it (a refused pickle, a corrupt zip: all facts)."""

    def step():
        try:
            return load(path, torch)
        except TooMany as exc:  # torch.load read it; listing it would never end
            return {"ok": False, "stage": "list", "type": type(exc).__name__, "message": message(exc)}
        except BaseException as exc:
            return {"ok": False, "stage": "load", "type": type(exc).__name__, "message": message(exc)}

    return step


def plan(paths, indexes, torch):
    """A worker's plan (called in the worker): a step per file, named by its index in the request."""
    return lambda: [(str(i), load_step(paths[i], torch)) for i in indexes]


def main(argv):
    request_path = argv[0]
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    folder = os.path.dirname(os.path.abspath(request_path))
    paths = [str(p) for p in request["files"]]
    workers = max(1, min(int(request["workers"]), len(paths)))
    limit = float(request["file_limit"])
    out = supervise.StepWriter(os.path.join(folder, IMPORT_FILE))
    out.begin(IMPORT)
    torch, failure = import_torch()
    out.emit(IMPORT, failure or {"ok": True})
    if torch is None:
        return
    start = time.monotonic()
    jobs = []
    for n in range(workers):
        mine = list(range(n, len(paths), workers))  # round robin: the big files of a sorted folder spread out
        jobs.append(
            supervise.Job(
                os.path.join(folder, WORKER_FILE % n),
                plan(paths, mine, torch),
                limit,
                start + limit * (len(mine) + 1),
                wording=WORDING,
            )
        )
    supervise.run(jobs)


if __name__ == "__main__":
    main(sys.argv[1:])
