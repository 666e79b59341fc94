"""mpdoctor: an environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""

__version__ = "0.1.0"
