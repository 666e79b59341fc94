"""CTranslate2 (faster-whisper, whisperX, Tabby...) refusing a compute type the device cannot run efficiently.

CTranslate2 resolves the requested ``compute_type`` against what the device supports (``resolve_compute_type`` in
``src/types.cc``): an explicitly requested type it cannot run raises ``ValueError``/``std::invalid_argument``, and
a type only inferred from the saved model is converted with a warning. On the CPU there is no float16 at all;
on NVIDIA GPUs float16 and int8_float16 need compute capability 7.0+, int8 6.1+, bfloat16 8.0+.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

_SOURCE_TYPES = "https://github.com/OpenNMT/CTranslate2/blob/master/src/types.cc"
_SOURCE_DOCS = "https://opennmt.net/CTranslate2/quantization.html"

SIGNATURES: list[Signature] = [
    Signature(
        id="ctranslate2-compute-type-unsupported",
        family="hardware",
        title="CTranslate2 cannot run compute_type {ctype} on this device (the CPU, or a GPU too old for it)",
        needles=("but the target device or backend do not support efficient",),
        patterns=(
            r"requested [a-z0-9_]{3,20} compute type, but the target device or backend do not support efficient",
            r"compute type inferred from the saved model is [a-z0-9_]{3,20}, but the target device or backend do "
            r"not support efficient",
        ),
        details=(r"(?:requested |saved model is )(?P<ctype>[a-z0-9_]{3,20})",),
        cause="CTranslate2 (under faster-whisper, whisperX, Tabby...) was asked for compute_type {ctype}, or found "
        "it in the saved model, on a device that cannot run it efficiently. The usual cause is the device, not "
        'the model: CTranslate2 loads on the CPU unless `device="cuda"` is passed, and its CPU backends have '
        "no float16; on NVIDIA GPUs float16 and int8_float16 need compute capability 7.0+ (no Pascal GTX 10xx, "
        "P40/P100, Maxwell), int8 6.1+ and bfloat16 8.0+. An explicit request raises; a type inferred from the "
        "model is converted to float32 with a warning (correct, only slower and bigger).",
        fixes=(
            fix(
                'Ask for a type the device runs, or let CTranslate2 choose: `WhisperModel(name, device="cpu", '
                'compute_type="int8")` on the CPU, `device="cuda", compute_type="float32"` (or `"int8"` on '
                'compute capability 6.1+) on an older GPU, `compute_type="auto"` anywhere (`--compute_type` on '
                "the whisperX/faster-whisper command lines)"
            ),
            fix(
                'If a GPU was meant to run it, pass `device="cuda"`: CTranslate2\'s default device is the CPU',
            ),
            fix(
                "See what this machine supports",
                "python -c \"import ctranslate2 as c; print(c.get_supported_compute_types('cpu')); "
                "print(c.get_cuda_device_count() and c.get_supported_compute_types('cuda'))\"",
            ),
        ),
        checks=("GPU002",),
        sources=(
            "https://github.com/OpenNMT/CTranslate2/issues/1200",
            "https://github.com/SYSTRAN/faster-whisper/issues/14",
            "https://github.com/m-bain/whisperX/issues/698",
            "https://github.com/OpenNMT/CTranslate2/releases/tag/v2.3.0",
            _SOURCE_TYPES,
            _SOURCE_DOCS,
        ),
        examples=(
            "ValueError: Requested float16 compute type, but the target device or backend do not support "
            "efficient float16 computation.",
            "`ValueError: Requested int8 compute type, but the target device or backend do not support efficient "
            "int8 computation.`",
            "`[ctranslate2] [thread 144] [warning] The compute type inferred from the saved model is float16, but "
            "the target device or backend do not support efficient float16 computation. The model weights have "
            "been automatically converted to use the float32 compute type instead.`",
        ),
    ),
]
