"""The kernel results judged once, for the report: each test's verdict and the capability matrix.

:func:`kernel_table` builds the report's ``kernels`` (the types in ``kernel_table.py``) from
the snapshot, with :func:`judge_kernel` giving each test its speed class and accuracy
(``kernel_view`` holds the lookups and the speed rules themselves); the JSON and the
renderers read that table and judge nothing.
"""

from __future__ import annotations

import math
from typing import Optional

from mpdoctor.analysis.kernel_table import KernelDevice, KernelRow, KernelVerdict, KernelView
from mpdoctor.analysis.kernel_view import (
    busy_cpu,
    disturbance,
    hardware_level,
    is_gpu,
    kernel_name,
    label,
    measured,
    result,
    short,
    speed,
    speed_of,
    speed_verdict,
    speedup,
    threshold,
)
from mpdoctor.probes.remote.kernel_measure import CONCLUSIVE_ROUNDS, kernel_key
from mpdoctor.snapshot import DeviceKernels, KernelResult, Snapshot


COLUMNS = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn")
ROWS = (
    ("matmul", ""),
    ("conv2d", ""),
    ("layer_norm", ""),
    ("softmax", ""),
    ("sdpa", ""),
    ("sdpa", "flash"),
    ("sdpa", "efficient"),
    ("sdpa", "cudnn"),
    ("sdpa", "math"),
    ("autocast", ""),
    ("grad_scaler", ""),
)
WORDS = {
    "unsupported": "fails",
    "error": "fails",
    "wrong": "WRONG",
    "crashed": "crash",
    "timeout": "hang",
    "skipped": "-",
}
ACCURACY = {"ok": "ok", "wrong": "wrong", "": ""}  # a test's status as its accuracy; any other: "unchecked"
UNTIMED = ("autocast", "grad_scaler")  # tests of what torch does, not of a kernel's speed
EMPTY = ("", "-")  # cells with nothing to say: a row or column of only these is left out


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def _finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def judge_kernel(snap: Snapshot, device: DeviceKernels, r: KernelResult) -> KernelVerdict:
    """What one test came to: its accuracy, its speed class against fp32 with the spread, and its matrix cell."""
    v = KernelVerdict(
        op=r.op,
        dtype=r.dtype,
        backend=r.backend,
        test=kernel_key(r.op, r.dtype, r.backend),
        status=r.status,
        accuracy=ACCURACY.get(r.status, "unchecked"),
        max_rel_error=r.max_rel_error,
        tolerance=r.tolerance,
        hardware=hardware_level(snap, device, r.dtype),
    )
    if r.status != "ok":
        v.cell = WORDS.get(r.status, r.status)
        return v
    if r.op in UNTIMED or not r.seconds:
        v.cell = "ok"
        return v
    if r.dtype == "float32" and not r.backend:  # the baseline: its cell is a time per call, not a ratio
        busy = r.rounds == 0 and bool(r.rounds_disturbed)
        why = disturbance(snap, device)
        if not why and r.rounds is not None and r.rounds < CONCLUSIVE_ROUNDS and not is_gpu(device):
            why = busy_cpu(device, r)
        # Every round disturbed: the time is the machine's, not the kernel's, and the cell says so.
        v.cell = ("busy " if busy else "") + _time(r.seconds)
        v.speed, v.conclusive, v.why = "baseline", not why, why
        return v
    s = speed_of(snap, device, r)
    if s is None or _finite(s.ratio) is None:  # no fp32 of the same op to compare with
        v.cell = "ok"
        return v
    v.ratio, v.ratio_low, v.ratio_high, v.rounds = s.ratio, _finite(s.low), _finite(s.high), s.rounds
    v.line = threshold(snap, device, r)
    word, why = speed_verdict(snap, device, r, s)
    if word == "inconclusive":
        v.cell, v.speed, v.conclusive, v.why = "inconclusive", "inconclusive", False, why
        return v
    v.cell = ("slow " if word == "slow" else "") + speed(s.ratio)
    if word:
        v.speed = "fast" if word == "fine" and s.low > 1.0 else word
        v.conclusive = True
    return v


def _matrix(verdicts: list[KernelVerdict]) -> tuple[list[str], list[KernelRow]]:
    """The dtypes and rows (op x dtype) of one device's matrix; rows and columns with nothing to say left out."""
    cells = {(v.op, v.dtype, v.backend): v.cell for v in verdicts}
    rows = []
    for op, backend in ROWS:
        row = [cells.get((op, dtype, backend), "") for dtype in COLUMNS]
        if any(c not in EMPTY for c in row):
            rows.append(KernelRow(op=op, backend=backend, name=f"{op} {backend}".strip().replace("_", " "), cells=row))
    keep = [i for i in range(len(COLUMNS)) if any(row.cells[i] not in EMPTY for row in rows)]
    for row in rows:
        row.cells = [row.cells[i] for i in keep]
    return [COLUMNS[i] for i in keep], rows


def matrix(snap: Snapshot, device: DeviceKernels) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of one device's matrix as drawn: ``["op", "fp32", ...]``, ``["matmul", "477 us", ...]``."""
    dtypes, rows = _matrix([judge_kernel(snap, device, r) for r in device.results])
    return ["op"] + [short(d) for d in dtypes], [[row.name] + row.cells for row in rows]


