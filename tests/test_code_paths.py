"""Rules that read code paths: each judged on small real files, scanned by the real project scan.

For every code finding about torch AMP and apex in your code (APEX006, APEX007, ONEFLOW005, AMP001-AMP004): the
case it is for, and the look-alikes real code has that it must leave alone (alternatives behind a flag, a library
offering two scalers, `enabled=False` guards, fallbacks for an old torch, a `try` that does or does not guard).
The real-repository measure is tests/test_code_corpus.py.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from apex_envs import install_nvidia_apex, make_env
from fixtures.apex import apex_distribution, nvidia_apex, with_apex
from fixtures.base import laptop, with_environment
from fixtures.machines import h100_cu124
from fixtures.oneflow import oneflow_incident2
from mpdoctor.doctor.judge import judge
from mpdoctor.probes.remote import scan
from mpdoctor.schema.serde import from_data
from mpdoctor.snapshot.project import ProjectScan


def project(tmp_path: Path, files: dict[str, str]) -> ProjectScan:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    facts = scan.project_uses(str(tmp_path), 30.0)
    return from_data(ProjectScan, dict(facts, root_reason="the working directory"))


def findings(tmp_path: Path, files: dict[str, str], state: str = "no-apex", select=("APEX", "AMP", "ONEFLOW005")):
    scanned = project(tmp_path, files)
    if state == "oneflow":
        snap = with_environment(oneflow_incident2(), project=scanned)
    elif state == "no-apex":
        snap = with_environment(h100_cu124(laptop()), project=scanned)
    else:
        snap = with_apex(h100_cu124(laptop()), nvidia_apex(amp=state == "apex-amp"), [apex_distribution()], [], scanned)
    return {f.code: f for f in judge(snap, select=list(select))}


# ---------------------------------------------------------------- APEX007: both AMP systems on one path

APEX_OR_NATIVE = """\
    import torch
    from apex import amp

    def main(args, model, optimizer):
        if args.amp_impl == "apex":
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
        else:
            scaler = torch.amp.GradScaler("cuda")
        %s
