"""The built-in check families, one module each. Installed as ``mpdoctor.checks``.

Importing a family registers its checks; add a new family with one line here (and its code
prefix in ``registry.FAMILIES``). MPD001, mpdoctor's own code, is declared in ``registry``.
"""

from mpdoctor.checks import environment  # noqa: F401  Python environment inventory
from mpdoctor.checks import torch_import  # noqa: F401  torch presence and import
from mpdoctor.checks import torch_build  # noqa: F401  torch build against driver and GPUs
from mpdoctor.checks import driver  # noqa: F401  NVIDIA driver through NVML
from mpdoctor.checks import stack_versions  # noqa: F401  versions across the precision stack
from mpdoctor.checks import gpu_order  # noqa: F401  which physical GPU each cuda:N is
from mpdoctor.checks import gpu_visibility  # noqa: F401  what the CUDA env vars select
from mpdoctor.checks import pynvml_package  # noqa: F401  which NVML bindings import
from mpdoctor.checks import precision_runs  # noqa: F401  measured: does each dtype run, correctly
from mpdoctor.checks import precision_speed  # noqa: F401  measured: is it fast, emulated, fused attention
from mpdoctor.checks import precision_amp  # noqa: F401  measured: autocast and GradScaler
from mpdoctor.checks import apex_install  # noqa: F401  which apex, and do its extensions load
from mpdoctor.checks import apex_usage  # noqa: F401  who switches to apex, who needs apex.amp
from mpdoctor.checks import oneflow_install  # noqa: F401  is oneflow a working build, for OneDiff, for this CUDA
from mpdoctor.checks import oneflow_runtime  # noqa: F401  mock-torch, and torch.autocast meeting OneFlow
from mpdoctor.checks import audit  # noqa: F401  checkpoints (mpdoctor audit): rules only, judged by checkpoint_audit
