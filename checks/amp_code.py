"""torch AMP in your code: gradients clipped while still scaled, fp16 training without a scaler, a scaler bf16 does
not need, and the deprecated torch.cuda.amp spellings. Read from the project scan's code paths (``_code``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from mpdoctor.checks import _code
from mpdoctor.checks.registry import check
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.project import AmpSite

FAMILY = "amp"
MAX_SITES = 4
# A condition that asks which torch this is (see version_test); a device's name is none of these.
VERSION_TEST = re.compile(
    r"version|hasattr|getattr|greater|less_than|older|newer|legacy|old_torch|torch_(?:ge|gt|le|lt)\b"
    r"|(?:ge|gt|le|lt)_\d|\d_\d|\(\s*\d+\s*,\s*\d+",
    re.IGNORECASE,
)
STEP_ARGUMENT = re.compile(r"\.step\(([^(),]+)[,)]")
# What torch 2.13 prints for each deprecated spelling (FutureWarning), and the call that replaces it.
DEPRECATED = {
    "torch.cuda.amp.autocast": "torch.amp.autocast('cuda', args...)",
    "torch.cpu.amp.autocast": "torch.amp.autocast('cpu', args...)",
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler('cuda', args...)",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.amp.GradScaler('cuda', args...)",
}


def _sites_lines(found: list[AmpSite]) -> list[str]:
    lines = [_code.where(site) for site in found[:MAX_SITES]]
    if len(found) > MAX_SITES:
        lines.append(f"... and {len(found) - MAX_SITES} more")
    return lines


def _by_scope(found: list[AmpSite]) -> dict[tuple[str, str], list[AmpSite]]:
    grouped: dict[tuple[str, str], list[AmpSite]] = {}
    for site in found:
        grouped.setdefault((site.file, site.scope), []).append(site)
    return grouped


@dataclass
class ScaledClip:
    """A clip that sees gradients GradScaler still has scaled: between ``scaled`` and ``stepping`` with no unscale_
    before it, or (``earlier``) before ``scaled`` in a function whose ``stepping`` does not run on every call, so
    the clip sees what the earlier calls' backward left scaled (gradient accumulation)."""

    scaled: AmpSite
    clip: AmpSite
    stepping: AmpSite
    scope: str
    calls: list[AmpSite] = field(default_factory=list)  # the calls of ``scope`` on the way to the clip
    earlier: bool = False
    unscale: Optional[AmpSite] = None  # the unscale_ before ``stepping``, for the fix of an earlier clip


def scaled_clips(found: list[AmpSite]) -> list[ScaledClip]:
    """The clips of scaled gradients (``ScaledClip``), in each function or the functions of its file it calls."""
    best: dict[tuple, ScaledClip] = {}
    for file_sites in _code.by_file(found).values():
        for scope in sorted({site.scope for site in file_sites}):
            for hazard in _scaled_clips_in(_code.in_order(file_sites, scope), scope):
                key = (hazard.clip.file, hazard.clip.line, hazard.scaled.line, hazard.stepping.line)
                if key not in best or len(hazard.calls) < len(best[key].calls):
                    best[key] = hazard
    return sorted(best.values(), key=lambda h: (h.clip.file, h.clip.line))


def _scaled_clips_in(run: list, scope: str) -> list[ScaledClip]:
    hazards = []
    unscales = [at for at, site, _, _ in run if site.kind == "unscale"]
    for b_at, scaled, b_conds, _ in run:
        if scaled.kind != "scale_backward":
            continue
        steps = [(at, s, c) for at, s, c, _ in run if s.kind == "step" and s.receiver == scaled.receiver and at > b_at]
        if not steps:
            continue
        s_at, stepping, s_conds = steps[0]
        for c_at, clip, c_conds, calls in run:
            if clip.kind != "clip" or _code.exclusive(b_conds, c_conds):
                continue
            if b_at < c_at < s_at:  # between the scaled backward and the step
                if any(b_at < u_at < c_at for u_at in unscales) or _code.exclusive(s_conds, c_conds):
                    continue
                hazards.append(ScaledClip(scaled, clip, stepping, scope, calls))
            elif c_at < b_at and _accumulates(b_conds, steps) and not _before(run, c_at):
                unscale = next((s for at, s, _, _ in run if s.kind == "unscale" and b_at < at < s_at), None)
                hazards.append(ScaledClip(scaled, clip, stepping, scope, calls, earlier=True, unscale=unscale))
    return hazards