"""


@pytest.mark.parametrize(
    "name, text",
    [
        ("if/else on a flag", APEX_OR_NATIVE % "pass"),
        (
            "one value compared to two constants",
            """\
            import torch
            from functools import partial
            from apex import amp

            def main(use_amp, model, optimizer):
                if use_amp == "apex":
                    model, optimizer = amp.initialize(model, optimizer)
                if use_amp == "native":
                    autocast = partial(torch.autocast, device_type="cuda")
            """,
        ),
        (
            "two flags and an assert that only one is on",
            """\
            import torch
            from apex import amp

            def main(args, model, optimizer):
                assert not (args.apex and args.native_amp), "only one AMP mode should be set"
                if args.apex:
                    model, optimizer = amp.initialize(model, optimizer)
                scaler = torch.cuda.amp.GradScaler(enabled=args.native_amp)
            """,
        ),
        (
            "a library offering two scaler classes",
            """\
            import torch
            try:
                from apex import amp
            except ImportError:
                amp = None

            class ApexScaler:
                def __call__(self, loss, optimizer):
                    with amp.scale_loss(loss, optimizer) as scaled_loss:
                        scaled_loss.backward()

            class NativeScaler:
                def __init__(self):
                    self._scaler = torch.amp.GradScaler("cuda")
            """,
        ),
        (
            "a dead import",
            """\
            import torch
            from apex import amp

            def train(model, batch):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    return model(batch)
            """,
        ),
        (
            "autocast switched off by a constant",
            """\
            import torch
            from apex import amp

            def main(model, optimizer, batch):
                model, optimizer = amp.initialize(model, optimizer)
                with torch.autocast("cuda", enabled=False):
                    return model(batch)
            """,
        ),
        (
            "the old and the new torch API in try/except",
            """\
            import torch
            from apex import amp

            def main(model, optimizer, batch, apex):
                if apex:
                    model, optimizer = amp.initialize(model, optimizer)
                    return
                try:
                    scaler = torch.amp.GradScaler("cuda")
                except AttributeError:
                    scaler = torch.cuda.amp.GradScaler()
            """,
        ),
    ],
)
def test_alternatives_are_not_a_mix(tmp_path, name, text):
    assert "APEX007" not in findings(tmp_path, {"train.py": text}, "apex-amp"), name


def test_both_in_one_function_are_a_mix_and_the_fix_names_the_lines(tmp_path):
    found = findings(
        tmp_path,
        {
            "train.py": """\
            import torch
            from apex import amp

            def main(args, model, optimizer, batch):
                if args.fp16:
                    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
                with torch.autocast("cuda", dtype=torch.float16, enabled=args.fp16):
                    loss = model(batch)
            """
        },
        "apex-amp",
    )
    mix = found["APEX007"]
    assert "train.py, main" in mix.title
    assert mix.evidence[1].startswith("train.py:6 in main: `model, optimizer = amp.initialize(")
    assert mix.evidence[2].startswith("train.py:7 in main: `with torch.autocast(")
    assert 'port `model, optimizer = amp.initialize(model, optimizer, opt_level="O1")` (train.py:6)' in (
        mix.fix[0].text
    )
    assert "remove amp.scale_loss" not in " ".join(step.text for step in mix.fix).lower()


def test_a_call_chain_within_the_file_is_one_path(tmp_path):
    found = findings(
        tmp_path,
        {
            "train.py": """\
            import torch
            from apex import amp

            class Trainer:
                def setup(self):
                    self.model, self.opt = amp.initialize(self.model, self.opt)

                def step(self, batch):
                    with torch.cuda.amp.autocast():
                        return self.model(batch)

                def fit(self, batches):
                    self.setup()
                    for batch in batches:
                        self.step(batch)
            """
        },
        "apex-amp",
    )
    assert "through Trainer.setup" in " ".join(found["APEX007"].evidence)
    assert "through Trainer.step" in " ".join(found["APEX007"].evidence)


# ---------------------------------------------------------------- ONEFLOW005: enabled=False is a guard


ONEDIFF = """\
    import torch
    from onediff.infer_compiler import oneflow_compile

    unet = oneflow_compile(unet.half())

    @torch.autocast("cuda", enabled=%s)
    def timestep_embedding(t):
        return t
"""


def test_autocast_guards_switched_off_are_no_use_of_autocast(tmp_path):
    """ONEFLOW005's code form ("meet"); its measured form (what the coexistence run showed) needs no code."""
    off = findings(tmp_path / "off", {"run.py": ONEDIFF % "False"}, "oneflow")["ONEFLOW005"]
    assert "meet" not in off.title and off.severity == "info"
    on = findings(tmp_path / "on", {"run.py": ONEDIFF % "True"}, "oneflow")["ONEFLOW005"]
    assert "torch.autocast and OneFlow meet in run.py" in on.title


# ---------------------------------------------------------------- APEX006: what a try really guards


def test_a_real_apex_without_amp_raises_importerror_not_modulenotfounderror(tmp_path):
    """The fact the guard rule rests on, from a real import of an apex laid out as 25.07 ships it."""
    env = make_env(tmp_path / "env", torch=True)
    install_nvidia_apex(env, amp=False)
    script = (
        "import apex\n"
        "for stmt in ('from apex import amp', 'import apex.amp', 'from apex.parallel import DistributedDataParallel'):\n"
        "    try:\n        exec(stmt)\n    except ImportError as e:\n        print(type(e).__name__, '|', e)\n"
    )
    out = subprocess.run([str(env.python), "-c", script], capture_output=True, text=True, check=True).stdout
    raised = [line.split(" | ") for line in out.splitlines()]
    assert [kind for kind, _ in raised] == ["ImportError", "ModuleNotFoundError", "ModuleNotFoundError"]
    assert raised[0][1].startswith("cannot import name 'amp' from 'apex'")
    assert raised[2][1] == "No module named 'apex.parallel'"


