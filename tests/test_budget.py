"""The one --timeout and every limit derived from it (mpdoctor/probes/budget.py).

The derived values are pinned for a few timeouts, the limits are checked to nest
(no part may outlive the whole it belongs to; the whole check is bounded by a
stated multiple of --timeout), the kernel runner and the environment probe's
parts are checked to read exactly the numbers they are handed (the remote side
derives none), and a limit is printed as given ("0.5 s", not "1 s").
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import dist_info
from mpdoctor.probes.budget import DEFAULT_TIMEOUT, RUNNER_SLACK, WHOLE_FACTOR, Budget, parse_timeout
from mpdoctor.probes.child import ChildResult, seconds_text
from mpdoctor.probes.remote import apex as remote_apex, kernel_runner, loads as remote_loads, scan as remote_scan
from mpdoctor.portable import limits as portable_limits
from mpdoctor.probes.remote import steps as step_names, target as remote_target

PINNED = {
    0.5: dict(
        part=0.5,
        oneflow_floor=0.5,
        apex_users=0.125,
        project_scan=0.5 / 6,
        nvml=0.5,
        torch_import=0.5,
        apex_loads=0.5 / 3,
        apex_load_each=0.5 / 3,
        cuda_count=0.5,
        device_start=0.5,
        kernel_step=1.0,
        device_run=1.0,
        quiet_wait=0.5,
        runner=0.5 + 0.5 / 3 + 1.0 + 5,
        checkpoint=0.5,
    ),
    20: dict(
        part=20,
        oneflow_floor=10,
        apex_users=3,
        project_scan=1.5,
        nvml=20,
        torch_import=20,
        apex_loads=20 / 3,
        apex_load_each=20 / 9,
        cuda_count=20,
        device_start=20,
        kernel_step=5,
        device_run=40,
        quiet_wait=20,
        runner=20 + 20 / 3 + 40 + 5,
        checkpoint=20,
    ),
    60: dict(
        part=60,
        oneflow_floor=10,
        apex_users=3,
        project_scan=1.5,
        nvml=60,
        torch_import=60,
        apex_loads=20,
        apex_load_each=20 / 3,
        cuda_count=60,
        device_start=60,
        kernel_step=15,
        device_run=120,
        quiet_wait=60,
        runner=205,
        checkpoint=60,
    ),
}
TIMEOUTS = [0.1, 0.5, 1, 2.5, 8, 15, 20, 45, 60, 61, 120, 600, 3600]


@pytest.mark.parametrize("timeout", sorted(PINNED))
def test_derived_limits_are_pinned(timeout):
    budget = Budget.from_timeout(timeout)
    values = {key: value for key, value in dataclasses.asdict(budget).items() if key != "timeout"}
    assert values == pytest.approx(PINNED[timeout])
    assert set(values) == set(PINNED[timeout])  # a new limit gets pinned too
    assert budget.timeout == timeout


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_every_limit_fits_in_the_whole_check(timeout):
    b = Budget.from_timeout(timeout)
    for name, value in dataclasses.asdict(b).items():
        assert 0 < value <= b.whole, name
    # The whole check is bounded by a stated multiple of --timeout.
    assert b.whole <= WHOLE_FACTOR * timeout + RUNNER_SLACK
    # The kernel runner outlives its own sequential phases: import, apex loads, then the devices.
    assert b.torch_import + b.apex_loads + b.device_run <= b.runner
    # Inside a device's run: starting it, one stalled test, the CPU worker's wait, the counting child's steps.
    assert max(b.device_start, b.kernel_step, b.quiet_wait, b.cuda_count) <= b.device_run
    assert b.apex_load_each <= b.apex_loads <= b.part
    assert b.apex_users + b.project_scan <= b.part  # the env part's scans leave it time for the rest
    # The env part then the oneflow part, however long the env part took, end within part + oneflow_floor.
    for env_seconds in (0, b.part / 2, b.part):
        assert env_seconds + b.oneflow_part(env_seconds) <= b.part + b.oneflow_floor <= b.whole


def test_the_oneflow_part_gets_what_the_env_part_left_but_a_floor():
    b = Budget.from_timeout(60)
    assert b.oneflow_part(2.0) == 58.0
    assert b.oneflow_part(59.0) == 10.0
    assert Budget.from_timeout(5).oneflow_part(4.0) == 5.0  # the floor is min(10, T)


def test_a_budget_is_frozen_and_needs_a_positive_timeout():
    budget = Budget.from_timeout(60)
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.part = 1.0  # type: ignore[misc]
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            Budget.from_timeout(bad)
    assert Budget.default() == budget == Budget.from_timeout(DEFAULT_TIMEOUT)


@pytest.mark.parametrize(
    "given, seconds",
    [("60", 60.0), ("0.5", 0.5), ("1e2", 100.0), (" 7 ", 7.0), (20, 20.0), ("86400", 86400.0), ("0.1", 0.1)],
)
def test_a_timeout_as_given_is_read_into_its_budget(given, seconds):
    """parse_timeout: the one reading of --timeout (the CLI's option and the pre-scan both call it)."""
    assert parse_timeout(given) == Budget.from_timeout(seconds)


@pytest.mark.parametrize(
    "given, words",
    [
        ("abc", "'abc' is not a valid float."),
        ("", "'' is not a valid float."),
        ("nan", "nan is not a number"),
        ("0", "0 must be between 0.1 and 86400"),
        ("-1", "-1 must be between"),
        ("inf", "inf must be between"),
        ("1e308", "1e308 must be between"),
        ("86400.5", "must be between"),
    ],
)
def test_a_timeout_that_cannot_be_one_is_refused_in_words(given, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        parse_timeout(given)


def test_the_kernel_runner_reads_exactly_the_numbers_it_is_handed():
    """kernel_runner.main uses limits["..."] from its argv, every one of them, and derives none."""
    source = Path(kernel_runner.__file__).read_text(encoding="utf-8")
    main = source[source.index("def main(argv):") :]
    used = set(re.findall(r'limits\["(\w+)"\]', main))
    assert used == set(Budget.from_timeout(60).runner_limits())
    assert "timeout" not in re.sub(r'"""(.|\n)*?"""', "", main)  # no --timeout left to derive from


def test_limits_are_printed_as_given():
    assert [seconds_text(s) for s in (0.5, 1.0, 2, 6.667, 15, 185, 0.125)] == [
        "0.5",
        "1",
        "2",
        "6.7",
        "15",
        "185",
        "0.1",
    ]
    killed = ChildResult(exit_code=None, timed_out=True, seconds=0.62, stdout="", stderr="", limit=0.5)
    assert killed.describe() == "did not finish within 0.5 s and was killed"
    # Without a limit (a result built by hand), how long it ran.
    assert ChildResult(None, True, 30.0, "", "").describe() == "did not finish within 30 s and was killed"


def test_check_with_half_a_second_says_half_a_second(fake_venv):
    venv = fake_venv(
        "torch-sleeps", {"torch/__init__.py": "import time\ntime.sleep(600)\n", **dist_info("torch", "2.3.0")}
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpdoctor",
            "check",
            "--python",
            str(fake_venv.python(venv)),
            "--format",
            "json",
            "--timeout",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "import-timeout", torch
    assert torch["probe"]["detail"] == "did not finish within 0.5 s and was killed"
    assert not re.search(r"within [01] s", proc.stdout)


# ---------------------------------------------------------------- the remote side is handed its numbers


class _Recorder:
    """A stand-in for the step writer: what a part wrote, in memory."""

    def __init__(self) -> None:
        self.steps: dict[str, object] = {}

    def begin(self, step):
        pass

    def emit(self, step, data, begin=False):
        self.steps[step] = data


def _code(module) -> str:
    """A module's source without its docstrings and comments."""
    source = re.sub(r'"""(.|\n)*?"""', "", Path(module.__file__).read_text(encoding="utf-8"))
    return re.sub(r"#.*", "", source)


def test_the_remote_parts_read_exactly_the_numbers_they_are_handed():
    """target.py reads limits["..."], the env and torch parts' numbers, and neither it nor loads.py derives one."""
    budget = Budget.from_timeout(60)
    used = set(re.findall(r'limits\["(\w+)"\]', _code(remote_target)))
    assert used == set(budget.env_limits()) | set(budget.torch_limits())
    for module in (remote_target, remote_loads, kernel_runner):
        assert not re.search(r"\b(min|max)\(", _code(module)), module.__name__
    # The runner is also the torch part: it is handed the torch part's numbers too.
    assert set(budget.torch_limits()) <= set(budget.runner_limits())


def test_a_direct_call_without_limits_gets_the_default_timeouts_numbers():
    budget = Budget.default()
    assert remote_target.DEFAULT_LIMITS == {**budget.env_limits(), **budget.torch_limits()}
    assert remote_target.DEFAULT_LIMITS == pytest.approx(
        {key: PINNED[DEFAULT_TIMEOUT][key] for key in remote_target.DEFAULT_LIMITS}
    )
    assert remote_target.read_limits("20") == remote_target.DEFAULT_LIMITS  # a bare number is no set of limits
    handed = remote_target.read_limits(json.dumps(Budget.from_timeout(0.5).env_limits()))
    assert handed["apex_users"] == 0.125 and handed["project_scan"] == pytest.approx(0.5 / 6)


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_the_handed_limits_have_one_formula_on_both_sides(timeout):
    """The Budget's env and torch numbers are portable/limits.py's, which the target's fallback also uses."""
    budget = Budget.from_timeout(timeout)
    assert {**budget.env_limits(), **budget.torch_limits()} == portable_limits.handed_limits(float(timeout))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "20",
        "null",
        "[1, 2]",
        '"x"',
        "[" * 100000 + "]" * 100000,
        '{"apex_users": NaN, "project_scan": Infinity, "apex_loads": -1, "apex_load_each": true}',
        '{"apex_users": 1' + "0" * 400 + ', "project_scan": "2", "apex_loads": 0, "apex_load_each": null}',
        '{"apex_users": 1e999, "project_scan": [], "apex_loads": {}, "other": 5}',
    ],
)
def test_limits_the_target_cannot_read_fall_back_on_the_defaults(text):
    """Malformed JSON, or a value that is no positive finite number: that key gets the default, and nothing raises."""
    assert remote_target.read_limits(text) == remote_target.DEFAULT_LIMITS


def test_limits_the_target_can_read_are_taken_key_by_key():
    handed = remote_target.read_limits('{"apex_users": 2, "project_scan": "x", "apex_loads": 0.25}')
    assert handed == {**remote_target.DEFAULT_LIMITS, "apex_users": 2.0, "apex_loads": 0.25}


@pytest.mark.parametrize("timeout", [0.5, 20, 60])
def test_the_env_part_scans_within_the_limits_it_is_handed(timeout, monkeypatch, tmp_path):
    calls = {}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(remote_apex, "apex_facts", lambda paths, cwd, prefix: {"locations": []})
    monkeypatch.setattr(remote_apex, "present", lambda facts: True)
    monkeypatch.setattr(remote_scan, "installed_uses", lambda limit: calls.setdefault("apex_users", limit) and {})
    monkeypatch.setattr(
        remote_scan,
        "project_facts",
        lambda cwd, limit, skip=(), given="": calls.setdefault("project_scan", limit) and {},
    )
    budget = Budget.from_timeout(timeout)
    out = _Recorder()
    remote_target.run_env(out, json.loads(json.dumps(budget.env_limits())))
    assert calls == budget.env_limits()
    assert step_names.PROJECT in out.steps
    # Not asked to scan the project: no scan, and no project step at all (the host says why).
    calls.clear()
    out = _Recorder()
    remote_target.run_env(out, budget.env_limits(), project=False)
    assert calls == {"apex_users": budget.apex_users} and step_names.PROJECT not in out.steps


def test_the_torch_part_loads_apex_within_the_limits_it_is_handed(monkeypatch):
    calls = []
    monkeypatch.setattr(remote_apex, "apex_distributions", lambda: [])
    monkeypatch.setattr(remote_apex, "find_extensions", lambda names: [{"name": "amp_C"}])
    monkeypatch.setattr(
        remote_loads, "load_each", lambda names, limit, budget: calls.append((names, limit, budget)) or {}
    )
    budget = Budget.from_timeout(0.5)
    fake_torch = types.SimpleNamespace(
        __version__="2.3.0",
        version=types.SimpleNamespace(),
        backends=None,
        cuda=types.SimpleNamespace(get_arch_list=lambda: []),
    )
    out = _Recorder()
    remote_target.torch_before_cuda(out, fake_torch, budget.apex_loads, budget.apex_load_each)
    assert calls == [(["amp_C"], budget.apex_load_each, budget.apex_loads)]
    assert step_names.APEX_LOADS in out.steps
