"""precision, part three: torch's AMP machinery (autocast and GradScaler) measured on each device."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.checks._kernels import FAILED, FAMILY, LOW
from mpdoctor.findings import Finding, FixStep, error, warning
from mpdoctor.analysis.kernel_view import is_gpu, label, measured, result, short
from mpdoctor.checks.registry import check
from mpdoctor.snapshot import Snapshot


@check(
    "PREC007",
    "autocast-unexpected-dtype",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-cpu-old-torch",),
    quiet_on=("cpu-kernels", "kernels-h100"),
)
def autocast_unexpected_dtype(snap: Snapshot) -> Iterator[Finding]:
    """`torch.autocast` does not produce the dtype it promises, or refuses the dtype.

    ## Why it matters
    Under `torch.autocast(device, dtype=X)`, `Linear` and `matmul` run in X:
    that is the speed-up. When torch cannot autocast to X on that device it
    warns once ("CPU Autocast only supports dtypes of torch.bfloat16,
    torch.float16 currently", "... Disabling autocast") and runs everything in
    fp32; training then looks like mixed precision and is not.

    ## Fix
    Autocast to a dtype this device and torch support (bf16 on CPUs; fp16 on
    GPUs before Ampere), or upgrade torch.
    """
    for device in measured(snap):
        for dtype in LOW:
            r = result(device, "autocast", dtype)
            if r is None or r.status not in FAILED + ("wrong",):
                continue
            kind = "cuda" if is_gpu(device) else "cpu"
            other = "bfloat16" if dtype == "float16" else "float16"
            alternative = result(device, "autocast", other)
            steps = []
            if alternative is not None and alternative.status == "ok":
                steps.append(
                    FixStep(
                        f"Autocast to {short(other)} on {label(device)}: "
                        f'torch.autocast("{kind}", dtype=torch.{other}) works'
                    )
                )
            steps.append(
                FixStep(
                    "Upgrade torch: older releases autocast only to bf16 on the CPU"
                    if kind == "cpu" and dtype == "float16"
                    else "Upgrade torch"
                )
            )
            produced = ", ".join(f"{op} -> {got}" for op, got in sorted(r.output_dtypes.items()))
            yield warning(
                f'torch.autocast("{kind}", dtype=torch.{dtype}) does not run in {short(dtype)} on {label(device)}',
                [r.detail or r.status] + ([f"outputs: {produced}"] if produced else []),
                steps,
            )


@check(
    "PREC008",
    "grad-scaler-step-fails",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-faulty-gpu",),
    quiet_on=("kernels-a100", "kernels-h100"),
)
def grad_scaler_step_fails(snap: Snapshot) -> Iterator[Finding]:
    """One fp16 training step with `GradScaler` overflows or fails on a model that cannot overflow.

    ## Why it matters
    The test model has tiny weights and inputs: its scaled gradients stay far
    below fp16's limit at the default scale of 65536. An overflow, a non-finite
    loss or a shrinking scale there means fp16 arithmetic on the device is
    broken, and real training will skip steps or diverge.

    ## Fix
    Train in bf16 (no loss scaling needed) or fp32 on that device until torch
    and the driver are updated; if it raised, the error names what is missing.
    """
    for device in measured(snap):
        r = result(device, "grad_scaler", "float16")
        if r is None or r.status not in FAILED + ("wrong",):
            continue
        facts = [
            f"loss finite: {r.loss_finite}",
            f"gradients finite: {r.grads_finite}",
            f"scale {r.scale_before:g} -> {r.scale_after:g}"
            if r.scale_before is not None and r.scale_after is not None
            else "",
        ]
        evidence = [r.detail] + [f for f in facts if f and "None" not in f]
        bf16 = result(device, "matmul", "bfloat16")
        steps = [
            FixStep(f"Train in bf16 on {label(device)}: its matmul ran correctly")
            if bf16 is not None and bf16.status == "ok"
            else FixStep(f"Train in fp32 on {label(device)}"),
            FixStep("Update torch and the NVIDIA driver, then run `mpdoctor check` again"),
        ]
        make = error if r.status == "wrong" else warning
        what = "overflowed" if r.status == "wrong" else "failed"
        yield make(f"An fp16 GradScaler training step {what} on {label(device)}", evidence, steps)
