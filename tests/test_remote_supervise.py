"""The supervisor inside the target (``probes/remote/supervise.py``) on its own, and the names both sides share.

Plans here are plain Python steps (no torch): a step that kills its worker, one
that hangs, one that raises, a first step that fails. Proven:

* a crash or a hang costs only its step: it is recorded (``crashed`` with how the
  process ended, ``timeout`` at the step's limit, both ``by: runner``) and a fresh
  worker resumes at the next step; at most ``max_restarts`` times, never past the
  deadline;
* the first step, when the job names one, ends the job when it fails;
* while a worker makes progress the supervisor never parses its step file;
* it all runs the same under the oldest Python mpdoctor diagnoses;
* the step names the remote side writes are the ones the host reads.
"""

from __future__ import annotations

import json
import os
import signal
import re
import subprocess
import time
import types
from pathlib import Path

import pytest

from mpdoctor.probes import environment, kernels
from mpdoctor.probes.child import LOAD_PACKAGES, package_inits, seconds_text as host_seconds_text
from mpdoctor.probes.remote import kernel_runner, kernel_suite, loads, steps, supervise

REPO = Path(__file__).resolve().parent.parent


def ok(value="ok"):
    return lambda: {"status": "ok", "value": value}


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def hang():
    time.sleep(60)


def run_job(path: Path, plan, step_limit=10.0, budget=30.0, **options) -> tuple[supervise.Job, dict]:
    job = supervise.Job(str(path), lambda: plan, step_limit, time.monotonic() + budget, **options)
    supervise.run([job])
    return job, supervise.read_steps(str(path))[0]


def test_a_step_that_kills_its_worker_costs_only_itself(tmp_path):
    job, data = run_job(tmp_path / "job.jsonl", [("a", ok()), ("b", die), ("c", ok("c"))], max_restarts=3)
    assert data["a"]["status"] == "ok" and data["c"] == {"status": "ok", "value": "c"}
    assert data["b"] == {"status": "crashed", "detail": "the process was killed by SIGKILL", steps.BY: steps.SUPERVISOR}
    assert data[steps.END]["status"] == "ok" and data[steps.END]["restarts"] == 1
    assert (job.status, job.detail, job.restarts) == ("ok", "", 1)


def test_a_step_that_hangs_is_killed_at_its_limit_and_the_next_step_runs(tmp_path):
    began = time.monotonic()
    job, data = run_job(tmp_path / "job.jsonl", [("a", ok()), ("b", hang), ("c", ok())], step_limit=1.0)
    assert time.monotonic() - began < 10
    assert data["b"] == {
        "status": "timeout",
        "detail": "did not finish within 1 s and was killed",
        steps.BY: steps.SUPERVISOR,
    }
    assert data["c"]["status"] == "ok" and job.status == "ok" and job.restarts == 1


def test_a_step_that_raises_is_an_error_and_the_worker_goes_on(tmp_path):
    def boom():
        raise ValueError("no such kernel")

    job, data = run_job(tmp_path / "job.jsonl", [("a", boom), ("b", ok())])
    assert data["a"] == {"status": "error", "detail": "ValueError: no such kernel"}
    assert data["b"]["status"] == "ok" and job.restarts == 0 and job.status == "ok"


def test_the_first_step_ends_the_job_when_it_fails(tmp_path):
    job, data = run_job(tmp_path / "crash.jsonl", [("start", die), ("b", ok())], first="start", max_restarts=3)
    assert data["start"]["status"] == "crashed" and "b" not in data
    assert (job.status, job.restarts) == ("crashed", 0)

    refused = lambda: {"status": "error", "detail": "no such device"}  # noqa: E731
    job, data = run_job(tmp_path / "error.jsonl", [("start", refused), ("b", ok())], first="start")
    assert "b" not in data and data[steps.DONE] is True
    assert (job.status, job.detail) == ("error", "no such device")

    job, data = run_job(
        tmp_path / "slow.jsonl", [("start", hang), ("b", ok())], step_limit=0.5, first="start", first_limit=1.0
    )
    assert data["start"]["detail"] == "did not finish within 1 s and was killed"  # the first step's own limit
    assert job.status == "timeout" and "b" not in data


def test_a_job_that_keeps_crashing_is_given_up_after_max_restarts(tmp_path):
    plan = [("s%d" % n, die) for n in range(5)]
    job, data = run_job(tmp_path / "job.jsonl", plan, max_restarts=2)
    assert [key for key in data if key.startswith("s")] == ["s0", "s1", "s2"]
    assert job.status == "crashed" and job.detail == "stopped at s2 (crashed); 2 restarts already"


