"""Floating dtypes as the whole stack spells them, each read as one canonical name.

torch's own spellings live in ``known/spelling.py``. The libraries beside torch name the same formats in their
own languages, and an unmined library's message is only readable when its dtypes are:

* MLIR and Metal (``tensor<1x77xf16>``, ``f32``), Triton (``pointer<bf16>``, ``tl.float32``, ``fp8e4nv``,
  ``f8E4M3FN``), CUDA C++ (``__half``, ``__nv_bfloat16``, ``cutlass::half_t``, ``half2``);
* ONNX and ONNX Runtime (``tensor(float16)``, ``MLFloat16``, and the Itanium-mangled ``...TypeIfEE`` that a
  C++ type name prints as), TensorRT (``kHALF``, ``DataType.HALF``, ``kFLOAT``), NumPy (``np.float16``);
* what people write (``fp16``, ``FP32``, ``half precision``, ``16-bit float``).

``dtypes(text)`` gives the canonical names (``fp16``, ``bf16``, ``fp8``, ``fp4``, ``fp32``, ``fp64``) in the
order the text names them. Text is lower-cased before it gets here.
"""

from __future__ import annotations

import re

from mpdoctor.explain.known.spelling import DTYPE_WORD, canonical as torch_canonical

LOW = ("fp16", "bf16", "fp8", "fp4")

# Not inside another word. A dtype may follow a namespace ("tl.", "np.", "dtype.", "language.", "datatype.")
# or a shape's "x" (``tensor<2x1280xf16>``); a method call (``model.half()``) is no dtype.
_BEFORE = (
    r"(?<!non-)(?<!split-)(?<!first )(?<!second )(?<!other )(?<!one )(?:(?<![a-z0-9_])|(?<=\dx)|(?<=\*x)|(?<=torch\.)|(?<=tl\.)"
    r"|(?<=np\.)|(?<=type_)|(?<=mixed_)|(?<=mostly_)|(?<=at::k)|(?<=torch::k)|(?<=c10::k)|(?<=dt_)|(?<=numpy\.)|(?<=dtype\.)|(?<=dtypes\.)|(?<=language\.))"
)
_AFTER = r"(?![a-z0-9_])(?!\s{0,2}\(\))"

_SPELLINGS = (
    # fp8 before fp16: "float8_e4m3fn" and "fp8e4nv" must not be read as anything shorter
    (
        "fp8",
        r"fp8(?:_?e[45]m[23](?:fnuz|fn|nv|b11)?)?|float8(?:_e[45]m[23](?:fnuz|fn)?)?|f8e[45]m[23]\w{0,6}"
        r"|fp8e4(?:nv|b15|b8)?|fp8e5(?:b16)?|mxfp8|e4m3(?:fnuz|fn|nv)?|e5m2(?:fnuz)?|kfp8"
        # torch's fp8 matmul names its format by itself: "torch._scaled_mm is only supported on devices with ..."
        r"|_scaled_mm"
        r"|cuda_r_8f_e[45]m[23]",  # CUDA's cudaDataType (cuBLAS, cuSPARSE): `CUDA_R_8F_E4M3`
    ),
    ("fp4", r"fp4(?:_e2m1)?|nvfp4|mxfp4|float4(?:_e2m1fn_x2)?|e2m1"),
    # CTranslate2's compute types name the activations' precision after the weights' int8: `int8_bfloat16`
    # "numpy does not have a bfloat dtype": bfloat alone is bf16
    ("bf16", r"bf_?16|bfloat16(?:_t)?|(?:__)?nv_bfloat162?|bfloat162?|kbf16|int8_bfloat16|cuda_[rc]_16bf|bfloat(?!\d)"),
    (
        "fp16",
        r"fp_?16|f16|float16(?:_t)?|half(?:_t|2)?(?! of| the| an? |-head| batch)|__half2?|mlfloat16|khalf"
        r"|16-bit floats?|16-bit floating(?: point)?"
        r"|half[- ]precision|int8_float16|16-bit (?:storage|arithmetic)"  # Vulkan's device features
        r"|16-bit (?:tensors?|values?|outputs?|activations?|precision|textures?)"
        r"|16-?bit (?:training|inference|mixed[- ]precision|floating)"  # not "16bit PCM": audio's samples are int16
        r"|complex_?half|chalf|complex32|半精度"  # half's complex form (an FFT of half tensors), half in Chinese
        r"|cuda_[rc]_16f",  # CUDA's cudaDataType: `type of matA/matB (CUDA_R_16F) ... is not supported`
    ),
    ("fp64", r"fp64|f64|float64|double|kdouble"),
    ("fp32", r"fp32|f32|float32|float|kfloat|single[- ]precision|32-bit floats?|cuda_[rc]_32f"),
)
WORD = re.compile(
    "|".join(rf"(?P<{name}>{_BEFORE}(?:{spelling}){_AFTER})" for name, spelling in _SPELLINGS)
    # ONNX Runtime's C++ type names, mangled: `PrimitiveDataTypeIfEE` is the type for `float`
    + r"|(?P<fp32_mangled>(?<=type)ife{1,3}(?![a-z0-9]))|(?P<fp16_mangled>(?<=\d)(?:ml)?float16(?=e))"
    # ONNX's TensorProto data types by number (onnx.proto: FLOAT 1, FLOAT16 10, DOUBLE 11, BFLOAT16 16, FLOAT8* 17-20),
    # as runtimes print one they do not take (`<unsupported ONNX type 10>`)
    + r"|(?P<fp16_onnx>(?<=onnx type )10(?!\d))|(?P<bf16_onnx>(?<=onnx type )16(?!\d))"
    + r"|(?P<fp8_onnx>(?<=onnx type )(?:1[789]|20)(?!\d))|(?P<fp32_onnx>(?<=onnx type )1(?!\d))"
    + r"|(?P<fp64_onnx>(?<=onnx type )11(?!\d))"
    # XLA's PrimitiveType by number (xla_data.proto: F16 10, F32 11, F64 12, BF16 16, F8* 19-20, 23-25, 28-29,
    # F4E2M1FN 32), as torch_xla prints one the device does not take (`convert_ops.cpp:88 : Unsupported XLA type 10`)
    + r"|(?P<fp16_xla>(?<=xla type )10(?!\d))|(?P<bf16_xla>(?<=xla type )16(?!\d))"
    + r"|(?P<fp8_xla>(?<=xla type )(?:19|2[0345]|2[89])(?!\d))|(?P<fp4_xla>(?<=xla type )32(?!\d))"
    + r"|(?P<fp32_xla>(?<=xla type )11(?!\d))|(?P<fp64_xla>(?<=xla type )12(?!\d))"
)
# torch's own spellings that the words above do not read (``c10::Half``, ``HalfTensor``, ``CUDABFloat16Type``).
_NAMESPACED = re.compile(r"::|tensor|type")
_TORCH_NAMES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


