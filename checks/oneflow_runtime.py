"""oneflow at run time: does `import torch` give OneFlow, and do two precision managers meet?"""

from __future__ import annotations

import os
from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks import _code, _oneflow
from mpdoctor.checks._oneflow import FAMILY
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.portable.linebreaks import split_lines
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.oneflow import CoexistCase

MOCKED_KINDS = {
    "oneflow-mock-torch": "oneflow's mock_torch/torch package, put on the path by `python -m oneflow.mock_torch`",
    "oneflow-hook": "an import hook from oneflow (oneflow.mock_torch.enable() ran at start-up)",
    "oneflow-shim": "a small torch/__init__.py that imports oneflow",
}
MOCK_ENV = ("ONEFLOW_MOCK_TORCH_LAZY", "ONEFLOW_MOCK_TORCH_VERBOSE", "ONEFLOW_DISABLE_MOCK_TORCH")


@check(
    "ONEFLOW004",
    "mock-torch-active",
    family=FAMILY,
    fires_on=("oneflow-mock-torch",),
    quiet_on=("oneflow-incident2", "torch-leftover-directory", "oneflow-pypi-placeholder", "oneflow-pypi-cpu"),
)
def mock_torch_active(snap: Snapshot) -> Iterator[Finding]:
    """oneflow's mock-torch is on: `import torch` gives OneFlow, not PyTorch.

    ## Why it matters
    `eval $(python -m oneflow.mock_torch)` puts oneflow's `mock_torch`
    directory on PYTHONPATH, and `oneflow.mock_torch.enable()` installs an
    import hook: from then on every `import torch` in that shell or process
    is OneFlow. PyTorch code then fails on what OneFlow lacks (`... is not
    implemented, please submit an issue`), and every torch fact is OneFlow's:
    mpdoctor skips its torch checks and precision kernels.

    ## Fix
    `eval $(python -m oneflow.mock_torch disable)` in the shell, remove the
    .pth line or the `enable()` call that turns it on, or set
    `ONEFLOW_DISABLE_MOCK_TORCH=1`, which makes `enable()` do nothing.
    """
    mock = _oneflow.facts(snap).mock
    mocked_live = snap.torch.status == "mocked"
    if not (mocked_live or mock.torch.kind in MOCKED_KINDS):
        return
    evidence = []
    if mocked_live:
        evidence.append(f"`import torch` gave the module {snap.torch.imported_as!r}, loaded from {snap.torch.origin}")
    if mock.torch.kind in MOCKED_KINDS:
        evidence.append(f"torch resolves to {mock.torch.origin or mock.torch.loader}: {MOCKED_KINDS[mock.torch.kind]}")
    python_path = snap.environment.env.get("PYTHONPATH", "").split(os.pathsep)
    evidence += [
        f"sys.path entry {entry}" + (" (from PYTHONPATH)" if entry in python_path else "")
        for entry in mock.path_entries
    ]
    evidence += [f"{line.file}: {line.line}" for line in mock.pth_lines]
    evidence += [f"import hook at start-up: {hook}" for hook in mock.hooks]
    evidence += [f"{path} mentions mock_torch" for path in mock.customize]
    evidence += [f"{name}={snap.environment.env[name]}" for name in MOCK_ENV if name in snap.environment.env]
    real = snap.distribution("torch")
    if real is not None:
        evidence.append(f"PyTorch {real.version} is installed in {real.location}, but `import torch` does not reach it")
    steps = []
    if mock.path_entries and any(entry in python_path for entry in mock.path_entries):
        steps.append(
            FixStep(
                "Turn mock-torch off in this shell (it prints the exports that undo "
                "`python -m oneflow.mock_torch`), and drop that eval from your shell profile",
                f"eval $({fixes.python(snap, '-m', 'oneflow.mock_torch', 'disable')})",
            )
        )
    steps += [FixStep(f"Remove this line from {line.file}: {line.line}") for line in mock.pth_lines]
    steps += [FixStep(f"Remove the oneflow.mock_torch.enable() call from {path}") for path in mock.customize]
    if mock.hooks or mock.customize or mock.torch.kind == "oneflow-hook":
        steps.append(
            fixes.alternative(
                "Or make oneflow.mock_torch.enable() a no-op for this shell",
                fixes.export("ONEFLOW_DISABLE_MOCK_TORCH", "1"),
            )
        )
    if not steps:
        steps.append(FixStep(f"Remove what makes `import torch` load {mock.torch.origin or 'OneFlow'}"))
    steps.append(
        fixes.inspect("Then run mpdoctor again: this report's torch facts are OneFlow's", fixes.mpdoctor_check(snap))
    )
    yield error(
        "`import torch` gives OneFlow, not PyTorch: oneflow's mock-torch is on, so torch checks and "
        "precision kernels describe OneFlow or were skipped",
        evidence,
        steps,
    )


