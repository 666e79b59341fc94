"""mpdoctor: an environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """The Python API, imported on first use: `import mpdoctor` (and the CLI) never imports torch."""
    if name == "audit":
        from mpdoctor.checkpoint_audit.api import audit

        return audit
    if name == "dtype_trace":
        from mpdoctor.trace import dtype_trace

        return dtype_trace
    raise AttributeError(f"module 'mpdoctor' has no attribute {name!r}")
