"""A CPU op without a Half kernel as torch before 1.7 words it, without quotes (``sqrt_vml_cpu not implemented for
'Half'``); the quoted wording is cpu_half.py's and grammar.py's. Learned with the ecosystem's general shapes.
"""

from __future__ import annotations

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
]
