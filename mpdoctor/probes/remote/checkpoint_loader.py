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

A training checkpoint is more than a model: ``{"model": ..., "optimizer": ..., "step": 1}``
(and Lightning's ``state_dict``/``optimizer_states``, timm's ``state_dict_ema``, fairseq's
``last_optimizer_state``, DeepSpeed's ``module``). Its top-level entries are told apart
(:func:`entries`): each model copy (the model, an EMA copy, a GAN's two nets) is listed
on its own, its tensors named within it, and the optimizer's, scaler's and scheduler's
tensors are only counted, never listed as a model's: an fp32 Adam ``step`` beside a
bf16 model is not a module in another dtype. A file that is itself a state dict is
listed as it always was, one copy named "".

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


# The top-level entries of a training checkpoint, as the trainers write them (read from their source): the model
# (Lightning's state_dict, DeepSpeed's module, fairseq's and most scripts' model), copies of it kept apart (timm's
# state_dict_ema, model_ema, ema, BasicSR's params_ema, a shadow), and what only training reads. A name that is
# none of these is taken for another model (a GAN's second net), never dropped: an entry of weights left unjudged
# would be a silence, one judged on its own costs nothing.
MODEL = re.compile(
    r"(?:model|state_dict|module|model_state_dict|model_state|network|net|net_?[gd]|generator|discriminator|"
    r"student|teacher|params|weights)\Z",
    re.IGNORECASE,
)
EMA = re.compile(r"(?:.*[_.-])?(?:ema|swa)(?:[_.-].*)?\Z|shadow(?:_params)?\Z|averaged_model\Z", re.IGNORECASE)
# What is not model weights, by role: torch's optimizer state_dict and the lists of them (Lightning), fairseq's
# last_optimizer_state, DeepSpeed's optimizer_state_dict, a GAN's optimizer_G; GradScaler and apex amp state (a
# Lightning precision plugin's is saved under its class name, MixedPrecision); schedulers; the rest of a trainer's
# bookkeeping (Lightning's callbacks and loops, DeepSpeed's frozen_param_fragments, fairseq's extra_state).
STATE = (
    (
        "optimizer state",
        re.compile(
            r"(?:optimizers?|optimizer_states?|optimizer_state_dict|optim|opts?|last_optimizer_state|"
            r"optimizer_history|(?:optimizer|optim|opt)_.+|.+_(?:optimizer|optim|opt))\Z",
            re.IGNORECASE,
        ),
    ),
    (
        "loss-scaler state",
        re.compile(r"(?:scaler|grad_scaler|amp_scaler|loss_scaler|amp|native_amp_scaling_state|.*Precision)\Z"),
    ),
    ("learning-rate scheduler state", re.compile(r"(?:lr_schedulers?|schedulers?|lr_scheduler_state)\Z", re.I)),
    (
        "training state",
        re.compile(
            r"(?:callbacks|loops|rng_states?|random_states?|extra_state|task_state|criterion|hyper_parameters|"
            r"hparams|args|cfg|config|frozen_param_fragments|frozen_param_shapes|param_shapes|shared_params|"
            r"data_sampler|sampler|metrics?|best_.*|epoch|step|global_step|iteration)\Z",
            re.IGNORECASE,
        ),
    ),
)
MODEL_ROLE, EMA_ROLE, OTHER_ROLE = "model", "EMA copy", "another model"


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


def _role(key, value, torch):
    """What a top-level entry is: a model copy's role, a state's ("optimizer state"...), or None when it is neither
    (a loose tensor, a number)."""
    name = str(key)
    for role, pattern in STATE:
        if pattern.match(name):
            return role
    if isinstance(value, torch.Tensor) or not isinstance(value, (dict, list, tuple)):
        return None
    if EMA.match(name):
        return EMA_ROLE
    return MODEL_ROLE if MODEL.match(name) else OTHER_ROLE


def entries(state, torch):
    """``[(key, role)]`` of a training checkpoint's top-level entries (role None: not a container); None for a file
    that is a state dict (tensors at its top, or nothing it recognises), which is listed whole, as one model.

    An optimizer's state_dict saved alone (HF Trainer's optimizer.pt) is one entry, the whole file, of that role.
    """
    if not isinstance(state, dict):
        return None
    if set(state) == {"state", "param_groups"}:  # torch.optim.Optimizer.state_dict()
        return [("", "optimizer state")]
    found = [(key, _role(key, value, torch)) for key, value in state.items()]
    known = any(
        role is not None and role != OTHER_ROLE and isinstance(state[key], (dict, list, tuple)) for key, role in found
    )
    return found if known else None


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
    return listing(state, torch)


def listing(state, torch):
    """The step data of a loaded checkpoint: ``tensors`` (a model copy's, each ``[name, dtype, shape, bytes,
    copy]``, the name within its copy), ``copies`` (``[copy, role]`` in order; ``[["", "model"]]`` for a state
    dict) and ``skipped`` (``[key, role, tensors, bytes]`` of what is not model weights)."""
    tensors, copies, skipped, visits = [], [], [], [0]
    found = entries(state, torch)
    if found is None:
        _walk(state, "", tensors, torch, visits=visits)
        for tensor in tensors:
            tensor.append("")
        copies.append(["", MODEL_ROLE])
    for key, role in found or ():
        value = state if key == "" else state[key]
        part = []
        _walk(value, "" if key == "" else str(key) if role is None else "", part, torch, visits=visits)
        if role in (MODEL_ROLE, EMA_ROLE, OTHER_ROLE):
            if part:
                copies.append([str(key), role])
            tensors += [t + [str(key)] for t in part]
        elif part:  # an optimizer's moments, a loose tensor (a best score): counted, never a model's module
            skipped.append([str(key), role or "training state", len(part), sum(t[3] for t in part)])
    return {
        "ok": True,
        "tensors": tensors,
        "copies": copies,
        "skipped": skipped,
        "truncated": len(tensors) >= MAX_TENSORS,
    }


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
