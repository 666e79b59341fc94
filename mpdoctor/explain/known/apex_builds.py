"""apex installs that cannot do what is asked of them: PyPI's unrelated `apex` (a Pyramid toolkit) failing
inside its own imports, and NVIDIA apex kernels built before bf16 support. apex.py and apex_amp.py have the rest."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="apex-pypi-namesake-import-fails",
        family="apex",
        title="`import apex` runs PyPI's unrelated Pyramid `apex`, which fails in its own imports (zope class advice)",
        needles=("interfaces",),
        patterns=(
            r"apex[/\\]interfaces\.py\"?(?:, line \d{1,6}| in )",
            r"from apex\.interfaces import \(?ApexImplementation",
        ),
        cause="`pip install apex` installs `apex` 0.9.x from PyPI, a Pyramid authentication toolkit that only "
        "shares the name with NVIDIA's. Code doing `from apex import amp` imports it; its "
        "`apex/interfaces.py` uses `zope.interface.implements()`, which raises `Class advice impossible in "
        "Python3` on any Python 3 (or it needs `pyramid`, which is not installed). No NVIDIA apex kernel is "
        "involved at all.",
        fixes=(
            fix(
                "Remove the namesake; torch's own AMP (torch.autocast + GradScaler) replaces apex.amp",
                "pip uninstall -y apex",
            ),
            fix(
                "If the code really needs NVIDIA apex, build it from NVIDIA's repository, never from PyPI",
                "git clone https://github.com/NVIDIA/apex && cd apex && pip install -v --no-build-isolation .",
            ),
        ),
        checks=("APEX001",),
        sources=(
            "https://github.com/hukkelas/DeepPrivacy/issues/7",
            "https://github.com/zopefoundation/zope.interface/issues/116",
            "https://github.com/cd34/apex",
        ),
        examples=(
            '  File "/usr/local/lib/python3.6/site-packages/apex/__init__.py", line 18, in <module>\n'
            "    from apex.interfaces import (ApexImplementation,\n"
            '  File "/usr/local/lib/python3.6/site-packages/apex/interfaces.py", line 10, in <module>\n'
            "    class ApexImplementation(object):\n",
            '  File "/home/aurora/.local/lib/python3.6/site-packages/apex/interfaces.py", line 14, in '
            "ApexImplementation\n"
            "    implements(IApex)\n"
            '  File "/home/aurora/.local/lib/python3.6/site-packages/zope/interface/declarations.py", line 483, in '
            "implements\n"
            "    raise TypeError(_ADVICE_ERROR % 'implementer')\n"
            "TypeError: Class advice impossible in Python3.  Use the @implementer class decorator instead.",
        ),
        near_misses=(
            # the same zope error from Twisted's own code (twisted/twisted#161): not apex
            '  File "/Users/crodrigues/twisted3/build/py36-tests-posix/lib/python3.6/site-packages/twisted/words/'
            'xish/domish.py", line 386, in Element\n'
            "    implements(IElement)\n"
            '  File "/Users/crodrigues/twisted3/build/py36-tests-posix/lib/python3.6/site-packages/zope/interface/'
            'declarations.py", line 412, in implements\n'
            "    raise TypeError(_ADVICE_ERROR % 'implementer')\n"
            "TypeError: Class advice impossible in Python3.  Use the @implementer class decorator instead.",
        ),
        notes="NVIDIA apex has no apex/interfaces.py; the PyPI project (cd34/apex) does, which is what tells the "
        "two apart in a traceback, in Python's and in IPython's frame format.",
    ),
    Signature(
        id="apex-kernel-without-bf16",
        family="apex",
        title="An apex CUDA kernel (multi-tensor optimizer ops, fused LayerNorm) has no bf16 version in this build",
        needles=("not implemented for 'bfloat16'",),
        patterns=(
            r"\"multi_tensor_\w{1,40}\" not implemented for 'BFloat16'",
            r"\"layer_norm_cuda_kernel\" not implemented for 'BFloat16'",
        ),
        cause="The run is in bf16 and a library (fairseq, Megatron, Open-Sora, ColossalAI) used apex's fused "
        "kernels: its multi-tensor optimizer helpers (`multi_tensor_l2norm`, `multi_tensor_scale`) or "
        "FusedLayerNorm. The installed apex was built before those kernels dispatched BFloat16 (added "
        "around 2022), so they only take fp32 and fp16.",
        fixes=(
            fix(
                "Rebuild apex from a current NVIDIA checkout, whose kernels include bf16",
                "git clone https://github.com/NVIDIA/apex && cd apex && APEX_CPP_EXT=1 APEX_CUDA_EXT=1 pip install "
                "-v --no-build-isolation .",
            ),
            fix(
                "Or turn the library's apex path off (fairseq/Open-Sora: disable fused LayerNorm / use torch's "
                "optimizer), or uninstall apex so it falls back to torch's kernels",
                "pip uninstall -y apex",
            ),
        ),
        checks=("APEX002", "APEX003"),
        sources=(
            "https://github.com/NVIDIA/apex/issues/1178",
            "https://github.com/hpcaitech/Open-Sora/issues/329",
            "https://github.com/NVIDIA/apex/pull/1407",
        ),
        examples=(
            " multi_tensor_total_norm\n    norm = multi_tensor_l2norm(\n"
            "RuntimeError: \"multi_tensor_l2norm_cuda\" not implemented for 'BFloat16'",
            "When i run inference with A100 GPUs, i encountered following bug：RuntimeError: "
            "\"layer_norm_cuda_kernel\" not implemented for 'BFloat16'",
        ),
        notes="`layer_norm_cuda_kernel` is the dispatch name in apex's csrc/layer_norm_cuda_kernel.cu; old apex "
        "dispatched it for float and half only.",
    ),
]
