"""Family "hardware", outside CUDA: a GPU API's device that does not offer 16-bit floats to shaders.

WebGPU (browsers, wgpu, Dawn: ONNX Runtime Web, Transformers.js, WebLLM, llama.cpp's WebGPU backend), OpenCL
(`cl_khr_fp16`) and Vulkan (16-bit storage) make half precision an optional device feature. A model or kernel
built in fp16 then fails on an adapter, driver or browser that does not expose it, however new the GPU: the
fix is the feature (a browser or driver that enables it) or a build of the model in fp32.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-gpu-api-lacks-f16",
        family="hardware",
        title="The GPU API's device does not offer 16-bit floats (WebGPU shader-f16, OpenCL cl_khr_fp16, Vulkan "
        "16-bit storage)",
        needles=(
            "shader-f16",
            "shaderf16",
            "f16 extension",
            "'f16' extension",
            "`f16` extension",
            "cl_khr_fp16",
            "16-bit storage",
            "requires f16 but the device does not support",
        ),
        patterns=(
            # WebGPU: WebLLM, ONNX Runtime Web's shader helper, WGSL parsers (Dawn's and naga's), llama.cpp
            r"requires webgpu extension shader-f16",
            r"requires f16 but the device does not support",
            r"type used without ['`]?f16['`]? extension enabled",
            r"`f16` extension is not (?:supported|enabled|available)",
            r"'f16' extension is not (?:supported|enabled|available)",
            r"hasfeature\([a-z:_]{0,40}shaderf16\)\) failed",
            r"shader-f16[^\n]{0,60}(?:not (?:enabled|supported|available)|unsupported)",
            # OpenCL: the optional half extension missing
            r"unsupported opencl extension 'cl_khr_fp16'",
            # Vulkan (llama.cpp, ncnn): the device feature for 16-bit buffers
            r"does not support 16-bit storage",
        ),
        cause="WebGPU, OpenCL and Vulkan treat half precision as an optional feature of the device (WebGPU's "
        "`shader-f16`, OpenCL's `cl_khr_fp16`, Vulkan's 16-bit storage), which the adapter exposes or not "
        "depending on the GPU, its driver and, for WebGPU, the browser and its flags. A model exported in fp16 "
        "(an `*_fp16.onnx`, a q4f16 WebLLM build) or a kernel that declares `enable f16;` or uses `half4` cannot "
        "run where the feature is missing: older GPUs (GTX 10xx, RX 500), some drivers and software adapters, "
        "Windows on ARM, browsers that do not enable it yet.",
        fixes=(
            fix(
                "Use the fp32 (or q4f32) build of the model, or a runtime device that does not need it (WASM/CPU in "
                "ONNX Runtime Web and Transformers.js: `device: 'wasm'`, `dtype: 'fp32'`)"
            ),
            fix(
                "WebGPU: update the browser and GPU driver, and check that the adapter lists the feature (in the "
                "browser console: `(await navigator.gpu.requestAdapter()).features.has('shader-f16')`)"
            ),
            fix(
                "OpenCL/Vulkan: check what the device offers (`clinfo | grep cl_khr_fp16`, `vulkaninfo | grep -i "
                "storage16`); a driver that exposes it, or the backend's fp32 path"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/mlc-ai/web-llm/issues/241",
            "https://github.com/nico-martin/gemma4-browser-extension/issues/13",
            "https://github.com/elicwhite/spotify-clonehero/issues/27",
            "https://github.com/ArthurBrussee/brush/issues/417",
            "https://github.com/ngxson/wllama/issues/241",
            "https://github.com/tinygrad/tinygrad/issues/4206",
            "https://github.com/ggml-org/llama.cpp/issues/8219",
        ),
        examples=(
            "`Init error, Error: This model requires WebGPU extension shader-f16, which is not enabled in this "
            "browser. `",
            "Status Message: shader_helper.cc:401 GenerateSourceCode Program GatherBlockQuantized requires f16 but "
            "the device does not support it.",
            "Error while parsing WGSL: 'f16' type used without 'f16' extension enabled",
            "    Shader 'image_loss_backward_kernel_f_f32' parsing error: the `f16` extension is not supported in "
            "the current environment",
            "GGML_ASSERT(ctx->webgpu_global_ctx->adapter.HasFeature(wgpu::FeatureName::ShaderF16)) failed",
            "input.cl:1:26: warning: unsupported OpenCL extension 'cl_khr_fp16' - ignoring [-Wignored-pragmas]",
            "device Vulkan0 does not support 16-bit storage.",
        ),
        # llama.cpp's device line: the feature is there (`fp16: 1`)
        near_misses=(
            "ggml_vulkan: 0 = Tesla T4 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | matrix cores: KHR_coopmat",
        ),
        rank=1,
    ),
]
