"""The one ``--timeout``, and every time limit mpdoctor derives from it.

``--timeout T`` (``check``, ``explain --check``, ``fleet``: default
``DEFAULT_TIMEOUT``, 60; ``audit``: ``AUDIT_TIMEOUT``, 120) is the only knob, a
number of seconds from ``MIN_TIMEOUT`` to ``MAX_TIMEOUT`` (0.1 to a day:
``nan``, ``inf`` and ``1e308`` are refused, see :func:`timeout_problem`).
:func:`parse_timeout` is the one reading of it: the CLI's ``--timeout`` option
(``cli/options.py``'s ``Timeout``, shared by every command) and the pre-scan
that starts a plain check early (``prescan.py``) both call it, and it builds the
run's Budget, once; everything below takes that Budget, never a number of seconds.

Every limit is derived from T by :meth:`Budget.from_timeout`:
host code (``mpdoctor.probes``) takes its limits from a Budget, and code that
runs in the target interpreter (``probes/remote/``) is handed the numbers it
needs on its command line, as one JSON object: :meth:`Budget.env_limits` for the
env part, :meth:`Budget.torch_limits` for the torch part and
:meth:`Budget.runner_limits` for the kernel runner. The remote side derives none
of them (``tests/test_budget.py`` checks that it reads what it is handed). The
four the env and torch parts enforce (``apex_users``, ``project_scan``,
``apex_loads``, ``apex_load_each``) are computed by ``mpdoctor/portable/limits.py``'s
``handed_limits``, which also holds ``DEFAULT_TIMEOUT``: stdlib only, so that a
part started without limits (by hand) falls back on the same formula for the
same default, with no number repeated in the target.

============== ================================= ====== ====== ====== =============================================
limit          derivation (T = --timeout)         T=0.5  T=20   T=60   what it bounds (who enforces it)
============== ================================= ====== ====== ====== =============================================
part           T                                  0.5    20     60     one environment-probe part: the env part, the
                                                                       torch part with --no-kernels (run_child)
oneflow_floor  min(10, T)                         0.5    10     10     the oneflow part gets what the env part left of
                                                                       T, but at least this (:meth:`oneflow_part`)
apex_users     min(3, T/4)                        0.125  3      3      the env part's scan of installed code for apex
                                                                       imports (target.py, handed env_limits)
project_scan   max(min(1.5, T/6), T/40)           0.083  1.5    1.5    the env part's scan of the user's project,
                                                                       when a selected check needs it (target.py,
                                                                       handed env_limits): T/40 above T=60 (600:
                                                                       15 s); it also lists at most 2,000 files a
                                                                       second of it, and never fewer than 3,000
nvml           T                                  0.5    20     60     the NVML child (machine.py, run_child)
torch_import   T                                  0.5    20     60     the kernel runner's ``import torch``: the same as
                                                                       the torch part's whole limit (host watch)
apex_loads     min(20, T/3)                       0.167  6.67   20     importing every apex extension, after torch
                                                                       (loads.py, handed torch_limits or
                                                                       runner_limits)
apex_load_each min(apex_loads,                    0.167  2.22   6.67   one apex extension's import (loads.py, the
               max(1, min(10, apex_loads/3)))                          same)
cuda_count     T                                  0.5    20     60     each step of the runner's counting child: CUDA
                                                                       start and device count, device properties
device_start   T                                  0.5    20     60     a device worker's first step, which starts the
                                                                       device (a CUDA context)
kernel_step    min(device_run, max(2, T/4))       1      5      15     one microkernel test making no progress
device_run     2T                                 1      40     120    each device's whole run (and the counting
                                                                       child's), from when the runner forks them
quiet_wait     T                                  0.5    20     60     the longest the CPU worker waits for the host's
                                                                       word that the inventory is done (within
                                                                       device_run); the host gives that word at
                                                                       the latest ``quiet_grace`` (min(0.25, T))
                                                                       after the runner is ready (kernels.py)
runner         torch_import + apex_loads          6.67   71.7   205    the kernel runner, end to end (run_child)
               + device_run + 5
checkpoint     T                                  0.5    20     60     ``mpdoctor audit``: one pickled file's
                                                                       torch.load child (run_child)
whole          max(runner, part + oneflow_floor,  6.67   71.7   205    all the probing of one ``check``: the parts
               nvml)                                                   run in parallel (see below)
============== ================================= ====== ====== ====== =============================================

How the pieces run: NVML, the kernel runner (which is also the torch part) and
the env part then the oneflow part run side by side; with ``--no-kernels`` the
torch part replaces the runner. So the probing of a whole ``check`` ends within
``whole`` <= ``WHOLE_FACTOR`` x T + ``RUNNER_SLACK`` s (at most 3.34 T + 5: the
runner is the longest), plus the CLI's own start and the judging; Ctrl-C or
SIGTERM end it at once (``child.py``).

Three values differ from what was derived before this module existed:

* ``runner`` was ``3T + 5``, less than the sum of its own sequential limits
  (``import torch`` T, the apex loads up to min(20, T/3), then the devices 2T):
  a run whose apex extensions hung could be killed whole before its devices'
  deadline. It is now that sum plus the same 5 s of slack.
* ``kernel_step`` and ``apex_load_each`` are capped at the limit that contains
  them (``device_run``, ``apex_loads``): below T = 1 (kernel_step: 2 s) and
  T = 3 (apex_load_each: 1 s) they were longer than the whole they sit in, so
  the outer limit always fired first. Nothing ends differently.

Limits are printed as people write them, "0.5 s" and never "0 s" or "1 s" for
half a second: ``child.seconds_text`` on the host, ``supervise.seconds_text``
(the same rules, stdlib only) in the target.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Union

from mpdoctor.portable.limits import DEFAULT_TIMEOUT, handed_limits

# The range --timeout accepts. Below 0.1 s nothing can start; above a day a hung probe would hold a terminal or a
# CI job for longer than anyone waits, and inf, 1e308 or nan would overflow the derived limits or wait forever.
MIN_TIMEOUT, MAX_TIMEOUT = 0.1, 86400.0
RUNNER_SLACK = 5.0  # s: the kernel runner's start and end around its timed phases
WHOLE_FACTOR = 3.5  # ``whole`` <= WHOLE_FACTOR * T + RUNNER_SLACK for every T (tests/test_budget.py)
QUIET_GRACE = 0.25  # s: see Budget.quiet_grace; an inventory usually ends well before torch has imported
AUDIT_TIMEOUT = 120.0  # s: `mpdoctor audit`'s --timeout default (one pickled file's listing: Budget.checkpoint)
__all__ = [
    "AUDIT_TIMEOUT",
    "Budget",
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "MIN_TIMEOUT",
    "parse_timeout",
    "timeout_problem",
]


@dataclass(frozen=True)
class Budget:
    """Every time limit of one run, in seconds, derived from ``--timeout`` (see the module's table)."""

    timeout: float
    part: float
    oneflow_floor: float
    apex_users: float
    project_scan: float
    nvml: float
    torch_import: float
    apex_loads: float
    apex_load_each: float
    cuda_count: float
    device_start: float
    kernel_step: float
    device_run: float
    quiet_wait: float
    runner: float
    checkpoint: float

    @classmethod
    def from_timeout(cls, timeout: float) -> "Budget":
        t = float(timeout)
        if not t > 0 or not math.isfinite(t):
            raise ValueError(f"a timeout must be a positive, finite number of seconds, not {timeout!r}")
        handed = handed_limits(t)  # apex_users, project_scan, apex_loads, apex_load_each (portable/limits.py)
        apex_loads = handed["apex_loads"]
        device_run = 2 * t
        return cls(
            timeout=t,
            part=t,
            oneflow_floor=min(10.0, t),
            nvml=t,
            torch_import=t,
            **handed,
            cuda_count=t,
            device_start=t,
            kernel_step=min(device_run, max(2.0, t / 4)),
            device_run=device_run,
            quiet_wait=t,
            runner=t + apex_loads + device_run + RUNNER_SLACK,
            checkpoint=t,
        )

    @classmethod
    def default(cls) -> "Budget":
        """The Budget of the default ``--timeout``: for a caller that was given none (the Python API, tests)."""
        return cls.from_timeout(DEFAULT_TIMEOUT)

    @property
    def whole(self) -> float:
        """All the probing of one check: the longest of the probes that run side by side."""
        return max(self.runner, self.part + self.oneflow_floor, self.nvml)

    @property
    def quiet_grace(self) -> float:
        """How long the CPU kernels, once the runner is ready for them, wait for the inventory to end.

        Not a field of its own (a constant, capped by ``quiet_wait``): the CPU kernels
        go ahead after it, and the runner's load detection sets aside the timing
        rounds a still-running inventory disturbs (``kernels.probe_kernels_and_torch``).
        """
        return min(QUIET_GRACE, self.quiet_wait)

    def oneflow_part(self, env_seconds: float) -> float:
        """The oneflow part's limit once the env part took ``env_seconds``: the parts together stay near T."""
        return max(self.part - env_seconds, self.oneflow_floor)

    def _pick(self, *wanted: str) -> dict[str, float]:
        return {key: value for key, value in asdict(self).items() if key in wanted}

    def env_limits(self) -> dict[str, float]:
        """The numbers the env part enforces itself: its scans (``target.run_env`` reads them from its argv)."""
        return self._pick("apex_users", "project_scan")

    def torch_limits(self) -> dict[str, float]:
        """The numbers the torch part enforces itself: the apex extension loads (``target.run_torch``)."""
        return self._pick("apex_loads", "apex_load_each")

    def runner_limits(self) -> dict[str, float]:
        """The numbers the kernel runner enforces itself (``kernel_runner.main`` reads them from its argv).

        The runner is also the torch part, so it gets the torch part's numbers too.
        """
        return {
            **self.torch_limits(),
            **self._pick("cuda_count", "device_start", "kernel_step", "device_run", "quiet_wait"),
        }


def parse_timeout(value: Union[str, float]) -> Budget:
    """The Budget of a ``--timeout`` as given (text or a number); ValueError, in words, when it cannot be one.

    The one reading of ``--timeout``: typer calls it (``cli/options.py``'s ``Timeout``), and so does the
    pre-scan that starts a plain check before typer loads (``prescan.py``), so the two cannot disagree.
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a valid float.") from None  # click's own words for a bad float
    problem = timeout_problem(seconds)
    if problem:
        raise ValueError(f"{value} {problem}")
    return Budget.from_timeout(seconds)


def timeout_problem(value: float) -> str:
    """Why ``value`` cannot be a ``--timeout`` (not a number, not finite, out of range), or "" when it can."""
    if math.isnan(value):
        return "is not a number"
    if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        return f"must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds (a day)"
    return ""
