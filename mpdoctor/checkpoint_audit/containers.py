"""A training checkpoint's model copies, each judged on its own; its optimizer state not judged at all.

``torch.save({"model": ..., "optimizer": ..., "step": 1})`` is not one model: the
child that reads pickles (``probes/remote/checkpoint_loader.py``) tells its top-level
entries apart, as Lightning, timm, fairseq, DeepSpeed and hand-written training loops
name them, and gives each tensor the copy it belongs to. Here each model copy (the
model; an EMA copy kept beside it, often in float32; a GAN's second net) becomes a
checkpoint of its own, named ``file:entry`` where the file holds several, its tensors
named within the entry (``transformer.h.0.attn``, not ``model.transformer...``). So an
fp16 model beside its fp32 EMA copy is two uniform models, not "model: float16 in a
float32 model", and the fix is never to cast the model to the optimizer's dtype.

What is not model weights (an optimizer's moments and step counters, a GradScaler's
scale, a scheduler's or a callback's tensors) is listed under "Not read" with its role
and size, as the folder audit lists the ``optimizer.pt`` HF Trainer saves beside the
weights: an fp32 Adam ``step`` is no module in another dtype.
"""

from __future__ import annotations

import dataclasses

from mpdoctor.checkpoint_audit.layout import Checkpoint, Layout, Unread
from mpdoctor.checkpoint_audit.tree import size_text


def split(found: Layout) -> Layout:
    """``found`` with each training checkpoint's model copies as checkpoints, and what is not weights as unread.

    A checkpoint that is one pickle holding a state dict (one copy named "") stays as it is.
    """
    checkpoints: list[Checkpoint] = []
    unread = list(found.unread)
    for checkpoint in found.checkpoints:
        file = checkpoint.files[0] if len(checkpoint.files) == 1 else None
        if file is None or not (file.skipped or [c for c in file.copies if c[0]]):
            checkpoints.append(checkpoint)
            continue
        for key, role, count, nbytes in file.skipped:
            where = f"{file.path}:{key}" if key else file.path
            unread.append(
                Unread(
                    where,
                    f"{role}: {count} tensor{'' if count == 1 else 's'}, {size_text(nbytes)}; not model weights, "
                    "not judged",
                )
            )
        copies = file.copies
        if not copies:  # nothing but training state (an optimizer.pt named on its own): no model to judge
            checkpoints.append(dataclasses.replace(checkpoint, files=[dataclasses.replace(file, skipped=[])]))
            continue
        for key, role, start, stop in copies:
            part = dataclasses.replace(file, tensors=file.tensors[start:stop], copies=[], skipped=[])
            name = f"{checkpoint.name}:{key}" if len(copies) > 1 else checkpoint.name
            checkpoints.append(dataclasses.replace(checkpoint, name=name, files=[part], how="entry", entry=key,
                                                   role=role))  # fmt: skip
    return dataclasses.replace(found, checkpoints=checkpoints, unread=unread)
