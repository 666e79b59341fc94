"""The cues of what a GPU, a CUDA build or a compiler refuses: the hardware named (cards, generations, capabilities),
its limits and capability floors, kernel images built for other GPUs, and the compilers' own words (Triton, nvcc,
ptxas, Inductor). Like ``cues.py`` (which re-exports them), each is a regex over a lower-cased message that proves
nothing alone: ``reader.py`` reads them beside a dtype named.
"""

from __future__ import annotations

from mpdoctor.explain.shapes.pattern import cue

# A capability floor stated as such (`Minimum capability: 90. Current capability: 86`).
MINIMUM = cue(
    r"minimum (?:compute )?capability|capability (?:of )?(?:>=|≥|at least)|or higher required",
    # a floor in a person's words: "if cuda compute is below 8.6"
    r"\bcompute(?: capability| capacity)? (?:is )?(?:below|under|less than|lower than|<) ?\d",
)
HARDWARE = cue(
    r"compute capabilit|capability|compute capacity|\bcuda compute\b|\bsm_?\d{2,3}\b|architecture|\barch\b|hardware",
    r"this (?:gpu|device|card)",
    r"your (?:gpu|device|card)|the (?:gpu|device) (?:does|doesn't)|\bgpus?\b (?:does|doesn't|do not|don't)",
    r"ampere|hopper|volta|turing|pascal|maxwell|blackwell|\bada\b|\bt4\b|v100|p100|p40|k80|gtx|rtx ?\d",
    r"geforce|\btitan\b|quadro|\btesla\b|\b[1-5]0[5-9]0 ?(?:super|ti)\b",  # "because 2060 super don't support bf16"
    r"rocm|\bhip\b|hipblas|\bamd\b|gfx\d{2,4}[a-z0-9]?\b|radeon|instinct|\bmi\d{2,3}\b|\bxpu\b|amdgcn",
    r"target device|device or backend|platform|cuda device|device (?:does not|doesn't) support|cuda arch",
    r"\b(?:for|on) (?:these|those|older|old|my|our) (?:gpus|cards|devices)\b",  # "will not load bf16 for these GPUs"
    r"\b(?:on|by|for|with) (?:my|our|this|your) (?:system|machine|computer|pc|laptop|hardware)\b",
    r"\b(?:gpu|device|card)s? (?:is |are )?too old\b|\b(?:the|this|your) (?:gpu|device|card|hardware) has no\b",
    r"supported on the device|required aspect|device (?:cannot|can't|does not|doesn't) support",
    r"\b(?:a|an|any) supported (?:device|gpu|accelerator)\b|device \w{1,20} (?:does not|doesn't) support",
    # accelerators other than CUDA GPUs, whose kernels lack dtypes CUDA has: Ascend NPUs, Gaudi HPUs, DirectML, Neuron
    r"aclnn|\bnpu\b|ascend|\bhpu\b|gaudi|synapse|directml|\bdml\b|dml_util|neuronx?\b|trainium|inferentia|\btpu\b",
)
# The GPU's own limits, narrower than HARDWARE (which names any device or platform, `CUDA/XPU kernels` included): its
# capability, architecture or generation, or "this device" lacking something.
HARDWARE_LIMIT = cue(
    r"capabilit|\bsm_?\d{2,3}\b|architecture|\barch\b|generation|ampere|hopper|volta|turing|pascal|blackwell|\bada\b",
    r"(?:this|your|the target) (?:gpu|device|card)|devices? with\b|(?:gpu|device) (?:does not|doesn't|cannot|can't|lacks)",
    r"device \w{1,20} (?:does not|doesn't) support|(?:gpu|device) (?:does not|doesn't|has no|have no)\b",
    r"\b(?:a|any) supported (?:device|gpu|accelerator)\b",
    r"\b(?:on|by|for|with) (?:my|our|this|your) (?:system|machine|computer|pc|laptop|hardware)\b",  # "float16 is not
    # supported on my system"
)
KERNEL_IMAGE = cue(
    r"kernel image|no binary for (?:the )?gpu|not compiled for|cubin|invalid device function",
    # a kernel library built without this GPU's arch: "SM89 kernel is not available", "... but was built for sm37"
    r"\bsm_?\d{2,3}a? kernels? (?:is |are )?not available|\bis for sm_?\d{2,3}[^,\n]{0,20}, but was built for sm",
    r"unsupported (?:gpu )?arch|unsupported sm\b|arch conditional|targeting appropriate compute capability",
    r"on a unsupported architecture|on an unsupported architecture",
    r"invalid device symbol",  # CUDA error 13: the kernel's symbol is not in the image built for this GPU
    r"no ker\w{0,4} ?images? (?:is )?available",  # retyped: "no kerelimage is available for execution"
)
COMPILER = cue(
    r"triton|inductor|\btl\.|ptxas|\bptx\b|llvm|\bmlir\b|codegen|compilationerror|compilation error|dynamo",
    r"torch\.compile|lowering|backend compiler|\bnvcc\b|\bnvrtc\b|\bjit\b|tvm|loop-carried",
    # PTX's target directive, and a CUDA extension's compile error (`inline_ops.cuh(170): error: ...`)
    r"\.target sm_\d{2,3}|\.cuh?\(\d{1,6}\)|error building extension",  # nvcc names a source as `kernel.cu(126)`
    r"\w\(\d{1,6}\): error: |nvrtc compilation failed",
    # a C/C++ compiler that cannot target the precision (`The compiler doesn't support BFLOAT16!!!`, `-march=...+bf16`)
    r"\bthe compiler (?:does(?:n't| not)|cannot|can't)\b|-march=\S{0,30}\+(?:bf16|fp16)",
)
# nvcc finding no atomicAdd for half/bf16 operands: the build targets a GPU older than those atomics (the reader
# asks for a low precision in the argument types below it)
ATOMIC_OVERLOAD = cue(r'no instance of overloaded function "?atomic\w{1,20}"?')
# nvcc without a bf16/fp16 intrinsic for the target (`identifier "make_bfloat162" is undefined`: cuda_bf16.h declares
# those only for sm_80 and newer): a build for an older arch than the code's low-precision kernels need
UNDEFINED_INTRINSIC = cue(r"identifier ['\"`]?\w{0,30}(?:bfloat16|bf16|half|fp16|fp8)\w{0,10}['\"`]? is undefined")