def test_the_deadline_ends_a_job_and_its_words_can_be_the_callers(tmp_path):
    job, data = run_job(
        tmp_path / "job.jsonl",
        [("a", hang), ("b", ok())],
        step_limit=30,
        budget=0.5,
        wording={"deadline": "the device's time ran out"},
    )
    assert data["a"]["detail"] == "the device's time ran out" and "b" not in data
    assert job.status == "timeout" and job.detail.startswith("stopped at a (timeout)")


def test_a_worker_that_dies_outside_any_step_ends_the_job(tmp_path):
    def no_plan():
        raise RuntimeError("the plan could not be built")

    job = supervise.Job(str(tmp_path / "job.jsonl"), no_plan, 5, time.monotonic() + 30)
    supervise.run([job])
    assert job.status == "error"
    assert job.detail == "the worker exited with status %d between steps" % supervise.WORKER_FAILED


def test_jobs_wait_until_ready_and_finished_jobs_can_add_jobs(tmp_path):
    gate = tmp_path / "gate"
    order = []

    def stamp(name):
        return lambda: order.append(name) or {"status": "ok", "at": time.monotonic()}

    waiting = supervise.Job(
        str(tmp_path / "waiting.jsonl"), lambda: [("w", stamp("w"))], 5, time.monotonic() + 30, ready=gate.exists
    )
    first = supervise.Job(str(tmp_path / "first.jsonl"), lambda: [("f", stamp("f"))], 5, time.monotonic() + 30)
    added = supervise.Job(str(tmp_path / "added.jsonl"), lambda: [("x", stamp("x"))], 5, time.monotonic() + 30)

    def on_done(job):
        if job is first:
            gate.touch()
            return [added]
        return []

    supervise.run([waiting, first], on_done)
    at = {name: supervise.read_steps(str(tmp_path / ("%s.jsonl" % name)))[0] for name in ("waiting", "first", "added")}
    assert at["waiting"]["w"]["at"] > at["first"]["f"]["at"]  # it started only once the gate opened
    assert at["added"]["x"]["status"] == "ok"
    assert all(job.status == "ok" for job in (waiting, first, added))


def test_the_step_file_is_not_parsed_while_the_worker_makes_progress(tmp_path, monkeypatch):
    reads = []
    real = supervise.read_steps
    monkeypatch.setattr(supervise, "read_steps", lambda path: reads.append(path) or real(path))
    plan = [("s%d" % n, lambda: time.sleep(0.03) or {"status": "ok"}) for n in range(20)]
    job = supervise.Job(str(tmp_path / "job.jsonl"), lambda: plan, 5.0, time.monotonic() + 30)
    supervise.run([job])
    assert len(reads) <= 2, reads  # once to start the worker, once when it has exited; none per poll
    assert job.status == "ok" and len([key for key in real(job.path)[0] if key.startswith("s")]) == 20


def test_limits_are_written_as_people_write_them():
    assert [supervise.seconds_text(s) for s in (0.5, 2.0, 6.6667, 15.0, 185.2, 0.05)] == [
        "0.5",
        "2",
        "6.7",
        "15",
        "185",
        "0.05",
    ]


def test_the_host_writes_limits_with_the_targets_function():
    """One wording of limits on both sides: the host imports the target's function, it has no copy."""
    assert host_seconds_text is supervise.seconds_text