def _accumulates(b_conds: list, steps: list) -> bool:
    """Whether the scaled backward can run without a step after it (`if should_step: scaler.step(...)`): its
    gradients then stay, scaled, for the next call."""
    return all(set(conds) - set(b_conds) for _, _, conds in steps)


def _before(run: list, c_at: tuple) -> bool:
    """Whether a backward, unscale_ or step runs before the clip in this function: then it clips those (a branch
    of its own, an fp32 path that returns), not what earlier calls left."""
    return any(at < c_at and s.kind in ("backward", "scale_backward", "unscale", "step") for at, s, _, _ in run)


@check(
    "AMP001",
    "clip-scaled-gradients",
    family=FAMILY,
    needs=("project",),
    fires_on=("amp-code-hazards",),
    quiet_on=("amp-fp16-no-scaler", "apex-amp-mixed", "oneflow-incident2"),
)
def clip_scaled_gradients(snap: Snapshot) -> Iterator[Finding]:
    """Your code clips gradients while GradScaler still has them scaled.

    ## Why it matters
    `scaler.scale(loss).backward()` leaves every gradient multiplied by the loss
    scale (65536 at the start). `clip_grad_norm_` between it and `scaler.step`
    then measures the scaled norm, far above any max_norm, and shrinks the
    gradients by that factor: after the step unscales them, the update is tiny or
    the clipping threshold means nothing. Training runs, and learns badly. A clip
    in a helper the training step calls counts where the call stands; so does a
    clip that runs before `scaler.scale(loss).backward()` in a step whose
    `scaler.step` runs only on some calls (gradient accumulation): it sees what
    the earlier calls' backward left scaled.

    ## Fix
    Call `scaler.unscale_(optimizer)` right before clipping, as torch's AMP
    examples do; `scaler.step` then knows they are unscaled and does not unscale
    again. With gradient accumulation, clip once per optimizer step, after
    `unscale_` and right before `scaler.step`.
    """
    hazards = scaled_clips(_code.sites(snap))
    if not hazards:
        return
    first = hazards[0]
    evidence = [snap.environment.project.where()]
    for hazard in hazards[:MAX_SITES]:
        evidence.append(_clip_evidence(hazard))
    if len(hazards) > MAX_SITES:
        evidence.append(f"... and {len(hazards) - MAX_SITES} more")
    clip = first.clip
    yield error(
        f"gradients are clipped while still scaled ({clip.file}:{clip.line}): the clip sees the loss scale, "
        "not the gradients",
        evidence,
        [_clip_fix(first)],
    )


def _via(hazard: ScaledClip) -> str:
    return f", called from {hazard.scope} at line {hazard.calls[0].line}" if hazard.calls else ""


def _clip_evidence(hazard: ScaledClip) -> str:
    s, st = hazard.scaled, hazard.stepping
    if hazard.earlier:
        return (
            f"{_code.where(hazard.clip)}{_via(hazard)}, runs before `{s.text}` (line {s.line}): it clips what that "
            f"backward left scaled in the earlier calls of {hazard.scope}, since `{st.text}` (line {st.line}) does "
            "not run on every call (gradient accumulation)"
        )
    return (
        f"{_code.where(hazard.clip)}{_via(hazard)} clips gradients that `{s.text}` (line {s.line}) scaled, with no "
        f"`{s.receiver}.unscale_(...)` before `{st.text}` (line {st.line})"
    )


def _clip_fix(hazard: ScaledClip) -> FixStep:
    """Where unscale_ goes: before the clip, or before the call that clips; an earlier clip moves after it."""
    clip, stepping = hazard.clip, hazard.stepping
    unscale = f"{hazard.scaled.receiver}.unscale_({_optimizer(stepping)})"
    call = hazard.calls[0] if hazard.calls else None
    what = f"the call at line {call.line} (`{call.text}`)" if call else f"`{clip.text}` (line {clip.line})"
    if hazard.earlier:
        if call:
            what = f"the clip (`{clip.text}`, line {clip.line}, which the call at line {call.line} reaches)"
        after = hazard.unscale
        where = f"after `{after.text}` (line {after.line})" if after else f"after a `{unscale}` you insert"
        return FixStep(
            f"In {stepping.file}, clip once per optimizer step, on unscaled gradients: move {what} {where}, right "
            f"before `{stepping.text}` (line {stepping.line})"
        )
    if call:
        return FixStep(
            f"In {stepping.file}, insert `{unscale}` on the line before {call.line} (`{call.text}`, which reaches "
            f"the clip at line {clip.line})"
        )
    return FixStep(f"In {clip.file}, insert `{unscale}` on the line before {clip.line} (`{clip.text}`)")


