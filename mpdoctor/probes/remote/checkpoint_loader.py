"""List a pickled checkpoint's tensors, *inside the interpreter under diagnosis*, safely.

Run by ``mpdoctor.checkpoint_audit.sources`` through the same bootstrap as ``target.py``
(stdlib plus the target's torch, Python 3.8+), in a child process with a timeout.
Only ``torch.load(weights_only=True)`` is ever used: a checkpoint that needs a
full unpickle is refused, because unpickling runs arbitrary code. ``mmap=True``
keeps a multi-GB file off the heap; the old tar format cannot be mapped and is
read without it. It writes one JSON object to the file named on its command line.
"""

import json
import re
import sys

from .redact import redact_text

MAX_TENSORS = 200000
MAX_MESSAGE = 4000
# Terminal escapes (colours, cursor moves) and other control characters: a message is data, not terminal input.
CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
# The line that says what was refused ("unsupported GLOBAL posix.system"): it goes first, whatever comes before it.
CAUSE = re.compile(r"GLOBAL|[Gg]lobal|[Uu]npickl")


def _walk(obj, prefix, out, torch, depth=0):
    """Every tensor in nested dicts, lists and tuples, named by its dotted path."""
    if len(out) >= MAX_TENSORS or depth > 12:
        return
    if isinstance(obj, torch.Tensor):
        out.append([prefix, str(obj.dtype).replace("torch.", ""), list(obj.shape),
                    int(obj.numel()) * int(obj.element_size())])
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _walk(value, "%s.%s" % (prefix, key) if prefix else str(key), out, torch, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _walk(value, "%s.%d" % (prefix, index) if prefix else str(index), out, torch, depth + 1)


def message(exc):
    """``exc``'s message as one line: control characters gone, the line naming the cause first, redacted, bounded."""
    lines = [" ".join(line.split()) for line in CONTROL.sub("", str(exc)).splitlines()]
    lines = [line for line in lines if line]
    ordered = [line for line in lines if CAUSE.search(line)] + [line for line in lines if not CAUSE.search(line)]
    return redact_text(" ".join(ordered))[:MAX_MESSAGE]


def load(path):
    try:
        import torch
    except BaseException as exc:  # no torch here, or a torch that cannot import: not the file's fault
        return {"ok": False, "stage": "import", "type": type(exc).__name__, "message": message(exc)}
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


def main(argv):
    path, out_path = argv[0], argv[1]
    try:
        result = load(path)
    except BaseException as exc:  # a refused pickle, a corrupt zip: all facts
        result = {"ok": False, "stage": "load", "type": type(exc).__name__, "message": message(exc)}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(sys.argv[1:])
