"""A precision the GPU does not have: bf16 and tf32 before Ampere (8.0), FP8 before Ada (8.9) or Hopper (9.0).

Each library words the refusal its own way: PyTorch's autocast, transformers' TrainingArguments,
accelerate, vLLM, DeepSpeed, `torch._scaled_mm`/torchao, Transformer Engine and Triton (a bf16 GEMM the CUDA
BLAS lacks is in hardware_blas.py, FP8 in hardware_fp8.py). What they share: the dtype was chosen for
a GPU that lacks it (often because `torch.cuda.is_bf16_supported()` counts emulation, or the job
landed on the weaker of two GPUs), and the fix is the precision the card has, or another card.
"""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

# The checks that show which precisions each visible GPU really runs, and which GPU the job gets.
BF16_CHECKS = ("PREC001", "PREC005", "GPU002", "GPU003")

SIGNATURES: list[Signature] = [
    Signature(
        id="hardware-bf16-transformers-trainer",
        family="hardware",
        title="transformers refused bf16=True: no CUDA GPU of compute capability 8.0 or newer",
        needles=("doesn't support bf16/gpu",),
        patterns=(r"Your setup doesn't support bf16/gpu",),
        cause="`TrainingArguments` (and every config built on it: TRL's SFTConfig/GRPOConfig, LMFlow, "
        "FastChat, ...) checks bf16 when it is created and raises unless torch sees a CUDA GPU with native "
        "bf16, i.e. Ampere (compute capability 8.0) or newer. T4, V100, RTX 20xx, P100 and P40 have no bf16. "
        "The same message comes from a CPU-only torch build or a torch that cannot see the GPU, even on an "
        "Ampere card.",
        fixes=(
            fix(
                "On a pre-Ampere GPU train in fp16 instead: pass `--bf16 False --fp16 True` (or "
                "`TrainingArguments(bf16=False, fp16=True)`), and set any DeepSpeed config's bf16 section to "
                '`"enabled": false` and fp16 to `true`'
            ),
            fix(
                "If the machine has an Ampere or newer GPU, check that torch is a CUDA build that sees it",
                'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), '
                'torch.cuda.get_device_capability() if torch.cuda.is_available() else None)"',
            ),
            fix(
                "With GPUs of different generations, make the Ampere one cuda:0 (select it by UUID in "
                "`CUDA_VISIBLE_DEVICES`), so the check and the training run on it"
            ),
        ),
        checks=BF16_CHECKS + ("TORCH005", "TORCH009"),
        sources=(
            "https://github.com/tatsu-lab/stanford_alpaca/issues/133",
            "https://github.com/lm-sys/FastChat/issues/399",
            "https://github.com/databrickslabs/dolly/issues/11",
            "https://github.com/zai-org/GLM-Edge/issues/20",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/training_args.py",
        ),
        examples=(
            '  File "<string>", line 105, in __init__\n'
            '  File "/databricks/python/lib/python3.9/site-packages/transformers/training_args.py", line 1098, in '
            "__post_init__\n"
            "    raise ValueError(\n"
            "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
            "ValueError: Your setup doesn't support bf16/gpu. You need Ampere+ GPU with cuda>=11.0",
            "ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the "
            "model on CPU. You need Ampere+ GPU with cuda>=11.0.",
        ),
        near_misses=(
            "ValueError: --tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7",
            "ValueError: At most one of fp16 and bf16 can be True, but not both",
        ),
        notes="Three wordings, oldest first: 'You need torch>=1.10, using Ampere GPU with cuda>=11.0', 'You need "
        "Ampere+ GPU with cuda>=11.0', and '... You need to assign use_cpu ...' added in front of it.",
    ),
    Signature(
        id="hardware-tf32-transformers-trainer",
        family="hardware",
        title="transformers refused --tf32: the GPU is older than Ampere (or torch sees no CUDA GPU)",
        needles=("--tf32 requires ampere",),
        patterns=(r"--tf32 requires Ampere or a newer GPU arch",),
        cause="TF32 tensor-core math exists only on Ampere (compute capability 8.0) and newer. `TrainingArguments` "
        "raises when `tf32=True` is asked for on an older GPU such as a V100 or T4, or when torch cannot see a "
        "CUDA GPU at all. Training scripts written for A100s often pass `--bf16 True --tf32 True` together, "
        "so this usually follows the bf16 refusal once bf16 is turned off.",
        fixes=(
            fix(
                "Drop the flag on pre-Ampere GPUs: pass `--tf32 False` (or leave `tf32` unset); nothing is lost, "
                "these GPUs have no TF32"
            ),
            fix(
                "Check which GPU torch uses and its compute capability",
                'python -c "import torch; print(torch.cuda.get_device_name(), torch.cuda.get_device_capability())"',
            ),
        ),
        checks=("GPU002", "GPU003", "TORCH009"),
        sources=(
            "https://github.com/lm-sys/FastChat/issues/1191",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/training_args.py",
        ),
        examples=("ValueError: --tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7",),
        near_misses=(
            "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
        ),
    ),
    Signature(
        id="hardware-bf16-accelerate",
        family="hardware",
        title="accelerate refused mixed_precision='bf16' on this device",
        needles=("bf16 mixed precision requires",),
        patterns=(r"bf16 mixed precision requires PyTorch >= 1\.10",),
        cause="`Accelerator` (and `accelerate launch`) checks bf16 before training starts and raises when torch "
        "reports no bf16 on the device: a pre-Ampere NVIDIA GPU (T4, V100) with a torch older than 2.4, "
        "which did not yet count emulated bf16, or an Apple MPS device with a torch that has no bf16 there. "
        "Despite the wording, it is rarely about torch 1.10.",
        fixes=(
            fix(
                "Use fp16 mixed precision on pre-Ampere GPUs: `accelerate launch --mixed_precision fp16 ...`, or "
                '`Accelerator(mixed_precision="fp16")` in code'
            ),
            fix(
                "Or change the saved default: run `accelerate config` and answer fp16, or set `mixed_precision: fp16` "
                "in the accelerate config file; training scripts with their own flag (kohya's `mixed_precision`, "
                "`save_precision`) need it set there too"
            ),
            fix(
                "Do not force bf16 on a torch 2.4+ that would accept it on a T4/V100: it runs emulated, no faster "
                "than fp32 (see PREC005)"
            ),
        ),
        checks=BF16_CHECKS,
        sources=(
            "https://github.com/Linaqruf/kohya-trainer/issues/246",
            "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py",
        ),
        examples=(
            "ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device.",
            "bf16 mixed precision requires PyTorch >= 1.10 and a supported device.",
            "ValueError: bf16 mixed precision requires PyTorch >= 1.10",
        ),
        near_misses=("ValueError: bf16 mixed precision with MPS device requires a Pytorch >= 2.6.0",),
        notes="The short 'requires PyTorch >= 1.10' wording is early accelerate (2022); later versions add "
        "'and a supported device.'",
    ),
    Signature(
        id="hardware-bf16-vllm",
        family="hardware",
        title="vLLM refused a bf16 model on a GPU older than compute capability 8.0",
        needles=("bfloat16 is only supported on gpus with compute capability",),
        patterns=(r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0",),
        cause="vLLM's `dtype=\"auto\"` takes the dtype from the model's config, and most current checkpoints are "
        "stored in bfloat16. vLLM checks the GPU before loading and refuses bf16 below compute capability "
        "8.0 (T4 7.5, V100 7.0, P40 6.1, P100 6.0). Frameworks that run vLLM underneath (Xinference, "
        "Orpheus-TTS, WeClone, ...) pass the same error through.",
        fixes=(
            fix(
                'Serve in fp16: add `--dtype half` to the command line, or pass `dtype="half"` '
                "(`dtype=torch.float16`) to `LLM(...)` or to the wrapper that builds it (`vllm serve <model> "
                "--dtype half`)"
            ),
            fix(
                "Check that fp16 is safe for the model: some bf16-trained models overflow in fp16 (inf/NaN "
                "outputs); then use a GPU of compute capability 8.0 or newer"
            ),
        ),
        checks=BF16_CHECKS,
        sources=(
            "https://github.com/vllm-project/vllm/issues/1157",
            "https://github.com/vllm-project/vllm/issues/946",
            "https://github.com/vllm-project/vllm/pull/2374",
            "https://github.com/canopyai/Orpheus-TTS/issues/44",
            "https://github.com/vllm-project/vllm/blob/main/vllm/worker/worker.py",
        ),
        examples=(
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
            "GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in "
            "CLI, for example: --dtype=half.",
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla "
            "V100-SXM2-32GB GPU has compute capability 7.0.",
            "ValueError: [address=0.0.0.0:34479, pid=610] Bfloat16 is only supported on GPUs with compute "
            "capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead "
            "by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.",
        ),
        near_misses=("RuntimeError: GPUs with compute capability below 7.0 are not supported.",),
        notes="vLLM added the '--dtype=half' hint in January 2024 (vllm#2374); older versions end at the capability.",
    ),
    Signature(
        id="hardware-bf16-torch-autocast",
        family="hardware",
        title="torch.autocast refused dtype=torch.bfloat16 on this CUDA GPU",
        needles=("does not support bfloat16",),
        patterns=(r"Current CUDA Device does not support bfloat16",),
        cause='`torch.autocast("cuda", dtype=torch.bfloat16)` asks `torch.cuda.is_bf16_supported()` first and '
        "raises when it says no. Torch before 2.4 said no on every GPU older than Ampere (V100, T4, RTX 20xx, "
        "Titan V, Quadro RTX); from 2.4 it counts emulation and says yes there, so newer torch runs the same "
        "code without this error but in emulated bf16, no faster than fp32. Code that hard-codes bf16 "
        "autocast (nanoGPT, SAM 2, many diffusion and VLA training scripts) hits it on those GPUs.",
        fixes=(
            fix(
                "Autocast to fp16 on pre-Ampere GPUs, with a GradScaler for training: "
                '`torch.autocast("cuda", dtype=torch.float16)` and `torch.amp.GradScaler("cuda")`'
            ),
            fix(
                "Where the script picks the dtype, choose bf16 only on native hardware: "
                "`torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16` "
                "(the `including_emulation` argument exists from torch 2.4; older torch: "
                "`torch.cuda.get_device_capability()[0] >= 8`)"
            ),
        ),
        checks=BF16_CHECKS,
        sources=(
            "https://github.com/karpathy/nanoGPT/pull/277",
            "https://github.com/isi-nlp/rtg/issues/20",
            "https://github.com/openvla/openvla/issues/103",
            "https://github.com/pytorch/pytorch/blob/main/torch/amp/autocast_mode.py",
        ),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "/home/fedora/workspace/nanoGPT/train.py", line 110, in <module>\n'
            "    ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, "
            "dtype=ptdtype)\n"
            '  File "/usr/local/lib64/python3.10/site-packages/torch/amp/autocast_mode.py", line 234, in __init__\n'
            "    raise RuntimeError('Current CUDA Device does not support bfloat16. Please switch dtype to float16.')\n"
            "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.",
            "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.",
        ),
        near_misses=("ValueError: Type bf16 is not supported on your device.",),
    ),
    Signature(
        id="hardware-deepspeed-dtype-unsupported",
        family="hardware",
        title="DeepSpeed refused the fp16 or bf16 section of its config on this GPU",
        needles=("type fp16 is not supported", "type bf16 is not supported"),
        patterns=(r"Type (?:fp16|bf16) is not supported(?: on your device)?\.",),
        cause="`deepspeed.initialize` (the engine's sanity check, and the inference engine) asks the accelerator "
        "whether the config's dtype is supported. On CUDA, fp16 counts as supported only from compute "
        "capability 7.0 (Volta), since fp16 on 6.x (Pascal: P100, TITAN X, GTX 10xx) is deprecated, and bf16 "
        "follows `torch.cuda.is_bf16_supported()`. Switching a Pascal card from bf16 to fp16 therefore just "
        "moves the refusal.",
        fixes=(
            fix(
                "On a Pascal GPU that runs fp16 (P100), allow DeepSpeed's deprecated fp16 path explicitly",
                "export DS_ALLOW_DEPRECATED_FP16=1",
            ),
            fix(
                'Otherwise disable both in the DeepSpeed config (`"fp16": {"enabled": false}`, '
                '`"bf16": {"enabled": false}`) and train in fp32, or use a GPU of compute capability 7.0+ for '
                "fp16 and 8.0+ for bf16"
            ),
        ),
        checks=BF16_CHECKS,
        sources=(
            "https://github.com/deepspeedai/DeepSpeed/issues/6723",
            "https://github.com/deepspeedai/DeepSpeed/pull/4843",
            "https://github.com/deepspeedai/DeepSpeed/pull/6742",
            "https://github.com/deepspeedai/DeepSpeed/blob/master/accelerator/cuda_accelerator.py",
        ),
        examples=(
            '[rank0]:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1080, in '
            "_do_sanity_check\n"
            '[rank0]:     raise ValueError("Type fp16 is not supported.")\n'
            "[rank0]: ValueError: Type fp16 is not supported.",
            "ValueError: Type bf16 is not supported on your device.",
        ),
        near_misses=("ValueError: dtype fp16 is not supported in Keras. Use the default value(fp32).",),
        notes="Older DeepSpeed says 'Type fp16 is not supported.'; newer adds ' on your device'.",
    ),
    Signature(
        id="hardware-tcnn-no-half",
        family="hardware",
        title="tiny-cuda-nn was built without its fp16 path: the GPU it was built for has no fast half precision",
        needles=("not compiled with half-precision support",),
        patterns=(r"TCNN was not compiled with half-precision support",),
        cause="tiny-cuda-nn (`tinycudann`, used by instant-ngp, nerfstudio, threestudio, NeSVoR and many NeRF and "
        "3D repositories) compiles its half-precision networks and encodings only when the lowest GPU "
        "architecture it is built for has fast fp16: `TCNN_HALF_PRECISION` is off for compute capability 6.1 "
        "(GTX 10xx, TITAN Xp, P40) and for 5.2 and older. Built for such a GPU, asking it for an fp16 encoding or "
        "network raises this.",
        fixes=(
            fix(
                "Run the tool in fp32: its single-precision option (NeSVoR's `--single-precision`), or create the "
                "module with `dtype=torch.float32` (`tcnn.Encoding(..., dtype=torch.float32)`)"
            ),
            fix(
                "If the GPU is Volta, Turing or newer and the build targeted an older one, rebuild tiny-cuda-nn for "
                "this GPU's architecture only",
                'TCNN_CUDA_ARCHITECTURES=$(python -c "import torch; M, m = torch.cuda.get_device_capability(); '
                "print(f'{M}{m}')\") pip install --no-cache-dir --force-reinstall "
                "git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch",
            ),
        ),
        checks=("PREC001", "GPU002"),
        sources=(
            "https://github.com/NVlabs/tiny-cuda-nn/blob/master/include/tiny-cuda-nn/common.h",
            "https://github.com/NVlabs/tiny-cuda-nn/blob/master/bindings/torch/tinycudann/bindings.cpp",
        ),
        examples=("RuntimeError: TCNN was not compiled with half-precision support.",),
        notes="common.h: `#define TCNN_HALF_PRECISION (!(TCNN_MIN_GPU_ARCH == 61 || TCNN_MIN_GPU_ARCH <= 52))`; the "
        "torch bindings throw this from create_encoding/create_network when fp16 is requested without it. The "
        "bindings' setup.py reads TCNN_CUDA_ARCHITECTURES.",
    ),
    Signature(
        id="hardware-tpu-no-fp16",
        family="hardware",
        title="torch_xla has no float16 for this device (XLA type 10 is F16): TPUs compute in bfloat16",
        needles=("unsupported xla type 10",),
        patterns=(r"Unsupported XLA type 10\b",),
        cause="XLA numbers its element types (xla_data.proto: F16 = 10, BF16 = 16, F32 = 11). torch_xla's conversion "
        "of a tensor to the device's type has no case for F16, so a float16 tensor or an fp16 autocast "
        "(`.half()`, Lightning's `precision=16`, an fp16 pipeline) on a TPU fails while the graph is lowered. "
        "TPUs' low precision is bfloat16.",
        fixes=(
            fix(
                "Use bfloat16 instead of float16 on the TPU: `torch_dtype=torch.bfloat16`, `model.to(torch.bfloat16)`, "
                "Lightning's `precision='bf16-mixed'` (or `'bf16-true'`), `torch.autocast('xla', dtype=torch.bfloat16)`"
            ),
            fix("Or keep the model in float32 there: drop `.half()` and `torch_dtype=torch.float16`"),
        ),
        checks=(),
        sources=(
            "https://github.com/pytorch/xla/blob/master/torch_xla/csrc/convert_ops.cpp",
            "https://github.com/openxla/xla/blob/main/xla/xla_data.proto",
        ),
        examples=(
            "RuntimeError: torch_xla/csrc/convert_ops.cpp:88 : Unsupported XLA type 10",
            '  File "/home/raix/w/diffusers/src/diffusers/models/unets/unet_2d_condition.py", line 1025, in forward\n'
            "    add_embeds = torch.concat([text_embeds, time_embeds], dim=-1)\n"
            "RuntimeError: torch_xla/csrc/convert_ops.cpp:88 : Unsupported XLA type 10",
        ),
        near_misses=("RuntimeError: torch_xla/csrc/convert_ops.cpp:88 : Unsupported XLA type 4",),
        notes='convert_ops.cpp\'s ConvertTo switch ends in `XLA_ERROR() << "Unsupported XLA type " << from`, printing '
        "the enum's number. Other numbers name other types (vocabulary.py reads them as dtypes).",
    ),
]
