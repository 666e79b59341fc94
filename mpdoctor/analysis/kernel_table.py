"""The measured precision matrix: each microkernel's verdict, judged once. Plain data, part of the JSON report.

Each test is judged once by :func:`mpdoctor.analysis.kernel_view.judged` from the snapshot's
microkernel results, and laid out by :func:`mpdoctor.analysis.kernel_matrix.kernel_table`
(as :mod:`mpdoctor.analysis.gpu_map` builds the device table); carried in the report
(``Report.kernels``) and drawn by the text and Markdown views, which judge nothing:
every speed class, cell and note is decided in analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mpdoctor.portable.kernel_names import DTYPES, OPS, listed
from mpdoctor.schema.serde import fact
from mpdoctor.snapshot.vocab import (
    KernelAccuracy,
    KernelDtype,
    KernelOp,
    KernelResultStatus,
    KernelSpeed,
    PrecisionLevel,
    SdpaBackend,
)

# What the matrix's words mean, under every matrix drawn. The device table's precision columns are the
# compute capability's prediction and use other words (render/devices.LEGEND): "slow" here is measured.
# It claims nothing about how busy the machine was: that differs per ratio, and the notes say it from the data
# (kernel_view.rounds_note: undisturbed rounds of how many); "busy" is explained only under a matrix that shows it.
MATRIX_LEGEND = (
    "fp32: time per call; others: "
    "speed vs fp32 on the same device (2x: twice as fast, 1/8: eight times slower); slow: measured far "
    "slower than fp32, or no real gain where the hardware emulates the dtype; inconclusive: the "
    "timings were disturbed or too close to call; fails: raised; WRONG: outside tolerance"
)
BUSY_LEGEND = "busy (fp32): every timing round of that fp32 kernel was disturbed, so its time is the busy machine's"


@dataclass
class KernelVerdict:
    """What one test (an op in a dtype, on one device) came to: its accuracy and its speed against fp32."""

    op: KernelOp = fact(listed(OPS), "")
    dtype: KernelDtype = fact(listed(DTYPES), "")
    backend: SdpaBackend = fact("The SDPA backend it was restricted to; empty otherwise", "")
    test: str = fact("The test's name, op/dtype[/backend] (e.g. sdpa/float16/flash), as the kernel runner wrote it", "")
    status: KernelResultStatus = fact(
        "How the test ended, as in snapshot.kernels (ok, unsupported, wrong, error, crashed, timeout, skipped)", ""
    )
    cell: str = fact(
        'The matrix cell as drawn: fp32\'s time per call ("busy 105 us" when every round was '
        'disturbed), a speed against fp32 ("5.6x", "1/49"), "slow 1/49", "inconclusive", "ok" '
        '(ran, not timed), "fails", "WRONG", "crash", "hang" or "-" (skipped)',
        "",
    )
    accuracy: KernelAccuracy = fact(
        "ok: the output was within the dtype's tolerance of float64 (autocast: the promised dtypes; GradScaler: "
        "a finite step); wrong: it was not; unchecked: the test raised, crashed, hung or was skipped, so there "
        "was no output to check",
        "",
    )
    max_rel_error: Optional[float] = fact("As measured (snapshot.kernels)", None)
    tolerance: Optional[float] = fact("The largest max_rel_error accepted for this dtype", None)
    speed: KernelSpeed = fact(
        "Its speed class, measured against fp32 on the same device in the same rounds: baseline (fp32 itself, "
        "what the others are measured against); fast (faster than fp32 beyond doubt: the whole spread above 1x); "
        "fine (not slow, beyond doubt); slow (below the line beyond doubt: far slower than fp32, or no real gain "
        "where the hardware only emulates the dtype); inconclusive (disturbed timings, or a spread across the "
        "line); empty: no speed to judge (not timed, failed, or no fp32 of the same op to compare with)",
        "",
    )
    ratio: Optional[float] = fact(
        "fp32's best time per call over this test's (2.0: twice as fast as fp32); null without a speed", None
    )
    ratio_low: Optional[float] = fact(
        "The low end of the ratio's spread (best fp32 over this test's median round); the ratio itself when timed once",
        None,
    )
    ratio_high: Optional[float] = fact(
        "The high end of the ratio's spread (median fp32 over this test's best "
        "round); the ratio itself when timed once",
        None,
    )
    rounds: Optional[int] = fact(
        "Undisturbed timing rounds the ratio rests on (the fewer of the two kernels'); "
        "null: timed once, or not beside fp32",
        None,
    )
    line: Optional[float] = fact(
        "The ratio under which the test counts as slow: 0.67, or 1.5 where the compute "
        "capability predicts emulated or slow units for the dtype; null without a ratio",
        None,
    )
    hardware: PrecisionLevel = fact(
        "What the compute capability predicts for the dtype (the device table's "
        "level, not a measurement); empty on the CPU or when unknown",
        "",
    )
    conclusive: Optional[bool] = fact(
        "Whether the speed class is beyond doubt (the baseline: whether its time "
        "is the kernel's, not a busy machine's); null without a speed",
        None,
    )
    why: str = fact("Why it is not conclusive, when it is not", "")


@dataclass
class KernelRow:
    """One row of a device's matrix: an op (an SDPA backend), its cells in the device's dtype order."""

    op: KernelOp = fact("The op", "")
    backend: SdpaBackend = fact("The SDPA backend; empty for torch's own choice and for other ops", "")
    name: str = fact('The row as drawn: "matmul", "layer norm", "sdpa flash"', "")
    cells: list[str] = fact(
        "One cell per entry of the device's dtypes (the verdict's cell; empty where the test did not run)", factory=list
    )


@dataclass
class KernelDevice:
    """The verdicts of one device whose microkernels ran, and its matrix."""

    device: str = fact("cpu or cuda:N", "")
    label: str = fact("How the report names it: cuda:0 (Tesla T4, cc 7.5), the CPU (AVX2, 2 threads)", "")
    same_as: str = fact(
        "The device whose matrix this one's repeats in every verdict (an identical GPU): drawn "
        "once, naming both; empty otherwise",
        "",
    )
    dtypes: list[str] = fact(
        "The matrix's columns: the dtypes (float32, tf32, ...) with something to say", factory=list
    )
    rows: list[KernelRow] = fact(
        "The matrix's rows: the ops with something to say; empty when nothing ran (a note says why)", factory=list
    )
    verdicts: list[KernelVerdict] = fact("Every test of the device, in the order run", factory=list)


@dataclass
class KernelView:
    """The microkernels' verdicts, per device, and why any are missing or in doubt."""

    devices: list[KernelDevice] = fact("Each device whose microkernels ran, wholly or in part", factory=list)
    notes: list[str] = fact(
        "Why the matrix is missing or incomplete, and which ratios are inconclusive and why, a line each", factory=list
    )

    @property
    def legend(self) -> str:
        """What the drawn matrices' words mean: :data:`MATRIX_LEGEND`, and "busy" only where a drawn cell says it."""
        busy = any(cell.startswith("busy ") for d, _ in self.shown for row in d.rows for cell in row.cells)
        return MATRIX_LEGEND + ("; " + BUSY_LEGEND if busy else "")

    @property
    def shown(self) -> list[tuple[KernelDevice, list[str]]]:
        """The matrices to draw: each device not drawn with another, and the devices just like it."""
        return [
            (d, [o.device for o in self.devices if o.same_as == d.device])
            for d in self.devices
            if d.rows and not d.same_as
        ]
