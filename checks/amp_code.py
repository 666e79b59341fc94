"""torch AMP in your code: gradients clipped while still scaled, fp16 training without a scaler, a scaler bf16 does
not need, and the deprecated torch.cuda.amp spellings. Read from the project scan's code paths (``_code``)."""

from __future__ import annotations

import re
from typing import Iterator

from mpdoctor.checks import _code
from mpdoctor.checks.registry import check
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.snapshot import Snapshot
from mpdoctor.snapshot.project import AmpSite

FAMILY = "amp"
MAX_SITES = 4
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


def scaled_clips(found: list[AmpSite]) -> list[tuple[AmpSite, AmpSite, AmpSite]]:
    """(scale(...).backward(), clip, step) in one function, in that order, with no unscale_ before the clip."""
    hazards = []
    for steps in _by_scope(found).values():
        steps = sorted(steps, key=lambda site: site.line)
        for scaled in (site for site in steps if site.kind == "scale_backward"):
            stepping = next(
                (s for s in steps if s.kind == "step" and s.receiver == scaled.receiver and s.line > scaled.line),
                None,
            )
            if stepping is None:
                continue
            for clip in steps:
                if clip.kind != "clip" or not scaled.line < clip.line < stepping.line:
                    continue
                if any(s.kind == "unscale" and scaled.line < s.line < clip.line for s in steps):
                    continue
                conds = _code.conditions(clip.guards)
                if _code.exclusive(_code.conditions(scaled.guards), conds) or _code.exclusive(
                    _code.conditions(stepping.guards), conds
                ):
                    continue
                hazards.append((scaled, clip, stepping))
    return hazards


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
    the clipping threshold means nothing. Training runs, and learns badly.

    ## Fix
    Call `scaler.unscale_(optimizer)` right before clipping, as torch's AMP
    examples do; `scaler.step` then knows they are unscaled and does not unscale
    again.
    """
    hazards = scaled_clips(_code.sites(snap))
    if not hazards:
        return
    scaled, clip, stepping = hazards[0]
    evidence = [snap.environment.project.where()]
    for s, c, st in hazards[:MAX_SITES]:
        evidence.append(
            f"{_code.where(c)} clips gradients that `{s.text}` (line {s.line}) scaled, with no "
            f"`{s.receiver}.unscale_(...)` before `{st.text}` (line {st.line})"
        )
    if len(hazards) > MAX_SITES:
        evidence.append(f"... and {len(hazards) - MAX_SITES} more")
    unscale = f"{scaled.receiver}.unscale_({_optimizer(stepping)})"
    yield error(
        f"gradients are clipped while still scaled ({clip.file}:{clip.line}): the clip sees the loss scale, "
        "not the gradients",
        evidence,
        [FixStep(f"In {clip.file}, insert `{unscale}` on the line before {clip.line} (`{clip.text}`)")],
    )


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
    """Whether ``site`` is the old spelling beside the new one, on a path that excludes it (`try: torch.amp...
    except AttributeError: torch.cuda.amp...`, an if/else on the torch version): kept for old torch, not a use."""
    mine = _code.conditions(site.guards)
    return any(
        other.kind == site.kind
        and other.what not in DEPRECATED
        and (other.file, other.scope) == (site.file, site.scope)
        and _code.exclusive(mine, _code.conditions(other.guards))
        for other in every
    )


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
    amp`, `from torch.cuda.amp import autocast`).

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
