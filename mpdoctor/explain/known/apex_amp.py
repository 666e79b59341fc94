"""NVIDIA apex's amp and the apex that is imported: apex.amp removed (25.07), an optimizer amp.initialize did not
prepare, a stale apex.amp, apex.amp and its
FP16_Optimizer deprecated, and PyPI's unrelated Pyramid `apex` found instead. apex.py has apex's kernels and
extensions."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="apex-amp-removed",
        family="apex",
        title="`from apex import amp` fails: this apex has no amp (removed in apex 25.07)",
        needles=("cannot import name 'amp' from 'apex'",),
        patterns=(r"cannot import name 'amp' from 'apex'",),
        cause="apex.amp was deprecated in 2022 and deleted from NVIDIA apex in May 2025 (first in the 25.07 "
        "release), so code and libraries that still run `from apex import amp` (older transformers Trainer, "
        "Megatron scripts) fail to import. `(unknown location)` instead means the `apex` Python found is a "
        "bare directory on the path, not an installed apex.",
        fixes=(
            fix(
                "Use torch's own AMP: torch.autocast plus torch.amp.GradScaler replace apex.amp "
                "(transformers: `--half_precision_backend auto`)"
            ),
            fix(
                "Upgrade the library that imports apex.amp (transformers fixed its Trainer import)",
                "pip install -U transformers",
            ),
            fix("If nothing needs apex, uninstall it", "pip uninstall -y apex"),
        ),
        checks=("APEX006", "APEX009", "APEX001"),
        sources=(
            "https://github.com/NVIDIA/apex/issues/1902",
            "https://github.com/NVIDIA/apex/pull/1896",
            "https://github.com/NVIDIA/apex/issues/1991",
            "https://github.com/huggingface/transformers/issues/39484",
            "https://github.com/modelscope/ms-swift/issues/4176",
            "https://github.com/Megvii-BaseDetection/YOLOX/issues/458",
        ),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "<stdin>", line 1, in <module>\n'
            '  File "/root/autodl-tmp/training-llm-on-autodl/.venv/lib/python3.12/site-packages/transformers/'
            'trainer.py", line 193, in <module>\n'
            "    from apex import amp\n"
            "ImportError: cannot import name 'amp' from 'apex' (/root/autodl-tmp/training-llm-on-autodl/.venv/"
            "lib/python3.12/site-packages/apex/__init__.py)",
            "RuntimeError: Failed to import transformers.trainer because of the following error (look up to see "
            "its traceback): cannot import name 'amp' from 'apex'",
            "cannot import name 'amp' from 'apex' (unknown location)",
        ),
        near_misses=(
            "ModuleNotFoundError: No module named 'amp_C'",
            "ImportError: cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid.session' "
            "(unknown location)",
        ),
    ),
    Signature(
        id="apex-amp-optimizer-not-initialized",
        family="apex",
        title="apex.amp was handed an optimizer that `amp.initialize` did not prepare",
        needles=("_amp_stash",),
        patterns=(r"object has no attribute '_amp_stash'",),
        cause="`amp.initialize(model, optimizer)` patches the optimizers it is given and gives each an `_amp_stash`; "
        "`amp.scale_loss(loss, optimizer)` reads it. An optimizer without it was not passed through "
        "`amp.initialize`: one created after it or rebuilt later, the original kept instead of the one "
        "`amp.initialize` returned, a dict or list of optimizers passed as one, or a wrapper another library put "
        "around it (Opacus's DPOptimizer, a Lookahead or LR-finder wrapper).",
        fixes=(
            fix(
                "Pass the final optimizer to `amp.initialize` and use what it returns: "
                "`model, optimizer = amp.initialize(model, optimizer, opt_level=...)`, then "
                "`amp.scale_loss(loss, optimizer)` with that same object"
            ),
            fix(
                "A library that wraps the optimizer (Opacus, a Lookahead wrapper) does not know apex.amp: port to "
                "torch's own AMP (`torch.autocast` and `torch.amp.GradScaler`), which needs no patched optimizer"
            ),
        ),
        checks=("APEX009",),
        sources=(
            "https://github.com/NVIDIA/apex/issues/1057",
            "https://github.com/NVIDIA/apex/issues/768",
            "https://github.com/meta-pytorch/opacus/issues/377",
        ),
        examples=(
            '  File "/HwSoftware/python376environment/lib/site-packages/apex/amp/handle.py", line 110, in '
            "scale_loss\n"
            "    if not optimizer._amp_stash.params_have_scaled_gradients:\n"
            "AttributeError: 'AdamW' object has no attribute '_amp_stash'",
            "AttributeError: 'dict' object has no attribute '_amp_stash'",
        ),
        near_misses=("AttributeError: 'AmpOptimizerState' object has no attribute 'all_fp16_params'",),
    ),
    Signature(
        id="apex-amp-stale-install",
        family="apex",
        title="apex.amp lacks `initialize`: an old apex copy is the one imported",
        needles=("module 'apex.amp' has no attribute",),
        patterns=(r"module 'apex\.amp' has no attribute 'initialize'",),
        cause="`amp.initialize` is the apex.amp API from 2019 on; an apex.amp without it is an older apex that "
        "Python finds first: a stale install that a reinstall without uninstalling did not replace, or a "
        "second copy on the path.",
        fixes=(
            fix("Port to torch's own AMP (torch.autocast and torch.amp.GradScaler); current apex has no amp at all"),
            fix(
                "Or remove every apex copy (repeat until pip says it is not installed) before reinstalling",
                "pip uninstall -y apex",
            ),
        ),
        checks=("APEX009", "APEX006"),
        sources=("https://github.com/NVIDIA/apex/issues/357", "https://github.com/Neutralzz/RefQA/issues/2"),
        examples=("AttributeError: module 'apex.amp' has no attribute 'initialize'",),
        near_misses=(
            "ImportError: cannot import name 'amp' from 'apex' (/opt/conda/envs/TextProxy/lib/python3.8/"
            "site-packages/apex-0.1-py3.8-linux-x86_64.egg/apex/__init__.py)",
        ),
    ),
    Signature(
        id="apex-pypi-namesake",
        family="apex",
        title="The `apex` installed is PyPI's unrelated Pyramid toolkit, not NVIDIA apex",
        needles=("unencryptedcookiesessionfactoryconfig",),
        patterns=(r"cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid\.session'",),
        cause="`pip install apex` installs a 2013 web toolkit for Pyramid (apex 0.9.10.dev0), not NVIDIA apex. Its "
        "`apex/__init__.py` imports Pyramid session code that Pyramid 2.0 removed, so any `import apex` (or a "
        "library probing for NVIDIA apex) fails.",
        fixes=(
            fix(
                "Remove the namesake and the web packages it pulled in",
                "pip uninstall -y apex pyramid pyramid_mailer velruse cryptacular wtforms-recaptcha",
            ),
            fix(
                "Most code only needs torch's own AMP; if you really need NVIDIA apex, build it from "
                "https://github.com/NVIDIA/apex (or conda-forge's nvidia-apex), never `pip install apex`"
            ),
        ),
        checks=("APEX001",),
        sources=(
            "https://github.com/NVIDIA/apex/issues/1063",
            "https://github.com/studio-ousia/luke/issues/61",
            "https://github.com/NVIDIA/apex/issues/1804",
            "https://github.com/cubiq/PuLID_ComfyUI/pull/50",
        ),
        examples=(
            "Traceback (most recent call last):\n"
            '  File "<stdin>", line 1, in <module>\n'
            '  File "/home/user/anaconda3/envs/luke/lib/python3.7/site-packages/apex/__init__.py", line 13, '
            "in <module>\n"
            "    from pyramid.session import UnencryptedCookieSessionFactoryConfig\n"
            "ImportError: cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid.session' "
            "(unknown location)",
            "Traceback (most recent call last):\n"
            '  File "./pretrain_gpt.py", line 20, in <module>\n'
            "    from megatron import get_args\n"
            '  File "/disk1/mahmood/training/large_language_model/megatron-lm/megatron/utils.py", line 23, '
            "in <module>\n"
            "    from apex.multi_tensor_apply import multi_tensor_applier\n"
            '  File "/home/mahmood/.local/lib/python3.8/site-packages/apex/__init__.py", line 13, in <module>\n'
            "    from pyramid.session import UnencryptedCookieSessionFactoryConfig\n"
            "ImportError: cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid.session' "
            "(unknown location)",
        ),
        near_misses=(
            "ImportError: cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid.session' "
            "(unknown location)",
        ),
        frames=(r"(?:^|/)apex/__init__\.py$",),
        notes="Needs the apex/__init__.py frame: Pyramid 2.0 apps (NeMo's asr_webapp, fishtest) raise the same "
        "line from their own code. `No module named 'pyramid_mailer'` was not found in any public report.",
    ),
    Signature(
        id="apex-amp-deprecated",
        family="apex",
        title="apex warns that apex.amp (or another apex mixed-precision helper) is deprecated",
        needles=("deprecated and will be removed by the end of february 2023", "fp16_optimizer is deprecated"),
        patterns=(
            r"apex\.(?:amp|parallel|fp16_utils|RNN)`? is deprecated and will be removed by the end of "
            r"February 2023",
            r"FP16_Optimizer is deprecated and dangerous",
        ),
        cause="This code drives mixed precision through apex.amp or apex's FP16_Optimizer, which NVIDIA deprecated "
        "(2020 and 2022) in favour of torch's own AMP and deleted in apex 25.07. It still runs on an old apex, "
        "but the next apex upgrade breaks it, and mixing it with torch.autocast/GradScaler double-manages "
        "precision.",
        fixes=(
            fix(
                'Port to torch\'s own AMP: `with torch.autocast("cuda", dtype=torch.float16):` for the forward '
                'pass and torch.amp.GradScaler("cuda") for the backward (drop amp.initialize and amp.scale_loss)'
            ),
            fix("Pin apex below 25.07 only as a stopgap until the port is done"),
        ),
        checks=("APEX008", "APEX007"),
        sources=(
            "https://github.com/Lightning-AI/pytorch-lightning/issues/15070",
            "https://github.com/NVIDIA/apex/pull/1896",
            "https://github.com/facebookresearch/ParlAI/issues/2813",
        ),
        notice=True,  # the run goes on: a notice with the call to move to, not a failure
        examples=(
            "apex.DeprecatedFeatureWarning: apex.amp is deprecated and will be removed by the end of February "
            "2023. Use [PyTorch AMP](https://pytorch.org/docs/stable/amp.html)",
            "DeprecatedFeatureWarning: apex.amp is deprecated and will be removed by the end of February 2023.",
            "Warning:  FP16_Optimizer is deprecated and dangerous, and will be deleted soon.  If it still works, "
            "you're probably getting lucky.  For mixed precision, use the documented API "
            "https://nvidia.github.io/apex/amp.html, with opt_level=O1.",
        ),
        near_misses=(
            "/usr/local/lib/python3.12/dist-packages/apex/contrib/cudnn_gbn/batch_norm.py:12: FutureWarning: "
            "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
            "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
        ),
    ),
]
