"""fp16 (and bf16) on the CPU: kernels torch did not have for Half on the CPU, CPU autocast refusing a dtype,
and oneDNN's bf16/fp16 paths that need instructions an older CPU lacks.

These errors come from a model put in fp16 (`.half()`, `torch_dtype=torch.float16`) that ends up running on the
CPU: on purpose, because no GPU was found (a CPU-only torch), or because part of it was offloaded. torch before
2.2 had almost no fp16 compute kernels on the CPU ("cpu half is only meant for data transfer"); 2.2 and newer
added matmul, convolution, softmax and norm kernels.
"""

from __future__ import annotations

from mpdoctor.explain.known.grammar import KERNEL
from mpdoctor.explain.signature import Signature, fix

# The usual ways to get out of fp16 on the CPU, shared by the op-specific signatures below.
_RUN_ON_GPU = fix(
    "If a GPU was meant to run this, check that torch sees it (a CPU-only torch build, or "
    "CUDA_VISIBLE_DEVICES hiding it, sends the whole model to the CPU), then move model and inputs "
    'there: `model.to("cuda")`',
    'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"',
)
_FP32_ON_CPU = fix(
    "On the CPU, load or cast the model in float32 (`model.float()`, or `torch_dtype=torch.float32` "
    "instead of float16), or in bfloat16, which the CPU kernels support: `model.to(torch.bfloat16)`"
)
_UPGRADE_TORCH = fix(
    "Or upgrade torch: 2.2 and newer have CPU fp16 kernels for matmul, convolution, softmax and "
    "layer_norm (slow on CPUs without AVX512-FP16/AMX)",
    "pip install -U 'torch>=2.2'",
)
# The upgrade that keeps the build: a bare `pip install -U torch` takes PyPI's torch, which on Linux is a CUDA build
# (gigabytes, and a CPU-only torch swapped for it) and on some setups a CPU one in place of a CUDA build. The PyTorch
# index of the build installed keeps it what it is.
_UPGRADE_TORCH_SAME_BUILD = fix(
    "Or upgrade torch to 2.2 or newer, which has CPU fp16 matmul kernels (slow on CPUs without AVX512-FP16/AMX), "
    "from the index of the build you have, so that pip keeps that build: the command is for a CPU-only torch "
    "(`torch.__version__` ends in +cpu); for a CUDA build use the cuXYZ index of a CUDA version your driver "
    "supports instead (`mpdoctor check` names it). Name torchvision/torchaudio in the same command if you have "
    "them, so that they move with torch",
    "pip install -U 'torch>=2.2' --index-url https://download.pytorch.org/whl/cpu",
)