def _case(snap: Snapshot, name: str) -> CoexistCase | None:
    return next((case for case in _oneflow.facts(snap).runtime.coexist if case.name == name), None)


NO_KERNEL = "Cannot find the kernel matching"  # OneFlow's words when a build has no kernel for an op and dtype


def no_fp16_kernel(snap: Snapshot) -> str:
    """The fact, when measured: this OneFlow build cannot run an fp16 Linear on this device at all.

    OneFlow's CPU build has no fp16 matmul kernel. That is a fact about the build,
    not about autocast: with it, every fp16 case fails whatever the precision
    manager, so none of them says anything about torch.autocast.
    """
    plain = _case(snap, "fp16 input")
    if plain is None or plain.status == "ok":
        return ""
    what = "no fp16 Linear kernel" if NO_KERNEL in plain.detail else "an fp16 Linear does not run"
    # OneFlow's error runs to a dozen lines (the OperatorConf, C++ frames): its first line names the failure.
    raised = split_lines(plain.detail.strip())[0] if plain.detail.strip() else "an error"
    return (
        f"measured on {plain.device}: {what} in this OneFlow on the {plain.device} (an fp16 Linear on fp16 input, "
        f"no autocast, raised {raised}): a fact about this OneFlow build, not evidence about autocast"
    )


def _measured(snap: Snapshot) -> list[str]:
    """What the coexistence probe showed about the precision managers, as evidence lines.

    Empty when the plain fp16 run failed: then the autocast cases fail for that
    reason, and their results are no evidence either way (``no_fp16_kernel``).
    """
    if no_fp16_kernel(snap):
        return []
    lines = []
    under_torch, under_oneflow = (_case(snap, name) for name in ("torch.autocast", "oneflow.autocast"))
    if under_torch is not None:
        seen = {True: "on", False: "off", None: "unknown"}[under_torch.oneflow_autocast]
        ran = f"gave {under_torch.output_dtype}" if under_torch.status == "ok" else f"raised {under_torch.detail}"
        lines.append(
            f"measured on {under_torch.device}: inside torch.autocast OneFlow's autocast was {seen}; torch's "
            f"own fp16 linear gave {under_torch.torch_output_dtype or '?'} on fp32 input, the fp16 OneFlow "
            f"Linear {ran}"
        )
    if under_oneflow is not None:
        ran = f"gave {under_oneflow.output_dtype}" if under_oneflow.status == "ok" else f"raised {under_oneflow.detail}"
        note = f" (warned: {under_oneflow.warnings[0]})" if under_oneflow.warnings else ""
        lines.append(f"measured on {under_oneflow.device}: inside oneflow.autocast the same Linear {ran}{note}")
    return lines