def dtypes(text: str) -> list[str]:
    """Canonical dtype names in ``text`` (lower-cased), in order, each as often as it is named."""
    found: list[tuple[int, str]] = []
    covered: list[tuple[int, int]] = []
    for match in WORD.finditer(text):
        name = match.lastgroup.split("_")[0]  # `fp16_mangled`, `fp16_onnx`: fp16
        found.append((match.start(), name))
        covered.append(match.span())
    for match in DTYPE_WORD.finditer(text):  # torch's namespaced spellings: c10::Half, HalfTensor, CUDAHalfType
        if any(match.start() < end and start < match.end() for start, end in covered):
            continue
        if not _NAMESPACED.search(match.group(0)):
            continue
        name = torch_canonical(match.group(0))
        name = _TORCH_NAMES.get(
            name, "fp8" if name.startswith("float8") else "fp4" if name.startswith("float4") else ""
        )
        if name:
            found.append((match.start(), name))
    return [name for _, name in sorted(found)]


# How a message prints a dtype object it was handed (`f"{dtype} is not supported"`): torch.float16, torch.bfloat16.
# A tensor's own repr (`tensor([[nan, nan]], dtype=torch.float16)`) names the dtype its values are in, and a check
# names the one it found after "got" (`scale.dtype must be torch.float8_e8m0fnu, got torch.float16`): those are no hole.
_PRINTED = re.compile(
    # a person's markdown casting to one (cast the pipeline "into `torch.float16`") names it in their own words
    r"(?<!dtype=)(?<!got )(?<!got: )(?<!found )(?<!received )(?<!into `)(?<!to `)"
    r"torch\.(?:float16|bfloat16|half|float8_\w{2,10}|float4\w{0,10})(?![a-z0-9_])"
)


# A file's absolute path (`'/openbuddy-7b-v1.3-bf16/pytorch_model-00001-of-00002.bin'`, `C:\models\...`): a model
# named after its precision is only where the files are. A list of dtypes ("fp32/fp16/bf16") is no path.
_PATH = re.compile(r"(?<![\w.~+-])(?:[a-z]:)?(?:[\\/][\w.~+-]{1,200}){2,}")


def written_low(text: str) -> list[str]:
    """The low-precision dtypes ``text`` names in words a library writes (``fp16``, ``bf16``, ``'Half'``, ``nvfp4``),
    not as a message prints a dtype object it was handed (``torch.float16``): that is what a hole prints for any
    dtype, so alone it says nothing about precision. Nor in a file's path."""
    return [name for name in dtypes(_PATH.sub(" ", _PRINTED.sub(" ", text))) if is_low(name)]


def is_low(name: str) -> bool:
    return name in LOW


__all__ = ["LOW", "WORD", "dtypes", "is_low", "written_low"]
