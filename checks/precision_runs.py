"""precision, part one: does each dtype run on each device, correctly, without killing the process.

Judged from the live microkernels (``mpdoctor.probes.remote.kernel_suite``): an op in a
dtype on a device either ran and matched a float64 reference, raised, gave wrong
numbers, or took its worker process down.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from mpdoctor.checks import fixes
from mpdoctor.checks._common import arch_fix_steps
from mpdoctor.checks._kernels import (
    FAILED,
    FAMILY,
    LOW,
    NO_KERNEL_IMAGE,
    NUMERIC_OPS,
    missing_images,
    no_kernel_image,
    own_failure,
    sdpa_runs,
    sdpa_tried,
    use_instead,
)
from mpdoctor.findings import Finding, FixStep, error, info, warning
from mpdoctor.analysis.kernel_view import capability, is_gpu, label, measured, short, kernel_name
from mpdoctor.checks.registry import check, defer
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot


def _failures(device: DeviceKernels) -> list[KernelResult]:
    """Numeric ops that raised, other than for a missing kernel image (PREC002).

    An SDPA dtype counts once, and only when no backend at all ran it; a single
    backend refusing is PREC006's business.
    """
    out = [
        r
        for r in device.results
        if r.op in NUMERIC_OPS
        and not r.backend
        and r.status in FAILED
        and not no_kernel_image(r)
        and not own_failure(r.detail)
    ]
    for dtype in LOW:
        tried = sdpa_tried(device, dtype)
        if tried and not sdpa_runs(device, dtype) and not any(no_kernel_image(r) for r in tried):
            failed = [r for r in tried if r.status in FAILED]
            if failed:
                out.append(failed[-1])  # the math backend's error: the last resort's reason
    return out


@check(
    "PREC001",
    "precision-does-not-run",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-cpu-old-torch",),
    quiet_on=("kernels-missing-arch", "kernels-faulty-gpu", "cpu-kernels"),
)
def precision_does_not_run(snap: Snapshot) -> Iterator[Finding]:
    """An op raises in a dtype on a device (matmul, conv2d, layer_norm, softmax, attention).

    ## Why it matters
    Mixed precision routes these ops through the low-precision kernels: a model
    that trains in fp32 fails at its first step in fp16 or bf16, with errors such
    as `"addmm_impl_cpu_" not implemented for 'Half'` (fp16 on the CPU before
    torch 2.2) or cuBLAS/cuDNN "not supported" errors for bf16 on GPUs before
    Ampere.

    ## Fix
    Use a dtype that runs on that device (the finding names the fastest one that
    did), or move the work to a device that supports it; for fp16 on the CPU,
    upgrade torch.

    A failure with "no kernel image is available" is not this check's: it is
    PREC002 (measured) and TORCH007 (predicted from the arch list).
    """
    for device in measured(snap):
        by_dtype: dict[str, list[KernelResult]] = defaultdict(list)
        for r in _failures(device):
            by_dtype[r.dtype].append(r)
        for dtype, failed in by_dtype.items():
            ops = ", ".join(r.op for r in failed)
            title = f"{short(dtype)} does not run on {label(device)}: {ops}"
            evidence = [f"{kernel_name(r)}: {r.detail}" for r in failed]
            advice = dict.fromkeys(use_instead(snap, device, r.op, dtype) for r in failed)
            steps = [FixStep(text) for text in advice if text]
            if not is_gpu(device) and dtype == "float16":
                steps.append(FixStep("torch 2.2 and newer run fp16 matmul and conv on the CPU: upgrade torch"))
            make = warning if dtype == "float8_e4m3fn" else error
            yield make(title, evidence, steps or [FixStep(f"Avoid {short(dtype)} on {label(device)}")])


@check(
    "PREC002",
    "no-kernel-image",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-missing-arch",),
    quiet_on=("v100-cu130", "kernels-cpu-old-torch", "kernels-faulty-gpu"),
)
def no_kernel_image_found(snap: Snapshot) -> Iterator[Finding]:
    """A kernel failed with "no kernel image is available for execution on the device".

    ## Why it matters
    The torch build has no GPU code for this GPU's architecture (or for some of
    its ops), so everything that needs those kernels fails. This is the measured
    form of TORCH007, which predicts it from the build's arch list.

    ## Fix
    Install the same torch version built for a CUDA version that includes this
    GPU's architecture (the finding picks one from torch's own release table).
    """
    for device, where in missing_images(snap):
        cc = capability(snap, device)
        arch = f"sm_{cc}" if cc else "its architecture"
        yield error(
            f"torch {snap.torch.version or '(unknown version)'} has no kernel image for {label(device)}",
            [f"failed: {', '.join(where)}", f"torch.cuda.get_arch_list() = {snap.torch.arch_list}: no code for {arch}"],
            arch_fix_steps(snap, [cc] if cc else []),
        )


@check(
    "PREC003",
    "wrong-results",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-faulty-gpu",),
    quiet_on=("kernels-a100", "kernels-h100", "kernels-cpu-old-torch"),
)
def wrong_results(snap: Snapshot) -> Iterator[Finding]:
    """An op gives results outside its dtype's tolerance, or inf/NaN, on a device.

    ## Why it matters
    The kernel runs but computes the wrong numbers: losses that drift or turn
    NaN for no reason in the model. Causes seen in the wild: a torch or cuBLAS
    bug for one architecture, a mismatched driver, failing GPU memory, an
    unstable overclock.

    ## Fix
    Avoid that dtype on that device until it is fixed; update the NVIDIA driver
    and torch; check the GPU's memory errors with `nvidia-smi -q -d ECC`.
    """
    for device in measured(snap):
        wrong = [r for r in device.results if r.op in NUMERIC_OPS and r.status == "wrong"]
        if not wrong:
            continue
        names = sorted({f"{short(r.dtype)} {r.op}" for r in wrong})
        evidence = [
            f"{kernel_name(r)}: {r.detail}"
            + (
                f" (max error {r.max_rel_error:.3g}, tolerance {r.tolerance:g})"
                if r.max_rel_error is not None and r.tolerance
                else ""
            )
            for r in wrong
        ]
        steps = [FixStep(f"Do not train in these dtypes on {label(device)} until fixed")]
        if is_gpu(device):
            steps += [
                fixes.inspect("Look for memory errors on the GPU", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
                FixStep("Update the NVIDIA driver and torch, then run `mpdoctor check` again"),
            ]
        else:
            steps.append(FixStep("Update torch, then run `mpdoctor check` again"))
        yield error(f"Wrong results on {label(device)}: {', '.join(names)}", evidence, steps)


@check(
    "PREC009",
    "kernel-worker-failed",
    family=FAMILY,
    superseded_by=("TORCH011",),  # a torch that imports but is no torch: the kernels could not run, TORCH011 says why
    defers_to=("PREC002", "TORCH007"),
    needs=("kernels",),
    fires_on=("kernels-faulty-gpu",),
    quiet_on=("kernels-skipped", "kernels-a100", "h200-fork-refused"),
)
def kernel_worker_failed(snap: Snapshot) -> Iterator[Finding]:
    """A microkernel crashed or hung its worker process, or a device could not start at all.

    ## Why it matters
    A kernel that kills the process (a segfault, an abort in a CUDA library) or
    never returns will do the same inside training, usually with far less to go
    on. mpdoctor ran each device in its own process and went on past the bad
    test, so the other results still stand.

    ## Fix
    Avoid the named op and dtype on that device; update torch and the NVIDIA
    driver. A device that cannot start (busy, out of memory, in exclusive mode
    held by another process) needs that cleared first: see `nvidia-smi`. One
    that cannot start for want of a kernel image is PREC002's (or TORCH007's),
    unless those are ignored.
    """
    kernels = snap.kernels
    if snap.torch.status in ("missing", "import-error", "import-crashed", "import-timeout"):
        return  # torch itself is missing, fails, crashes or hangs on import: the TORCH checks say why, not this
    if kernels.status == "error":
        yield warning(
            f"The precision microkernels did not finish: {kernels.detail}",
            [f"kernel runner: {kernels.probe.status} {kernels.probe.detail}".rstrip()]
            + ([kernels.probe.stderr_tail[-600:]] if kernels.probe.stderr_tail else []),
            [FixStep("Run again with more time", fixes.mpdoctor_check(snap, timeout=fixes.more_time(snap, 180)))],
        )
    for device in measured(snap):
        if device.status in ("crashed", "timeout", "error") and not device.results:
            if own_failure(device.detail):
                continue  # mpdoctor could not measure it, the device did not fail: MPD003 (judge) says so
            if NO_KERNEL_IMAGE in device.detail:
                # PREC002 (measured) or TORCH007 (predicted) names the cause and the build to install; this
                # speaks when neither is selected or fires.
                cc = capability(snap, device)
                yield defer(
                    error(
                        f"Could not start {label(device)} to run kernels: torch has no kernel image for it",
                        [f"{device.device}: {device.status}: {device.detail}"],
                        arch_fix_steps(snap, [cc] if cc else []),
                    ),
                    "PREC002",
                    "TORCH007",
                )
                continue
            if device.device == "cpu":  # no GPU to hold: torch itself could not run on the CPU
                steps = [
                    fixes.inspect(
                        "See whether this torch runs at all: an incomplete or half-removed install imports, then "
                        "fails at its first op; if so, reinstall the same version from the index it came from",
                        fixes.command(
                            snap.python_command(),
                            "-c",
                            "import torch; print(torch.__version__, torch.ones(2) @ torch.ones(2))",
                        ),
                    )
                ]
            else:
                steps = [fixes.inspect("See what holds the GPU or why it fails", "nvidia-smi")]
            yield error(
                f"Could not start {label(device)} to run kernels: {device.detail}",
                [f"{device.device}: {device.status}"],
                steps,
            )
            continue
        killed = [r for r in device.results if r.status in ("crashed", "timeout") and not own_failure(r.detail)]
        if not killed:
            continue
        crashed = [r for r in killed if r.status == "crashed"]
        names = ", ".join(f"{short(r.dtype)} {r.op}{'/' + r.backend if r.backend else ''} {r.status}" for r in killed)
        evidence = [f"{kernel_name(r)}: {r.detail}" for r in killed]
        evidence.append(
            f"worker restarted {device.restarts} time(s); device run ended: {device.status}"
            + (f" ({device.detail})" if device.detail else "")
        )
        make = error if crashed else warning
        yield make(
            f"Kernels killed their process on {label(device)}: {names}",
            evidence,
            [FixStep("Avoid these ops in these dtypes on this device; update torch and the NVIDIA driver")],
        )


@check(
    "PREC010",
    "kernels-not-run",
    family=FAMILY,
    needs=("kernels",),
    fires_on=("kernels-skipped", "oneflow-pypi-cpu"),
    quiet_on=("cpu-laptop", "torch-missing", "cpu-kernels"),
)
def kernels_not_run(snap: Snapshot) -> Iterator[Finding]:
    """The precision microkernels were skipped, so precision support is predicted, not measured.

    ## Why it matters
    Without them mpdoctor only knows what the hardware and torch claim; it
    cannot tell a dtype that is emulated, slow, wrong, or missing kernels.

    ## Fix
    Run `mpdoctor check` without `--no-kernels`.
    """
    if snap.kernels.status == "skipped":
        yield info(
            "Precision was predicted, not measured: the microkernels were skipped",
            [f"kernels: {snap.kernels.detail}"],
            [fixes.inspect("Measure it", fixes.mpdoctor_check(snap, kernels=True))],  # measuring changes nothing
        )
