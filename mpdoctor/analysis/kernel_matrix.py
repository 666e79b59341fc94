"""The kernel verdicts drawn for the report: each device's capability matrix, its twins, and the notes.

:func:`kernel_table` builds the report's ``kernels`` (the types in ``kernel_table.py``): it
takes every test's verdict from ``kernel_view.judged`` once (measured, then judged, there)
and lays the cells out as matrices, draws identical GPUs once, and says in notes what is
missing or in doubt. It judges nothing itself and never goes back to the speed rules; the
JSON and the renderers read what it built.
"""

from __future__ import annotations

from typing import Optional

from mpdoctor.analysis.kernel_table import KernelDevice, KernelRow, KernelVerdict, KernelView
from mpdoctor.analysis.kernel_view import JudgedDevice, judged
from mpdoctor.portable.kernel_names import DTYPES, OPS, SDPA_BACKENDS, SHORT
from mpdoctor.snapshot import DeviceKernels, Snapshot


COLUMNS = DTYPES
# Each op in the order run, SDPA under torch's own choice and then restricted to each backend.
ROWS = tuple(row for op in OPS for row in [(op, "")] + [(op, b) for b in SDPA_BACKENDS if op == "sdpa"])
EMPTY = ("", "-")  # cells with nothing to say: a row or column of only these is left out


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
    (verdicts,) = [d.verdicts for d in judged(snap) if d.device is device]
    dtypes, rows = _matrix(verdicts)
    return ["op"] + [SHORT.get(d, d) for d in dtypes], [[row.name] + row.cells for row in rows]


def _word(v: Optional[KernelVerdict]) -> str:
    """A cell without its number: what ran, what was slow, what failed, what is in doubt."""
    if v is None:
        return ""
    if v.speed == "baseline":
        return "busy" if v.cell.startswith("busy ") else "ok"
    return "ok" if v.speed in ("fast", "fine") else ("slow" if v.speed == "slow" else v.cell)


def _words(d: KernelDevice) -> list[list[str]]:
    """A device's matrix without its numbers: two GPUs whose words agree are drawn as one."""
    by_test = {(v.op, v.dtype, v.backend): v for v in d.verdicts}
    return [[row.name] + [_word(by_test.get((row.op, dtype, row.backend))) for dtype in d.dtypes] for row in d.rows]


def kernel_table(snap: Snapshot) -> KernelView:
    """Every measured device's verdicts and matrix, and the notes on what is missing or in doubt.

    Eight identical GPUs make one matrix: the first one's numbers, the others
    naming it in ``same_as``, when every cell says the same thing (ok, slow, fails, ...).
    """
    view = KernelView()
    every = judged(snap)  # the one way into the verdicts: each test judged once, here
    drawn: list[tuple[DeviceKernels, KernelDevice]] = []  # devices whose matrix is drawn, for the twins after them
    for one in every:
        if not one.measured:
            continue
        device = one.device
        dtypes, rows = _matrix(one.verdicts)
        d = KernelDevice(device=device.device, label=one.label, dtypes=dtypes, rows=rows, verdicts=one.verdicts)
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
    view.notes = _notes(snap, every)
    return view


def kernel_notes(snap: Snapshot) -> list[str]:
    """Why the matrix is missing or incomplete, in a line each (as :func:`kernel_table` says it)."""
    return _notes(snap, judged(snap))


def _notes(snap: Snapshot, every: list[JudgedDevice]) -> list[str]:
    """The notes of :func:`kernel_notes`, from the devices as judged."""
    kernels = snap.kernels
    if kernels.status == "skipped":
        return [f"Precision microkernels: skipped ({kernels.detail or '--no-kernels'})"]
    if kernels.status == "not-run":
        return [f"Precision microkernels: not run: {kernels.detail or 'none in this snapshot'}"]
    notes = [f"Precision microkernels ({kernels.mode}): {kernels.detail}"] if kernels.status == "error" else []
    for one in every:
        device = one.device
        if device.status != "ok":
            notes.append(f"{device.device}: {device.status}{': ' + device.detail if device.detail else ''}")
        unsure = [v for v in one.verdicts if v.speed == "inconclusive"]
        if unsure:
            reasons = list(dict.fromkeys(v.why for v in unsure))
            notes.append(
                f"{device.device}: {len(unsure)} speed ratio{'s' if len(unsure) > 1 else ''} "
                f"inconclusive: {reasons[0]}" + (f" (and {len(reasons) - 1} more reasons)" if len(reasons) > 1 else "")
            )
        if one.rounds:
            notes.append(f"{device.device}: {one.rounds}")
        if device.load.budget_exhausted:
            notes.append(
                f"{device.device}: the timings did not settle; extra rounds stopped at their budget "
                f"({device.load.extra_seconds:.2g} s)"
            )
    return notes
