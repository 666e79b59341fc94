"""OneFlow and OneDiff: two precision managers at once (torch.autocast over a OneFlow graph), PyPI's placeholder
oneflow, a OneFlow without its native core or too old for OneDiff, OneDiff without OneFlow, mock-torch
handing torch's names to OneFlow, and what PyPI's real oneflow 0.9.0 prints: a missing cuDNN, numpy 2, and
no fp16 kernel on the CPU."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

# OneDiff's own code and its ComfyUI / WebUI extensions.
ONEDIFF_FRAMES = (r"/onediff",)

INSTALL_ONEFLOW = (
    "python3 -m pip install -U --pre oneflow -f "
    "https://github.com/siliconflow/oneflow_releases/releases/expanded_assets/community_cu118"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="oneflow-infer-dtype-mismatch",
        family="oneflow",
        title="OneFlow's type inference got fp16 and fp32 inputs in one op (often torch.autocast over OneDiff)",
        needles=("inferdatatype failed", ".vs kfloat", ".vs kbfloat16", ".vs kdouble"),
        patterns=(
            r"InferDataType Failed\. Expected k(?:Float|Float16|BFloat16|Double), "
            r"but got k(?:Float|Float16|BFloat16|Double)\b",
            # OneFlow's CHECK_EQ of two DataTypes prints "a .vs b": low against full precision, either way round
            r"kFloat16 \.vs k(?:Float|Double)\b",
            r"kBFloat16 \.vs k(?:Float|Double)\b",
            r"kFloat \.vs k(?:Float16|BFloat16)\b",
            r"kDouble \.vs k(?:Float16|BFloat16)\b",
        ),
        cause="A OneFlow op received inputs of two floating dtypes and its type inference refused them. Under "
        "OneDiff the usual cause is two precision managers at once: the pipeline is already fp16 and runs "
        'inside `torch.autocast("cuda")`, whose per-op casts OneFlow\'s compiled graph does not follow. In '
        "plain OneFlow it is an fp16 tensor meeting an fp32 one (a VAE or input left in another dtype, or an "
        "fp16 global-tensor matmul).",
        fixes=(
            fix('If the pipeline is already fp16, remove the `with torch.autocast("cuda"):` around it'),
            fix('Or use OneFlow\'s own autocast instead: `with oneflow.autocast("cuda"):`'),
            fix("In plain OneFlow code, cast every input of the failing op to one dtype (e.g. `x.to(flow.float16)`)"),
        ),
        checks=("ONEFLOW005", "ONEFLOW004"),
        sources=(
            "https://github.com/siliconflow/onediff/issues/582",
            "https://github.com/siliconflow/onediff/issues/66",
            "https://github.com/Oneflow-Inc/oneflow/issues/10342",
            "https://github.com/Oneflow-Inc/oneflow/issues/9719",
        ),
        examples=(
            "RuntimeError: InferDataType Failed. Expected kFloat, but got kFloat16",
            "RuntimeError: \x1b[1m\x1b[38;2;255;000;000mError\x1b[0m: kFloat16 .vs kFloat",
            "ERROR:root:Internal Error: Exception msg InferDataType Failed. Expected kFloat, but got kFloat16",
            "RuntimeError: InferDataType Failed. Expected kFloat, but got kFloat16\n"
            '  File "oneflow/core/functional/impl/nn_functor.cpp", line 359, in operator()\n'
            "    OpInterpUtil::Dispatch<Tensor>(*matmul_op_, {cast_a, cast_b}, attrs)",
        ),
        near_misses=(
            "InferDataType Failed. Expected kFloat16, but got kInt8",
            "Check failed: (kFloat16 .vs kInt8)",
            "RuntimeError: expected scalar type Float but found Half",
        ),
        notes="kFloat16/kInt8 (onediff#969) is OneDiff's enterprise int8 quantization, not a precision clash.",
    ),
    Signature(
        id="oneflow-pypi-placeholder",
        family="oneflow",
        title="The `oneflow` installed is PyPI's placeholder, which refuses to import",
        needles=("this package is a placeholder",),
        patterns=(r"This package is a placeholder\. Please install oneflow",),
        cause="`pip install oneflow` from PyPI installs oneflow 0.7.0, a placeholder without OneFlow's native core "
        "whose `__init__.py` raises this RuntimeError. Real OneFlow builds come from OneFlow's and SiliconFlow's "
        "own package indexes, for Linux and specific CUDA versions only (there is no Windows build). OneDiff "
        "probes oneflow catching only ImportError, so the placeholder crashes OneDiff and its ComfyUI nodes.",
        fixes=(
            fix("Remove the placeholder", "pip uninstall -y oneflow"),
            fix(
                "Install a real OneFlow build for your CUDA (Linux; cu118 shown, also community_cu121/cu122)",
                INSTALL_ONEFLOW,
            ),
            fix(
                "On Windows, or without a OneFlow build for your CUDA, use OneDiff's nexfort backend or remove "
                "OneDiff's nodes instead"
            ),
        ),
        checks=("ONEFLOW001", "ONEFLOW002"),
        sources=(
            "https://github.com/siliconflow/onediff/issues/1146",
            "https://github.com/siliconflow/onediff/issues/827",
            "https://github.com/Oneflow-Inc/oneflow/issues/8497",
        ),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "C:\\Users\\Jrwhe\\Documents\\comfy\\ComfyUI\\custom_nodes\\onediff_comfy_nodes\\'
            '__init__.py", line 2, in <module>\n'
            "    from onediff.utils.import_utils import is_nexfort_available, is_oneflow_available\n"
            '  File "C:\\Users\\Jrwhe\\Documents\\onediff\\src\\onediff\\utils\\import_utils.py", line 16, '
            "in check_module_availability\n"
            "    importlib.import_module(module_name)\n"
            '  File "C:\\Users\\Jrwhe\\Documents\\comfy\\venv\\lib\\site-packages\\oneflow\\__init__.py", '
            "line 21, in <module>\n"
            '    raise RuntimeError("This package is a placeholder. Please install oneflow following the '
            'instructions in https://github.com/Oneflow-Inc/oneflow#install-oneflow")\n'
            "RuntimeError: This package is a placeholder. Please install oneflow following the instructions in "
            "https://github.com/Oneflow-Inc/oneflow#install-oneflow",
            "RuntimeError: This package is a placeholder. Please install oneflow following the instructions in "
            "https://github.com/Oneflow-Inc/oneflow#install-oneflow",
        ),
        near_misses=("ModuleNotFoundError: No module named 'oneflow._oneflow_internal'",),
    ),
    Signature(
        id="oneflow-no-native-core",
        family="oneflow",
        title="OneFlow imports without its native core `oneflow._oneflow_internal`",
        needles=("no module named 'oneflow._oneflow_internal'",),
        patterns=(r"No module named 'oneflow\._oneflow_internal'",),
        cause="The oneflow package Python finds has no compiled core for this interpreter: PyPI's old oneflow "
        "wheels (0.6.0/0.7.0, pure Python), a source build whose build directory is not on the path, or a "
        "build made for another Python version.",
        fixes=(
            fix(
                "Replace a PyPI oneflow with a real build for your CUDA",
                "pip uninstall -y oneflow && " + INSTALL_ONEFLOW,
            ),
            fix(
                "For a source build, run `source build/source.sh` in the build directory before importing, and "
                "build with the same Python you run"
            ),
        ),
        checks=("ONEFLOW001", "ONEFLOW006"),
        sources=(
            "https://github.com/Oneflow-Inc/oneflow/issues/7392",
            "https://github.com/Oneflow-Inc/oneflow/issues/10429",
            "https://github.com/Oneflow-Inc/oneflow/issues/10556",
        ),
        examples=("ModuleNotFoundError: No module named 'oneflow._oneflow_internal'",),
        near_misses=("ModuleNotFoundError: No module named 'oneflow.framework.args_tree'",),
    ),
    Signature(
        id="oneflow-too-old-for-onediff",
        family="oneflow",
        title="The installed OneFlow is older than what OneDiff needs",
        needles=("no module named 'oneflow.", "from 'oneflow.mock_torch'"),
        patterns=(
            r"No module named 'oneflow\.(?:framework\.args_tree|utils\.checkpoint)'",
            r"cannot import name '\w{1,60}' from 'oneflow\.mock_torch'",
        ),
        cause="OneDiff (and OneFlow's diffusers fork) import OneFlow modules that only newer OneFlow builds have. "
        "An older release such as 0.8.0 or 0.9.0 is installed instead of the 0.9.1 dev builds OneDiff's "
        "README points to; OneDiff does not pin its OneFlow version, so pip does not catch it.",
        fixes=(
            fix(
                "Install the OneFlow build OneDiff's README names, for your CUDA (cu118 shown; CUDA 11.8 or newer)",
                "pip uninstall -y oneflow && " + INSTALL_ONEFLOW,
            ),
        ),
        checks=("ONEFLOW002",),
        sources=(
            "https://github.com/siliconflow/onediff/issues/395",
            "https://github.com/siliconflow/onediff/issues/1171",
            "https://github.com/Oneflow-Inc/oneflow/issues/10413",
            "https://github.com/siliconflow/onediff/issues/19",
        ),
        examples=(
            "ModuleNotFoundError: No module named 'oneflow.framework.args_tree'",
            "ImportError: cannot import name 'DynamicMockModule' from 'oneflow.mock_torch'",
            "Traceback (most recent call last):\n"
            '  File "test_of.py", line 2, in <module>\n'
            "    from diffusers import OneFlowStableDiffusionPipeline\n"
            '  File "/mnt/yinlong/project/disco/one-flow/diffusers/src/diffusers/models/'
            'unet_2d_condition_oneflow.py", line 6, in <module>\n'
            "    import oneflow.utils.checkpoint\n"
            "ModuleNotFoundError: No module named 'oneflow.utils.checkpoint'",
        ),
        near_misses=(
            "ModuleNotFoundError: No module named 'oneflow._oneflow_internal'",
            "ModuleNotFoundError: No module named 'oneflow'",
        ),
    ),
    Signature(
        id="oneflow-mock-torch-missing-api",
        family="oneflow",
        title="mock-torch sent a torch name to OneFlow, which does not have it",
        needles=("is not implemented, please submit an issue at",),
        patterns=(r"oneflow[\w.]{0,120} is not implemented, please submit an issue at",),
        cause="OneFlow's mock-torch is on (`oneflow.mock_torch.enable()`, `eval $(oneflow-mock-torch)`, or OneDiff "
        "turning it on), so `import torch` and every `torch.X` go to OneFlow. This library used a torch "
        "API OneFlow does not implement, and without lazy mode mock-torch raises instead of returning a "
        "stand-in. The code was meant for the real torch.",
        fixes=(
            fix(
                "Enable mock-torch in lazy mode, so missing names become stand-ins until really called: "
                "`oneflow.mock_torch.enable(lazy=True)` or `eval $(oneflow-mock-torch --lazy)`"
            ),
            fix(
                "Or keep mock-torch away from code that needs the real torch: disable it around that code "
                "(`with oneflow.mock_torch.disable():`) or set ONEFLOW_DISABLE_MOCK_TORCH=1",
                "export ONEFLOW_DISABLE_MOCK_TORCH=1",
            ),
        ),
        checks=("ONEFLOW004",),
        sources=(
            "https://github.com/Oneflow-Inc/oneflow/issues/9940",
            "https://github.com/siliconflow/onediff/issues/131",
            "https://github.com/siliconflow/onediff/issues/104",
            "https://github.com/siliconflow/onediff/issues/162",
            "https://github.com/Oneflow-Inc/oneflow/pull/9805",
        ),
        examples=(
            "AttributeError: oneflow.int16 is not implemented, please submit an issue at",
            "ModuleNotFoundError: oneflow._utils._rebuild_tensor_v2 is not implemented, please submit an issue "
            "at  \n'https://github.com/Oneflow-Inc/oneflow/issues' including the log information of the error, "
            "the \nminimum reproduction code, and the system information.",
            "RuntimeError: Failed to import transformers.models.clip.modeling_clip because of the following "
            "error (look up to see its traceback):\noneflow.cuda.amp.GradScaler is not implemented, please "
            "submit an issue at  \n'https://github.com/Oneflow-Inc/oneflow/issues' including the log "
            "information of the error, the \nminimum reproduction code, and the system information.",
            "AttributeError: oneflow.nn.MultiheadAttention is not implemented, please submit an issue at "
            "'https://github.com/Oneflow-Inc/oneflow/issues' including the log information of the error, the "
            "minimum repr",
        ),
        near_misses=("AttributeError: module 'oneflow' has no attribute 'allclose'",),
        notes="`module 'oneflow' has no attribute ...` is `import oneflow as torch` code, not mock-torch.",
    ),
    Signature(
        id="oneflow-missing-for-onediff",
        family="oneflow",
        title="OneDiff is installed, but OneFlow is not",
        needles=("no module named 'oneflow'",),
        patterns=(r"No module named 'oneflow'",),
        cause="OneDiff's OneFlow backend (and its ComfyUI nodes) imports oneflow, which is not installed in this "
        "environment. OneDiff does not depend on OneFlow in its package metadata, and OneFlow is not on PyPI "
        "in a working form, so installing OneDiff or its ComfyUI nodes never brings it.",
        fixes=(
            fix("Install a real OneFlow build for your CUDA (Linux only)", INSTALL_ONEFLOW),
            fix("Or switch OneDiff to its nexfort backend, or remove the OneDiff nodes if you do not use them"),
        ),
        checks=("ONEFLOW002", "ONEFLOW001"),
        sources=("https://github.com/siliconflow/onediff/issues/695",),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "F:\\Ai\\ComfyUI\\nodes.py", line 1887, in load_custom_node\n'
            "    module_spec.loader.exec_module(module)\n"
            '  File "F:\\Ai\\ComfyUI\\custom_nodes\\onediff_comfy_nodes\\__init__.py", line 2, in <module>\n'
            "    from ._config import _USE_UNET_INT8\n"
            '  File "F:\\Ai\\ComfyUI\\venv\\lib\\site-packages\\onediff\\infer_compiler\\__init__.py", line 3, '
            "in <module>\n"
            "    import oneflow as flow\n"
            "ModuleNotFoundError: No module named 'oneflow'",
        ),
        near_misses=("ModuleNotFoundError: No module named 'oneflow'",),
        frames=ONEDIFF_FRAMES,
        notes="Needs a OneDiff frame: without OneDiff in the traceback, a missing oneflow is just a missing package.",
    ),
    Signature(
        id="oneflow-missing-cuda-library",
        family="oneflow",
        title="`import oneflow` cannot load a CUDA library (cuDNN, cuBLAS) it links",
        needles=("cannot open shared object file",),
        patterns=(r"lib(?:cudnn|cublas|cublasLt|nvrtc)[\w.+-]{0,40}: cannot open shared object file",),
        cause="OneFlow's CUDA wheels link cuDNN and cuBLAS but do not ship them: PyPI's oneflow 0.9.0 (a CUDA 11 "
        "build) looks for them in NVIDIA's pip wheels beside it (nvidia-cudnn-cu11, nvidia-cublas-cu11), and "
        "without them the dynamic loader fails while `import oneflow` loads its core. It is raised on a CPU "
        "machine too: the libraries are needed to import, not only to run on a GPU.",
        fixes=(
            fix(
                "Install NVIDIA's wheels into the same environment",
                'pip install "nvidia-cudnn-cu11==8.*" nvidia-cublas-cu11',
            ),
            fix(
                "Or install the community OneFlow build for torch's CUDA",
                "pip uninstall -y oneflow && " + INSTALL_ONEFLOW,
            ),
        ),
        checks=("ONEFLOW006",),
        sources=("https://pypi.org/project/oneflow/0.9.0/", "https://github.com/Oneflow-Inc/oneflow/issues/10342"),
        examples=(
            # printed by PyPI's oneflow 0.9.0 (cp310) without nvidia-cudnn-cu11 (tests/test_oneflow_real.py)
            "Traceback (most recent call last):\n"
            '  File "<string>", line 1, in <module>\n'
            '  File "/home/user/venv/lib/python3.10/site-packages/oneflow/__init__.py", line 25, in <module>\n'
            "    import oneflow._oneflow_internal\n"
            "ImportError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
        ),
        near_misses=(
            "ImportError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
        ),
        frames=(r"/oneflow/",),
        rank=1,
        notes="Needs a oneflow frame: the same loader error from torch or apex is theirs.",
    ),
    Signature(
        id="oneflow-numpy-2",
        family="oneflow",
        title="OneFlow, built against numpy 1, cannot use the numpy 2 installed",
        needles=("unable to import numpy array",),
        patterns=(r"Unable to import Numpy array, try to upgrade Numpy version",),
        cause="OneFlow 0.9.x is compiled against numpy 1's C API. With numpy 2 installed its core cannot "
        "initialise numpy's API and `import oneflow` raises; numpy also prints 'A module that was compiled "
        "using NumPy 1.x cannot be run in NumPy 2'. The message says upgrade; the fix is the other way.",
        fixes=(fix("Install numpy 1 into the same environment", 'pip install "numpy<2"'),),
        checks=("ONEFLOW006",),
        sources=("https://numpy.org/devdocs/numpy_2_0_migration_guide.html",),
        examples=(
            # printed by PyPI's oneflow 0.9.0 beside numpy 2.2.6 (tests/test_oneflow_real.py)
            "oneflow._oneflow_internal.exception.Exception: . Unable to import Numpy array, try to upgrade Numpy "
            "version!",
        ),
        near_misses=("RuntimeError: Numpy is not available",),
    ),
    Signature(
        id="oneflow-no-kernel",
        family="oneflow",
        title="This OneFlow build has no kernel for the op at that dtype on that device (fp16 on the CPU)",
        needles=("cannot find the kernel matching current operatorconf",),
        patterns=(r"Cannot find the kernel matching Current OperatorConf",),
        cause="OneFlow picks a kernel by op, device and dtype, and its CPU build registers no fp16 kernel for "
        "matmul and many other ops: an fp16 model (`.half()`) run on the CPU fails whatever the precision "
        "manager. It is a fact about the build and device, not a torch.autocast clash.",
        fixes=(
            fix("Run fp16 OneFlow models on a CUDA device (`.to('cuda')`), or keep them fp32 on the CPU"),
            fix("Check that OneFlow sees the GPU", "python -c 'import oneflow; print(oneflow.cuda.is_available())'"),
        ),
        checks=("ONEFLOW005", "ONEFLOW003"),
        sources=("https://github.com/Oneflow-Inc/oneflow/issues/10342",),
        examples=(
            # printed by PyPI's oneflow 0.9.0 on a CPU machine (tests/test_oneflow_real.py)
            "RuntimeError: Cannot find the kernel matching Current OperatorConf.  The Info of OperatorConf are \n"
            " op_name: matmul5\n op_type_name: matmul\n DeviceType_Name: kCPU\n DataType_Name of a_0: kFloat16",
        ),
        near_misses=("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",),
    ),
    Signature(
        id="oneflow-check-failed-dtype",
        family="oneflow",
        title="A OneFlow dtype check failed: an op's output no longer has its tensor's dtype (often under autocast)",
        needles=("tensor_meta()->dtype() ==",),
        patterns=(r"check failed: [^\n]{0,120}tensor_meta\(\)->dtype\(\) ==",),
        cause="OneFlow's C++ checks (`CHECK_OR_RETURN`, printed as `Check failed:`) that an op writes a tensor of "
        "the dtype the tensor already has. Under `oneflow.amp.autocast` (or OneDiff's fp16 graphs) a cast is "
        "inserted before an in-place op that is missing from OneFlow's AMP op lists, so the inferred output "
        "dtype (fp16) differs from the tensor's (fp32), or the other way round.",
        fixes=(
            fix("Run the in-place op outside the autocast region, or make it out-of-place (`x = x.fill(v)`)"),
            fix("Cast the tensor to the autocast dtype first (`x = x.to(flow.float16)`), then call the op"),
            fix("Update OneFlow: its AMP lists gain ops between nightlies", INSTALL_ONEFLOW),
        ),
        checks=("ONEFLOW005", "ONEFLOW004"),
        sources=(
            "https://github.com/Oneflow-Inc/oneflow/blob/master/oneflow/core/framework/op_interpreter/eager_local_op_interpreter.cpp",
        ),
        examples=(
            "RuntimeError: Check failed: tensor_impl->tensor_meta()->dtype() == output_tensor_metas.at(0)->dtype()",
        ),
        near_misses=("Check failed: tensor_impl->tensor_meta()->shape() == output_tensor_metas.at(0)->shape()",),
    ),
    Signature(
        id="oneflow-dtype-table-miss",
        family="oneflow",
        title="A OneFlow low-precision dtype ({dtype}) is missing from a dtype table: OneDiff and OneFlow versions differ",
        needles=("keyerror(oneflow.", "keyerror: oneflow."),
        patterns=(r"keyerror(?:\(|: )oneflow\.(?:float16|bfloat16|half|float8)",),
        details=(r"oneflow\.(?P<dtype>float16|bfloat16|half|float8\w{0,10})",),
        cause="A table that maps dtypes between torch and OneFlow (OneDiff's compiler, mock_torch) has no entry for "
        "oneflow.{dtype}: the dtype object of this OneFlow build is not the one the table was built with, which "
        "happens when OneDiff and a OneFlow nightly come from different dates (or two OneFlow copies are "
        "importable). Compilation then fails before any fp16 kernel runs.",
        fixes=(
            fix(
                "Install the OneFlow build OneDiff names for its release (same community channel and date)",
                INSTALL_ONEFLOW,
            ),
            fix(
                "Check which OneFlow and OneDiff are imported",
                'python -c "import oneflow, onediff; print(oneflow.__version__, oneflow.__file__, onediff.__version__)"',
            ),
        ),
        checks=("ONEFLOW002", "ONEFLOW001"),
        sources=(
            "https://github.com/siliconflow/onediff/blob/main/src/onediff/infer_compiler/backends/oneflow/deployable_module.py",
        ),
        examples=("Exception in forward: e=KeyError(oneflow.float16)",),
        near_misses=("KeyError: oneflow.int64",),
    ),
]
