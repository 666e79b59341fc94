"""bf16 matrix multiplies that the CUDA BLAS under torch does not have: cuBLAS refusing a bf16 GEMM on a GPU older
than Ampere, and a torch whose CUDA BLAS wrapper never declared one. The precision the card runs is fp16 or fp32.
"""

from __future__ import annotations

from mpdoctor.explain.known.hardware import BF16_CHECKS
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-bf16-cublas-not-supported",
        family="hardware",
        title="cuBLAS refused a bf16 matrix multiply: the GPU is older than Ampere",
        needles=("cublas_status_not_supported",),
        patterns=(r"CUBLAS_STATUS_NOT_SUPPORTED when calling `?cublas[^\n]{0,200}CUDA_R_16BF",),
        cause="A bf16 matmul reached cuBLAS (`cublasGemmEx` / `cublasGemmStridedBatchedEx` with `CUDA_R_16BF`) on "
        "a GPU whose cuBLAS has no bf16 GEMM: Maxwell and Pascal cards (M40, TITAN X, GTX 10xx) in the "
        "reports. The model or pipeline picked bf16 because `torch.cuda.is_bf16_supported()` says True "
        "(it counts emulation since torch 2.4) or because bf16 is hard-coded.",
        fixes=(
            fix(
                "Run the model in fp16 or fp32 on this GPU: load it with `torch_dtype=torch.float16` "
                "(`--force-fp16` in ComfyUI) or autocast to fp16"
            ),
            fix("Where code picks the dtype, use `torch.cuda.is_bf16_supported(including_emulation=False)`"),
        ),
        checks=BF16_CHECKS,
        sources=(
            "https://github.com/opendatalab/MinerU/issues/1508",
            "https://github.com/numz/ComfyUI-SeedVR2_VideoUpscaler/issues/543",
            "https://github.com/deepspeedai/DeepSpeed/issues/6723",
        ),
        examples=(
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, "
            "opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, "
            "(int)ldb, strideb, (void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, "
            "CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling cublasGemmStridedBatchedEx(handle, "
            "opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, "
            "(int)ldb, strideb, (void*)&fbeta, c, std::is_same_v<C_Dtype, float> ? CUDA_R_32F : CUDA_R_16BF, "
            "(int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)",
        ),
        near_misses=(
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, opa, opb, m, "
            "n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, "
            "CUBLAS_GEMM_DFALT_TENSOR_OP)`",
        ),
        notes="Only the bf16 (CUDA_R_16BF) form is hardware: the fp16 (CUDA_R_16F) form is reported on RTX 4090s "
        "too (0nutation/SpeechGPT#37), where it points at the CUDA/cuBLAS install, not the GPU. A CUDA_R_16BF "
        "report on an H20 (xdit-project/xDiT#374) was never explained: on Ampere or newer look elsewhere.",
    ),
    Signature(
        id="hardware-bf16-gemm-not-in-this-torch",
        family="hardware",
        title="This torch has no bf16 GEMM for the GPU: at::cuda::blas::gemm is not implemented for BFloat16",
        needles=("at::cuda::blas::gemm: not implemented for",),
        patterns=(
            r"at::cuda::blas::gemm: not implemented for (?:input type )?(?:struct |class )?(?:c10|at)::BFloat16",
        ),
        cause="torch's CUDA BLAS wrapper raises this for a dtype it has no GEMM for. Older releases declared the "
        "BFloat16 GEMM only for ROCm and then only for builds against CUDA 11 or newer (CUDABlas.h: "
        "`#if defined(USE_ROCM) || defined(CUDA_VERSION) && CUDA_VERSION >= 11000`), so a model loaded in bfloat16 "
        "fails at its first matmul. In the reports the GPU is also one without bf16 (Pascal, Turing): a torch that "
        "has the GEMM then runs it emulated, slowly, or cuBLAS refuses it.",
        fixes=(
            fix(
                "Load the model in float16 on a GPU older than Ampere (or float32): `torch_dtype=torch.float16`, or "
                "the library's dtype setting (`dtype: float16` in the model's config)"
            ),
            fix(
                "See which CUDA this torch was built for and what the GPU is: bf16 GEMMs need a torch built with "
                "CUDA 11 or newer, and run natively from compute capability 8.0",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, '
                'torch.cuda.get_device_capability() if torch.cuda.is_available() else None)"',
            ),
        ),
        checks=BF16_CHECKS + ("TORCH005",),
        sources=(
            "https://github.com/QwenLM/Qwen3/issues/755",
            "https://github.com/google/gemma_pytorch/issues/3",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/CUDABlas.h",
        ),
        examples=(
            "RuntimeError: at::cuda::blas::gemm: not implemented for struct c10::BFloat16",
            "The error is: RuntimeError: at::cuda::blas::gemm: not implemented for struct c10::BFloat16",
        ),
        near_misses=("RuntimeError: at::cuda::blas::gemm: not implemented for struct c10::complex<double>",),
        notes="typeid names the type as the compiler does: `struct c10::BFloat16` with MSVC (Windows wheels), a "
        "mangled `N3c108BFloat16E` with GCC, which this pattern leaves to the general reader.",
    ),
]