FIXES = [
    FixStep(
        "If the model is already fp16 (`.half()`, `torch_dtype=torch.float16`), remove the `with "
        'torch.autocast("cuda")` around the OneFlow-compiled pipeline: it has nothing left to cast'
    ),
    FixStep('If you need autocast, use OneFlow\'s own around OneFlow code: `with oneflow.autocast("cuda"):`'),
    FixStep("Never nest torch.autocast and oneflow.autocast, or run one forward pass under both"),
]


@check(
    "ONEFLOW005",
    "two-precision-managers",
    family=FAMILY,
    needs=("project",),
    fires_on=("oneflow-incident2", "oneflow-pypi-cpu"),
    quiet_on=("apex-amp-mixed", "oneflow-mock-torch", "onediff-without-oneflow"),
)
def two_precision_managers(snap: Snapshot) -> Iterator[Finding]:
    """torch.autocast and OneFlow both manage precision: an fp16 model under torch.autocast fails in OneFlow.

    ## Why it matters
    torch.autocast is a torch dispatcher feature: OneFlow ops do not see it.
    Under OneDiff, a `.half()` model run inside `with torch.autocast("cuda")`
    hands OneFlow tensors whose dtypes torch's per-op rules chose, and OneFlow's
    type inference rejects them: `InferDataType Failed. Expected kFloat, but got
    kFloat16` (siliconflow/onediff#582). mpdoctor runs a tiny fp16 OneFlow
    module under each context to show what happens here. Where fp16 does not
    run at all (OneFlow's CPU build has no fp16 Linear kernel: `Cannot find the
    kernel matching Current OperatorConf`), it says so as a fact about the
    build: that failure is no evidence about autocast either way.

    ## Fix
    For an fp16 pipeline drop the `torch.autocast` context; otherwise use
    `oneflow.autocast("cuda")` around OneFlow code. Never mix the two. An
    autocast switched off by a constant (`@torch.autocast("cuda", enabled=False)`)
    is not a use: keep those guards.
    """
    if snap.torch.status == "mocked" or _oneflow.works(snap) is False:
        return  # under mock-torch torch.autocast *is* OneFlow's; without OneFlow nothing can clash
    # A use of torch.autocast is one that can switch it on: `@torch.autocast("cuda", enabled=False)` is the guard
    # that keeps autocast away from a .half() model under OneDiff, not a use.
    autocast = [site for site in _code.sites(snap) if site.kind == "autocast" and _code.on(site)]
    oneflow_code = _oneflow.project_uses(snap)
    measured = _measured(snap)
    no_kernel = no_fp16_kernel(snap)
    under_torch = _case(snap, "torch.autocast")
    # a failure counts only when fp16 itself runs here: otherwise it is the missing kernel, not autocast
    reproduced = bool(measured) and under_torch is not None and under_torch.status == "error"
    versions = [
        f"torch {snap.torch.version or '?'}, oneflow {_oneflow.version(snap) or '?'}"
        + "".join(f", {d.name} {d.version}" for d in _oneflow.onediff_distributions(snap))
    ]
    if autocast and oneflow_code:
        both = sorted({use.file for use in autocast} & {use.file for use in oneflow_code})
        evidence = [f"torch.autocast: {_oneflow.where(use)}" for use in autocast[:3]]
        evidence += [f"OneFlow: {_oneflow.where(use)}" for use in oneflow_code[:3]]
        where = f" in {', '.join(both[:3])}" if both else " in your code"
        make = error if reproduced else warning
        yield make(
            f"torch.autocast and OneFlow meet{where}: OneFlow does not follow torch's autocast, and an fp16 "
            "model fails with `InferDataType Failed. Expected kFloat, but got kFloat16`",
            evidence + measured + ([no_kernel] if no_kernel else []) + versions,
            FIXES,
        )
    elif measured and under_torch is not None and under_torch.oneflow_autocast is not True:
        yield info(
            "torch.autocast does not reach OneFlow here: wrap OneFlow-compiled modules in oneflow.autocast, "
            "never in torch.autocast",
            measured + versions,
            FIXES[1:],
        )
