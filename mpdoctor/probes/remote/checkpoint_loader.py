"""List a pickled checkpoint's tensors, *inside the interpreter under diagnosis*, safely.

Run by ``mpdoctor.checkpoint_audit.sources`` through the same bootstrap as ``target.py``
(stdlib plus the target's torch, Python 3.8+), in a child process with a timeout.
Only ``torch.load(weights_only=True)`` is ever used: a checkpoint that needs a
full unpickle is refused, because unpickling runs arbitrary code. ``mmap=True``
keeps a multi-GB file off the heap; the old tar format cannot be mapped and is
read without it. It writes one JSON object to the file named on its command line.
"""

import json
import sys

from .redact import redact_text

MAX_TENSORS = 200000


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


def load(path):
    import torch

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
    except BaseException as exc:  # a refused pickle, a corrupt zip, a missing torch: all facts
        message = str(exc).strip().splitlines()
        result = {"ok": False, "type": type(exc).__name__,
                  "message": redact_text(" ".join(message[:3]))[:2000] if message else ""}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(sys.argv[1:])
