"""The NVIDIA driver under torch: missing, too old for the CUDA torch was built with, out of step with its own
user-space libraries, a forward-compatibility package on a GPU that cannot use it, NVML absent, CUDA failing to
initialise after suspend, and a CPU-only torch on a GPU machine."""

from __future__ import annotations

from mpdoctor.explain.signature import Alternative, Signature, fix

# A reinstall command written here could name neither the user's torch version nor the CUDA build their driver
# runs: an unpinned `pip install torch --index-url .../cu118` replaces a torch 2.13 with the newest build that index
# still has (cu118 stops at 2.7). `mpdoctor check` reads both on the user's machine and prints the pinned command.
TORCH_FOR_DRIVER_COMMAND = "mpdoctor check --select TORCH005,TORCH006,TORCH009"
TORCH_FOR_DRIVER = (
    "Or install this torch version built for a CUDA your driver supports (`nvidia-smi` shows the highest): "
    "mpdoctor check prints the command for this machine, pinned to the torch you have"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="driver-library-version-mismatch",
        family="driver",
        title="The loaded NVIDIA kernel module and the driver's user-space libraries are different versions",
        needles=("driver/library version mismatch", "unsupported display driver / cuda driver combination"),
        patterns=(
            r"Driver/[Ll]ibrary version mismatch",
            r"system has unsupported display driver / cuda driver combination",
        ),
        cause="The NVIDIA driver was upgraded (often by an unattended package update) but the old kernel module is "
        "still loaded, so NVML (nvidia-smi) and libcuda from the new driver refuse to talk to it; CUDA reports "
        "the same split as error 803. A container carrying its own libcuda that differs from the host's "
        "kernel module shows it too. Until the two match, CUDA sees no GPU.",
        fixes=(
            fix("Reboot, so the kernel module of the installed driver is the one loaded", "sudo reboot"),
            fix(
                "Compare the two versions: the loaded module in /proc, the libraries in nvidia-smi's message",
                "cat /proc/driver/nvidia/version",
            ),
            fix(
                "Then stop unattended upgrades from replacing the driver under running jobs (pin or hold the "
                "nvidia driver packages)"
            ),
        ),
        checks=("DRV001", "TORCH009", "TORCH010"),
        sources=(
            "https://github.com/mozilla/translations/issues/1167",
            "https://github.com/lyulyul/shine-cluster/issues/30",
            "https://github.com/qixuema/envs/issues/8",
            "https://github.com/CompVis/stable-diffusion/issues/439",
            "https://github.com/easydiffusion/easydiffusion/issues/379",
        ),
        examples=(
            "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124",
            "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: "
            "Driver/library version mismatch",
            "Failed to initialize NVML: Driver/Library version mismatch",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported "
            "display driver / cuda driver combination",
            "/home/drink/Software/stable-diffusion-ui/stable-diffusion/env/lib/python3.8/site-packages/"
            "torch/cuda/__init__.py:82: UserWarning: CUDA initialization: Unexpected error from "
            "cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might "
            "have already set an error? Error 803: system has unsupported display driver / cuda driver "
            "combination (Triggered internally at  /opt/conda/conda-bld/pytorch_1646755903507/work/c10/cuda/"
            "CUDAFunctions.cpp:112.)",
        ),
        near_misses=(
            "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility "
            "was attempted on non supported HW",
        ),
    ),
    Signature(
        id="driver-too-old-for-torch",
        family="driver",
        title="torch's CUDA is newer than the NVIDIA driver supports",
        needles=("nvidia driver on your system is too old",),
        patterns=(r"The NVIDIA driver on your system is too old \(found version \d{3,6}\)",),
        cause="This torch wheel was built for a CUDA release newer than the installed driver supports. The version "
        "torch found encodes the driver's CUDA ceiling (11040 = CUDA 11.4, 12080 = CUDA 12.8); a cu121 or "
        "cu130 wheel on it cannot start CUDA, so torch reports no GPU and anything on 'cuda' fails.",
        fixes=(
            fix(
                "Update the NVIDIA driver to one that supports the CUDA torch was built with "
                '(`python -c "import torch; print(torch.version.cuda)"`)'
            ),
            fix(TORCH_FOR_DRIVER, TORCH_FOR_DRIVER_COMMAND),
        ),
        checks=("TORCH006", "TORCH009"),
        sources=(
            "https://github.com/pytorch/pytorch/blob/01a6a16d9bb6424c034f5623c46bfd08ec21613b/c10/cuda/"
            "CUDAFunctions.cpp",
            "https://github.com/lllyasviel/Fooocus/issues/1313",
            "https://github.com/IEIT-Yuan/Yuan-2.0/issues/65",
            "https://github.com/wuhuikai/FastFCN/issues/37",
        ),
        examples=(
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your "
            "GPU driver by downloading and installing a new version from the URL: "
            "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
            "PyTorch version that has been compiled with your version of the CUDA driver.",
            "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA "
            "initialization: The NVIDIA driver on your system is too old (found version 11000). Please update "
            "your GPU driver by downloading and installing a new version from the URL: "
            "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
            "PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally "
            "at /opt/pytorch/pytorch/c10/cuda/CUDAFunctions.cpp:108.)",
            "AssertionError: \nThe NVIDIA driver on your system is too old (found version 9000).\nPlease update "
            "your GPU driver by downloading and installing a new\nversion from the URL: "
            "http://www.nvidia.com/Download/index.aspx",
        ),
        near_misses=(
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
            "and installed a driver from http://www.nvidia.com/Download/index.aspx",
        ),
    ),
    Signature(
        id="driver-insufficient-for-runtime",
        family="driver",
        title="CUDA runtime error 35: the driver is older than the CUDA runtime",
        needles=("cuda driver version is insufficient for cuda runtime version",),
        patterns=(r"CUDA driver version is insufficient for CUDA runtime version",),
        cause="The CUDA runtime bundled with torch (or another framework, such as onnxruntime) is newer than the "
        "installed NVIDIA driver can serve (cudaErrorInsufficientDriver, error 35). It is the CUDA runtime's "
        "own wording of the same mismatch torch reports as 'driver too old'.",
        fixes=(
            fix("Update the NVIDIA driver to one that supports the framework's CUDA version"),
            fix(TORCH_FOR_DRIVER, TORCH_FOR_DRIVER_COMMAND),
        ),
        checks=("TORCH006", "TORCH009"),
        sources=(
            "https://github.com/microsoft/human-pose-estimation.pytorch/issues/23",
            "https://github.com/nagadomi/nunif/issues/702",
            "https://github.com/C0untFloyd/roop-unleashed/issues/465",
        ),
        examples=(
            "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime "
            "version at /pytorch/aten/src/THC/THCGeneral.cpp:74",
            "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
            "D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:121 onnxruntime::CudaCall "
            "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=-2011338632",
        ),
        near_misses=("RuntimeError: CUDA failed with error forward compatibility was attempted on non supported HW",),
    ),
    Signature(
        id="driver-not-found",
        family="driver",
        title="A CUDA build of torch found no NVIDIA driver",
        needles=("found no nvidia driver on your system",),
        patterns=(r"Found no NVIDIA driver on your system",),
        cause="torch was built with CUDA but the CUDA driver (libcuda) is not there: the machine has no NVIDIA GPU "
        "(a Mac, an Intel/AMD-only laptop, a CPU Colab runtime), the driver is not installed, or a container "
        "was started without GPU access. Code that calls `.cuda()` or picks `cuda:0` unconditionally fails.",
        fixes=(
            fix("Check that the driver is there and sees the GPU", "nvidia-smi"),
            fix("In a container, start it with GPU access (`docker run --gpus all ...`)"),
            fix(
                "On a machine without an NVIDIA GPU, run on the CPU: pick the device with "
                '`"cuda" if torch.cuda.is_available() else "cpu"`'
            ),
        ),
        checks=("TORCH009", "DRV001"),
        # A notice: no GPU is usable, whatever the precision (round 20 labels it no precision failure, like
        # driver-torch-cpu-only), yet its fix comes before anything a precision run on this machine needs.
        notice=True,
        sources=(
            "https://github.com/pytorch/pytorch/blob/01a6a16d9bb6424c034f5623c46bfd08ec21613b/c10/cuda/"
            "CUDAFunctions.cpp",
            "https://github.com/facebookresearch/pytorch3d/issues/1259",
            "https://github.com/googlecolab/colabtools/issues/5136",
            "https://github.com/facebookresearch/detectron2/issues/3104",
        ),
        examples=(
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
            "installed a driver from http://www.nvidia.com/Download/index.aspx",
        ),
        near_misses=(
            "AssertionError: Torch not compiled with CUDA enabled",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update "
            "your GPU driver by downloading and installing a new version from the URL: "
            "http://www.nvidia.com/Download/index.aspx",
        ),
    ),
    Signature(
        id="driver-forward-compat-unsupported",
        family="driver",
        title="CUDA error 804: a CUDA forward-compatibility package on a GPU that does not support it",
        needles=("forward compatibility was attempted on non supported hw",),
        patterns=(r"forward compatibility was attempted on non supported HW",),
        cause="CUDA found a forward-compatibility libcuda (the cuda-compat package, e.g. /usr/local/cuda/compat in "
        "many CUDA container images) newer than the host driver, and used it. NVIDIA supports that path only "
        "on data-center GPUs (and select RTX server SKUs and Jetson), so a GeForce or workstation card refuses "
        "it and CUDA initialisation fails. A driver updated without a reboot can show it too.",
        fixes=(
            fix("Update the host driver to one that supports the image's CUDA version, so no compat library is needed"),
            fix(
                "Or take the compat libraries off the loader path (remove /usr/local/cuda/compat from "
                "LD_LIBRARY_PATH, or use an image built for your driver's CUDA)"
            ),
            fix("If the driver was just updated, reboot", "sudo reboot"),
        ),
        checks=("TORCH006", "TORCH009", "DRV001"),
        sources=(
            "https://github.com/chenfei-wu/TaskMatrix/issues/379",
            "https://github.com/AIR-DISCOVER/ICRA2024-Sim2Real-AXS/issues/5",
            "https://github.com/hpcaitech/ColossalAI/issues/4381",
            "https://github.com/SYSTRAN/faster-whisper/issues/653",
            "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
        ),
        examples=(
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility "
            "was attempted on non supported HW",
            "/opt/conda/lib/python3.9/site-packages/torch/cuda/__init__.py:83: UserWarning: CUDA initialization: "
            "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
            "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
            "attempted on non supported HW (Triggered internally at  /opt/conda/conda-bld/pytorch_1659484809662/"
            "work/c10/cuda/CUDAFunctions.cpp:109.)",
            "RuntimeError: CUDA failed with error forward compatibility was attempted on non supported HW",
            "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorCompatNotSupportedOnDevice: forward "
            "compatibility was attempted on non supported HW",
        ),
        near_misses=(
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported "
            "display driver / cuda driver combination",
        ),
    ),
    Signature(
        id="driver-nvml-library-not-found",
        family="driver",
        title="NVML, the driver's management library (libnvidia-ml), cannot be loaded",
        needles=("nvml shared library not found", "libnvidia-ml.so"),
        patterns=(r"NVML Shared Library Not Found", r"libnvidia-ml\.so(?:\.1)?: cannot open shared object file"),
        cause="pynvml (used by GPU monitors, trainers and torch.cuda's memory and utilisation helpers) loads "
        "libnvidia-ml, which ships with the NVIDIA driver. It is missing: no NVIDIA driver on this machine "
        "(macOS, a CPU-only host), a container started without the NVIDIA runtime, or a driver install "
        "without its user-space libraries.",
        fixes=(
            fix("Check that the driver is installed and nvidia-smi works (it uses the same library)", "nvidia-smi"),
            fix("In a container, start it with GPU access (`docker run --gpus all ...`), which mounts the library"),
            fix("On a machine without an NVIDIA GPU, turn off the tool's GPU monitoring instead"),
        ),
        checks=("DRV001",),
        sources=(
            "https://github.com/deepfakes/faceswap/issues/778",
            "https://github.com/NVlabs/imaginaire/issues/56",
            "https://github.com/wookayin/gpustat/issues/134",
        ),
        examples=(
            "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
            "pynvml.nvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
            "Traceback (most recent call last):\n"
            '  File "/home/rig1/.local/pipx/venvs/gpustat/lib/python3.10/site-packages/pynvml.py", line 1478, '
            "in _LoadNvmlLibrary\n"
            '    nvmlLib = CDLL("libnvidia-ml.so.1")\n'
            "OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
        ),
        near_misses=("Failed to initialize NVML: Driver/library version mismatch",),
    ),
    Signature(
        id="driver-cuda-unknown-error",
        family="driver",
        title="CUDA initialisation fails with 'unknown error' (often after suspend/resume)",
        needles=("cuda unknown error", "unknown error at"),
        patterns=(
            r"CUDA unknown error - this may be due to an incorrectly set up environment",
            r"cuda runtime error \(30\) : unknown error",
        ),
        cause="cuInit returned CUDA_ERROR_UNKNOWN. Despite the message it is rarely CUDA_VISIBLE_DEVICES: on Linux "
        "it is most often the nvidia_uvm kernel module left broken by a suspend/resume, or the /dev/nvidia-uvm "
        "device nodes missing (a fresh boot without nvidia-modprobe, or a container runtime that does not "
        "create them). nvidia-smi can still work, because it does not use nvidia_uvm.",
        fixes=(
            fix(
                "Reload the nvidia_uvm module (close programs using the GPU first)",
                "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm",
            ),
            fix("Or create the missing UVM device nodes", "sudo nvidia-modprobe -c 0 -u"),
            fix("If neither helps, reboot", "sudo reboot"),
        ),
        checks=("TORCH009", "TORCH010", "DRV001"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/49081",
            "https://github.com/pytorch/pytorch/issues/88639",
            "https://github.com/pop-os/default-settings/pull/64",
            "https://github.com/pytorch/pytorch/issues/1778",
            "https://github.com/pytorch/pytorch/blob/01a6a16d9bb6424c034f5623c46bfd08ec21613b/c10/cuda/"
            "CUDAFunctions.cpp",
        ),
        examples=(
            "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. "
            "changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to "
            "be zero.",
            "/opt/anaconda3/lib/python3.8/site-packages/torch/cuda/__init__.py:88: UserWarning: CUDA "
            "initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. "
            "changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to "
            "be zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)",
            "RuntimeError: cuda runtime error (30) : unknown error at "
            "/py/conda-bld/pytorch_1493681908901/work/torch/lib/THC/THCGeneral.c:66",
        ),
        near_misses=("RuntimeError: CUDA error: unspecified launch failure",),
    ),
    Signature(
        id="driver-torch-cpu-only",
        family="driver",
        title="torch is a CPU-only build, so CUDA is not there at all",
        needles=("torch not compiled with cuda enabled",),
        patterns=(r"Torch not compiled with CUDA enabled",),
        cause="The torch installed has no CUDA support (a CPU-only wheel: the default on Windows and macOS PyPI, or "
        "pulled in by another package's pin), so any `.cuda()` or 'cuda' device fails even on a machine with "
        "a working NVIDIA GPU and driver.",
        fixes=(
            fix(
                "Check the build: a CPU-only wheel prints None for the CUDA version",
                'python -c "import torch; print(torch.__version__, torch.version.cuda)"',
            ),
            fix(
                "Install this torch version's CUDA build for your driver: mpdoctor check prints the command for this "
                "machine, pinned to the torch you have, from the index of the CUDA your driver runs",
                TORCH_FOR_DRIVER_COMMAND,
            ),
        ),
        checks=("TORCH005",),
        # A notice: no precision is involved (rounds 7 and 12 label it no precision failure), yet its fix is the
        # first thing a precision run on this torch needs.
        notice=True,
        sources=(
            "https://github.com/facebookresearch/detectron2/issues/460",
            "https://github.com/X-PLUG/MobileAgent/issues/60",
            "https://github.com/XPixelGroup/HAT/issues/85",
        ),
        examples=(
            '  File "/home/xx/anaconda3/envs/tf-gpu/lib/python3.7/site-packages/torch/cuda/__init__.py", '
            "line 95, in _check_driver\n"
            '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
            "AssertionError: Torch not compiled with CUDA enabled",
        ),
        near_misses=(
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
            "and installed a driver from http://www.nvidia.com/Download/index.aspx",
        ),
        alternatives=(
            Alternative(
                cause="A Mac: torch has had no CUDA build for macOS since 1.x, so code that asks for 'cuda' (a "
                "script, a ComfyUI node that hardcodes it) cannot run there as written, whatever is installed",
                tell='On macOS it is this one: nothing to install; `python -c "import torch; '
                'print(torch.backends.mps.is_available())"` prints True on Apple silicon, where `mps` is the GPU',
                fixes=(
                    fix(
                        'Make the code pick the device instead of hardcoding CUDA: `device = "cuda" if '
                        'torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"` (a '
                        "node or tool that hardcodes it needs its Mac fix)"
                    ),
                ),
            ),
        ),
    ),
]
