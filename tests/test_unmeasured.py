"""MPD003: a device mpdoctor itself left unmeasured is reported as mpdoctor's, never as the GPU's (PREC009).

The recorded H200 capture is the real case (mpdoctor's runner touched CUDA before
forking, and real torch refused CUDA in the worker). The time-limit cases are built
on the constructed A100 fixture: the kernel runner's own deadline wording on a device
that never started, and on kernels cut short partway through.
"""

from __future__ import annotations


from helpers import load_fixture
from mpdoctor.doctor.judge import judge
from mpdoctor.probes.remote.kernel_runner import WORDING
from mpdoctor.snapshot import KernelResult

DEADLINE = WORDING["deadline"]


def by_code(snap, select=("PREC", "MPD003")):
    out: dict[str, list] = {}
    for finding in judge(snap, select=[code for code in select if code != "MPD003"]):
        out.setdefault(finding.code, []).append(finding)
    return out


def gpu(snap):
    return next(d for d in snap.kernels.devices if d.device.startswith("cuda"))


def test_the_recorded_fork_refusal_on_an_h200_is_mpdoctors_own_not_the_gpus():
    found = by_code(load_fixture("h200-fork-refused"))
    assert "PREC009" not in found and "PREC001" not in found
    (finding,) = found["MPD003"]
    assert finding.severity == "warning"  # --fail-on error does not fail a CI job for mpdoctor's own bug
    assert finding.title == "mpdoctor could not measure cuda:0: mpdoctor's own process model failed"
    assert "Cannot re-initialize CUDA in forked subprocess" in finding.evidence[0]
    assert all("nvidia-smi" not in (step.command or "") for step in finding.fix)


def test_a_device_whose_time_ran_out_before_it_started_asks_for_more_time():
    snap = load_fixture("kernels-faulty-gpu")
    snap.invocation.timeout = 20
    device = gpu(snap)
    device.status, device.detail, device.results = "timeout", DEADLINE, []
    found = by_code(snap)
    assert "PREC009" not in found
    (finding,) = found["MPD003"]
    assert finding.title.endswith("its time limit ran out")
    assert "--timeout 180" in finding.fix[0].command
    assert any("--timeout (20 s)" in line for line in finding.evidence)


def test_kernels_cut_short_by_the_deadline_are_not_kernels_that_killed_their_process():
    snap = load_fixture("kernels-faulty-gpu")
    device = gpu(snap)
    before = {f.title for f in by_code(snap)["PREC009"]}
    device.results.append(KernelResult("softmax", "float16", status="timeout", detail=DEADLINE))
    found = by_code(snap)
    assert {f.title for f in found["PREC009"]} == before  # the deadline's victim is not named there
    (finding,) = found["MPD003"]
    assert finding.title.startswith("mpdoctor could not measure 1 kernel(s) on cuda:0")


def test_a_device_that_really_fails_to_start_is_still_prec009():
    snap = load_fixture("kernels-faulty-gpu")
    device = gpu(snap)
    device.status, device.detail, device.results = "error", "RuntimeError: CUDA error: out of memory", []
    found = by_code(snap)
    assert "MPD003" not in found
    assert any(f.title.startswith("Could not start") for f in found["PREC009"])


def test_mpd003_speaks_only_when_a_selected_check_needs_the_kernels():
    snap = load_fixture("h200-fork-refused")
    assert "MPD003" not in {f.code for f in judge(snap, select=["GPU"])}
    assert "MPD003" in {f.code for f in judge(snap, select=["PREC001"])}
