"""Messages only a CUDA build of torch raises, copied from torch's source with where each lives.

The CPU torch in CI cannot provoke these, so they are recorded from pytorch/pytorch (file, and the function or
dispatch name that raises), each with the family that must recognise it. Python-layer texts that only a GPU
reaches are in the installed torch itself and are mined from it (mine.py); these are ATen's C++/CUDA ones.
The `text` is torch's wording with its runtime values filled in as a failing run prints them.
"""

from __future__ import annotations

PYTORCH = "https://github.com/pytorch/pytorch/blob/main/"

# (text, where in pytorch/pytorch: path and the function / dispatch name, family that must recognise it)
CUDA_ONLY = (
    (
        "NotImplementedError: \"svd_cuda_gesvdjBatched\" not implemented for 'BFloat16'",
        "aten/src/ATen/native/cuda/linalg/BatchLinearAlgebraLib.cpp: svd_cusolver_gesvdjBatched, "
        'AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(..., "svd_cuda_gesvdjBatched")',
        "op-support",
    ),
    (
        "NotImplementedError: \"ctc_loss_cuda\" not implemented for 'Half'",
        'aten/src/ATen/native/cuda/LossCTC.cu: ctc_loss_gpu, AT_DISPATCH_FLOATING_TYPES(..., "ctc_loss_cuda")',
        "op-support",
    ),
    (
        "NotImplementedError: \"addmm_cuda\" not implemented for 'Float8_e4m3fn'",
        "aten/src/ATen/native/cuda/Blas.cpp: addmm_out_cuda_impl, AT_DISPATCH_..._AND2(Half, BFloat16, ..., "
        '"addmm_cuda")',
        "op-support",
    ),
    (
        "RuntimeError: HalfTensor is not supported",
        'aten/src/ATen/native/cuda/SummaryOps.cu: _histc_cuda, AT_ERROR("HalfTensor is not supported")',
        "op-support",
    ),
    (
        "RuntimeError: cuFFT only supports dimensions whose sizes are powers of two when computing in half "
        "precision, but got a signal size of[80, 80]",
        "aten/src/ATen/native/cuda/CuFFTPlanCache.h: CuFFTConfig, TORCH_CHECK(is_pow_of_two(sizes[i + 1]), ...)",
        "op-support",
    ),
    (
        "RuntimeError: cuFFT doesn't support signals of half type with compute capability less than SM_53, but "
        "the device containing input half tensor only has SM_37",
        "aten/src/ATen/native/cuda/CuFFTPlanCache.h: CuFFTConfig, TORCH_CHECK(dev_prop->major >= 5 ...)",
        "op-support",
    ),
    (
        "RuntimeError: invalid dtype for bias - should match query's dtype",
        "aten/src/ATen/native/transformers/cuda/attention.cu: _efficient_attention_forward, "
        "TORCH_CHECK(bias->scalar_type() == CutlassToAtenDtype<scalar_t>::atScalarType(), ...)",
        "attention",
    ),
    (
        "RuntimeError: Only multiplication of row-major and column-major matrices is supported by cuBLASLt",
        "aten/src/ATen/native/cuda/Blas.cpp: _scaled_mm_out_cuda, TORCH_CHECK(args.transa == 't' && "
        "args.transb == 'n', ...)",
        "quantization",
    ),
    (
        "RuntimeError: Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: (16x41).",
        "aten/src/ATen/native/cuda/Blas.cpp: _scaled_mm_out_cuda, TORCH_CHECK(mat1.sizes()[1] % 16 == 0, ...)",
        "quantization",
    ),
    (
        "RuntimeError: mat2 shape (41x16) must be divisible by 16",
        "aten/src/ATen/native/cuda/Blas.cpp: _scaled_mm_out_cuda, TORCH_CHECK(mat2.sizes()[0] % 16 == 0 && "
        "mat2.sizes()[1] % 16 == 0, ...)",
        "quantization",
    ),
)