@pytest.mark.parametrize(
    "text, state, fires",
    [
        ("try:\n    from apex import amp\nexcept ImportError:\n    amp = None\n", "apex-25.07", False),
        (
            "try:\n    from apex import amp\nexcept ImportError:\n    raise ImportError('install apex')\n",
            "apex-25.07",
            True,
        ),
        ("try:\n    from apex import amp\nexcept ImportError as e:\n    raise\n", "no-apex", True),
        ("try:\n    from apex import amp\nexcept ModuleNotFoundError:\n    amp = None\n", "apex-25.07", True),
        ("try:\n    from apex import amp\nexcept ModuleNotFoundError:\n    amp = None\n", "no-apex", False),
        ("try:\n    import apex.amp\nexcept ModuleNotFoundError:\n    pass\n", "apex-25.07", False),
        (
            "try:\n    from apex import amp\nexcept (ImportError, AttributeError):\n    amp = None\n",
            "apex-25.07",
            False,
        ),
        ("try:\n    from apex import amp\nexcept AttributeError:\n    amp = None\n", "apex-25.07", True),
        ("try:\n    from apex import amp\nfinally:\n    pass\n", "apex-25.07", True),
        ("from apex import amp\n", "apex-amp", False),
    ],
)
def test_a_try_guards_only_what_its_except_catches_and_does_not_raise_again(tmp_path, text, state, fires):
    assert ("APEX006" in findings(tmp_path, {"train.py": text}, state)) is fires


@pytest.mark.parametrize(
    "text, named",
    [
        ("from apex.parallel import DistributedDataParallel as DDP\n", "apex.parallel"),
        ("from apex import fp16_utils\n", "apex.fp16_utils"),
        ("from apex.fp16_utils import FP16_Optimizer\n", "apex.fp16_utils"),
        ("import apex.RNN\n", "apex.RNN"),
    ],
)
def test_the_modules_removed_with_amp_are_named(tmp_path, text, named):
    found = findings(tmp_path, {"train.py": text}, "apex-25.07")["APEX006"]
    assert named in found.title and "not available here" in found.title
    assert "apex.normalization" not in found.title


def test_apex_parts_that_remain_are_not_reported(tmp_path):
    assert "APEX006" not in findings(
        tmp_path, {"train.py": "from apex.normalization import FusedLayerNorm\n"}, "apex-25.07"
    )


# ---------------------------------------------------------------- APEX006: what a test for apex really guards


@pytest.mark.parametrize(
    "text, fires_without_apex, fires_with_apex_25_07",
    [
        ("if is_apex_available():\n    from apex import amp\n", False, True),
        ("if _APEX_AVAILABLE:\n    from apex import amp\n", False, True),
        ("if HAS_APEX and args.fp16:\n    from apex import amp\n", False, True),
        (
            "import importlib.util\nif importlib.util.find_spec('apex') is not None:\n    from apex import amp\n",
            False,
            True,
        ),
        # a flag assigned from a test far from the import, or set in the try of a guarded import
        (
            "import importlib.util\nok = importlib.util.find_spec('apex') is not None\n\n\ndef f():\n"
            "    if ok:\n        from apex import amp\n",
            False,
            True,
        ),
        (
            "try:\n    import apex\n    ok = True\nexcept ImportError:\n    ok = False\nif ok:\n    from apex import amp\n",
            False,
            True,
        ),
        # the test names apex.amp: it fails where amp is gone, too
        ("if module_available('apex.amp'):\n    from apex import amp\n", False, False),
        (
            "try:\n    from apex import amp\nexcept ImportError:\n    amp = None\n\n\ndef f():\n"
            "    if amp is not None:\n        from apex.parallel import DistributedDataParallel\n",
            False,
            False,
        ),
        # the code leaves first, with its own message, when apex is missing
        (
            "def f():\n    if not is_apex_available():\n        raise ImportError('pip install apex')\n    from apex import amp\n",
            False,
            True,
        ),
        ("def f():\n    assert _APEX_AVAILABLE, 'needs apex'\n    from apex import amp\n", False, True),
        ("if not is_apex_available():\n    pass\nelse:\n    from apex import amp\n", False, True),
        # not a test of availability: a user's choice, a test turned round, an `or`, a check that does not leave
        ("if args.apex:\n    from apex import amp\n", True, True),
        ("if use_apex:\n    from apex import amp\n", True, True),
        ("if not is_apex_available():\n    from apex import amp\n", True, True),
        ("if is_apex_available():\n    pass\nelse:\n    from apex import amp\n", True, True),
        ("if is_apex_available() or args.force:\n    from apex import amp\n", True, True),
        ("if not is_apex_available():\n    print('no apex')\nfrom apex import amp\n", True, True),
        ("if x.startswith('apex'):\n    from apex import amp\n", True, True),
    ],
)
def test_an_import_under_a_test_for_apex_never_runs_without_it(
    tmp_path, text, fires_without_apex, fires_with_apex_25_07
):
    assert ("APEX006" in findings(tmp_path / "a", {"train.py": text}, "no-apex")) is fires_without_apex
    assert ("APEX006" in findings(tmp_path / "b", {"train.py": text}, "apex-25.07")) is fires_with_apex_25_07


