"""No GPU code for this GPU: the build (torch, an extension, cuBLAS/cuDNN, Triton's ptxas) lacks its architecture.

CUDA says "no kernel image is available" or "invalid device function", ROCm says
"hipErrorNoBinaryForGpu" or "HIP error: invalid device function", and torch warns at start-up that the
GPU's sm_XX is not in its arch list or that the GPU is too old. Mixed precision meets these first because
fp16/bf16 kernels and fused attention are compiled per architecture.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

ARCH_CHECKS = ("TORCH007", "PREC002")
# Which CUDA line has code for this GPU, and which torch version to pin, are this machine's facts: a command written
# here (`--force-reinstall torch --index-url .../cu128`) would reinstall no version in particular, and cu128 wheels
# leave out the Pascal GPUs it is also offered to.
ARCH_REINSTALL = "mpdoctor check --select TORCH007"
PRINT_ARCHES = (
    'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_arch_list(), '
    'torch.cuda.get_device_capability())"'
)

SIGNATURES: list[Signature] = [
    Signature(
        id="kernel-image-no-kernel-image",
        family="kernel-image",
        title="No kernel image for this GPU: the build has no code for its architecture",
        needles=("no kernel image is available", "hiperrornobinaryforgpu"),
        patterns=(
            r"no kernel image is available for execution on (?:the|this) device",
            r"hipErrorNoBinaryForGpu: (?:Unable to find code object|Coudn't find binary)",
        ),
        cause="CUDA code is compiled for a list of GPU architectures (sm_XX), and a kernel can only run on a GPU "
        "whose architecture, or a compatible one, is in that list. Here it is not: a new GPU with an older "
        "wheel (RTX 50xx, sm_120, needs a CUDA 12.8+ build), an old GPU with a newer wheel (recent cu128 "
        "wheels leave out Maxwell and Pascal, CUDA 13 ones Volta too), or a custom CUDA extension compiled "
        "for other GPUs (the frame that fails is the extension's, e.g. `cudaCheckError() failed`). On ROCm, "
        "hipErrorNoBinaryForGpu is the same for an AMD GPU whose gfx target the build lacks, or a ROCm torch "
        "on a machine with an NVIDIA GPU.",
        fixes=(
            fix("See which architectures the installed torch has, and the GPU's", PRINT_ARCHES),
            fix(
                "Reinstall torch from the index of a CUDA version whose builds include this GPU (cu128 or newer for "
                "RTX 50xx; an older CUDA line for Pascal/Volta): mpdoctor check reads the GPU and the build and "
                "prints the command, pinned to the torch you have",
                ARCH_REINSTALL,
            ),
            fix(
                "When the failing frame is a compiled extension, rebuild it for this GPU, e.g. "
                '`TORCH_CUDA_ARCH_LIST="8.6" pip install --no-build-isolation --force-reinstall .`'
            ),
            fix(
                "On an AMD GPU the build does not list (RDNA2 gfx1031/1032 and the like), pretend to be the "
                "nearest supported target",
                "export HSA_OVERRIDE_GFX_VERSION=10.3.0",
            ),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/pytorch/pytorch/issues/31285",
            "https://github.com/Comfy-Org/ComfyUI/issues/10326",
            "https://github.com/pytorch/pytorch/issues/10002",
            "https://github.com/rowanz/neural-motifs/issues/6",
            "https://github.com/ROCm/tensorflow-upstream/issues/1800",
        ),
        examples=(
            "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "THCudaCheck FAIL file=/home/mfuntowi/Workspace/pytorch/aten/src/THC/generic/THCTensorMath.cu line=244 "
            "error=48 : no kernel image is available for execution on the device",
            "cudaCheckError() failed : no kernel image is available for execution on the device",
            '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
        ),
        near_misses=(
            "RuntimeError: CUDA error: out of memory\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.",
            "RuntimeError: CUDA error: invalid device ordinal",
        ),
    ),
    Signature(
        id="kernel-image-invalid-device-function",
        family="kernel-image",
        title="Invalid device function: the kernel was not built for this GPU's architecture",
        needles=("invalid device function", "hiperrorinvaliddevicefunction"),
        patterns=(
            r"CUDA error: invalid device function",
            r"HIP error: invalid device function",
            r"cuda runtime error \(8\) : invalid device function",
            r"error=8 : invalid device function",
            r"hipErrorInvalidDeviceFunction",
        ),
        cause="The runtime found the kernel's code object but no version of the function for this GPU. On NVIDIA "
        "it is the older spelling of the missing-architecture failure: torch or an extension built with a "
        "`TORCH_CUDA_ARCH_LIST` that leaves this GPU out, built on another machine, or a GPU too old for the "
        "wheel. On AMD (ROCm) it is very common on consumer and APU GPUs whose gfx target the ROCm torch "
        "was not built for (gfx1031, gfx1151 Strix Halo, Polaris workstation cards).",
        fixes=(
            fix("Compare the build's architectures with the GPU's", PRINT_ARCHES),
            fix(
                "Install a torch build that lists this GPU, or rebuild torch/the extension with its architecture "
                "in `TORCH_CUDA_ARCH_LIST` (every architecture you run on: the list is not backward compatible)"
            ),
            fix(
                "On ROCm, make the GPU report the nearest supported target before starting Python (10.3.0 for "
                "RDNA2 cards such as gfx1031, 11.0.0 for gfx1151)",
                "export HSA_OVERRIDE_GFX_VERSION=10.3.0",
            ),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/pytorch/pytorch/issues/13207",
            "https://github.com/pytorch/pytorch/issues/1557",
            "https://github.com/pytorch/pytorch/issues/164346",
            "https://github.com/ROCm/legacy-rocm-build/issues/2536",
            "https://github.com/ROCm/legacy-rocm-build/issues/5668",
            "https://github.com/ROCm/legacy-rocm-build/issues/5264",
            "https://github.com/ROCm/rocALUTION/issues/197",
        ),
        examples=(
            "RuntimeError: CUDA error: invalid device function",
            "THCudaCheck FAIL file=/gpfsnyu/home/ks3286/pytorch/torch/lib/THC/generated/../generic/"
            "THCTensorMathPointwise.cu line=247 error=8 : invalid device function\n"
            "RuntimeError: cuda runtime error (8) : invalid device function at /gpfsnyu/home/ks3286/pytorch/torch/"
            "lib/THC/generated/../generic/THCTensorMathPointwise.cu:247",
            "RuntimeError: HIP error: invalid device function\n"
            "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\n"
            "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
            "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
            ":3:hip_module.cpp           :669 : 14629861952 us: [pid:31113 tid:0x7fa5a37fe700] hipLaunchKernel: "
            "Returned hipErrorInvalidDeviceFunction : ",
        ),
        near_misses=("RuntimeError: CUDA error: invalid device ordinal",),
    ),
    Signature(
        id="kernel-image-arch-not-in-torch-build",
        family="kernel-image",
        title="torch warns that this GPU's sm_XX is not in its build: CUDA work on it will fail",
        needles=("is not compatible with the current pytorch installation",),
        patterns=(r"with CUDA capability sm_\d{2,3} is not compatible with the current PyTorch installation",),
        cause="At the first CUDA call torch compares each GPU's compute capability with the architectures its "
        "wheel was compiled for, and warns when none matches the GPU's major version. Every kernel launch on "
        "that GPU will then fail with 'no kernel image is available'. Typical: an RTX 50xx (sm_120) with a "
        "cu121/cu124/cu126 wheel, an RTX 30xx/A100 (sm_86/sm_80) with an old cu10x wheel, or a Maxwell/Pascal "
        "card with a recent cu128 wheel (Volta with a CUDA 13 one).",
        fixes=(
            fix(
                "Install the same torch built for a CUDA version whose arch list includes this GPU (the warning "
                "lists what the installed one supports): mpdoctor check reads the GPU and the build and prints the "
                "command, pinned to the torch you have",
                ARCH_REINSTALL,
            ),
            fix("Check the result", PRINT_ARCHES),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/ostris/ai-toolkit/issues/530",
            "https://github.com/Turoad/CLRNet/issues/83",
            "https://github.com/PrateekMunjal/TorchAL/issues/4",
            "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py",
        ),
        examples=(
            "C:\\StabilityMatrix\\Packages\\AI-Toolkit\\venv\\Lib\\site-packages\\torch\\cuda\\__init__.py:287: "
            "UserWarning: \n"
            "NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current PyTorch "
            "installation.\n"
            "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
            "If you want to use the NVIDIA GeForce RTX 5060 Ti GPU with PyTorch, please check the instructions at "
            "https://pytorch.org/get-started/locally/",
            "NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch "
            "installation.\n"
            "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
            "NVIDIA A100-PCIE-40GB with CUDA capability sm_80 is not compatible with the current PyTorch installation.",
        ),
        near_misses=(
            "UserWarning: Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n"
            "Minimum and Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)",
        ),
        notes="The near-miss (DGX Spark GB10, sm_121, with a build up to sm_120) is benign: same major version, "
        "kernels run. The same 'Minimum and Maximum' warning is fatal when the GPU is below the minimum "
        "(e.g. 6.1 with (7.0) - (12.0)), but that cannot be told apart on one line, so it is not matched.",
    ),
    Signature(
        id="kernel-image-gpu-too-old",
        family="kernel-image",
        title="torch warns that this GPU is too old for the build: CUDA work on it will fail",
        needles=("no longer supports this gpu because it is too old",),
        patterns=(r"PyTorch no longer supports this GPU because it is too old",),
        cause="The GPU's compute capability is below the oldest architecture the installed torch was compiled "
        "for (Fermi and Kepler cards long ago; now Maxwell and Pascal with recent cu128 wheels). torch "
        "still reports CUDA as available, then kernels fail with 'no kernel image' or 'invalid device "
        "function'. For mixed precision this usually also means no usable fp16/bf16 hardware anyway.",
        fixes=(
            fix(
                "Install an older torch (or an older CUDA line of it) whose builds still include this GPU; the "
                "warning names the minimum capability of the installed one",
                PRINT_ARCHES,
            ),
            fix("Or build torch from source with this GPU in `TORCH_CUDA_ARCH_LIST`"),
            fix('Or run on the CPU: hide the GPU with `CUDA_VISIBLE_DEVICES=""` and train in fp32'),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/3003",
            "https://github.com/pytorch/pytorch/issues/16712",
            "https://github.com/rupeshs/diffusionmagic/issues/12",
            "https://github.com/pytorch/pytorch/pull/5125",
        ),
        examples=(
            "Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no longer supports this GPU "
            "because it is too old. The minimum cuda capability supported by this library is 3.7.",
            "    Found GPU0 NVIDIA GeForce GTX 680 which is of cuda capability 3.0.\n"
            "    PyTorch no longer supports this GPU because it is too old.\n"
            "    The minimum cuda capability supported by this library is 3.7.",
            "    Found GPU0 GeForce 920MX which is of cuda capability 5.0.\n"
            "    PyTorch no longer supports this GPU because it is too old.\n"
            "    \n"
            "  warnings.warn(old_gpu_warn % (d, name, major, capability[1]))",
        ),
        near_misses=(
            "UserWarning: Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n"
            "Minimum and Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)",
        ),
        notes="Before torch 1.8 the last line read 'The minimum cuda capability that we support is 3.5.'. ROCm torch "
        "once printed this warning for AMD GPUs by mistake (ROCm/pytorch#627).",
    ),
    Signature(
        id="kernel-image-cublas-cudnn-arch-mismatch",
        family="kernel-image",
        title="cuBLAS or cuDNN reports ARCH_MISMATCH: the GPU lacks a feature the call needs",
        needles=("cublas_status_arch_mismatch", "cudnn_status_arch_mismatch"),
        patterns=(r"CUBLAS_STATUS_ARCH_MISMATCH", r"CUDNN_STATUS_ARCH_MISMATCH"),
        cause="The library has no path for this GPU's architecture. For cuBLAS it is usually a mixed-precision "
        "GEMM (`cublasGemmEx` with fp16 inputs and tensor-op algorithms) on a GPU older than the library "
        "supports for it (Kepler K40/K80, Maxwell in some CUDA versions). For cuDNN it is a GPU below "
        "cuDNN's minimum, or a different cuDNN than torch's own being loaded (a stray cudnn DLL in "
        "System32 or on PATH on Windows).",
        fixes=(
            fix("Run those layers in fp32 on this GPU (no `.half()`, no fp16 autocast), or use a newer GPU"),
            fix(
                "Check which cuDNN torch really loads; on Windows remove stray cudnn*.dll from System32 and the "
                "system CUDA from PATH so torch's bundled copy is used",
                'python -c "import torch; print(torch.backends.cudnn.version(), torch.version.cuda)"',
            ),
            fix("For a compiled extension, build it for this GPU with a CUDA version that still supports it"),
        ),
        checks=ARCH_CHECKS + ("PREC001",),
        sources=(
            "https://github.com/mit-han-lab/bevfusion/issues/615",
            "https://github.com/NVIDIA/DeepLearningExamples/issues/514",
            "https://github.com/pytorch/pytorch/issues/20202",
            "https://github.com/hyseob/PyMDNet/issues/6",
        ),
        examples=(
            "RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, opb, m, "
            "n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, "
            "CUBLAS_GEMM_DFALT_TENSOR_OP)`",
            "  what():  [FT][ERROR] CUDA runtime error: CUBLAS_STATUS_ARCH_MISMATCH /root/DeepLearningExamples-master/"
            "FasterTransformer/v1/fastertransformer/cuda/open_attention.h:171 ",
            "    self.dropout, self.training, self.bidirectional, self.batch_first)\n"
            "RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH",
            "RuntimeError: CUDNN_STATUS_ARCH_MISMATCH",
        ),
        near_misses=(
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, opa, opb, m, "
            "n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, "
            "CUBLAS_GEMM_DFALT_TENSOR_OP)`",
        ),
    ),
    Signature(
        id="kernel-image-triton-ptxas-unknown-arch",
        family="kernel-image",
        title="Triton's bundled ptxas does not know this GPU's architecture (sm_120/sm_121/sm_110 ...)",
        needles=("is not defined for option 'gpu-name'",),
        patterns=(r"Value 'sm_\d{2,3}a?' is not defined for option 'gpu-name'",),
        cause="Triton (behind torch.compile, vLLM, SGLang, lmdeploy, unsloth) compiles its kernels with the ptxas "
        "it ships, and a ptxas older than the GPU refuses its architecture: sm_120 (RTX 50xx) needs a "
        "CUDA 12.8+ ptxas; for sm_121a (DGX Spark GB10) CUDA 13's fixed it. It is the Triton counterpart of "
        "'no kernel image': torch's own kernels may run while every compiled kernel fails.",
        fixes=(
            fix(
                "Point Triton at a new enough system ptxas (from a CUDA 12.8+/13 toolkit)",
                "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas",
            ),
            fix("Or upgrade torch and its matching triton to a release that supports this GPU"),
            fix("Or run without torch.compile / Triton kernels until then"),
        ),
        checks=ARCH_CHECKS,
        sources=(
            "https://github.com/triton-lang/triton/issues/8539",
            "https://github.com/InternLM/lmdeploy/issues/3410",
            "https://github.com/vllm-project/vllm/pull/31338",
            "https://github.com/ModelTC/LightLLM/issues/176",
        ),
        examples=(
            "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
            "`ptxas` stderr:\n"
            "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'",
            "RuntimeError: Internal Triton PTX codegen error: ptxas fatal : Value 'sm_120' is not defined for "
            "option 'gpu-name'",
            "ptxas fatal : Value 'sm_89' is not defined for option 'gpu-name'",
        ),
        near_misses=("RuntimeError: CUDA error: no kernel image is available for execution on the device",),
        notes="The sm_89 case is Triton 2.0 on an RTX 4090 (fixed in Triton 2.1, ModelTC/LightLLM#176).",
    ),
    Signature(
        id="kernel-image-cutlass-mma-stub",
        family="kernel-image",
        title="A CUTLASS {dtype} matrix-multiply ran as its 'not implemented' stub: the build lacks this GPU's architecture",
        needles=("cutlass::arch::mma<",),
        patterns=(r"\] not implemented",),  # the needle holds the line to CUTLASS's Mma stub
        details=(r"cutlass::(?P<dtype>float_e4m3_t|float_e5m2_t|half_t|bfloat16_t|tfloat32_t)",),
        defaults=(("dtype", "low-precision"),),
        cause="CUTLASS compiles each tensor-core instruction only for the architectures that have it; for any other "
        "target the `cutlass::arch::Mma` template is a stub that prints its signature and `not implemented`. "
        "The wheel (torch, or an extension built on CUTLASS) was compiled without this GPU's exact sm_XX and runs "
        "PTX for an older one: fp8 (`float_e4m3_t`/`float_e5m2_t`) MMA needs sm_89/sm_90 code, bf16 sm_80.",
        fixes=(
            fix("See which architectures the build has and what the GPU is", PRINT_ARCHES),
            fix(
                "Install a build that includes the GPU's sm_XX (a newer torch or extension wheel, or build with "
                "`TORCH_CUDA_ARCH_LIST` set to it), or run this op in bf16/fp16 instead of fp8"
            ),
        ),
        checks=ARCH_CHECKS,
        sources=("https://github.com/NVIDIA/cutlass/blob/main/include/cutlass/arch/mma.h",),
        examples=(
            "void cutlass::arch::Mma<cutlass::gemm::GemmShape<16, 8, 32>, 32, cutlass::float_e4m3_t, "
            "cutlass::layout::RowMajor, cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, float, "
            "cutlass::layout::RowMajor, Operator_>::operator()(cutlass::Array<float, 4, true> &) const "
            "[with Operator_ = cutlass::arch::OpMultiplyAdd] not implemented",
        ),
    ),
]
