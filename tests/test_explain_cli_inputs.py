"""explain's input as a user gives it: a log's path as the argument, and scripts whose paths hold error words.

Both from a run of real torch (on the CPU): a script that enters CUDA autocast on a machine without CUDA, warns
that autocast is disabled, and then dies of a KeyError that has nothing to do with precision.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import run_cli

pytest.importorskip("torch")

SCRIPT = """\
import torch
model = torch.nn.Linear(4, 4)
batch = {"x": torch.ones(2, 4)}
with torch.autocast("cuda", dtype=torch.float16):
    model(batch["input_ids"])
"""


def run_log(directory, name):
    """The output of SCRIPT run as ``directory/name`` (its warning lines start with that path)."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / name
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "KeyError: 'input_ids'" in done.stderr, done.stderr[-2000:]
    assert "Disabling autocast" in done.stderr, done.stderr[-2000:]
    log = directory / "run.log"
    log.write_text(done.stdout + done.stderr)
    return log


@pytest.mark.parametrize(
    "where", [("project", "train.py"), ("project", "handle_error.py"), ("terror", "train.py")], ids="/".join
)
def test_a_warning_above_another_failure_stays_a_notice_whatever_the_scripts_path(tmp_path, where):
    """The KeyError ended the run: the autocast warning above it is a notice (exit 1), even when the script's path
    holds a word that ends in "error" (``handle_error.py``, ``/srv/terror/``), which names a file, not an error."""
    log = run_log(tmp_path / where[0], where[1])
    done = run_cli("explain", "--file", str(log), "-f", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["recognised"] == [], report["recognised"]
    assert any(n["id"] == "scaler-autocast-disabled-no-cuda" for n in report["notices"]), report["notices"]


def test_a_logs_path_as_the_argument_is_read_as_the_log(tmp_path):
    log = run_log(tmp_path / "project", "train.py")
    by_argument = run_cli("explain", str(log), "-f", "json")
    by_option = run_cli("explain", "--file", str(log), "-f", "json")
    assert by_argument.returncode == by_option.returncode == 1
    argument, option = json.loads(by_argument.stdout), json.loads(by_option.stdout)
    assert argument["source"] == option["source"] == str(log)
    assert argument["input_lines"] == option["input_lines"] > 1
    assert [n["id"] for n in argument["notices"]] == [n["id"] for n in option["notices"]] != []


def test_text_that_names_no_existing_file_is_still_the_message(tmp_path):
    missing = tmp_path / "no-such.log"
    done = run_cli("explain", str(missing), "-f", "json")
    assert json.loads(done.stdout)["source"] == "the argument"


def test_autocast_advice_for_an_error_that_does_not_say_its_device_names_the_cpus_too(tmp_path):
    """A bf16 Linear fed fp32 on the CPU words its error as it would on a GPU ("mat1 and mat2 must have the same
    dtype"): the lines do not say where it ran, so the autocast advice gives the CPU's form beside CUDA's, not
    CUDA's alone, which on a CPU-only machine disables itself and leaves the same error."""
    code = "import torch\ntorch.nn.Linear(4, 4).bfloat16()(torch.ones(2, 4))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("RuntimeError: mat1 and mat2 must have the same dtype"), message
    report = json.loads(run_cli("explain", message, "-f", "json").stdout)
    fixes = [step["text"] for step in report["recognised"][0]["fixes"]]
    autocast = [text for text in fixes if "torch.autocast(" in text]
    assert autocast and all('torch.autocast("cpu"' in text for text in autocast), fixes


def test_check_runs_the_checks_a_notice_names(tmp_path):
    """Only notices recognised (autocast disabled for want of CUDA): --check still runs the checks they name, as
    their "confirm:" line promises, rather than nothing and no word of why."""
    log = run_log(tmp_path / "project", "train.py")
    done = run_cli("explain", "--file", str(log), "--check", "-f", "json", timeout=300)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["recognised"] == [] and report["notices"]
    assert report["checked"] is True and report["check_error"] == "", report["check_error"]
    text = run_cli("explain", "--file", str(log), "--check", timeout=300).stdout
    assert "on this machine: " in text


def test_a_progress_bar_redrawn_in_place_counts_as_the_lines_the_explanation_numbers(tmp_path):
    """tqdm redraws with a bare carriage return, which explain reads as a line end: the headline's line count and
    the recognised line's number are counted the same way, so "line N" is within "N lines"."""
    bars = "".join(f"\r 10%|#   | {i}/50 [00:01<00:05]" for i in range(50))
    log = tmp_path / "run.log"
    log.write_bytes(
        (bars + "\nRuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16\n").encode()
    )
    report = json.loads(run_cli("explain", "--file", str(log), "-f", "json").stdout)
    (line,) = report["recognised"][0]["lines"]
    assert line["line"] == report["input_lines"] == 52, (line, report["input_lines"])