NEEDS_APEX = """\
    def _load_amp():
        from apex import amp
        return amp


    class ApexPlugin:
        def __init__(self, level="O2"):
            if not %s:
                raise RuntimeError("You have asked for apex AMP but apex is not installed")
            self.level = level

        def setup(self, model, optimizer):
            return _load_amp().initialize(model, optimizer, opt_level=self.level)

        %s
"""


@pytest.mark.parametrize(
    "test, more, fires",
    [
        ("_APEX_AVAILABLE", "pass", False),
        (
            "is_apex_available()",
            "def state(self):\n            from apex import amp\n            return amp.state_dict()",
            False,
        ),
        # a user's choice in __init__ proves nothing; a static method needs no instance; a helper others call
        ("self.enabled", "pass", True),
        (
            "_APEX_AVAILABLE",
            "@staticmethod\n        def state():\n            from apex import amp\n            return amp",
            True,
        ),
        ("_APEX_AVAILABLE", "pass\n\n\n    AMP = _load_amp", True),
        ("_APEX_AVAILABLE", "pass\n\n\n    def other():\n        return _load_amp()", True),
    ],
)
def test_methods_of_a_class_that_cannot_exist_without_apex(tmp_path, test, more, fires):
    text = NEEDS_APEX % (test, more)
    assert ("APEX006" in findings(tmp_path / "a", {"plugin.py": text}, "no-apex")) is fires
    assert "APEX006" in findings(tmp_path / "b", {"plugin.py": text}, "apex-25.07")  # apex there, amp gone


# ---------------------------------------------------------------- AMP001: clipping scaled gradients

LOOP = """\
    import torch
    scaler = torch.amp.GradScaler("cuda")

    def train_step(model, optimizer, loss):
        scaler.scale(loss).backward()
    %s
        scaler.step(optimizer)
        scaler.update()
"""


@pytest.mark.parametrize(
    "middle, fires",
    [
        ("    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", True),
        ("    torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)", True),
        ("    if clip:\n            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", True),
        ("    scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", False),
        ("    accelerator.clip_grad_norm_(model.parameters(), 1.0)", False),  # Accelerate unscales itself
        ("    pass", False),
    ],
)
def test_clipping_between_scale_and_step_without_unscale(tmp_path, middle, fires):
    found = findings(tmp_path, {"train.py": LOOP % middle})
    assert ("AMP001" in found) is fires
    if fires:
        assert found["AMP001"].severity == "error"
        line = 6 + middle.count("\n")  # the clip's line
        assert f"insert `scaler.unscale_(optimizer)` on the line before {line}" in found["AMP001"].fix[0].text


def test_clipping_after_the_step_or_in_the_fp32_branch_is_fine(tmp_path):
    text = """\
    import torch
    from torch.nn.utils import clip_grad_norm_

    def train_step(model, optimizer, loss, scaler):
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
    """
    assert "AMP001" not in findings(tmp_path, {"train.py": text})


def test_a_bare_clip_imported_from_torch_counts(tmp_path):
    text = LOOP.replace("import torch\n", "import torch\n    from torch.nn.utils import clip_grad_norm_\n")
    assert "AMP001" in findings(tmp_path, {"train.py": text % "    clip_grad_norm_(model.parameters(), 1.0)"})


