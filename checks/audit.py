"""audit: what `mpdoctor audit PATH` finds in a checkpoint or model folder.

These rules judge a checkpoint audit, not a snapshot: ``mpdoctor.checkpoint_audit``
reads the files and stamps its findings with the rules declared here, so their
codes, names and documentation live in the registry like every other code's.
"""

from __future__ import annotations

from mpdoctor.checks.registry import CHECKPOINT, rule

FAMILY = "audit"

UNREADABLE_WEIGHTS = rule(
    "AUDIT001",
    "unreadable-weights",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
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
    """,
)

MODULE_MIXES_DTYPES = rule(
    "AUDIT002",
    "module-mixes-dtypes",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
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
    """,
)

CHECKPOINT_MIXES_DTYPES = rule(
    "AUDIT003",
    "checkpoint-mixes-dtypes",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
    Parts of the checkpoint are in different floating dtypes, beyond the modules AUDIT004/AUDIT005 name.

    ## Why it matters
    Often on purpose (an fp32 text encoder beside an fp16 UNet in a diffusers
    folder; a mostly-fp32 part of an fp16 model): fine under torch.autocast, and
    for loaders that cast the whole model to one dtype. Code that feeds one
    part's output to another without autocast must cast between them, or it
    fails with a dtype mismatch. It is reported whether or not AUDIT002 fires
    (a module that mixes dtypes inside itself is another matter); it stands
    down only where AUDIT004 and AUDIT005 already name every module in
    another dtype, which says the same more precisely.

    ## Fix
    Nothing, if you run it under torch.autocast or load it in one dtype;
    otherwise cast the activations where the parts meet.
    """,
)

MODULE_IN_ANOTHER_DTYPE = rule(
    "AUDIT004",
    "module-in-another-dtype",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
    A whole submodule is in another floating dtype than the model around it, and nothing says it is on purpose.

    ## Why it matters
    Every tensor of the module is, say, float32 inside a float16 model (incident
    3's `mask_embed`, an `fc2` left in fp32 by a partial `.half()`). Loaded as
    saved, the module receives float16 activations and multiplies them with its
    float32 weights: `mat1 and mat2 must have the same dtype`, `Input type
    (c10::Half) and bias type (float) should be the same`, or, when it runs, a
    float32 output that breaks the next module. The model's dtype is the one most
    of its elements are in, so the module named is the one that changed, not a
    sibling that outweighs it less. A norm is no exception where the architecture
    is known: Llama keeps no norm in float32, and its fp32 RMSNorm returns float32
    into the next float16 Linear. The modules the architecture's library keeps in
    float32 (`_keep_in_fp32_modules`) are reported by AUDIT005 instead.

    ## Fix
    Cast on load: load the model in one dtype, in its library's words
    (`from_pretrained(..., dtype=torch.bfloat16)` from transformers 4.56 on,
    `torch_dtype=` before and in diffusers; `model.to(torch.bfloat16)`), or run it
    under torch.autocast, which casts per op. Or keep the module in its dtype on
    purpose and cast the input in its forward: `x = x.to(self.weight.dtype)`, and
    the output back to the model's dtype.
    """,
)

MODULE_KEPT_IN_FLOAT32 = rule(
    "AUDIT005",
    "module-kept-in-float32",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
    Submodules are in float32 inside a lower-precision model, as loaders keep them on purpose.

    ## Why it matters
    The modules a transformers or diffusers model class lists in
    `_keep_in_fp32_modules` (known for the architecture its `config.json` names,
    or read from the live model) are kept in float32 for accuracy: T5's `wo`
    overflows in float16. The libraries that do this cast the input in the
    module's forward, so it works as saved. Where nothing names the architecture
    (a bare state dict, a module of your own), a norm in float32 is taken as kept
    on purpose, as mixed-precision setups keep norms, and the reason says it is
    a guess. Code that casts the model by hand (`.half()`) undoes it, and code
    that calls such a module with a half input and no cast fails with a dtype
    mismatch. The same code reports the other side as info: a model cast by hand
    to float16 whose architecture keeps modules in float32 (a T5's `wo` in
    float16), naming the modules to keep in float32.

    ## Fix
    Nothing, under transformers/diffusers loaders or torch.autocast. In your
    own code, cast the input in the module's forward (`x.to(self.weight.dtype)`),
    or load the model with the library's loader and its dtype argument (`dtype=`,
    `torch_dtype=` before transformers 4.56), which keeps these modules in
    float32; after a cast by hand, cast them back (`module.float()`).
    """,
)

WEIGHTS_OUTSIDE_THE_LAYOUT = rule(
    "AUDIT006",
    "weights-outside-the-layout",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
    A diffusers folder holds weights in no component its `model_index.json` names.

    ## Why it matters
    diffusers loads a pipeline's components from the subfolders `model_index.json`
    names, and nothing else: weights beside them (a `unet/` it does not list, a
    `.safetensors` at the top of the folder) are never loaded, so the pipeline
    runs without them, or `from_pretrained` fails for want of a component. A
    `model_index.json` that names no component at all describes an empty
    pipeline. mpdoctor judges each such checkpoint on its own and says so,
    rather than reporting an empty folder as fine.

    ## Fix
    Put each component's weights in the subfolder of its name and name it in
    `model_index.json` (`"unet": ["diffusers", "UNet2DConditionModel"]`), as
    `pipeline.save_pretrained()` writes them; keep other weights out of the
    pipeline's folder.
    """,
)

QUANTIZED_MODULES = rule(
    "AUDIT007",
    "quantized-modules",
    family=FAMILY,
    subject=CHECKPOINT,
    doc="""
    Modules stored quantized: weights in fp8, fp4 or packed integers, with the scales that read them beside them.

    ## Why it matters
    A quantized checkpoint mixes dtypes by design: DeepSeek-V3 and Qwen FP8 keep each
    projection's weight in float8_e4m3fn with a float32 `weight_scale_inv` beside it and
    the norms, embeddings and `lm_head` in bfloat16; bitsandbytes, GPTQ and AWQ keep
    packed integers with fp16 scales. These modules are left out of AUDIT002 and
    AUDIT004: casting such a model to one dtype (`model.to(torch.float8_e4m3fn)`, or a
    `.to()` that drops the scales) destroys it. The model's dtype is judged from the rest.

    ## Fix
    Nothing to fix: load it with the quantization method that wrote it (the config's
    `quantization_config`, or the method its tensor names tell), which reads the scales,
    and never cast the quantized modules yourself.
    """,
)
