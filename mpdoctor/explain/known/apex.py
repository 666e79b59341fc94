"""NVIDIA apex's kernels in their failure modes: its fused norms swapped in by other libraries, a Python-only build
without its CUDA extensions, and extensions built against another torch or CUDA. Which apex is imported and its
amp (PyPI's Pyramid namesake, apex.amp deprecated, stale or removed in 25.07) are in apex_amp.py."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

# Frames of apex's own Python code: the same words from an apex frame are apex's problem.
APEX_FRAMES = (r"/apex/",)
# apex's fused norms (what libraries swap in), as opposed to apex.amp's wrappers around torch ops.
FUSED_NORM_FRAMES = (r"/apex/normalization/",)

# apex's compiled extensions install as top-level modules (site-packages/amp_C.cpython-...so); these names
# are apex's alone (Megatron's own JIT kernels reuse the scaled_*softmax names, so those are left out).
APEX_EXTENSIONS = (
    r"(?:fused_layer_norm_cuda|amp_C|apex_C|syncbn|mlp_cuda|fused_dense_cuda|fused_adam_cuda"
    r"|fused_lamb_cuda|fused_weight_gradient_mlp_cuda|xentropy_cuda|focal_loss_cuda"
    r"|group_norm_cuda|fast_layer_norm|distributed_adam_cuda|distributed_lamb_cuda"
    r"|fused_rotary_positional_embedding|transducer_joint_cuda|transducer_loss_cuda)"
)

REBUILD_APEX = (
    "git clone https://github.com/NVIDIA/apex && cd apex && "
    "APEX_CPP_EXT=1 APEX_CUDA_EXT=1 pip install -v --no-build-isolation ."
)

SIGNATURES: list[Signature] = [
    Signature(
        id="apex-fused-norm-dtype",
        family="apex",
        title="apex's fused norm, swapped in by a library, got fp16/bf16 input with fp32 weights",
        needles=("expected scalar type",),
        patterns=(r"expected scalar type (?:Float|Half|BFloat16) but found (?:Float|Half|BFloat16)",),
        cause="A library (transformers before 5.8, fairseq, ...) replaced its own LayerNorm/RMSNorm with apex's "
        "FusedLayerNorm/FusedRMSNorm because apex imports. apex's kernel needs input and weight in one dtype, "
        "which torch's own norm under autocast does not.",
        fixes=(
            fix("Uninstall apex: torch's own AMP does not need it", "pip uninstall -y apex"),
            fix(
                "Or upgrade transformers to 5.8.0 or newer, which no longer swaps in apex's norms",
                "pip install -U 'transformers>=5.8.0'",
            ),
        ),
        checks=("APEX005", "APEX002", "APEX003"),
        sources=(
            "https://github.com/xdit-project/xDiT/issues/226",
            "https://github.com/xdit-project/xDiT/issues/101",
            "https://github.com/xorbitsai/inference/issues/2758",
            "https://github.com/NVIDIA/apex/issues/979",
            "https://github.com/huggingface/transformers/pull/45723",
        ),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py", line 416, '
            "in forward\n"
            "    return fused_rms_norm_affine(input, self.weight, self.normalized_shape, self.eps)\n"
            "RuntimeError: expected scalar type Float but found Half",
            "Traceback (most recent call last):\n"
            '  File "/root/miniconda3/envs/xinf/lib/python3.10/site-packages/apex/normalization/'
            'fused_layer_norm.py", line 189, in fused_rms_norm_affine\n'
            "    return FusedRMSNormAffineFunction.apply(*args)\n"
            '  File "/root/miniconda3/envs/xinf/lib/python3.10/site-packages/torch/autograd/function.py", '
            "line 575, in apply\n"
            "    return super().apply(*args, **kwargs)  # type: ignore[misc]\n"
            '  File "/root/miniconda3/envs/xinf/lib/python3.10/site-packages/apex/normalization/'
            'fused_layer_norm.py", line 69, in forward\n'
            "    output, invvar = fused_layer_norm_cuda.rms_forward_affine(\n"
            "RuntimeError: [address=0.0.0.0:44035, pid=69037] expected scalar type Float but found Half",
            "Traceback (most recent call last):\n"
            '  File "/workspace/electra/modeling_utils.py", line 1307, in forward\n'
            "    hidden_states = self.LayerNorm(hidden_states + input_tensor)\n"
            '  File "/opt/conda/lib/python3.6/site-packages/apex/normalization/fused_layer_norm.py", line 159, '
            "in forward\n"
            "    input, self.weight, self.bias, self.normalized_shape,self.eps)\n"
            '  File "/opt/conda/lib/python3.6/site-packages/apex/normalization/fused_layer_norm.py", line 25, '
            "in forward\n"
            "    input_, ctx.normalized_shape, weight_, bias_, ctx.eps)\n"
            "RuntimeError: expected scalar type Half but found Float",
        ),
        near_misses=(
            "RuntimeError: expected scalar type Float but found Half",
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.9/site-packages/transformers/models/clip/modeling_clip.py", '
            "line 260, in forward\n"
            "    attn_output = torch.bmm(attn_probs, value_states)\n"
            "RuntimeError: expected scalar type Half but found Float",
        ),
        frames=FUSED_NORM_FRAMES,
        rank=1,
        notes="torchrun prefixes frames with `[rank0]:`; the matcher reads those frames too.",
    ),
    Signature(
        id="apex-python-only-build",
        family="apex",
        title="apex was installed without its CUDA/C++ extensions (a Python-only build)",
        needles=("no module named", "apex was installed without", "requires cuda extensions", "install apex with"),
        patterns=(
            r"No module named '" + APEX_EXTENSIONS + "'",
            # a library that needs one of the extensions, in its own words: "the custom CUDA extension
            # fused_weight_gradient_mlp_cuda module is not found. ... you must install APEX with --cpp_ext and --cuda_ext"
            APEX_EXTENSIONS + r" module is not found",
            r"install apex with --(?:cpp|cuda)_ext",
            r"apex was installed without --cuda_ext",
            r"apex\.optimizers\.\w{1,40} requires cuda extensions",  # FusedAdam, FusedLAMB... without their kernels
        ),
        cause="apex imports, but its compiled kernels (fused_layer_norm_cuda, amp_C, apex_C, ...) were never built: "
        "a plain `pip install .` of the apex repository, or an older pip that ignored the build options, gives "
        "a Python-only apex. Libraries that find apex still swap in its fused norms, optimizers and scaler, "
        "which then fail at their first CUDA call or fall back to slow Python code.",
        fixes=(
            fix(
                "If you only need mixed precision, uninstall apex: torch.amp does the same without it",
                "pip uninstall -y apex",
            ),
            fix("Or rebuild apex with its extensions, with the same CUDA version as torch.version.cuda", REBUILD_APEX),
        ),
        checks=("APEX002", "APEX003"),
        sources=(
            "https://github.com/NVIDIA/apex/issues/161",
            "https://github.com/NVIDIA/apex/issues/499",
            "https://github.com/NVIDIA/apex/issues/1208",
            "https://github.com/NVIDIA/apex/issues/86",
            "https://github.com/openai/vdvae/issues/11",
            "https://github.com/flagos-ai/Megatron-LM-FL/issues/145",
            "https://github.com/NVIDIA/apex/blob/b82c6bd7613ffb9c4ea68e7306fa83aabe9fa9b5/apex/amp/scaler.py",
        ),
        examples=(
            "ModuleNotFoundError: No module named 'fused_layer_norm_cuda'",
            "RuntimeError: ColumnParallelLinear was called with gradient_accumulation_fusion set to True but the custom "
            "CUDA extension fused_weight_gradient_mlp_cuda module is not found. To use gradient_accumulation_fusion you "
            'must install APEX with --cpp_ext and --cuda_ext. For example: pip install --global-option="--cpp_ext" '
            '--global-option="--cuda_ext ." Note that the extension requires CUDA>=11. Otherwise, you must turn off '
            "gradient accumulation fusion.",
            "    raise RuntimeError('apex.optimizers.FusedAdam requires cuda extensions')\n"
            "RuntimeError: apex.optimizers.FusedAdam requires cuda extensions",
            "Traceback (most recent call last):\n"
            '  File "/home/thinker/pythonProject/yolov3 train/yolov3-9.5.0/train.py", line 44, in <module>\n'
            "    from apex import amp\n"
            '  File "/home/thinker/.local/lib/python3.9/site-packages/apex/transformer/pipeline_parallel/'
            'utils.py", line 26, in <module>\n'
            "    import amp_C\n"
            "ModuleNotFoundError: No module named 'amp_C'",
            "Warning:  multi_tensor_applier fused unscale kernel is unavailable, possibly because apex was "
            "installed without --cuda_ext --cpp_ext. Using Python fallback.  Original ImportError was: "
            "ModuleNotFoundError(\"No module named 'amp_C'\",)",
            "Warning:  apex was installed without --cuda_ext. Fused syncbn kernels will be unavailable.  "
            "Python fallbacks will be used instead.",
        ),
        near_misses=(
            "ModuleNotFoundError: No module named 'apex'",
            "ImportError: /opt/conda/lib/python3.10/site-packages/fused_layer_norm_cuda.cpython-310-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIn"
            "tEEENS2_8optionalINS2_10ScalarTypeEEENS6_INS2_6LayoutEEENS6_INS2_6DeviceEEENS6_IbEENS6_INS2_12"
            "MemoryFormatEEE",
        ),
    ),
    Signature(
        id="apex-extension-abi-mismatch",
        family="apex",
        title="An apex extension was built against another torch (or toolchain): undefined symbol",
        needles=("undefined symbol",),
        patterns=(APEX_EXTENSIONS + r"\.[^\s:]{0,80}\.so: undefined symbol",),
        cause="apex's compiled extensions link against the exact torch (and C++ runtime) they were built with. "
        "torch was upgraded or reinstalled after apex was built (or apex came prebuilt for another torch), so "
        "loading the extension finds a missing C++ symbol. Any library that probes apex then fails to import.",
        fixes=(
            fix(
                "If you only need mixed precision, uninstall apex (repeat until pip says it is not installed)",
                "pip uninstall -y apex",
            ),
            fix("Or rebuild apex against the torch installed now", REBUILD_APEX),
        ),
        checks=("APEX003", "APEX004"),
        sources=(
            "https://github.com/ostris/ai-toolkit/issues/242",
            "https://github.com/NVIDIA/apex/issues/428",
            "https://github.com/NVIDIA/apex/issues/370",
            "https://github.com/facebookresearch/fairseq/issues/3176",
            "https://github.com/NVIDIA/apex/issues/1335",
            "https://github.com/NVIDIA/apex/issues/1677",
        ),
        examples=(
            "ImportError: /opt/conda/lib/python3.10/site-packages/fused_layer_norm_cuda.cpython-310-x86_64-linux"
            "-gnu.so: undefined symbol: _ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIntEEENS2_"
            "8optionalINS2_10ScalarTypeEEENS6_INS2_6LayoutEEENS6_INS2_6DeviceEEENS6_IbEENS6_INS2_12MemoryFormat"
            "EEE",
            "ImportError: /usr/local/anaconda3-tf1/lib/python3.7/site-packages/fused_layer_norm_cuda.cpython-37m"
            "-x86_64-linux-gnu.so: undefined symbol: _ZN2at7getTypeERKNS_6TensorE",
            "ImportError: /opt/conda/lib/python3.7/site-packages/fused_layer_norm_cuda.cpython-37m-x86_64-linux-"
            "gnu.so: undefined symbol: THPVariableClass",
            "ImportError: /home/stas/anaconda3/envs/py38-pt110/lib/python3.8/site-packages/amp_C.cpython-38-"
            "x86_64-linux-gnu.so: undefined symbol: _ZNSt15__exception_ptr13exception_ptr9_M_addrefEv",
        ),
        near_misses=(
            "ImportError: .../megatron/fused_kernels/build/scaled_upper_triang_masked_softmax_cuda.so: "
            "undefined symbol: _ZN3c106detail19maybe_wrap_dim_slowEllb",
            "ModuleNotFoundError: No module named 'fused_layer_norm_cuda'",
        ),
        notes="The Megatron near-miss is Megatron's own JIT-built kernel (delete megatron/fused_kernels/build), "
        "not apex, although NVIDIA/apex#1677 reported it there.",
    ),
    Signature(
        id="apex-extension-missing-library",
        family="apex",
        title="An apex extension cannot load a CUDA or torch shared library",
        needles=("cannot open shared object file",),
        patterns=(
            r"(?:libcudart|libcublas|libcusparse|libcurand|libnvrtc|libcudnn|libc10|libtorch)"
            r"[\w.+-]{0,40}: cannot open shared object file",
        ),
        cause="apex's extension was compiled against a CUDA runtime (or torch libraries) that the dynamic loader "
        "cannot find now: apex was built with another CUDA toolkit than the one on the library path, or the "
        "toolkit lives in a lib64 directory missing from LD_LIBRARY_PATH, or torch was reinstalled.",
        fixes=(
            fix("If you only need mixed precision, uninstall apex", "pip uninstall -y apex"),
            fix("Or rebuild apex with the CUDA toolkit that matches torch.version.cuda", REBUILD_APEX),
            fix(
                "Or put the toolkit's libraries on the loader path, e.g. "
                "`export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH`"
            ),
        ),
        checks=("APEX003", "APEX004"),
        sources=("https://github.com/NVIDIA/apex/issues/228", "https://github.com/NVIDIA/apex/issues/86"),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "/home/martin/.conda/envs/py3_env/lib/python3.6/site-packages/apex/optimizers/fused_adam.py",'
            " line 40, in __init__\n"
            '    fused_adam_cuda = importlib.import_module("fused_adam_cuda")\n'
            '  File "/home/martin/.conda/envs/py3_env/lib/python3.6/importlib/__init__.py", line 126, '
            "in import_module\n"
            "    return _bootstrap._gcd_import(name[level:], package, level)\n"
            '  File "<frozen importlib._bootstrap>", line 219, in _call_with_frames_removed\n'
            "ImportError: libcudart.so.9.0: cannot open shared object file: No such file or directory",
        ),
        near_misses=("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",),
        frames=APEX_FRAMES,
        rank=1,
        notes="Needs an apex frame: the same loader error from torch, TensorFlow or any other extension is not "
        "apex's. A bare `import amp_C` typed at a prompt has no apex frame and is not recognised.",
    ),
]