FIT_BATCH = """\
    import torch

    class Brain:
        def fit_batch(self, batch):
            loss = self.compute(batch)
            %s
            self.scaler.scale(loss).backward()
            if self.step %% self.accumulate == 0:
                self.scaler.unscale_(self.optimizer)
                %s
                self.scaler.step(self.optimizer)
                self.scaler.update()

        def check_gradients(self):
            torch.nn.utils.clip_grad_norm_(self.modules.parameters(), 5.0)
"""


@pytest.mark.parametrize(
    "before, after, fires",
    [
        ("self.check_gradients()", "pass", True),  # before the backward: what earlier micro-batches left scaled
        ("pass", "self.check_gradients()", False),  # after unscale_, once per step: right
        ("loss.backward()\n            self.check_gradients()", "pass", False),  # clips a backward of its own
    ],
)
def test_a_clip_before_the_scaled_backward_of_an_accumulating_step(tmp_path, before, after, fires):
    found = findings(tmp_path, {"brain.py": FIT_BATCH % (before, after)})
    assert ("AMP001" in found) is fires
    if fires:
        evidence = " ".join(found["AMP001"].evidence)
        assert (
            "brain.py:15 in Brain.check_gradients" in evidence and "called from Brain.fit_batch at line 6" in evidence
        )
        fix = found["AMP001"].fix[0].text
        assert "move the clip" in fix and "after `self.scaler.unscale_(self.optimizer)` (line 9)" in fix


def test_a_clip_before_the_backward_when_every_call_steps_is_fine(tmp_path):
    text = """\
    import torch

    def step(model, optimizer, scaler, loss):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    """
    assert "AMP001" not in findings(tmp_path, {"train.py": text})


def test_a_clip_in_a_helper_called_between_scale_and_step(tmp_path):
    text = """\
    import torch

    def clip(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)

    def step(model, optimizer, scaler, batch):
        with torch.autocast("cuda"):
            loss = model(batch)
        scaler.scale(loss).backward()
        clip(model)
        scaler.step(optimizer)
        scaler.update()
    """
    found = findings(tmp_path, {"train.py": text})["AMP001"]
    assert (
        "insert `scaler.unscale_(optimizer)` on the line before 10 (`clip(model)`, which reaches the clip at line 4)"
        in found.fix[0].text
    )
    fixed = text.replace("        clip(model)", "        scaler.unscale_(optimizer)\n        clip(model)")
    assert "AMP001" not in findings(tmp_path / "fixed", {"train.py": fixed})


# ---------------------------------------------------------------- AMP002 / AMP003: scalers missing or not needed

