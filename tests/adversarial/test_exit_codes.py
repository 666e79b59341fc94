"""Options that once hung, overflowed or were silently replaced: each is now a usage error (exit 2).

Before issue 22: ``--timeout nan`` made ``check`` wait forever (the kernel runner
waited on a NaN budget), ``inf`` and ``1e308`` overflowed (exit 3); ``--python ""``
diagnosed mpdoctor's own interpreter without a word; ``python -m mpdoctor`` run in
an untrusted checkout imported that checkout's ``typer.py``.
"""

from __future__ import annotations


import pytest

from adversarial.running import ROOT, assert_clean, mpdoctor
from helpers import fixture_path
from mpdoctor.probes.budget import MAX_TIMEOUT, Budget

BAD_TIMEOUTS = ["nan", "NaN", "inf", "-inf", "1e308", str(MAX_TIMEOUT * 2), "0", "-1"]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    import pickle

    path = tmp_path_factory.mktemp("w") / "w.pt"
    path.write_bytes(pickle.dumps({"w": [1]}))
    return path


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
@pytest.mark.parametrize("command", ["check", "explain", "audit"])
def test_a_timeout_that_is_not_a_sane_number_of_seconds_is_a_usage_error(command, value, weights):
    args = {
        "check": ["check", "--no-kernels"],
        "explain": ["explain", "--check", "RuntimeError: x"],
        "audit": ["audit", str(weights)],
    }[command]
    result = mpdoctor(*args, f"--timeout={value}")
    assert_clean(result, 2)
    assert "Invalid value for '--timeout'" in result.stderr


@pytest.mark.parametrize("option", ["--timeout", "--deadline"])
@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "0"])
def test_fleet_bounds_its_time_options_as_check_does(option, value):
    """Refused before any launcher is looked for: nothing here runs under torchrun."""
    result = mpdoctor("fleet", f"{option}={value}")
    assert_clean(result, 2)
    assert f"Invalid value for '{option}'" in result.stderr


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e308 * 10])
def test_the_budget_refuses_what_the_option_refuses(value):
    with pytest.raises(ValueError, match="positive, finite"):
        Budget.from_timeout(value)


def test_the_largest_timeout_accepted_still_derives_finite_limits():
    assert Budget.from_timeout(MAX_TIMEOUT).whole < float("inf")


@pytest.mark.parametrize("args", [("check", "--no-kernels"), ("audit", "WEIGHTS"), ("check", "--snapshot", "SNAPSHOT")])
def test_an_empty_python_is_a_usage_error_not_mpdoctors_own_interpreter(args, weights):
    argv = [str(weights) if a == "WEIGHTS" else str(fixture_path("cpu-laptop")) if a == "SNAPSHOT" else a for a in args]
    result = mpdoctor(*argv, "--python", "")
    assert_clean(result, 2)
    assert "--python" in result.stderr and ("empty" in result.stderr or "exclude each other" in result.stderr)


def test_python_m_mpdoctor_in_an_untrusted_checkout_imports_nothing_of_it(tmp_path):
    """A `typer.py` in the working directory would run on import: `-m` puts that directory first on sys.path."""
    marker = tmp_path / "pwned"
    for name in ("typer.py", "rich.py", "packaging.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit('imported {name}')\n")
    result = mpdoctor("checks", cwd=tmp_path)
    assert_clean(result, 0)
    assert not marker.exists()
    assert "TORCH001" in result.stdout


def test_python_m_mpdoctor_from_its_own_checkout_still_finds_itself():
    result = mpdoctor("--version", cwd=ROOT)
    assert_clean(result, 0)
    assert result.stdout.startswith("mpdoctor ")
