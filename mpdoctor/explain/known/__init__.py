"""The known failures, one module per family. Add a family with one line here.

Signatures are data, not rules: they have no code and are not in the registry of
codes (``mpdoctor.checks.registry``, which says why); each names the snapshot
checks that confirm it (``Signature.checks``), which tests hold to that registry.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature
from mpdoctor.explain.known import (
    apex,
    apex_amp,
    apex_builds,
    attention,
    compiler,
    cpu_half,
    cpu_half_unquoted,
    ctranslate2,
    driver,
    dtype,
    dtype_legacy,
    dtype_updates,
    ecosystem_toolchains,
    ecosystem_trainers,
    framework,
    fsdp,
    grammar,
    grammar_amp,
    grammar_dtype_lists,
    grammar_ecosystem,
    grammar_pasted,
    grammar_pasted_more,
    grammar_pasted_settings,
    grammar_pasted_stack,
    grammar_quantized,
    grammar_refusals,
    grammar_refusals_kernels,
    grammar_requirements,
    grammar_settings,
    hardware,
    hardware_blas,
    hardware_fp8,
    hardware_shaders,
    kernel_image,
    mps,
    numerics,
    oneflow,
    onnx,
    op_support,
    overflow,
    quantization,
    scaler,
    xformers,
)

MODULES = (
    dtype,
    dtype_updates,
    dtype_legacy,
    cpu_half,
    scaler,
    overflow,
    hardware,
    hardware_blas,
    hardware_fp8,
    hardware_shaders,
    attention,
    xformers,
    kernel_image,
    apex,
    apex_amp,
    apex_builds,
    oneflow,
    driver,
    framework,
    mps,
    numerics,
    op_support,
    compiler,
    quantization,
    onnx,
    ctranslate2,
    fsdp,
    grammar,
    grammar_amp,
    # the general shapes and what was learned with them, in the order they were learned: the order of
    # signatures is the order of `explain --list --format json` and of explanations that tie on a line
    grammar_ecosystem,
    ecosystem_trainers,
    cpu_half_unquoted,
    ecosystem_toolchains,
    grammar_requirements,
    # the ecosystem's mined messages, read as general shapes (issue 38)
    grammar_dtype_lists,
    grammar_refusals,
    grammar_refusals_kernels,
    grammar_settings,
    grammar_quantized,
    # what users paste, read as general shapes (issue 38, round 5's learn half)
    grammar_pasted,
    grammar_pasted_settings,
    grammar_pasted_stack,
    # and round 6's learn half
    grammar_pasted_more,
)


def all_signatures() -> list[Signature]:
    return [signature for module in MODULES for signature in module.SIGNATURES]
