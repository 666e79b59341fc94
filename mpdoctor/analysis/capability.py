"""What each precision costs on a GPU, from its compute capability alone.

This is the *expected* hardware support, used for the device table and to compare
devices with each other. Whether a precision really runs, accurately and fast, on
a given device is measured separately by live microkernels.

Each precision gets one word:

* ``tensor-cores``: native, with tensor-core matrix multiplies;
* ``native``: native arithmetic without tensor cores;
* ``slow``: native but at a fraction of fp32's rate;
* ``emulated``: runs, but computed in fp32 after conversion (no speed-up, and
  some libraries refuse it: cuDNN has no bf16 convolutions and Triton no bf16
  below 8.0);
* ``no``: not available.

Sources. fp16 rates: CUDA C Programming Guide, "Arithmetic Instructions" table
(results per clock per SM, fp16 vs fp32: 5.0/5.2 N/A, 5.3 256/128, 6.0 128/64,
6.1 2/128, 6.2 256/128, 7.x 128/64); tensor cores from Volta (7.0). bf16 and
tf32 from Ampere (8.0): PyTorch's ``is_bf16_supported(including_emulation=False)``
and ``is_tf32_supported()`` test major >= 8. fp8: ``torch._scaled_mm`` needs
compute capability 8.9 (Ada) or 9.0+.
"""

from __future__ import annotations

from typing import Optional

PRECISIONS = ("fp16", "bf16", "tf32", "fp8")
LEVELS = ("no", "emulated", "slow", "native", "tensor-cores")  # worst to best


def parse_capability(text: str) -> Optional[int]:
    """``"8.6"`` as 86; None when unknown or malformed."""
    major, _, minor = (text or "").partition(".")
    return int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() else None


def fp16(cc: int) -> str:
    if cc >= 70:
        return "tensor-cores"
    if cc == 61:
        return "slow"  # consumer Pascal (GTX 10xx): fp16 at 1/64 of fp32's rate
    if cc >= 53:
        return "native"  # 5.3, 6.0 (P100), 6.2: double-rate fp16, no tensor cores
    return "emulated"


def bf16(cc: int) -> str:
    return "tensor-cores" if cc >= 80 else "emulated"


def tf32(cc: int) -> str:
    return "tensor-cores" if cc >= 80 else "no"


def fp8(cc: int) -> str:
    return "tensor-cores" if cc >= 89 else "no"


def support(cc: Optional[int]) -> dict[str, str]:
    """Each precision's level on a device of compute capability ``cc`` ("" when unknown)."""
    if cc is None:
        return {name: "" for name in PRECISIONS}
    return {"fp16": fp16(cc), "bf16": bf16(cc), "tf32": tf32(cc), "fp8": fp8(cc)}


def weaker_precisions(weak: object, strong: object) -> list[str]:
    """Precisions at a lower level on ``weak`` than on ``strong`` (objects with fp16, bf16, ... attributes)."""
    out = []
    for name in PRECISIONS:
        a, b = getattr(weak, name, ""), getattr(strong, name, "")
        if a and b and LEVELS.index(a) < LEVELS.index(b):
            out.append(f"{name} {a} instead of {b}")
    return out
