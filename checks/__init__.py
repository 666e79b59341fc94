"""The built-in check families, one module each. Installed as ``mpdoctor.checks``.

Importing a family registers its checks; ``registry.builtin_registry()`` imports every
family listed in :data:`FAMILY_MODULES`. Add a new family with one line there (and its
code prefix in ``registry.FAMILIES``). MPD001, mpdoctor's own code, is declared in
``registry``. Importing this package alone loads no family, so that ``mpdoctor audit``,
which needs only the audit rules, does not pay for every check's imports. ``audit`` and
``fleet`` declare rules only: what judges them (``mpdoctor.checkpoint_audit``,
``mpdoctor.fleet.compare``) imports them and stamps its findings with them.
"""

FAMILY_MODULES = (
    "environment",  # Python environment inventory
    "torch_import",  # torch presence and import
    "torch_build",  # torch build against driver and GPUs
    "driver",  # NVIDIA driver through NVML
    "stack_versions",  # versions across the precision stack
    "stack_duplicates",  # one package installed twice, or shadowed at another version
    "gpu_order",  # which physical GPU each cuda:N is
    "gpu_visibility",  # what the CUDA env vars select
    "pynvml_package",  # which NVML bindings import
    "precision_runs",  # measured: does each dtype run, correctly
    "precision_speed",  # measured: is it fast, emulated, fused attention
    "precision_amp",  # measured: autocast and GradScaler
    "apex_install",  # which apex, and do its extensions load
    "apex_usage",  # who switches to apex, who needs apex.amp
    "oneflow_install",  # is oneflow a working build, for OneDiff, for this CUDA
    "oneflow_runtime",  # mock-torch, and torch.autocast meeting OneFlow
    "amp_code",  # torch AMP in your code: gradients clipped while scaled, scalers missing or not needed
    "audit",  # checkpoints (mpdoctor audit): rules only, judged by checkpoint_audit
    "fleet",  # the ranks of one job (mpdoctor fleet): rules only, judged by mpdoctor.fleet.compare
)