def test_a_stall_under_a_second_says_its_limit_not_zero(tmp_path, monkeypatch):
    """At --timeout 0.5 the limits are fractions of a second: "within 0.3 s", never "within 0 s"."""
    job = supervise.Job(str(tmp_path / "job.jsonl"), lambda: [("hang", hang)], 0.3, time.monotonic() + 30)
    supervise.run([job])
    assert supervise.read_steps(job.path)[0]["hang"]["detail"] == "did not finish within 0.3 s and was killed"
    (tmp_path / "mpd_stalls.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    results = loads.load_each(["mpd_stalls"], 0.3, 5.0)
    assert results["mpd_stalls"] == {
        "status": "timeout",
        "detail": "the import did not finish within 0.3 s and was killed",
    }


def test_a_supervisor_record_after_a_line_cut_short_stays_readable(tmp_path):
    path = tmp_path / "job.jsonl"
    path.write_text('{"step": "a", "data": {"status": "ok"}}\n{"step": "b", "da')  # killed mid-write
    supervise.append_step(str(path), "b", {"status": "crashed"})
    assert supervise.read_steps(str(path)) == ({"a": {"status": "ok"}, "b": {"status": "crashed"}}, "")


# ---------------------------------------------------------------- the oldest Python


def _python38() -> str | None:
    from interpreters import find_python

    return find_python("3.8")


# Loads portable/ and probes/remote/ as the private packages the bootstrap makes of them (child.LOAD_PACKAGES),
# then runs a job with a crash, a hang and a raise, and apex-style extension loads.
UNDER_38 = (
    LOAD_PACKAGES
    + """\
import json, signal, time
supervise = importlib.import_module("_mpdoctor_remote.supervise")
loads = importlib.import_module("_mpdoctor_remote.loads")

def boom():
    raise KeyError("x")

plan = [("a", lambda: {"status": "ok"}), ("crash", lambda: os.kill(os.getpid(), signal.SIGKILL)),
        ("hang", lambda: time.sleep(60)), ("raise", boom), ("b", lambda: {"status": "ok"})]
path = os.path.join(sys.argv[3], "job.jsonl")
job = supervise.Job(path, lambda: plan, 1.0, time.monotonic() + 30, max_restarts=3)
supervise.run([job])
print(json.dumps({"job": supervise.read_steps(path)[0],
                  "loads": loads.load_each(["mpd_ok", "mpd_abort", "mpd_missing"], 2.0, 6.0)}))
"""
)


def test_the_supervisor_runs_under_python_3_8(tmp_path):
    python = _python38()
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    (tmp_path / "mpd_ok.py").write_text("")
    (tmp_path / "mpd_abort.py").write_text("import os\nos.abort()\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [python, "-c", UNDER_38, *package_inits(), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    job = result["job"]
    assert [job[k]["status"] for k in ("a", "crash", "hang", "raise", "b")] == [
        "ok",
        "crashed",
        "timeout",
        "error",
        "ok",
    ]
    assert job[steps.END]["restarts"] == 2
    loads = result["loads"]
    assert loads["mpd_ok"] == {"status": "ok", "detail": ""}
    assert loads["mpd_abort"]["status"] == "crashed" and "SIGABRT" in loads["mpd_abort"]["detail"]
    assert loads["mpd_missing"]["status"] == "error"
    assert "Fatal Python error" not in done.stderr  # faulthandler is off in the import worker


# ---------------------------------------------------------------- one set of names on both sides


def test_the_kernel_plan_starts_and_ends_with_the_shared_step_names():
    stub = types.SimpleNamespace(Generator=lambda: types.SimpleNamespace(manual_seed=lambda seed: None))
    keys = [key for key, _ in kernel_suite.plan(stub, "cpu", "quick")]
    assert keys[0] == steps.DEVICE == kernel_runner.Job.__init__.__defaults__[-1]
    assert keys[-1] == steps.RETIME
    assert set(kernels.BOOKKEEPING) == {steps.DEVICE, steps.END, steps.DONE, steps.RETIME}
    assert all(kernels.known_key(key) for key in keys[1:-1])  # every test's op is one of kernel_suite.OPS


# How a step or step-file name spelt out in the host's readers looks: steps.data.get("cuda"), run.step == "import",
# "import" in steps.data, _step_error(steps, "apex"), run_part(python, "env", ...), os.path.join(tmp, "runner.jsonl").
SPELT_OUT = re.compile(
    r"""\.data\.get\(\s*f?["']|\.data\[\s*f?["']|\b(?:step|running|begun) == f?["']"""
    r"""|["']\w+["'] (?:not )?in (?:\w+\.data|_read_steps)|_step_error\(\w+, f?["']"""
    r"""|run_part(?:\(|, )python, ["']|["'][\w{}-]*\.jsonl["']|\.get\(["']by["']\) =="""
)


def spelt_out(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if SPELT_OUT.search(line)]


def test_the_host_reads_every_step_by_the_shared_names():
    for module in (environment, kernels):
        assert spelt_out(Path(module.__file__).read_text(encoding="utf-8")) == [], module.__name__


def test_the_spelt_out_rule_can_fail():
    for line in (
        'x = steps.data.get("cuda")',
        'if run.step == "import":',
        '"import" not in _read_steps(f).data',
        'e = _step_error(steps, "apex")',
        'run_part(python, "env", timeout)',
        'os.path.join(tmp, "count.jsonl")',
        'p = f"device-{i}.jsonl"',
        'data.get("by") == "runner"',
    ):
        assert spelt_out(line) == [line], line
    assert spelt_out('facts.get("status") == "error"\nsteps.data.get(step_names.CUDA)') == []


def test_the_remote_side_writes_its_steps_by_the_shared_names():
    """The remote modules that write steps do not spell step names out either."""
    step_calls = ('out.emit("', 'out.begin("', 'guard(out, "', 'guarded_step(out, "')
    for name in ("target", "kernel_runner", "oneflow", "supervise", "loads"):
        source = (REPO / "mpdoctor" / "probes" / "remote" / f"{name}.py").read_text(encoding="utf-8")
        for call in step_calls:
            assert call not in source, f"{name}.py: {call}...: use steps.py's name"
