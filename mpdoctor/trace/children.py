"""A call's children: their names as the call names them, and whether the outputs of theirs it combined met.

A call combines its children's outputs (``chains.py``); when they differ in dtype, the trace says the dtypes meet
there only if they really met in an op: two dtypes that meet give a tensor of their promoted dtype, and that
tensor goes somewhere, into a later child or out of the call. Judged from the records, once the call has ended.
"""

from __future__ import annotations

from typing import Any, Sequence

from mpdoctor.trace.records import ROOT, ModuleCall


def relative(name: str, prefix: str) -> str:
    """A call's qualified ``name`` as its parent (whose names start with ``prefix``) names it; the model, ROOT."""
    return name[len(prefix) :] if prefix and name.startswith(prefix) else (name or ROOT)


def promotion_seen(torch: Any, read: Any, calls: Sequence[ModuleCall], dropped: int, call: ModuleCall) -> bool:
    """Whether the children's outputs of ``call`` that differ in dtype really met in an op.

    Tensors of two dtypes that meet in an op give a tensor of their promoted dtype (fp16 with fp32 gives
    fp32), and that tensor goes somewhere: into a later child, or out of the module. When neither holds
    it, the odd output was cast before it was used: diffusers' UNet casts its fp32 timestep embedding to
    the model's dtype (``t_emb.to(dtype=sample.dtype)``) before ``time_embedding`` takes it, and no dtypes
    meet. A call that raised is judged elsewhere; when records were dropped the answer is yes (unknown).
    ``read`` is the trace's ``TensorReader`` (dtype names), ``calls`` its records in call order.
    """
    try:
        promoted = None
        for _, dtype in call.combined:
            found = getattr(torch, dtype)
            promoted = found if promoted is None else torch.promote_types(promoted, found)
        promoted_name = read.dtype(promoted)
    except Exception:  # a dtype this torch cannot promote: keep the finding
        return True
    if dropped or call.index >= len(calls):
        return True
    producers = {name for name, _ in call.combined}
    prefix = f"{call.name}." if call.name else ""
    first = None  # the index of the first child whose output is among those combined
    for later in calls[call.index + 1 :]:
        if later.parent != call.index:
            continue
        if first is None and relative(later.name, prefix) in producers:
            first = later.index
        elif first is not None and any(t.dtype == promoted_name for t in later.inputs):
            return True
    return any(t.dtype == promoted_name for t in call.outputs)
