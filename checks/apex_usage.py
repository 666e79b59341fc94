"""apex usage: installed libraries and your code that switch to apex, or rely on apex.amp."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator, Optional

from packaging.version import InvalidVersion, Version

from mpdoctor.checks import fixes
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.checks.registry import check
from mpdoctor.checks import _apex, _code
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
# Removed from NVIDIA apex together, in "remove old features: amp, ddp, and rnn" (NVIDIA/apex#1896, commit
# cb65b8ed, May 2025; first in the 25.07 tag): the whole of apex.amp, apex.parallel (DistributedDataParallel,
# SyncBatchNorm, convert_syncbn_model, LARC), apex.fp16_utils and apex.RNN.
REMOVED = ("amp", "parallel", "fp16_utils", "RNN")
# Exceptions that catch the ImportError a missing apex.amp raises ("" is a bare except).
CATCHES_IMPORT_ERROR = {"", "ImportError", "Exception", "BaseException"}
# Exceptions that do not: a fallback for something else.
CATCHES_OTHER = {"AttributeError", "KeyError", "ValueError", "TypeError", "OSError", "RuntimeError", "NameError"}


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


def removed_module(use: ApexImport) -> str:
    """The part of apex, removed in 25.07, that ``use`` imports (amp, parallel, fp16_utils, RNN); "" for none."""
    parts = use.module.split(".")
    if len(parts) > 1 and parts[1] in REMOVED:
        return parts[1]
    if use.module == "apex":
        return next((name for name in use.names if name in REMOVED), "")
    return ""


def _missing(snap: Snapshot, part: str) -> bool:
    """Whether this apex lacks ``part``: it is no NVIDIA apex with it (or no apex at all)."""
    return not (_apex.flavour(snap) == "nvidia" and part in _apex.facts(snap).subpackages)


def really_guarded(use: ApexImport, failure: str) -> bool:
    """Whether the try around the import falls back on ``failure`` (ImportError or ModuleNotFoundError): an
    except clause that catches it and does not raise again. Snapshots before handlers were read trust the try."""
    if not use.handlers_read:
        return use.guarded
    for handler in use.handlers:
        name, _, raises = handler.partition(":")
        if raises:
            continue
        if name in CATCHES_IMPORT_ERROR or (name == "ModuleNotFoundError" and failure == "ModuleNotFoundError"):
            return True
        if name not in CATCHES_OTHER and name != "ModuleNotFoundError":
            return True  # an exception class of the project's: cannot tell, so trust it
    return False


def never_runs(snap: Snapshot, use: ApexImport, importable: bool) -> bool:
    """Whether the code tests for an apex module that is missing here before it reaches the import
    (``use.runs_only_with``: `if is_apex_available():`, `if amp is not None:`, `if not _APEX_AVAILABLE: raise`
    before it): then it takes its other way, or raises its own message, and the import never runs. A test for
    apex itself passes wherever apex imports: with apex 25.07 `from apex import amp` still runs, and fails."""
    for module in use.runs_only_with:
        parts = module.split(".")
        if not importable or (len(parts) > 1 and parts[1] in REMOVED and _missing(snap, parts[1])):
            return True
    return False


def failure_of(use: ApexImport, importable: bool) -> str:
    """What the import raises here: ModuleNotFoundError when no apex imports, or for `import apex.amp`; an
    apex without the part raises plain ImportError for `from apex import amp` (cannot import name)."""
    if not importable or use.module != "apex":
        return "ModuleNotFoundError"
    return "ImportError"


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
    """Code imports `apex.amp` (or apex.parallel, apex.fp16_utils, apex.RNN), but the apex here has none.

    ## Why it matters
    NVIDIA removed apex.amp, apex.parallel, apex.fp16_utils and apex.RNN in one
    change in May 2025 (NVIDIA/apex#1896); apex 25.07 and later have none of them.
    `from apex import amp` then raises `ImportError: cannot import name 'amp' from
    'apex'`, and a library that does it at import time breaks as a whole:
    transformers before 4.53 cannot import `transformers.trainer` at all. The PyPI
    namesake and a stray apex/ directory have none either. A `try` is a fallback
    only when its except clause catches that error and does not raise again:
    `except ModuleNotFoundError` misses the plain ImportError an apex without amp
    raises for `from apex import amp`. Nor does an import the code reaches only
    after testing for apex: under `if is_apex_available():` (`if amp is not
    None:`, `if _APEX_AVAILABLE:`, `find_spec("apex")`), after `if not
    is_apex_available(): raise ...`, or in a method of a class whose `__init__`
    raises without apex. Where apex is missing that code takes its other way or
    raises its own message; where apex 25.07 is installed the test passes and
    `from apex import amp` fails, so it is reported there.

    ## Fix
    Port the code to torch.amp (`torch.autocast` + `torch.amp.GradScaler`),
    torch's DistributedDataParallel and SyncBatchNorm for apex.parallel, and
    upgrade libraries that still import apex.amp at import time.
    """
    importable = _apex.importable(snap)
    installed = [
        use
        for use in _apex.facts(snap).users
        if removed_module(use)
        and _missing(snap, removed_module(use))
        and importable
        # Installed code only reaches these imports when apex looks installed (is_apex_available()).
        and not use.guarded
        and not use.lazy
        and not never_runs(snap, use, importable)
    ]
    scan = snap.environment.project
    project = [
        use
        for use in scan.under_root(scan.apex_uses)
        if removed_module(use)
        and _missing(snap, removed_module(use))
        and not really_guarded(use, failure_of(use, importable))
        and not never_runs(snap, use, importable)
    ]
    if not installed and not project:
        return
    parts = sorted({removed_module(use) for use in installed + project}, key=REMOVED.index)
    names = ", ".join(f"apex.{part}" for part in parts)
    if importable:
        state = f"{_apex.describe(snap)}, which has no {' or '.join(parts)}"
        failure = f"ImportError: cannot import name '{parts[0]}' from 'apex'"
    else:
        state = "apex is not installed"
        failure = "ModuleNotFoundError: No module named 'apex'"
    evidence = [state] + _sites(installed) + _your_code(snap, project) + [_site(use) for use in project[:MAX_SITES]]
    if len(project) > MAX_SITES:
        evidence.append(f"... and {len(project) - MAX_SITES} more")
    who = []
    grouped = _by_distribution(installed)
    if grouped:
        who.append(", ".join(f"{name} {uses[0].version}" for name, uses in sorted(grouped.items())))
    if project:
        who.append("your code")
    verb = "import" if len(grouped) + bool(project) > 1 else "imports"
    title = f"{' and '.join(who)} {verb} {names}, which {'is' if len(parts) == 1 else 'are'} not available here: `{failure}`"
    steps = _port_steps(parts) if project else []
    steps += _upgrade_steps(snap, grouped, AMP_IMPORT_FIXED_IN, lead="Upgrade")
    if importable and grouped:
        steps += _apex.uninstall_steps(snap, "Or remove apex, so libraries stop trying to use apex.amp")
    yield error(title, evidence, steps)


def _via(chain: list[str]) -> str:
    return f", through {' -> '.join(chain)}" if chain else ""


def _site(use: ApexImport) -> str:
    """Where an import is, and why its try (if any) does not catch the failure."""
    line = _apex.where(use)
    if use.guarded and use.handlers_read:
        caught = [h.partition(":")[0] or "a bare except" for h in use.handlers]
        raises = any(h.endswith(":raise") for h in use.handlers)
        why = "its except clause raises again" if raises else f"its try catches only {', '.join(caught) or 'nothing'}"
        line += f" ({why})"
    return line


PORTS = {
    "amp": "Port apex.amp to torch.amp: drop amp.initialize, wrap the forward pass in torch.autocast and scale the "
    "loss with torch.amp.GradScaler (https://pytorch.org/docs/stable/notes/amp_examples.html)",
    "parallel": "Replace apex.parallel: torch.nn.parallel.DistributedDataParallel for its DistributedDataParallel, "
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) for convert_syncbn_model and SyncBatchNorm",
    "fp16_utils": "Replace apex.fp16_utils (FP16_Optimizer, network_to_half): torch.autocast with "
    "torch.amp.GradScaler, which keep fp32 master weights for you",
    "RNN": "Replace apex.RNN with torch.nn.LSTM/GRU/RNN",
}


def _port_steps(parts: list[str]) -> list[FixStep]:
    return [FixStep(PORTS[part]) for part in parts]


@check(
    "APEX007",
    "apex-amp-and-torch-amp",
    family=FAMILY,
    needs=("project",),
    fires_on=("apex-amp-mixed",),
    quiet_on=("apex-incident1", "apex-amp-removed", "oneflow-incident2"),
)
def both_amps(snap: Snapshot) -> Iterator[Finding]:
    """Your code sets up apex.amp and torch's AMP on one code path.

    ## Why it matters
    apex.amp patches torch functions (O1) or casts the model (O2) and scales the
    loss itself; torch.autocast and GradScaler do the same jobs their own way.
    Run together they cast twice and scale the loss twice, which shows up as dtype
    mismatches, NaN losses or a scale that never grows. Only a path that runs
    both counts: one function (or the functions of its file it calls) reaching
    `amp.initialize`/`amp.scale_loss` and an autocast or GradScaler that is not
    switched off, with no branch between them that picks one (`if amp_impl ==
    "apex": ... else: ...`, two flags, `enabled=False`). Code offering both as
    alternatives (an ApexScaler beside a NativeScaler) is not a mix.

    ## Fix
    On that path keep one: port the apex.amp calls it names to torch.amp (the
    torch.autocast/GradScaler there already do their job), or put the two behind
    one switch.
    """
    mixes = []
    seen: set = set()
    for file_sites in _code.by_file(_code.sites(snap)).values():
        for scope in sorted({site.scope for site in file_sites}):
            steps = _code.reach(file_sites, scope)
            apex = [(site, conds, chain) for site, conds, chain in steps if _code.apex_setup(site)]
            torch = [(site, conds, chain) for site, conds, chain in steps if _code.torch_setup(site)]
            for a, a_conds, a_chain in apex:
                for t, t_conds, t_chain in torch:
                    key = (a.file, a.line, t.file, t.line)
                    if key not in seen and _code.one_path(a_conds, t_conds):
                        seen.add(key)
                        mixes.append((scope, a, t, a_chain, t_chain))
    if not mixes:
        return
    scan = snap.environment.project
    evidence = [scan.where()]
    for scope, a, t, a_chain, t_chain in mixes[:MAX_SITES]:
        path = f"on the path of {scope or 'module level'}"
        evidence.append(f"{_code.where(a)} (apex.amp, {path}{_via(a_chain)})")
        evidence.append(f"{_code.where(t)} (torch AMP, {path}{_via(t_chain)})")
    if len(mixes) > MAX_SITES:
        evidence.append(f"... and {len(mixes) - MAX_SITES} more")
    scope, a, t, _, _ = mixes[0]
    yield warning(
        f"your code runs apex.amp and torch's AMP on one path ({a.file}, {scope or 'module level'}): two precision "
        "managers cast and scale the loss twice",
        evidence,
        [
            FixStep(
                f"In {scope or a.file}, keep one precision manager: port `{a.text}` ({a.file}:{a.line}) to "
                f"torch.amp, since `{t.text}` ({t.file}:{t.line}) already runs there "
                "(https://pytorch.org/docs/stable/amp.html)"
            ),
            FixStep("Or choose between them with one switch (if/else on one flag), so a run sets up only one of them"),
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
