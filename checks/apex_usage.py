"""apex usage: installed libraries and your code that switch to apex, or rely on apex.amp."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator, Optional

from packaging.version import InvalidVersion, Version

from mpdoctor.checks import fixes
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.checks.registry import check
from mpdoctor.checks import _apex
from mpdoctor.checks._apex import FAMILY
from mpdoctor.checks._common import requirers
from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.apex import ApexImport

# First releases without the apex code path, verified in the published wheels:
# transformers 5.7.0's modeling_t5.py still swaps in FusedRMSNorm, 5.8.0's does not
# (huggingface/transformers#45723); 4.52.4's trainer.py imports apex.amp at module
# level, 4.53.0 only inside the functions that use it (huggingface/transformers#38100).
NORM_SWAP_FIXED_IN = {"transformers": "5.8.0"}
AMP_IMPORT_FIXED_IN = {"transformers": "4.53.0"}
MAX_SITES = 4


def _older(version: str, fixed: Optional[str]) -> bool:
    try:
        return fixed is not None and Version(version) < Version(fixed)
    except InvalidVersion:
        return False


def _by_distribution(uses: list[ApexImport]) -> dict[str, list[ApexImport]]:
    grouped: dict[str, list[ApexImport]] = defaultdict(list)
    for use in uses:
        grouped[use.distribution].append(use)
    return grouped


def _sites(uses: list[ApexImport]) -> list[str]:
    lines = [_apex.where(use) for use in uses[:MAX_SITES]]
    if len(uses) > MAX_SITES:
        lines.append(f"... and {len(uses) - MAX_SITES} more")
    return lines


def _upgrade_steps(
    snap: Snapshot, grouped: dict[str, list[ApexImport]], fixed_in: dict[str, str], lead: str = "Or upgrade"
) -> list[FixStep]:
    steps = []
    for name, uses in sorted(grouped.items()):
        fixed = fixed_in.get(name.lower())
        if _older(uses[0].version, fixed):
            steps.append(
                FixStep(
                    f"{lead} {name} to {fixed} or newer, which no longer does this",
                    fixes.pip(snap, "install", "-U", f"{name}>={fixed}"),
                    role=fixes.role_of(lead),
                )
            )
        else:
            steps.append(FixStep(f"No release of {name} known to mpdoctor drops this; removing apex is the fix"))
    return steps


def _keep_apex_note(snap: Snapshot) -> list[FixStep]:
    needed_by = [f"{dist.name} {dist.version}" for dist, _ in requirers(snap, "apex")]
    if not needed_by:
        return []
    return [FixStep(f"Careful: {', '.join(needed_by)} declare a dependency on apex; uninstalling it may break them")]


@check(
    "APEX005",
    "apex-fused-norm-swap",
    family=FAMILY,
    fires_on=("apex-incident1", "apex-amp-removed", "apex-python-only"),
    quiet_on=("oneflow-incident2", "apex-amp-mixed", "apex-pypi-impostor"),
)
def fused_norm_swap(snap: Snapshot) -> Iterator[Finding]:
    """Installed libraries silently swap their layer norms for apex's fused ones.

    ## Why it matters
    transformers (T5, LongT5, Pix2Struct, Pop2Piano before 5.8), fairseq,
    SwissArmyTransformer and ColossalAI replace their own norms with apex's
    `FusedRMSNorm`/`FusedLayerNorm` whenever `apex.normalization` imports. The
    fused kernel allocates its output in the *input* dtype and reads the weight
    as that dtype, so an fp16 model whose residual stream is fp32 (T5 keeps
    `wo` in fp32) fails with `RuntimeError: expected scalar type Float but found
    Half`, where the native norm upcasts and works. This is the xDiT/CogVideoX
    text-encoder failure.

    ## Fix
    `pip uninstall apex` (torch's native AMP does not need it), or upgrade the
    library to a release without the swap (transformers 5.8 or newer).
    """
    if not _apex.has_normalization(snap):
        return
    swaps = [use for use in _apex.facts(snap).users if _apex.swaps_norm(use) and not use.lazy]
    if not swaps:
        return
    grouped = _by_distribution(swaps)
    evidence = [_apex.describe(snap)] + _sites(swaps)
    names = ", ".join(f"{name} {uses[0].version}" for name, uses in sorted(grouped.items()))
    title = (
        f"{names} will swap in apex's fused norms; fp16/bf16 models with fp32 pieces then fail with "
        "`expected scalar type Float but found Half`"
    )
    steps = _keep_apex_note(snap) + _apex.uninstall_steps(snap, "Remove apex, which torch's own AMP does not need")
    yield warning(title, evidence, steps + _upgrade_steps(snap, grouped, NORM_SWAP_FIXED_IN))


def _amp_users(snap: Snapshot) -> tuple[list[ApexImport], list[ApexImport]]:
    installed = [use for use in _apex.facts(snap).users if _apex.imports_amp(use)]
    scan = snap.environment.project
    project = [use for use in scan.under_root(scan.apex_uses) if _apex.imports_amp(use)]
    return installed, project


def _your_code(snap: Snapshot, project: list) -> list[str]:
    """The evidence line that says which directory "your code" is (the project scan's root, and why)."""
    return [snap.environment.project.where()] if project else []


@check(
    "APEX006",
    "apex-amp-unavailable",
    family=FAMILY,
    needs=("project",),
    fires_on=("apex-amp-removed",),
    quiet_on=("apex-incident1", "apex-amp-mixed", "apex-python-only"),
)
def amp_unavailable(snap: Snapshot) -> Iterator[Finding]:
    """Code imports `apex.amp`, but the apex here has none.

    ## Why it matters
    NVIDIA removed apex.amp (and apex.parallel, apex.fp16_utils) in May 2025;
    apex 25.07 and later have none. `from apex import amp` then raises
    `ImportError: cannot import name 'amp' from 'apex'`, and a library that does
    it at import time breaks as a whole: transformers before 4.53 cannot import
    `transformers.trainer` at all. The PyPI namesake and a stray apex/ directory
    have no amp either.

    ## Fix
    Port the code to torch.amp (`torch.autocast` + `torch.amp.GradScaler`), and
    upgrade libraries that still import apex.amp at import time.
    """
    if _apex.has_amp(snap):
        return
    installed, project = _amp_users(snap)
    # Installed code only reaches these imports when apex looks installed (is_apex_available()).
    installed = [use for use in installed if _apex.importable(snap) and not use.guarded and not use.lazy]
    project = [use for use in project if not use.guarded]
    if not installed and not project:
        return
    if _apex.importable(snap):
        state = f"{_apex.describe(snap)}, which has no amp"
        failure = "ImportError: cannot import name 'amp' from 'apex'"
    else:
        state = "apex is not installed"
        failure = "ModuleNotFoundError: No module named 'apex'"
    evidence = [state] + _sites(installed) + _your_code(snap, project) + _sites(project)
    who = []
    grouped = _by_distribution(installed)
    if grouped:
        who.append(", ".join(f"{name} {uses[0].version}" for name, uses in sorted(grouped.items())))
    if project:
        who.append("your code")
    verb = "import" if len(grouped) + bool(project) > 1 else "imports"
    title = f"{' and '.join(who)} {verb} apex.amp, which is not available here: `{failure}`"
    steps = (
        [
            FixStep(
                "Port your code from apex.amp to torch.amp: drop amp.initialize, wrap the forward pass in "
                "torch.autocast and scale the loss with torch.amp.GradScaler "
                "(https://pytorch.org/docs/stable/notes/amp_examples.html)"
            )
        ]
        if project
        else []
    )
    steps += _upgrade_steps(snap, grouped, AMP_IMPORT_FIXED_IN, lead="Upgrade")
    if _apex.importable(snap) and grouped:
        steps += _apex.uninstall_steps(snap, "Or remove apex, so libraries stop trying to use apex.amp")
    yield error(title, evidence, steps)


@check(
    "APEX007",
    "apex-amp-and-torch-amp",
    family=FAMILY,
    needs=("project",),
    fires_on=("apex-amp-mixed",),
    quiet_on=("apex-incident1", "apex-amp-removed", "oneflow-incident2"),
)
def both_amps(snap: Snapshot) -> Iterator[Finding]:
    """Your code uses apex.amp and torch's AMP together.

    ## Why it matters
    apex.amp patches torch functions (O1) or casts the model (O2) and scales the
    loss itself; torch.autocast and GradScaler do the same jobs their own way.
    Together they cast twice and scale the loss twice, which shows up as dtype
    mismatches, NaN losses or a scale that never grows.

    ## Fix
    Keep only torch's AMP: remove `amp.initialize` and `amp.scale_loss`.
    """
    _, project = _amp_users(snap)
    scan = snap.environment.project
    torch_uses = scan.under_root(scan.torch_amp_uses)
    if not project or not torch_uses:
        return
    evidence = (
        _your_code(snap, project)
        + _sites(project)
        + [f"{use.file}:{use.line} `{use.text}`" for use in torch_uses[:MAX_SITES]]
    )
    yield warning(
        "your code mixes apex.amp with torch.autocast/GradScaler: two precision managers cast and scale the loss twice",
        evidence,
        [
            FixStep(
                "Remove amp.initialize and amp.scale_loss; keep torch.autocast for the forward pass and "
                "torch.amp.GradScaler for the loss (https://pytorch.org/docs/stable/amp.html)"
            )
        ],
    )


@check(
    "APEX008",
    "apex-amp-deprecated",
    family=FAMILY,
    needs=("project",),
    fires_on=("apex-incident1", "apex-amp-mixed"),
    quiet_on=("apex-amp-removed", "apex-python-only"),
)
def amp_deprecated(snap: Snapshot) -> Iterator[Finding]:
    """Code relies on apex.amp, which works here but is gone from newer apex.

    ## Why it matters
    apex.amp was deprecated in 2022 and removed in May 2025 (apex 25.07). The
    apex installed still has it, so this code works today and breaks on the
    next apex rebuild, with `cannot import name 'amp' from 'apex'`.

    ## Fix
    Port to torch.amp (`torch.autocast` + `torch.amp.GradScaler`).
    """
    if not _apex.has_amp(snap):
        return
    installed, project = _amp_users(snap)
    if not installed and not project:
        return
    yield info(
        "code here relies on apex.amp, which newer apex (25.07 and later) no longer has",
        [_apex.describe(snap)] + _your_code(snap, project) + _sites(project) + _sites(installed),
        [_apex.torch_amp_step("Port it to")],
    )