FP16_STEP = """\
    import torch

    def train_step(model, optimizer, batch):
        with torch.autocast("cuda", dtype=%s):
            loss = model(batch)
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(
    "dtype, extra, fires",
    [
        ("torch.float16", {}, True),
        ("torch.half", {}, True),
        ("torch.bfloat16", {}, False),
        ("amp_dtype", {}, False),  # chosen at run time
        ("torch.float16", {"scaler.py": "import torch\nscaler = torch.amp.GradScaler('cuda')\n"}, False),
    ],
)
def test_fp16_training_without_a_scaler(tmp_path, dtype, extra, fires):
    found = findings(tmp_path, {"train.py": FP16_STEP % dtype, **extra})
    assert ("AMP002" in found) is fires
    if fires:
        assert "scaler.scale(loss).backward()" in found["AMP002"].fix[0].text


def test_fp16_autocast_for_inference_needs_no_scaler(tmp_path):
    text = "import torch\n\ndef infer(model, x):\n    with torch.cuda.amp.autocast():\n        return model(x)\n"
    assert "AMP002" not in findings(tmp_path, {"infer.py": text})


@pytest.mark.parametrize(
    "scaler, fires",
    [
        ("torch.amp.GradScaler('cuda')", True),
        ("amp.GradScaler('cuda')", True),  # from torch import amp
        ("torch.amp.GradScaler('cuda', enabled=False)", False),
        ("torch.amp.GradScaler('cuda', enabled=dtype == torch.float16)", False),
    ],
)
def test_a_scaler_for_bf16_training(tmp_path, scaler, fires):
    text = (
        "import torch\nfrom torch import amp\n\nscaler = %s\n\ndef step(model, batch):\n"
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        return model(batch)\n" % scaler
    )
    found = findings(tmp_path, {"train.py": text})
    assert ("AMP003" in found) is fires
    assert "AMP002" not in found


# ---------------------------------------------------------------- AMP004: deprecated spellings


@pytest.mark.parametrize(
    "text, spelling",
    [
        ("import torch\nscaler = torch.cuda.amp.GradScaler()\n", "torch.cuda.amp.GradScaler"),
        ("from torch.cuda import amp\nctx = amp.autocast()\n", "torch.cuda.amp.autocast"),
        ("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n", "torch.cuda.amp.autocast"),
        ("import torch.cuda.amp as tca\ns = tca.GradScaler()\n", "torch.cuda.amp.GradScaler"),
        ("import torch\nwith torch.cpu.amp.autocast():\n    pass\n", "torch.cpu.amp.autocast"),
    ],
)
def test_deprecated_spellings_through_any_import(tmp_path, text, spelling):
    found = findings(tmp_path, {"train.py": text})["AMP004"]
    assert found.severity == "info" and spelling in found.title
    replacement = {"torch.cpu.amp.autocast": "torch.amp.autocast('cpu', args...)"}.get(spelling)
    assert replacement is None or replacement in found.fix[0].text


@pytest.mark.parametrize(
    "text",
    [
        "from torch import amp\nctx = amp.autocast('cuda')\ns = amp.GradScaler('cuda')\n",
        "import torch\ntry:\n    s = torch.amp.GradScaler('cuda')\nexcept AttributeError:\n    s = torch.cuda.amp.GradScaler()\n",
        "import torch\nif OLD_TORCH:\n    ctx = torch.cuda.amp.autocast()\nelse:\n    ctx = torch.autocast('cuda')\n",
        "from apex import amp\nmodel = amp.initialize(model)\n",  # apex's amp is not torch.cuda.amp
        # the new spelling for a device given at run time: a fallback when a version test keeps them apart
        "import torch\nif hasattr(torch.amp, 'GradScaler'):\n    s = torch.amp.GradScaler(dev)\nelse:\n"
        "    s = torch.cuda.amp.GradScaler()\n",
        "import torch\ntry:\n    s = torch.amp.GradScaler(dev)\nexcept AttributeError:\n    s = torch.cuda.amp.GradScaler()\n",
        "import torch\nif is_torch_version('>=', '2.4'):\n    c = torch.amp.autocast(dev)\nelse:\n    c = torch.cuda.amp.autocast()\n",
    ],
)
def test_current_spellings_and_fallbacks_for_old_torch_are_not_deprecated(tmp_path, text):
    assert "AMP004" not in findings(tmp_path, {"train.py": text})


@pytest.mark.parametrize(
    "text",
    [
        # an if/elif chain on the device: the CUDA branch still builds the deprecated scaler
        "import torch\nif is_xpu_available():\n    s = torch.amp.GradScaler('xpu')\nelif is_npu_available():\n"
        "    s = torch.npu.amp.GradScaler()\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
        "import torch\nif device == 'cpu':\n    c = torch.autocast('cpu')\nelse:\n    c = torch.cuda.amp.autocast()\n",
        "import torch\nif on_xpu:\n    s = torch.amp.GradScaler(dev)\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
    ],
)
def test_the_old_spelling_beside_another_devices_new_one_is_no_fallback(tmp_path, text):
    assert "AMP004" in findings(tmp_path, {"train.py": text})


def test_the_deprecation_words_are_torchs_own(recwarn):
    """What torch 2.13 prints for the old spellings, as the rule's docstring quotes it."""
    torch = pytest.importorskip("torch")
    torch.cuda.amp.autocast(enabled=False)
    torch.cuda.amp.GradScaler(enabled=False)
    messages = [str(w.message) for w in recwarn if issubclass(w.category, FutureWarning)]
    assert (
        "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead."
        in messages
    )
    assert (
        "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` "
        "instead." in messages
    )