def _optimizer(stepping: AmpSite) -> str:
    """The optimizer ``scaler.step(...)`` is given in the code, for the fix; "optimizer" when it cannot tell."""
    match = STEP_ARGUMENT.search(stepping.text)
    return match.group(1).strip() if match else "optimizer"


def _fp16(site: AmpSite) -> bool:
    """autocast in float16: asked for, or the default of CUDA autocast (torch.cuda.amp.autocast, device "cuda")."""
    return site.dtype == "float16" or (not site.dtype and site.device == "cuda")


@check(
    "AMP002",
    "fp16-autocast-without-scaler",
    family=FAMILY,
    needs=("project",),
    fires_on=("amp-fp16-no-scaler",),
    quiet_on=("amp-code-hazards", "apex-amp-mixed", "oneflow-incident2"),
)
def fp16_without_scaler(snap: Snapshot) -> Iterator[Finding]:
    """Your code trains under fp16 autocast with no GradScaler anywhere.

    ## Why it matters
    In float16, gradients smaller than about 6e-8 flush to zero and larger ones
    lose precision: without loss scaling small gradients vanish and the model
    trains worse than in fp32, silently. CUDA autocast's default dtype is
    float16. Only a function that both enters fp16 autocast and calls a plain
    `.backward()` counts, and only when the project has no GradScaler, no
    `scaler.scale(...)` and no apex.amp (which scale for you).

    ## Fix
    Scale the loss with `torch.amp.GradScaler("cuda")`: `scaler.scale(loss)
    .backward()`, `scaler.step(optimizer)`, `scaler.update()`; or train in
    bfloat16 (`dtype=torch.bfloat16`), which needs no scaling.
    """
    found = _code.sites(snap)
    if any(s.kind in ("grad_scaler", "scale_backward") or s.kind == "apex_amp" for s in found):
        return
    hits = []
    for steps in _by_scope(found).values():
        casts = [s for s in steps if s.kind == "autocast" and _code.on(s) and _fp16(s)]
        backward = [s for s in steps if s.kind == "backward"]
        if casts and backward:
            hits.append((casts[0], backward[0]))
    if not hits:
        return
    cast, back = hits[0]
    evidence = [snap.environment.project.where()]
    for c, b in hits[:MAX_SITES]:
        evidence += [f"fp16 autocast: {_code.where(c)}", f"  backward: {_code.where(b)}"]
    yield warning(
        f"{cast.file}:{cast.line} trains under fp16 autocast with no GradScaler: small gradients flush to zero",
        evidence,
        [
            FixStep(
                f'In {cast.scope or cast.file}, build `scaler = torch.amp.GradScaler("cuda")` once and replace '
                f"`{back.text}` with `scaler.scale({back.receiver}).backward()`, then `scaler.step(optimizer)` and "
                "`scaler.update()` instead of `optimizer.step()`"
            ),
            FixStep("Or train in bfloat16 (`dtype=torch.bfloat16` in the autocast), which needs no loss scaling"),
        ],
    )


@check(
    "AMP003",
    "grad-scaler-with-bf16",
    family=FAMILY,
    needs=("project",),
    fires_on=("amp-code-hazards",),
    quiet_on=("amp-fp16-no-scaler", "apex-amp-mixed"),
)
def scaler_with_bf16(snap: Snapshot) -> Iterator[Finding]:
    """Your code builds a GradScaler for bfloat16 training, which needs none.

    ## Why it matters
    bfloat16 has float32's exponent range: gradients do not underflow, so loss
    scaling buys nothing. The scaler still costs an inf/NaN check of every
    gradient each step, and skips steps it thinks overflowed. Reported only when
    every autocast in the project is bfloat16 by a constant, and the scaler is
    on by a constant.

    ## Fix
    Drop the GradScaler (or build it with `enabled=False`) and call
    `loss.backward()` and `optimizer.step()` directly.
    """
    found = _code.sites(snap)
    casts = [s for s in found if s.kind == "autocast" and _code.on(s)]
    if not casts or any(s.dtype != "bfloat16" for s in casts):
        return
    scalers = [s for s in found if s.kind == "grad_scaler" and not s.enabled and not s.reference]
    if not scalers:
        return
    yield info(
        f"{scalers[0].file}:{scalers[0].line} builds a GradScaler, but every autocast here is bfloat16, "
        "which needs no loss scaling",
        [snap.environment.project.where()]
        + [f"GradScaler: {line}" for line in _sites_lines(scalers)]
        + [f"bfloat16 autocast: {line}" for line in _sites_lines(casts)],
        [
            FixStep(
                f"At {scalers[0].file}:{scalers[0].line} build it with `enabled=False` (or drop it and call "
                "loss.backward() and optimizer.step() directly)"
            )
        ],
    )


