"""Family "attention", xFormers: no memory-efficient kernel accepts the inputs, or the build is for another torch.

``xformers.ops.memory_efficient_attention`` tries each of its kernels in turn and lists why each
refused; its C++/CUDA extension only loads under the torch and CUDA it was built for.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

# An xFormers that cannot load its CUDA kernels: the wheel made for the installed torch, or none at all.
_REINSTALL = fix(
    "Install the xFormers release made for the installed torch, from the same CUDA index as torch (e.g. cu121)",
    "pip install -U xformers --index-url https://download.pytorch.org/whl/cu121",
)
_UNINSTALL = fix("Or uninstall xFormers and let the code use PyTorch SDPA", "pip uninstall -y xformers")

SIGNATURES: list[Signature] = [
    Signature(
        id="attention-xformers-no-operator",
        family="attention",
        title="xFormers found no memory-efficient attention kernel for these inputs on this GPU",
        needles=("no operator found for `memory_efficient_attention", "(supported: {torch."),
        patterns=(
            r"No operator found for `memory_efficient_attention_(?:forward|backward)`",
            # one kernel's reason, when only that part of the list was pasted: a dtype outside the kernel's set
            # ("dtype=torch.float16 (supported: {torch.float32})"), never one in it
            r"dtype=torch\.(\w{1,20}) \(supported: \{(?![^}\n]{0,80}torch\.\1\b)[^}\n]{0,80}\}\)",
        ),
        cause="`xformers.ops.memory_efficient_attention` tried each of its kernels and all refused; the indented "
        "lines after the error give each kernel's reasons. The common ones: bf16 on a pre-Ampere GPU ('bf16 "
        "is only supported on A100+ GPUs', with '(too old)' for the flash kernels), an xFormers build without "
        "kernels for a new GPU ('(too new)', e.g. capability (12, 0) on RTX 50xx), fp32 inputs, or an "
        "xFormers that could not load its CUDA extension at all ('xFormers wasn't build with CUDA support', "
        "'operator wasn't built').",
        fixes=(
            fix("bf16 on a pre-Ampere GPU: run the model in fp16 (or fp32) instead"),
            fix(
                "'(too new)' or 'operator wasn't built': install the xFormers wheel built for the installed torch "
                "and CUDA, or stop using xFormers (`pip uninstall -y xformers`; diffusers and ComfyUI then use "
                "PyTorch SDPA)",
                "python -m xformers.info",
            ),
            fix("fp32 inputs: autocast or load the model in fp16/bf16"),
        ),
        checks=("PREC006", "PREC001", "PREC005"),
        sources=(
            "https://github.com/sipie800/ComfyUI-PuLID-Flux-Enhanced/issues/34",
            "https://github.com/Comfy-Org/ComfyUI/issues/11602",
            "https://github.com/deepseek-ai/DeepSeek-VL2/issues/119",
            "https://github.com/kijai/ComfyUI-SUPIR/issues/167",
            "https://github.com/facebookresearch/xformers/issues/1109",
            "https://github.com/lllyasviel/Paints-UNDO/issues/18",
            "https://github.com/facebookresearch/xformers/blob/main/xformers/ops/fmha/dispatch.py",
        ),
        examples=(
            "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "     query       : shape=(1, 577, 16, 64) (torch.bfloat16)\n"
            "     key         : shape=(1, 577, 16, 64) (torch.bfloat16)\n"
            "     value       : shape=(1, 577, 16, 64) (torch.bfloat16)\n"
            "     attn_bias   : <class 'NoneType'>\n"
            "     p           : 0.0\n"
            "`fa2F@v2.6.3-24-gbdf733b` is not supported because:\n"
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)\n"
            "    bf16 is only supported on A100+ GPUs\n"
            "`cutlassF-pt` is not supported because:\n"
            "    bf16 is only supported on A100+ GPUs",
            "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "     query       : shape=(1, 3276, 10, 64) (torch.float16)\n"
            "     key         : shape=(1, 3276, 10, 64) (torch.float16)\n"
            "     value       : shape=(1, 3276, 10, 64) (torch.float16)\n"
            "     attn_bias   : <class 'NoneType'>\n"
            "     p           : 0.0\n"
            "`fa3F@2.8.3-133-gde1584b` is not supported because:\n"
            "    requires device with capability <= (9, 0) but your GPU has capability (12, 0) (too new)\n"
            "    requires device with capability == (8, 0) but your GPU has capability (12, 0) (too new)\n"
            "`fa2F@0.0.0` is not supported because:\n"
            "    operator wasn't built - see `python -m xformers.info` for more info\n"
            "`cutlassF-pt` is not supported because:\n"
            "    requires device with capability <= (9, 0) but your GPU has capability (12, 0) (too new)",
            "    dtype=torch.float16 (supported: {torch.float32})\n"
            "    operator wasn't built - see `python -m xformers.info` for more info\n"
            "    unsupported embed per head: 512",
            "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "     query       : shape=(40, 1564, 1, 64) (torch.float32)\n"
            "     key         : shape=(40, 1564, 1, 64) (torch.float32)\n"
            "     value       : shape=(40, 1564, 1, 64) (torch.float32)\n"
            "     attn_bias   : <class 'NoneType'>\n"
            "     p           : 0.0\n"
            "`fa2F@0.0.0` is not supported because:\n"
            "    xFormers wasn't build with CUDA support\n"
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)\n"
            "    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})\n"
            "    operator wasn't built - see `python -m xformers.info` for more info\n"
            "`cutlassF` is not supported because:\n"
            "    xFormers wasn't build with CUDA support\n"
            "    operator wasn't built - see `python -m xformers.info` for more info",
            "`ckF` is not supported because:\n    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})",
        ),
        near_misses=(
            "    dtype=torch.float16 (supported: {torch.bfloat16, torch.float16})",
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.0.1+cpu)",
        ),
    ),
    Signature(
        id="attention-xformers-built-for-other-torch",
        family="attention",
        title="xFormers cannot load its CUDA kernels: it was built for another torch (or a CUDA torch)",
        needles=("xformers can't load c++/cuda extensions",),
        patterns=(r"xFormers can't load C\+\+/CUDA extensions",),
        cause="xFormers wheels are compiled against one exact torch version and CUDA; with any other torch its "
        "extension does not load, memory-efficient attention is unavailable, and code that asks for it "
        "later fails ('No operator found for memory_efficient_attention_forward'). The lines after the "
        "warning show the mismatch: 'built for PyTorch 2.1.0+cu121 ... (you have 2.0.1+cu118)', or "
        "'(you have 2.2.0+cpu)', which means torch itself is a CPU-only build.",
        fixes=(
            _REINSTALL,
            fix("If the warning says '+cpu', install a CUDA build of torch first (and then the matching xFormers)"),
            _UNINSTALL,
        ),
        checks=("TORCH005", "TORCH009", "PREC006"),
        # A notice: a warning, the run goes on with PyTorch attention (round 12 labels it no precision failure three
        # times); a later "No operator found" is the attention failure, with its own signature.
        notice=True,
        sources=(
            "https://github.com/facebookresearch/xformers/issues/982",
            "https://github.com/invoke-ai/InvokeAI/issues/4788",
            "https://github.com/open-mmlab/PIA/issues/30",
            "https://github.com/Engineer-of-Stuff/stable-diffusion-paperspace/issues/111",
            "https://github.com/facebookresearch/xformers/blob/main/xformers/_cpp_lib.py",
        ),
        examples=(
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.0.1+cpu)\n"
            "    Python  3.10.11 (you have 3.10.11)\n"
            "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n"
            "  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n"
            "  Set XFORMERS_MORE_DETAILS=1 for more details",
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.0.1+cu118)\n"
            "Python  3.10.13 (you have 3.10.10)",
        ),
        near_misses=("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:",),
        notes="On AMD (ROCm) and Apple machines the warning is expected: xFormers' CUDA kernels do not apply there.",
    ),
    Signature(
        id="attention-xformers-not-built",
        family="attention",
        title="xFormers has no CUDA kernels at all: it was built without CUDA, or for another torch",
        needles=("xformers wasn't build with cuda support", "xformers was not built with cuda support"),
        patterns=(r"xFormers (?:wasn't|was not) buil[dt] with CUDA support",),
        cause="The installed xFormers could not load its CUDA kernels (a wheel built for another torch or CUDA, a "
        "CPU-only torch under it, or a source build without CUDA), so memory-efficient attention refuses every "
        "input whatever its dtype. When these are the only reasons xFormers lists under 'No operator found', "
        "no precision would have been accepted: the build is what to fix, not the dtype.",
        fixes=(
            fix("See which torch and CUDA this xFormers was built for, and what it has", "python -m xformers.info"),
            _REINSTALL,
            _UNINSTALL,
        ),
        checks=("TORCH005", "TORCH009", "PREC006"),
        # A notice: an install fault beside the precision (rounds 17 and 20 label a listing of only these reasons no
        # precision failure; rounds 6 and 10, whose listings also refuse the dtype or the GPU, attention). The
        # explainer reads the listing under "No operator found" to tell the two apart (``explain/unbuilt.py``).
        notice=True,
        sources=(
            "https://github.com/facebookresearch/xformers/blob/main/xformers/ops/fmha/dispatch.py",
            "https://github.com/facebookresearch/xformers/blob/main/xformers/_cpp_lib.py",
        ),
        examples=(
            "`decoderF` is not supported because:\n    xFormers wasn't build with CUDA support\n"
            "    attn_bias type is <class 'NoneType'>\n"
            "    operator wasn't built - see `python -m xformers.info` for more info",
        ),
        near_misses=("    operator wasn't built - see `python -m xformers.info` for more info",),
    ),
    Signature(
        id="attention-xformers-kernel-refused",
        family="attention",
        title="An xFormers attention kernel ({kernel}) refused these inputs",
        needles=("` is not supported because",),
        patterns=(r"` is not supported because",),
        details=(r"`(?P<kernel>[A-Za-z0-9@._+-]{2,60})` is not supported because",),
        cause="xFormers' dispatcher (`memory_efficient_attention`) lists, for each kernel it tried, why that kernel "
        "refused the inputs; the indented lines after this one are the reasons. The usual ones: a dtype the "
        "kernel lacks (fp32 for flash kernels, bf16 before Ampere), the GPU's capability, or an `attn_bias` whose "
        "last dimension is not a multiple of 8 in memory (cutlass needs aligned fp16/bf16 rows).",
        fixes=(
            fix(
                "A misaligned `attn_bias`: allocate it padded to a multiple of 8 and slice, as xFormers' hint says: "
                "`bias = torch.zeros([B, H, M, (N + 7) // 8 * 8], dtype=q.dtype)[..., :N]`"
            ),
            fix("A dtype reason: run the attention in fp16/bf16 (autocast, or cast q/k/v), bf16 only on Ampere+"),
            fix("See which kernels this build has", "python -m xformers.info"),
        ),
        checks=("PREC006", "PREC001"),
        rank=-1,
        sources=("https://github.com/facebookresearch/xformers/blob/main/xformers/ops/fmha/dispatch.py",),
        examples=(
            "`cutlassF-pt` is not supported because:\n    attn_bias.stride(-2) % 8 != 0 (attn_bias.stride() = (1, 2, 3, 1))",
        ),
        near_misses=("`foo` is not supported",),
    ),
]
