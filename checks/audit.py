"""audit: what `mpdoctor audit PATH` finds in a checkpoint or model folder.

These rules judge a checkpoint audit, not a snapshot: ``mpdoctor.checkpoint_audit``
reads the files and stamps its findings with the rules declared here, so their
codes, names and documentation live in the registry like every other code's.
"""

from __future__ import annotations

from mpdoctor.checks.registry import CHECKPOINT, rule

FAMILY = "audit"

UNREADABLE_WEIGHTS = rule("AUDIT001", "unreadable-weights", family=FAMILY, subject=CHECKPOINT, doc="""
    A weight file of the checkpoint could not be read.

    ## Why it matters
    Loading the model fails on that file, or (with a loader that skips what it
    cannot read) leaves those weights at their initial values and in their
    initial dtype. A `.safetensors` file is read by its header alone, so a
    truncated download or a header that disagrees with the file's size is
    caught without touching tensor data; a pickled file (`.bin`, `.pt`,
    `.ckpt`) that `torch.load(weights_only=True)` refuses holds more than
    tensors, or is damaged.

    ## Fix
    Re-download or re-save the file (a truncated download is the usual cause).
    A pickle that holds more than tensors: re-save its state dict alone, or
    convert it to safetensors, from a source you trust.
    """)

MODULE_MIXES_DTYPES = rule("AUDIT002", "module-mixes-dtypes", family=FAMILY, subject=CHECKPOINT, doc="""
    A module's own tensors are stored in more than one floating dtype.

    ## Why it matters
    Loaded as saved, such a module multiplies inputs of one dtype with weights
    of another: an fp16 model with an fp32 norm weight or bias fails with
    `expected scalar type Float but found Half` (or `mat1 and mat2 must have the
    same dtype`) as soon as it runs outside torch.autocast, e.g. after `.half()`
    of only some parts, or in fused kernels that take the input's dtype.

    ## Fix
    Load the model in one dtype (`torch_dtype=torch.float16`, or
    `.to(torch.bfloat16)`, casts every parameter) and run it under
    torch.autocast, which casts per op. Where a module is kept in fp32 on
    purpose (norms, embeddings), make its forward cast its input to its weight's
    dtype.
    """)

CHECKPOINT_MIXES_DTYPES = rule("AUDIT003", "checkpoint-mixes-dtypes", family=FAMILY, subject=CHECKPOINT, doc="""
    The checkpoint mixes floating dtypes across modules, each module uniform.

    ## Why it matters
    Often on purpose (an fp32 text encoder beside an fp16 UNet, fp32 norms in
    an fp16 model): fine under torch.autocast, and for loaders that cast the
    whole model to one dtype. Code that feeds one part's output to another
    without autocast must cast between them, or it fails with a dtype mismatch.

    ## Fix
    Nothing, if you run it under torch.autocast or load it in one dtype;
    otherwise cast the activations where the parts meet.
    """)