def _fallback(site: AmpSite, every: list[AmpSite]) -> bool:
    """Whether ``site`` is the old spelling kept for an old torch beside the new one, on a path that excludes it:
    the new spelling for the same device (`try: torch.amp.GradScaler("cuda") except AttributeError:
    torch.cuda.amp.GradScaler()`), or for a device it does not name when what keeps them apart is a version test
    (``version_test``). Branches on a device choice are no fallback: `torch.amp.GradScaler("xpu")` on the XPU
    branch leaves `torch.cuda.amp.GradScaler()` what every CUDA run builds."""
    mine = _code.conditions(site.guards)
    device = _old_device(site)
    for other in every:
        if other.kind != site.kind or other.what in DEPRECATED or (other.file, other.scope) != (site.file, site.scope):
            continue
        apart = _code.separating(mine, _code.conditions(other.guards))
        if not apart:
            continue
        if other.device == device or (not other.device and any(version_test(text) for text in apart)):
            return True
    return False


def _old_device(site: AmpSite) -> str:
    """The device a deprecated spelling is for: torch.cuda.amp.* CUDA, torch.cpu.amp.* the CPU."""
    return "cuda" if ".cuda." in site.what else "cpu" if ".cpu." in site.what else site.device


def version_test(text: str) -> bool:
    """Whether a condition asks which torch this is: a try around the new spelling (<try>), hasattr/getattr, a
    version (`torch.__version__`, `is_torch_version(">=", "2.4")`, `TORCH_GE_2_4`, `OLD_TORCH`)."""
    return text == "<try>" or bool(VERSION_TEST.search(text))


@check(
    "AMP004",
    "deprecated-torch-cuda-amp",
    family=FAMILY,
    needs=("project",),
    fires_on=("amp-code-hazards",),
    quiet_on=("amp-fp16-no-scaler", "apex-amp-mixed", "oneflow-incident2"),
)
def deprecated_spellings(snap: Snapshot) -> Iterator[Finding]:
    """Your code calls the deprecated `torch.cuda.amp.autocast`/`GradScaler` (or `torch.cpu.amp.autocast`).

    ## Why it matters
    torch 2.4 deprecated them: each call prints a FutureWarning, e.g.
    "`torch.cuda.amp.autocast(args...)` is deprecated. Please use
    `torch.amp.autocast('cuda', args...)` instead.", and a later torch may
    remove them. Spellings through imports count too (`from torch.cuda import
    amp`, `from torch.cuda.amp import autocast`). A fallback for an old torch
    beside the new spelling is no use of them: the new spelling for the same
    device on a path that excludes it, or for a device given at run time when a
    version test keeps them apart (try/except, `hasattr`, a version). A branch on
    the device (`torch.amp.GradScaler("xpu")` for XPU, `torch.cuda.amp.GradScaler()`
    for CUDA) is no fallback: every CUDA run builds the deprecated one.

    ## Fix
    Use `torch.amp.autocast("cuda", ...)` and `torch.amp.GradScaler("cuda", ...)`
    (`"cpu"` for torch.cpu.amp), with the same arguments.
    """
    every = _code.sites(snap)
    found = [s for s in every if s.what in DEPRECATED and not _fallback(s, every)]
    if not found:
        return
    spellings = sorted({s.what for s in found})
    yield info(
        f"your code uses the deprecated {', '.join(spellings)} ({len(found)} place{'s' if len(found) > 1 else ''})",
        [snap.environment.project.where()] + _sites_lines(found),
        [FixStep(f"Replace `{what}(args...)` with `{DEPRECATED[what]}`") for what in spellings],
    )
