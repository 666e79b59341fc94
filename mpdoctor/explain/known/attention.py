"""Fused attention that will not run: FlashAttention and PyTorch SDPA kernels refusing the GPU, the dtype
or the installed torch (xFormers, the same family, is ``known/xformers.py``).

Fused attention kernels are the most architecture- and dtype-picky part of a mixed-precision model:
FlashAttention needs Ampere (8.0+) and fp16/bf16 inputs, SDPA's fused backends need fp16/bf16 too (bf16
only from 8.0), xFormers needs a build matching the installed torch, and compiled flash-attn wheels
must match torch's C++ ABI exactly.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="attention-flash-attn-gpu-too-old",
        family="attention",
        title="FlashAttention refused the GPU: it needs Ampere (compute capability 8.0) or newer",
        needles=(
            "flashattention only supports ampere gpus or newer",
            "bfloat16 is only supported on ampere gpus",
            "expected is_sm",
        ),
        patterns=(
            r"FlashAttention only supports Ampere GPUs or newer",
            r"bfloat16 is only supported on Ampere GPUs or newer",
            r"Expected is_sm[0-9a-z_ |]{1,60} to be true, but got false",
        ),
        cause="The flash-attn package (FlashAttention-2, also vendored in xFormers and used by vLLM) checks the GPU "
        "in C++ and accepts only sm_8x and sm_90: V100, T4, RTX 20xx and older are refused, whatever the "
        "dtype. Older flash-attn 1.x phrased it as a failed `is_sm8x || is_sm75` check (it also took "
        "Turing). flash-attn builds that predate Blackwell refuse RTX 50xx (sm_120) with the same message, "
        "so there it means an outdated build, not an old GPU. Turning flash attention off in a config often "
        "does not help when the model code or a library calls flash_attn directly.",
        fixes=(
            fix(
                'Use PyTorch SDPA instead: `attn_implementation="sdpa"` (or `"eager"`) in '
                "`from_pretrained(...)`, `--use_flash_attn false` in training scripts that have it; "
                "remove the `flash-attn` package if the model code imports it unconditionally",
                "pip uninstall -y flash-attn",
            ),
            fix(
                "In vLLM on pre-Ampere GPUs choose an attention backend that supports them with "
                "`VLLM_ATTENTION_BACKEND` (e.g. XFORMERS on the V0 engine)"
            ),
            fix(
                "On an RTX 50xx, install a flash-attn / xFormers build made for sm_120 (or build it from source "
                "with a CUDA 12.8+ toolkit)"
            ),
        ),
        checks=("PREC006", "PREC001", "GPU002", "GPU003"),
        sources=(
            "https://github.com/Dao-AILab/flash-attention/issues/762",
            "https://github.com/Dao-AILab/flash-attention/issues/1540",
            "https://github.com/vllm-project/vllm/issues/8189",
            "https://github.com/QwenLM/Qwen/issues/103",
            "https://github.com/Dao-AILab/flash-attention/blob/main/csrc/flash_attn/flash_api.cpp",
        ),
        examples=(
            '  File "/opt/huawei/python/3.10.12/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", '
            "line 51, in _flash_attn_forward\n"
            "    out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
            "ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution (input dumped to "
            "/tmp/err_execute_model_input_20250111-130939.pkl): FlashAttention only supports Ampere GPUs or newer.",
            "!!! Exception during processing !!! FlashAttention only supports Ampere GPUs or newer.\n"
            "Exception raised from mha_fwd at C:\\a\\xformers\\xformers\\third_party\\flash-attention\\csrc\\"
            "flash_attn\\flash_api.cpp:370 (most recent call first):",
            "RuntimeError: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got false. (Could this error "
            "message be improved? If so, please report an enhancement request to PyTorch.)",
        ),
        near_misses=("RuntimeError: FlashAttention only support fp16 and bf16 data type",),
        notes="flash_api.cpp: 'FlashAttention only supports Ampere GPUs or newer.' then, for bf16 inputs, "
        "'bfloat16 is only supported on Ampere GPUs or newer'.",
    ),
    Signature(
        id="attention-flash-attn-fp32-inputs",
        family="attention",
        title="FlashAttention got fp32 tensors: it runs only in fp16 or bf16",
        needles=("flashattention only support",),
        patterns=(r"FlashAttention only supports? fp16 and bf16",),
        cause="flash-attn kernels exist only for fp16 and bf16, and it does not cast. The query/key/value reached "
        "it in fp32: the model was loaded without a dtype (transformers then defaults to fp32) and run "
        "without autocast, an fp32 LayerNorm/embedding upcast the hidden states, or quantised/LoRA/DoRA "
        "layers returned fp32. transformers warns first ('The input hidden states seems to be silently "
        "casted in float32') when it can.",
        fixes=(
            fix(
                "Load the model in half precision: `torch_dtype=torch.bfloat16` (fp16 on pre-Ampere GPUs) or "
                '`torch_dtype="auto"` in `from_pretrained(...)`'
            ),
            fix(
                'Or run the forward pass under autocast: `with torch.autocast("cuda", dtype=torch.bfloat16):`; '
                "in a Trainer set `bf16=True` or `fp16=True`"
            ),
            fix('Or use `attn_implementation="sdpa"`, which accepts fp32'),
        ),
        checks=(),
        sources=(
            "https://github.com/QwenLM/Qwen3/issues/406",
            "https://github.com/unslothai/unsloth/issues/827",
            "https://github.com/xorbitsai/inference/issues/3770",
            "https://github.com/QwenAudio/FunMusic/issues/18",
            "https://github.com/Dao-AILab/flash-attention/blob/main/csrc/flash_attn/flash_api.cpp",
        ),
        examples=(
            '  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py", line 96, in '
            "_flash_attn_forward\n"
            "    out, softmax_lse, S_dmask, rng_state = flash_attn_gpu.fwd(\n"
            "RuntimeError: [address=0.0.0.0:37093, pid=1304] FlashAttention only support fp16 and bf16 data type",
            "RuntimeError: FlashAttention only support fp16 and bf16 data type",
        ),
        near_misses=(
            "Flash Attention 2 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in "
            "Qwen3Model is torch.float32.",
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        ),
        notes="The transformers warning in the near-misses is issued at load time for fp32 weights and is "
        "harmless when training runs under autocast (FSDP/verl setups silence it); the error here is the "
        "kernel actually receiving fp32; grammar_ecosystem's attention-kernel-half-only explains the warning, with "
        "that harmless case as its other cause.",
    ),
    Signature(
        id="attention-sdpa-no-kernel",
        family="attention",
        title="scaled_dot_product_attention found no kernel it is allowed to use for these inputs",
        needles=("no available kernel",),
        # its own words, or cut after them as people quote it (`RuntimeError: No available kernel`)
        patterns=(r"No available kernel\. {1,2}Aborting execution|RuntimeError:? No available kernel\b",),
        cause="`F.scaled_dot_product_attention` was restricted to some backends (with `sdpa_kernel(...)` or the "
        "older `torch.backends.cuda.sdp_kernel(enable_math=False, ...)`, often flash only) and none of them "
        "accepts the call. The UserWarnings just before the error say why for each backend: flash needs "
        "compute capability 8.0+ ('Flash attention only supports gpu architectures in the range "
        "[sm80, ...]'), fp16/bf16 inputs ('Expected query, key and value to all be of dtype: {Half, "
        "BFloat16}') and no arbitrary attn_mask; memory-efficient takes bf16 only from 8.0; Windows wheels "
        "have no flash kernel at all ('Torch was not compiled with flash attention').",
        fixes=(
            fix(
                "Let SDPA fall back: allow the memory-efficient and math backends, e.g. "
                "`with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):`, "
                "or drop `enable_math=False` (SAM 2: set `OLD_GPU, USE_FLASH_ATTN, MATH_KERNEL_ON = True, True, "
                "True`)"
            ),
            fix(
                "Feed fp16/bf16 q/k/v (autocast, or fp16 instead of bf16 on pre-Ampere GPUs) so a fused kernel "
                "can take them"
            ),
            fix("Read the 'kernel not used because' warnings above the error to see which requirement failed"),
        ),
        checks=("PREC006", "PREC001"),
        sources=(
            "https://github.com/facebookresearch/sam2/issues/48",
            "https://github.com/facebookresearch/sam2/issues/57",
            "https://github.com/lucidrains/x-transformers/issues/143",
            "https://github.com/rmihaylov/falcontune/issues/11",
            "https://github.com/lucidrains/MEGABYTE-pytorch/issues/6",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp",
        ),
        examples=(
            "/content/Optimus-Prime/Optimus-Prime/Optimus-Prime/Optimus-Prime/x_transformers/attend.py:168: "
            "UserWarning: Memory efficient kernel not used "
            "because: (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:545.)\n"
            "  out = F.scaled_dot_product_attention(\n"
            "/content/Optimus-Prime/Optimus-Prime/Optimus-Prime/Optimus-Prime/x_transformers/attend.py:168: "
            "UserWarning: Memory Efficient attention has been "
            "runtime disabled. (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:338.)\n"
            "  out = F.scaled_dot_product_attention(\n"
            "/content/Optimus-Prime/Optimus-Prime/Optimus-Prime/Optimus-Prime/x_transformers/attend.py:168: "
            "UserWarning: Flash attention kernel not used "
            "because: (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:547.)\n"
            "  out = F.scaled_dot_product_attention(\n"
            "/content/Optimus-Prime/Optimus-Prime/Optimus-Prime/Optimus-Prime/x_transformers/attend.py:168: "
            "UserWarning: Both fused kernels do not support "
            "non-null attn_mask. (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:191.)\n"
            "  out = F.scaled_dot_product_attention(\n"
            "RuntimeError: No available kernel. Aborting execution.",
            'segment-anything-2\\sam2\\modeling\\sam\\transformer.py", line 255, in forward\n'
            "    out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)\n"
            "RuntimeError: No available kernel. Aborting execution.",
            '.../MEGABYTE_pytorch/attend.py", line 111, in flash_attn\n'
            "    out = F.scaled_dot_product_attention(\n"
            "RuntimeError: No available kernel.  Aborting execution.",
        ),
        near_misses=(
            "UserWarning: 1Torch was not compiled with flash attention. (Triggered internally at "
            "..\\aten\\src\\ATen\\native\\transformers\\cuda\\sdp_utils.cpp:455.)",
        ),
    ),
    Signature(
        id="attention-sdpa-flash-not-compiled",
        family="attention",
        title="This PyTorch build has no flash SDPA kernel (Windows wheels): attention falls back to slower ones",
        needles=("torch was not compiled with flash attention",),
        patterns=(r"Torch was not compiled with flash attention",),
        cause="PyTorch's Windows wheels are built without the FlashAttention-2 SDPA kernel, so the first "
        "`scaled_dot_product_attention` call warns and uses the memory-efficient or math kernel instead. "
        "Results are the same; attention is slower and needs more memory. It only breaks a run when the "
        "code allows the flash backend alone, which then ends in 'No available kernel'. (The leading '1' "
        "is part of torch's own message.)",
        fixes=(
            fix("Nothing to do if the run works: the warning is expected on Windows"),
            fix("For flash SDPA, run under Linux or WSL2, where the wheels include it"),
        ),
        checks=("PREC006",),
        sources=(
            "https://github.com/kijai/ComfyUI-CogVideoXWrapper/issues/97",
            "https://github.com/CompVis/stable-diffusion/issues/850",
            "https://github.com/dotnet/TorchSharp/issues/1375",
            "https://github.com/dicksondickson/ComfyUI-Clean-Install/issues/4",
        ),
        examples=(
            "C:\\ComfyUI\\comfy\\ldm\\modules\\attention.py:407: UserWarning: 1Torch was not compiled with flash "
            "attention. (Triggered internally at C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\"
            "pytorch\\aten\\src\\ATen\\native\\transformers\\cuda\\sdp_utils.cpp:555.)\n"
            "  out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, "
            "is_causal=False)",
            "[W914 13:25:36.000000000 sdp_utils.cpp:555] Warning: 1Torch was not compiled with flash attention. "
            "(function operator ())",
        ),
        near_misses=("RuntimeError: No available kernel. Aborting execution.",),
        notes="Seen from torch 2.2 (FlashAttention-2 in SDPA) on Windows builds.",
    ),
    Signature(
        id="attention-flash-attn-abi-mismatch",
        family="attention",
        title="flash-attn's compiled extension does not match the installed torch (undefined symbol)",
        needles=("undefined symbol", "dll load failed while importing flash_attn"),
        patterns=(
            r"flash_attn(?:_\d)?_cuda[^\n]{0,200}undefined symbol",
            r"DLL load failed while importing flash_attn(?:_\d)?_cuda: The specified procedure could not be found",
        ),
        cause="flash_attn_2_cuda is a C++ extension linked against one torch version's C++ symbols (and one C++ "
        "ABI, cxx11abi TRUE/FALSE). After torch is upgraded or downgraded, or when a prebuilt wheel for "
        "another torch/CUDA/ABI was installed, importing it fails with an undefined `c10::`/`at::` symbol "
        "(on Windows: 'The specified procedure could not be found'). transformers then reports that the "
        "model module failed to import, and flash_attention_2 is unusable.",
        fixes=(
            fix(
                "Rebuild flash-attn against the installed torch (needs the CUDA toolkit; slow)",
                "pip install --force-reinstall --no-build-isolation --no-cache-dir flash-attn",
            ),
            fix(
                "Or install the release wheel whose name matches your torch version, CUDA major version, C++ ABI "
                "and Python (flash-attn's GitHub releases), or the torch version the installed wheel was built for"
            ),
            fix(
                'Or do without it: uninstall flash-attn and use `attn_implementation="sdpa"`',
                "pip uninstall -y flash-attn",
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/Dao-AILab/flash-attention/issues/966",
            "https://github.com/Dao-AILab/flash-attention/issues/931",
            "https://github.com/Dao-AILab/flash-attention/issues/867",
            "https://github.com/EleutherAI/gpt-neox/issues/1079",
            "https://github.com/Wan-Video/Wan2.1/issues/47",
        ),
        examples=(
            '  File "/media/h/nvme/gpt-neox/.venv/lib/python3.8/site-packages/flash_attn/flash_attn_interface.py", '
            "line 8, in <module>\n"
            "    import flash_attn_2_cuda as flash_attn_cuda\n"
            "ImportError: /media/h/nvme/gpt-neox/.venv/lib/python3.8/site-packages/flash_attn_2_cuda.cpython-38-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda20CUDACachingAllocator9allocatorE",
            "ImportError: flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
            "_ZN3c104cuda9SetDeviceEi",
            "RuntimeError: Failed to import transformers.models.mistral.modeling_mistral because of the following "
            "error (look up to see its traceback):\n"
            "/.local/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined "
            "symbol: _ZN2at4_ops15sum_IntList_out4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbSt8optionalINS5_"
            "10ScalarTypeEERS2_",
            "ImportError: DLL load failed while importing flash_attn_2_cuda: The specified procedure could not be "
            "found.",
        ),
        near_misses=(
            "ImportError: DLL load failed while importing flash_attn_2_cuda: The specified module could not be found.",
        ),
        notes="'The specified module could not be found' (the near-miss) is a missing dependent DLL, usually the "
        "CUDA runtime or torch's own libraries not on the DLL path, rather than a symbol mismatch.",
    ),
]
