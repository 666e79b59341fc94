"""CPU ops without a Half kernel whose message does not say `_cpu"`: torch before 1.7 words it without quotes
(``sqrt_vml_cpu not implemented for 'Half'``), and many CPU kernels' dispatch names carry no device suffix at all
(``"reflection_pad2d" not implemented for 'Half'``). The quoted `_cpu"` wording is cpu_half.py's and grammar.py's.
"""

from __future__ import annotations

from mpdoctor.explain.known.cpu_half import _RUN_ON_GPU, _UPGRADE_TORCH_SAME_BUILD
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="cpu-half-op-unquoted",
        family="cpu-half",
        title="{op}: an fp16 op without a CPU kernel (torch before 1.7 words it without quotes)",
        needles=("_cpu not implemented for 'half", "_cpu not implemented for 'bfloat16"),
        patterns=(r"_cpu not implemented for '(?:half|bfloat16)'",),  # quoted, it is `_cpu" not implemented`
        details=(r"(?<![a-z0-9_])(?P<op>[a-z0-9_]{1,60}_cpu) not implemented for '(?P<dtype>half|bfloat16)'",),
        cause="A {dtype} tensor reached a CPU kernel ({op}) that has no version for it: torch before 1.7 built "
        "almost no CPU op for Half (x86 CPUs have no fp16 arithmetic), and words the error without quotes. A "
        "`.half()` model, or a step of it such as YOLOv5's conv/bn fusing, ran on the CPU.",
        fixes=(
            fix(
                "On the CPU, compute in float32: `.float()` the model (and its inputs) before the op; YOLOv5: drop "
                "`--half` when the device is the CPU"
            ),
            fix(
                "If a GPU was meant to run it, make torch see it and move the model there",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
            ),
        ),
        checks=("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/ultralytics/yolov5/issues/830",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/Dispatch.h",
        ),
        examples=(
            'yolov5/utils/torch_utils.py", line 119, in fuse_conv_and_bn\n'
            "    w_bn = torch.diag(bn.weight.div(torch.sqrt(bn.eps + bn.running_var)))\n"
            "RuntimeError: sqrt_vml_cpu not implemented for 'Half'",
        ),
        near_misses=("RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",),
        rank=-1,
        notes="The quoted wording is cpu_half.py's and grammar.py's; this one only claims the unquoted form.",
    ),
    Signature(
        id="cpu-half-unsuffixed-kernel",
        family="cpu-half",
        title="{op}: a torch kernel with no fp16 version, most likely on the CPU (the tensor is Half there)",
        needles=("\" not implemented for 'half",),
        # torch's dispatch names without a device suffix ("reflection_pad2d", "compute_indices_weights_linear",
        # "nll_loss_out_frame", "cdist") are, for Half, nearly always the CPU's: CUDA has had Half kernels for
        # almost every op since torch 1.0 and its names mostly say "_cuda". A name that says GPU, CUDA, a kernel's
        # forward/backward pass or "_kernel" is usually a library's own CUDA op (mmcv, torch_scatter), which stays
        # op-support's.
        patterns=(r"\" not implemented for 'half'",),
        # the kernel's name decides (the first details pattern must match the line)
        details=(
            r"\"(?![a-z0-9_.:]{0,100}(?:cuda|cudnn|cublas|cusolver|cusparse|cufft|magma|gpu|forward|backward|kernel))(?P<op>[a-z0-9_.:]{1,100})\" not "
            r"implemented for '(?P<dtype>half)'",
        ),
        cause="A float16 tensor reached a torch kernel that has no Half version. CUDA has Half kernels for nearly "
        "every op, so this is almost always the CPU: torch before 2.2 built few CPU kernels for Half (x86 CPUs have "
        "no fp16 arithmetic), and interpolation, padding and loss kernels came later still. The model or a tensor is "
        "in fp16 while this part runs on the CPU: no usable GPU (a CPU-only torch), an offloaded module, or a "
        "preprocessing step on the CPU.",
        fixes=(
            _RUN_ON_GPU,
            fix(
                "On the CPU, compute in float32: `.float()` the tensor (or the module) before the op, or use bfloat16, "
                "which has CPU kernels for most ops; apps with a half switch take `--no-half` or `half=False`"
            ),
            _UPGRADE_TORCH_SAME_BUILD,  # each release adds CPU Half kernels; the same build, not PyPI's default
        ),
        checks=("PREC001", "TORCH005", "TORCH009"),
        sources=(
            "https://github.com/TencentARC/GFPGAN/issues/69",
            "https://github.com/Kosinkadink/ComfyUI-AnimateDiff-Evolved/issues/267",
            "https://github.com/pkuliyi2015/sd-webui-stablesr/issues/13",
            "https://github.com/pytorch/pytorch/issues/123328",
        ),
        examples=(
            "RuntimeError: \"reflection_pad2d\" not implemented for 'Half'",
            'Error occurred when executing ADE_AnimateDiffLoaderWithContext:\n\n"compute_indices_weights_linear" '
            "not implemented for 'Half'",
            "RuntimeError: \"nll_loss_out_frame\" not implemented for 'Half'",
            "NotImplementedError: \"cdist\" not implemented for 'Half'",
        ),
        near_misses=(
            "RuntimeError: \"SigmoidFocalLoss_forward\" not implemented for 'Half'",
            "RuntimeError: \"scatter_max_kernel\" not implemented for 'Half' (operator() at cuda/scatter_kernel.cu:129)",
            "RuntimeError: \"upsample_nearest3d_out_frame\" not implemented for 'BFloat16'",
        ),
        # libraries with their own compiled ops, which name their kernels as torch does ("scatter")
        not_frames=(
            r"[/\\](?:torch_scatter|torch_sparse|torch_cluster|torch_spline_conv|mmcv|detectron2|pytorch3d|dgl|spconv|"
            r"minkowskiengine|mmdet3d|pointnet2_ops|kaolin)[/\\]",
        ),
        rank=-1,
        notes="Below cpu-half-op (a name that says _cpu) and above op-support-no-kernel, which keeps BFloat16 and "
        "fp8 (CUDA lacked bf16 kernels for some ops for longer) and the names this one leaves out.",
    ),
]