SIGNATURES: list[Signature] = [
    Signature(
        id="cpu-half-matmul",
        family="cpu-half",
        title="fp16 matmul (Linear, bmm, attention) on the CPU: torch has no Half GEMM kernel there",
        needles=("addmm_impl_cpu_", "baddbmm_with_gemm", "baddbmm__mkl"),
        patterns=(r"(?:addmm_impl_cpu_|baddbmm_with_gemm|baddbmm__mkl)\" not implemented for 'Half",),
        cause="A matrix multiply (nn.Linear -> addmm, attention -> bmm/baddbmm, scaled_dot_product_attention) "
        "ran on the CPU with float16 tensors. torch 1.12 removed the slow, numerically unstable CPU Half "
        "GEMM and only torch 2.2 brought a real one back, so in between the op has no Half kernel on the "
        "CPU. Seen on a GPU machine too, when the model or part of it stayed on the CPU (CPU-only torch, "
        "device_map offload, inputs never moved).",
        # The code fix first: it works on every torch and build; the upgrade, last, keeps the build installed.
        fixes=(_FP32_ON_CPU, _RUN_ON_GPU, _UPGRADE_TORCH_SAME_BUILD),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=(
            "https://github.com/huggingface/transformers/issues/27769",
            "https://github.com/Lightning-AI/torchmetrics/issues/1009",
            "https://github.com/pytorch/pytorch/issues/106719",
            "https://github.com/EricGuo5513/momask-codes/issues/45",
            "https://github.com/f-dangel/singd/issues/71",
            "https://github.com/SCIR-HI/Huatuo-Llama-Med-Chinese/issues/43",
        ),
        examples=(
            "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
            '  File "/usr/local/lib/python3.7/site-packages/torch/nn/functional.py", line 4737, in '
            "_in_projection_packed\n"
            "    return linear(q, w, b).chunk(3, dim=-1)\n"
            "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
            "E       RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
            "RuntimeError: \"baddbmm_with_gemm\" not implemented for 'Half'",
            'anaconda3/envs/momask/lib/python3.7/site-packages/torch/nn/functional.py", line 4294, in '
            "multi_head_attention_forward\n"
            "    attn_output_weights = torch.bmm(q, k.transpose(1, 2))\n"
            "RuntimeError: \"baddbmm__mkl\" not implemented for 'Half'",
        ),
        near_misses=(
            "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
            "RuntimeError: expected scalar type Float but found Half",
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x16 and 8x16)",
        ),
        rank=1,
        notes="rank 1: a generic \"not implemented for 'Half'\" signature may claim the same line.",
    ),
    Signature(
        id="cpu-half-conv",
        family="cpu-half",
        title="fp16 convolution on the CPU: torch's CPU conv kernel has no Half version",
        needles=("slow_conv2d_cpu", "unfolded2d_copy", "unfolded3d_copy"),
        patterns=(
            r"(?:slow_conv2d_cpu|unfolded2d_copy|unfolded3d_copy)[a-z_]{0,8}\" not implemented for 'Half",
            # a title that quotes it without the dtype (`'unfolded2d_copy not implemented'`): these CPU kernels exist
            # for float and double, so what they lack is Half
            r"(?:slow_conv2d_cpu|unfolded2d_copy|unfolded3d_copy)[a-z_]{0,8}['\"]? not implemented(?! for)",
        ),
        cause='A Conv2d/Conv3d ran on the CPU in float16. torch\'s CPU convolution ("slow_conv2d_cpu" since 1.11, '
        '"unfolded2d_copy"/"unfolded3d_copy_cpu" before) had no Half kernel: fp16 convolution was a '
        "CUDA-only feature. Typical for diffusion, YOLO and voice models whose scripts call `.half()` and "
        "then run on a machine (or a Mac) where torch found no CUDA GPU.",
        fixes=(
            _RUN_ON_GPU,
            fix(
                "On the CPU, turn the script's half-precision switch off (`--no-half`, `use_fp16=False`, "
                "`is_half=False`, `--precision full`) or replace `.half()` by `.float()`"
            ),
            _UPGRADE_TORCH,
        ),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/74625",
            "https://github.com/lowfuel/progrockdiffusion/issues/111",
            "https://github.com/dyh/unbox_yolov5_deepsort_counting/issues/3",
            "https://github.com/jacobkimmel/pytorch_modelsize/issues/4",
            "https://github.com/w-okada/voice-changer/issues/155",
        ),
        examples=(
            "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
            'anaconda3\\lib\\site-packages\\torch\\nn\\modules\\conv.py", line 443, in _conv_forward\n'
            "    return F.conv2d(input, weight, bias, self.stride,\n"
            "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
            "VC PROCESSING!!!! EXCEPTION!!! \"slow_conv2d_cpu\" not implemented for 'Half'",
            "RuntimeError: \"unfolded2d_copy\" not implemented for 'Half'",
            "RuntimeError: \"unfolded3d_copy_cpu\" not implemented for 'Half'",
        ),
        near_misses=(
            "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
            "RuntimeError: \"SigmoidFocalLoss_forward\" not implemented for 'Half'",
        ),
        rank=1,
        notes="rank 1: cpu-half-op (and any generic \"not implemented for 'Half'\") also matches these lines.",
    ),
    Signature(
        id="cpu-half-layer-norm",
        family="cpu-half",
        title="fp16 LayerNorm on the CPU: torch's CPU layer_norm kernel has no Half version",
        needles=("layernormkernelimpl",),
        patterns=(r"LayerNormKernelImpl\" not implemented for 'Half",),
        cause="nn.LayerNorm / F.layer_norm ran on the CPU with float16 input. The CPU LayerNorm kernel was "
        "dispatched for float, double and (from 1.10) bfloat16 only; Half came with pytorch/pytorch#99590. "
        "Transformers hit it first because LayerNorm is their first op after the embedding: a "
        "`torch_dtype=torch.float16` model run on a CPU, or stable-diffusion's text encoder on a machine "
        "without a usable GPU.",
        fixes=(
            _RUN_ON_GPU,
            fix(
                "On the CPU, run in float32 (stable-diffusion-webui: `--precision full --no-half`; "
                "transformers: drop `torch_dtype=torch.float16`) or in bfloat16"
            ),
            fix(
                "Or upgrade torch: CPU fp16 layer_norm was added by pytorch/pytorch#99590; torch 2.2 and newer have it",
                "pip install -U 'torch>=2.2'",
            ),
        ),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/52291",
            "https://github.com/pytorch/pytorch/pull/99590",
            "https://github.com/siliconflow/onediff/issues/903",
            "https://github.com/Parskatt/RoMa/issues/26",
            "https://github.com/thinksoso/ChatGLM-Instruct-Tuning/issues/7",
        ),
        examples=(
            "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
            '  File "/usr/local/lib/python3.9/site-packages/torch/nn/functional.py", line 2515, in layer_norm\n'
            "    return torch.layer_norm(input, normalized_shape, weight, bias, eps, torch.backends.cudnn.enabled)\n"
            "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
            'RuntimeError: "LayerNormKernelImpl" not implemented for \'Half',
            "LayerNormKernelImpl\" not implemented for 'Half",
        ),
        near_misses=(
            "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
            "RuntimeError: expected scalar type Float but found Half",
        ),
        rank=1,
    ),
    Signature(
        id="cpu-half-op",
        family="cpu-half",
        title="{op}: an fp16 op without a CPU kernel (softmax, clamp, sigmoid, ...): the tensor is Half on the CPU",
        needles=(
            "_cpu\" not implemented for 'half",
            "_cpu_\" not implemented for 'half",
            "_kernel_impl\" not implemented for 'half",
            "_channels_last\" not implemented for 'half",
        ),
        # torch's CPU kernels name themselves: "*_cpu", "*_kernel_impl", and the vectorized channels-last ones in
        # aten/src/ATen/native/cpu/ ("upsample_nearest2d_channels_last"; CUDA's are "*_nhwc_*")
        patterns=(r"(?:_cpu_?|_kernel_impl|_channels_last)\" not implemented for 'Half",),
        details=(KERNEL,),  # the kernel's name in the title: which op to run in float32
        cause="A float16 tensor reached a CPU kernel that has no Half version (the name in quotes is the CPU "
        'kernel: "*_cpu", "*_kernel_impl", "*_channels_last"). Before torch 2.2 most CPU ops were not built for '
        "Half, since x86 CPUs have no fp16 arithmetic; fp16 on the CPU was meant for storage. The model or a tensor "
        "is in fp16 while the computation runs on the CPU: an fp16 export (`half=True` for ONNX or TensorRT) "
        "traced on the CPU does it too.",
        fixes=(
            _RUN_ON_GPU,
            fix(
                "On the CPU, compute in float32: `.float()` the tensor (or the model) before the op, or use "
                "bfloat16, which has CPU kernels for most ops"
            ),
            fix(
                "Or upgrade torch: softmax/log_softmax and many pointwise ops got CPU Half kernels in 2.2 "
                "(pytorch/pytorch#103315)",
                "pip install -U 'torch>=2.2'",
            ),
        ),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/89366",
            "https://github.com/pytorch/pytorch/issues/142368",
            "https://github.com/pytorch/pytorch/issues/99563",
            "https://github.com/pytorch/pytorch/issues/83322",
            "https://github.com/Megvii-BaseDetection/YOLOX/pull/688",
            "https://github.com/ultralytics/ultralytics/pull/9516",
        ),
        examples=(
            "RuntimeError: \"log_softmax_lastdim_kernel_impl\" not implemented for 'Half'",
            "\"softmax_lastdim_kernel_impl\" not implemented for 'Half'",
            "RuntimeError: \"clamp_scalar_cpu\" not implemented for 'Half'",
            "\"clamp_min_cpu\" not implemented for 'Half'",
            "RuntimeError: \"sigmoid_cpu\" not implemented for 'Half'",
            # an fp16 export (`half=True`) traced on the CPU
            "ONNX: export failure \u274c 2.7s: \"upsample_nearest2d_channels_last\" not implemented for 'Half'\n"
            "TensorRT: export failure \u274c 2.7s: \"upsample_nearest2d_channels_last\" not implemented for 'Half'",
        ),
        near_misses=(
            "RuntimeError: \"SigmoidFocalLoss_forward\" not implemented for 'Half'",
            "RuntimeError: \"prod_cpu\" not implemented for 'BFloat16'",
            "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
        ),
        notes="Catch-all for CPU kernels; the op-specific cpu-half signatures outrank it (rank 1) on their lines.",
    ),
    Signature(
        id="cpu-half-autocast-dtype",
        family="cpu-half",
        title="CPU autocast refused the dtype (fp16 or fp32): autocast is off and the model runs in fp32",
        needles=(
            "in cpu autocast, but the target dtype is not supported",
            "cpu autocast only supports dtype",
            "autocastcpu only support bfloat16",
        ),
        patterns=(
            r"In CPU autocast, but the target dtype is not supported",
            r"CPU Autocast only supports dtypes? of torch\.bfloat16",
            r"Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype",
        ),
        cause='`torch.autocast("cpu", dtype=...)` (or `torch.cpu.amp.autocast`) was asked for a dtype CPU '
        "autocast does not support: before pytorch/pytorch#112484 only bfloat16, since then bfloat16 and "
        "float16 (float32 never). torch warns and disables autocast, so the region runs in fp32 and the "
        'mixed precision silently does nothing; torch 1.10 to 2.0 then also raised "Currently, AutocastCPU '
        'only support Bfloat16", even for `enabled=False` (fixed by pytorch/pytorch#107348).',
        fixes=(
            fix('Autocast to bfloat16 on the CPU: `torch.autocast("cpu", dtype=torch.bfloat16)`'),
            fix(
                "To turn autocast off portably, pass `enabled=False` without a dtype, or use the GPU's device "
                'type: `torch.autocast(device_type="cuda", enabled=False)`'
            ),
            fix(
                "Or upgrade torch: newer releases accept float16 for CPU autocast and no longer raise for a "
                "disabled float32 autocast",
                "pip install -U torch",
            ),
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/pytorch/issues/100565",
            "https://github.com/pytorch/pytorch/pull/107348",
            "https://github.com/pytorch/pytorch/pull/112484",
            "https://github.com/modelscope/FunASR/issues/264",
            "https://github.com/TorchStudio/torchstudio/issues/41",
            "https://github.com/pytorch/pytorch/blob/main/torch/amp/autocast_mode.py",
        ),
        examples=(
            "/usr/local/lib/python3.10/dist-packages/torch/amp/autocast_mode.py:216: UserWarning: In CPU autocast, "
            "but the target dtype is not supported. Disabling autocast.\n"
            "CPU Autocast only supports dtype of torch.bfloat16 currently.\n"
            "  warnings.warn(error_message)",
            "/www/miniconda3/envs/vits2/lib/python3.7/site-packages/torch/amp/autocast_mode.py:214: UserWarning: "
            "In CPU autocast, but the target dtype is not supported. Disabling autocast.",
            "UserWarning: In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
            "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
            "RuntimeError: Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype",
        ),
        near_misses=(
            "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling",
            "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
        ),
    ),
    Signature(
        id="cpu-half-onednn-needs-avx512",
        family="cpu-half",
        title="oneDNN's bf16/fp16 CPU path needs AVX-512 (or AVX-NE-CONVERT) that this CPU lacks",
        needles=("path needs the cpu support", "prepack needs the cpu support"),
        patterns=(r"(?:bf16|fp16|BF16|FP16) (?:path|weight prepack) needs the cpu support",),
        cause="A bf16 (or fp16) op was routed to oneDNN (mkldnn: torch.compile's packed Linear/Conv, "
        "`to_mkldnn`, Intel Extension for PyTorch's weight prepacking), whose bf16 kernels need AVX512BW, "
        "AVX512VL and AVX512DQ (Xeon Skylake-SP and newer) or AVX-NE-CONVERT, and whose fp16 kernels need "
        "AVX512-FP16 or AVX-NE-CONVERT. Older and most consumer CPUs (AVX2 only) have neither, so bf16 "
        "cannot run there on that path.",
        fixes=(
            fix(
                "See which instruction sets the CPU has",
                "lscpu | grep -o 'avx512[a-z_0-9]*\\|avx_ne_convert' | sort -u",
            ),
            fix(
                "On this CPU run in float32 (drop `dtype=torch.bfloat16` / `--bf16`, or set the tool's dtype "
                "to float32), or move the job to a CPU with AVX-512 or to a GPU"
            ),
            fix(
                "If torch.compile raised it, run the model without torch.compile (eager bf16 does not need "
                "oneDNN's packed weights)"
            ),
        ),
        checks=("PREC001", "PREC004"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/99423",
            "https://github.com/intel/llm-on-ray/issues/255",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/mkldnn/Linear.cpp",
        ),
        examples=(
            "RuntimeError: mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx512bw, avx512vl and "
            "avx512dq",
            "AssertionError: BF16 weight prepack needs the cpu support avx512bw, avx512vl and avx512dq",
            "RuntimeError: mkldnn_linear: bf16 path needs the cpu support avx_ne_convert or avx512bw, avx512vl and "
            "avx512dq",
            "RuntimeError: mkldnn_linear: fp16 path needs the cpu support avx_ne_convert or avx512_fp16",
        ),
        near_misses=(
            "RuntimeError: DNNL does not support bf16/f16 backward on the platform with avx2_vnni_2",
            "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
        ),
        notes="The eager mkldnn_linear/mkldnn_matmul wording is from torch 2.x's libtorch_cpu (Linear.cpp); the "
        "torch.compile and IPEX wordings are from the issues.",
    ),
    Signature(
        id="cpu-half-onednn-no-backward",
        family="cpu-half",
        title="oneDNN runs bf16/fp16 only forward on AVX2-VNNI-2 CPUs (Lunar Lake, Arrow Lake): training fails",
        needles=("dnnl does not support bf16/f16 backward",),
        patterns=(r"DNNL does not support bf16/f16 backward on the platform",),
        cause="bf16 (or fp16) training on the CPU: autocast sent a convolution to oneDNN, which on client CPUs "
        "with AVX2-VNNI-2 but no AVX-512 (Intel Core Ultra: Lunar Lake, Arrow Lake) supports bf16/fp16 in "
        "the forward pass only, so the backward pass raises. Inference works; training does not.",
        fixes=(
            fix('Train in float32 on this CPU: drop the CPU autocast / `--bf16` (or `mixed_precision="no"`)'),
            fix("Or train on a GPU, or a CPU with AVX-512"),
            fix(
                "Or try a newer torch: the maintainers said torch would stop sending backward-bound convolutions "
                "to oneDNN on these CPUs (pytorch/pytorch#148861)",
                "pip install -U torch",
            ),
        ),
        checks=("PREC001",),
        sources=(
            "https://github.com/pytorch/pytorch/issues/148861",
            "https://github.com/open-edge-platform/geti_v2/issues/1328",
        ),
        examples=(
            "RuntimeError: DNNL does not support bf16/f16 backward on the platform with avx2_vnni_2",
            "`RuntimeError: DNNL does not support bf16/f16 backward on the platform with avx2_vnni_2`",
        ),
        near_misses=(
            "RuntimeError: mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx512bw, avx512vl and "
            "avx512dq",
        ),
    ),
]
