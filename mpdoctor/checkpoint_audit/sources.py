"""Which weight files a PATH means, and the tensors each holds.

Which checkpoints a folder holds, and so which files, is ``layout.py``'s job; here
each file is read: a safetensors header in this process, the pickles all in one
child (``pickles.py``).
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from mpdoctor.checkpoint_audit.progress_text import short as _short
from mpdoctor.checkpoint_audit import zip_bound
from mpdoctor.checkpoint_audit.layout import layout
from mpdoctor.checkpoint_audit.weightfile import PICKLES, SAFETENSORS, WeightFile, json_file

__all__ = ["PICKLES", "SAFETENSORS", "WeightFile", "json_file", "read", "read_all", "unread_steps", "weight_files"]
from mpdoctor.checkpoint_audit.safetensors import (
    BOMB,
    NO_TEMP,
    NO_TORCH,
    REFUSED,
    AuditError,
    read_header,
)
from mpdoctor.findings import FixStep
from mpdoctor.probes.progress import SILENT, ProgressBoard
from mpdoctor.portable import files as safe_files

if TYPE_CHECKING:
    from mpdoctor.probes.budget import Budget


def unread_steps(broken: list[WeightFile], path: str) -> list[FixStep]:
    """The fix for files that could not be read, by cause: no torch and a refused pickle are not the file's fault."""
    causes = {file.cause for file in broken}
    steps = []
    if NO_TORCH in causes:
        steps.append(
            FixStep(
                "Read pickled checkpoints with an environment that has torch",
                command=f"mpdoctor audit {shlex.quote(path)} --python /path/to/env/bin/python",
            )
        )
    if REFUSED in causes:
        steps.append(
            FixStep(
                "torch.load(weights_only=True) refused objects that are not tensors (the message names "
                "them; a GLOBAL such as posix.system runs code when unpickled): the file is not truncated. "
                "Load it with weights_only=False only if you trust its source; better, get a safetensors "
                "copy"
            )
        )
    if NO_TEMP in causes:
        steps.append(
            FixStep(
                "Give mpdoctor a writable temporary directory, then rerun",
                command=f"TMPDIR=$HOME/tmp mpdoctor audit {shlex.quote(path)}",
            )
        )
    if BOMB in causes:
        steps.append(
            FixStep(
                "The file inflates far past its size (the message says which entry, to how much): do not load "
                "it; if it should be a checkpoint, get it again from its source, better as safetensors"
            )
        )
    if "" in causes:
        steps.append(FixStep("Re-download or re-save the file; a truncated download is the usual cause"))
    return steps


def weight_files(path: str) -> list[WeightFile]:
    """The files PATH stands for, every checkpoint's (``layout.py`` says which checkpoints they make)."""
    return layout(path).files()


def read(file: WeightFile, python: str, budget: Budget) -> WeightFile:
    """Fill in the file's tensors, or its error; never raises for a bad file."""
    return read_all([file], python, budget)[0]


def read_all(
    files: list[WeightFile], python: str, budget: Budget, progress: ProgressBoard = SILENT
) -> list[WeightFile]:
    """Fill in every file's tensors, or its error, and return them; never raises for a bad file.

    Safetensors headers are read here, one after the other (milliseconds each);
    the pickles all go to one child of ``python`` (``pickles.py``): one torch
    import for all of them, each file within ``budget.checkpoint`` (the run's, from ``--timeout``).
    ``progress`` gets an "audit" task counting the files, naming the one being read.
    """
    progress.start("audit", "", total=len(files), unit="files")
    pickles, done = [], 0
    for file in files:
        try:
            if file.error:  # known unreadable before any read: a shard its siblings' names promise, a broken index
                pass
            elif file.path.endswith(SAFETENSORS):
                file.format = "safetensors"
                progress.update("audit", _short(os.path.basename(file.path)), completed=done)
                file.tensors, _ = read_header(file.path)
            elif file.path.endswith(PICKLES):
                file.format = "pickle"
                why = safe_files.not_regular(file.path)
                if why:  # torch.load would block on a FIFO, and read a device forever
                    raise AuditError(f"{file.path}: it is {why}, not a regular file: not read")
                if not os.path.isfile(file.path):
                    raise AuditError(f"{file.path}: listed, but missing")
                file.memory = os.path.getsize(file.path)
                if zip_bound.is_zip(file.path):  # what it inflates to, bounded before torch.load sees it
                    file.memory = max(file.memory, zip_bound.memory(zip_bound.check(file.path)))
                pickles.append(file)
                continue
            elif not os.path.exists(file.path):
                raise AuditError(f"{file.path}: listed, but missing")
            else:
                raise AuditError(f"{file.path}: not a weight file mpdoctor reads")
        except AuditError as exc:
            file.error, file.cause = str(exc), exc.cause
        done += 1
        progress.update("audit", completed=done)
    if pickles:
        from mpdoctor.checkpoint_audit.pickles import read_pickles  # a child and its machinery: only for pickles

        read_pickles(pickles, python, budget, progress, done, len(files))
    progress.update("audit", completed=len(files))
    progress.finish("audit", "done")
    return files