def _word(v: Optional[KernelVerdict]) -> str:
    """A cell without its number: what ran, what was slow, what failed, what is in doubt."""
    if v is None:
        return ""
    if v.speed == "baseline":
        return "busy" if v.cell.startswith("busy ") else "ok"
    return "ok" if v.speed in ("fast", "fine") else ("slow" if v.speed == "slow" else v.cell)


def _words(d: KernelDevice) -> list[list[str]]:
    """A device's matrix without its numbers: two GPUs whose words agree are drawn as one."""
    judged = {(v.op, v.dtype, v.backend): v for v in d.verdicts}
    return [[row.name] + [_word(judged.get((row.op, dtype, row.backend))) for dtype in d.dtypes] for row in d.rows]


def kernel_table(snap: Snapshot) -> KernelView:
    """Every measured device's verdicts and matrix, and the notes on what is missing or in doubt.

    Eight identical GPUs make one matrix: the first one's numbers, the others
    naming it in ``same_as``, when every cell says the same thing (ok, slow, fails, ...).
    """
    view = KernelView()
    drawn: list[tuple[DeviceKernels, KernelDevice]] = []  # devices whose matrix is drawn, for the twins after them
    for device in measured(snap):
        verdicts = [judge_kernel(snap, device, r) for r in device.results]
        dtypes, rows = _matrix(verdicts)
        d = KernelDevice(device=device.device, label=label(device), dtypes=dtypes, rows=rows, verdicts=verdicts)
        view.devices.append(d)
        if not rows:
            continue  # nothing ran: a note says why
        for shown, known in drawn:
            if (
                (shown.name, shown.compute_capability) == (device.name, device.compute_capability)
                and known.dtypes == dtypes
                and _words(known) == _words(d)
            ):
                d.same_as = known.device
                break
        else:
            drawn.append((device, d))
    view.notes = kernel_notes(snap, {d.device: d.verdicts for d in view.devices})
    return view


def kernel_notes(snap: Snapshot, verdicts: Optional[dict[str, list[KernelVerdict]]] = None) -> list[str]:
    """Why the matrix is missing or incomplete, in a line each; ``verdicts``: each device's, when judged already."""
    kernels = snap.kernels
    if kernels.status == "skipped":
        return [f"Precision microkernels: skipped ({kernels.detail or '--no-kernels'})"]
    if kernels.status == "not-run":
        return [f"Precision microkernels: not run: {kernels.detail or 'none in this snapshot'}"]
    notes = [f"Precision microkernels ({kernels.mode}): {kernels.detail}"] if kernels.status == "error" else []
    for device in kernels.devices:
        if device.status != "ok":
            notes.append(f"{device.device}: {device.status}{': ' + device.detail if device.detail else ''}")
        judged = verdicts.get(device.device) if verdicts is not None else None
        if judged is None:
            judged = [judge_kernel(snap, device, r) for r in device.results]
        unsure = [v for v in judged if v.speed == "inconclusive"]
        if unsure:
            reasons = list(dict.fromkeys(v.why for v in unsure))
            notes.append(
                f"{device.device}: {len(unsure)} speed ratio{'s' if len(unsure) > 1 else ''} "
                f"inconclusive: {reasons[0]}" + (f" (and {len(reasons) - 1} more reasons)" if len(reasons) > 1 else "")
            )
        rounds = rounds_note(device)
        if rounds:
            notes.append(f"{device.device}: {rounds}")
        if device.load.budget_exhausted:
            notes.append(
                f"{device.device}: the timings did not settle; extra rounds stopped at their budget "
                f"({device.load.extra_seconds:.2g} s)"
            )
    return notes


def rounds_note(device: DeviceKernels) -> str:
    """How many of its timing rounds each speed ratio rests on, when any round was disturbed; "" otherwise.

    ``undisturbed timing rounds behind each speed ratio: matmul 0 of 9; conv2d, softmax 25 of 30``: an op whose
    dtypes differ is named per kernel. A quiet run (every round undisturbed, or GPU rounds timed by CUDA events)
    has nothing to add to the matrix.
    """
    counts: dict[str, dict[str, tuple[int, int]]] = {}  # op -> kernel name -> (undisturbed, of how many)
    for r in device.results:
        base = result(device, r.op, "float32")
        if r is base or base is None or r.rounds is None or base.rounds is None or speedup(device, r) is None:
            continue
        total = max(r.rounds + (r.rounds_disturbed or 0), base.rounds + (base.rounds_disturbed or 0))
        counts.setdefault(r.op, {})[kernel_name(r)] = (min(r.rounds, base.rounds), total)
    if not any(u < t for per_op in counts.values() for u, t in per_op.values()):
        return ""
    groups: dict[tuple[int, int], list[str]] = {}
    for op, per_kernel in counts.items():
        if len(set(per_kernel.values())) == 1:
            groups.setdefault(next(iter(per_kernel.values())), []).append(op.replace("_", " "))
        else:
            for name, pair in per_kernel.items():
                groups.setdefault(pair, []).append(name)
    said = "; ".join(f"{', '.join(names)} {u} of {t}" for (u, t), names in groups.items())
    return f"undisturbed timing rounds behind each speed ratio: {said}"
