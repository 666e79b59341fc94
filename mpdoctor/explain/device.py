"""Which device a recognised failure happened on, read from its own lines, and the advice that fits it.

A CPU failure must get CPU fixes: `torch.autocast("cuda")`, `CUDA_DEVICE_ORDER` or a GPU check cannot cure or
confirm anything about an op that ran on the CPU, and `explain --check` runs the checks an explanation names.
torch says where an op ran in the words it uses: kernel names (``addmm_impl_cpu_``, ``svd_cuda_gesvdjBatched``),
the backend (``'CPU' backend``, ``(CPU)``), the library (MKL, cuFFT, cuBLASLt), or a wording only one device's
kernel has (``expected m1 and m2`` is the CPU mm; ``expected mat1 and mat2`` the CUDA addmm).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable, Optional, Sequence

from mpdoctor.findings import FixStep

# Lower-cased. "cpu" as a word or a kernel-name part (`_cpu`, `cpu_`), never inside another word.
_CPU = re.compile(
    r"(?<![a-z0-9])cpu(?![a-z0-9])|_cpu|cpu_|expected m1 and m2|mkl fft|mkl-dnn|mkldnn|onednn|"
    r"in cpu autocast|cpu autocast only"
)
_CUDA = re.compile(r"cuda|cudnn|cublas|cufft|cusolver|magma|(?<![a-z0-9])gpu(?![a-z0-9])|hip error|rocm")

# A fix that only a CUDA machine can take: autocast for "cuda", the CUDA device order, the old CUDA amp API.
_CUDA_AUTOCAST = re.compile(r"autocast\(\s?[\"']cuda")
_CUDA_ONLY_FIX = re.compile(r"autocast\(\s?[\"']cuda|device_type=[\"']cuda|cuda_device_order|torch\.cuda\.amp\.")
# The checks that can only judge a GPU: they say nothing about an op that ran on the CPU. TORCH005/TORCH009 stay:
# "torch sees no GPU here" is what sends a model meant for a GPU to the CPU, and they can confirm it on this machine.
_GPU_ONLY_CHECKS = ("GPU", "TORCH006", "TORCH007", "TORCH008", "TORCH010", "PREC002", "PREC005", "PREC006", "KERN")


# What autocast advice becomes on the CPU: CPU autocast runs bf16 (and fp16 from torch 2.2 on).
CPU_AUTOCAST = FixStep(
    "Run the forward pass (and the loss) under CPU autocast instead of converting tensors by hand; it picks the "
    'dtype per op so the two sides agree: `with torch.autocast("cpu", dtype=torch.bfloat16):`'
)


def device_of(lines: Iterable[str], named: Optional[str] = None) -> str:
    """ "cpu", "cuda" or "" (the lines do not say). ``named`` is what a signature read (``Signature.details``)."""
    if named:
        return "cuda" if _CUDA.search(named.lower()) else "cpu" if _CPU.search(named.lower()) else ""
    text = " ".join(lines).lower()
    cpu, cuda = bool(_CPU.search(text)), bool(_CUDA.search(text))
    return "cpu" if cpu and not cuda else "cuda" if cuda and not cpu else ""


# Said beside CUDA autocast advice when the lines do not say where the op ran: the same cure, for a CPU run.
ON_THE_CPU = ' (on the CPU: `with torch.autocast("cpu", dtype=torch.bfloat16):`)'


def fixes_for(device: str, fixes: Sequence[FixStep]) -> list[FixStep]:
    """The fixes that fit the device: on the CPU, none that only a CUDA machine can take; where the lines do not
    say, CUDA autocast advice names the CPU's too (a bf16 Linear fed fp32 on the CPU words its error as on a GPU)."""
    if device == "":
        return [
            replace(step, text=step.text + ON_THE_CPU)
            if "autocast" in step.text and _CUDA_AUTOCAST.search(step.text.lower()) and ON_THE_CPU not in step.text
            else step
            for step in fixes
        ]
    if device != "cpu":
        return list(fixes)
    kept, dropped_autocast = [], False
    for step in fixes:
        if _CUDA_ONLY_FIX.search(f"{step.text} {step.command or ''}".lower()):
            dropped_autocast = dropped_autocast or "autocast" in step.text
            if dropped_autocast and CPU_AUTOCAST not in kept:
                kept.append(CPU_AUTOCAST)  # the same cure, in the place of the CUDA one
            continue
        kept.append(step)
    return kept or list(fixes)


def checks_for(device: str, checks: Sequence[str]) -> list[str]:
    """The checks that can confirm a failure on that device: on the CPU, none that only judge a GPU."""
    if device != "cpu":
        return list(checks)
    return [c for c in checks if not c.startswith(_GPU_ONLY_CHECKS)]


__all__ = ["checks_for", "device_of", "fixes_for"]
