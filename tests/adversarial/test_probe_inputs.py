"""What the probes read in the environment under diagnosis: FIFOs, deep syntax trees, huge errors.

Before issue 22: a FIFO named ``evil.py`` in the working directory blocked the
project scan for the whole time limit and cost the inventory (ENV001); a FIFO as a
distribution's METADATA did the same and also stopped the torch part in its apex
step; one file holding a 200,000-deep attribute chain raised RecursionError (on
Python 3.8 the parser segfaults), so ``files_scanned`` was 0 and every real use in
the other files was lost. The probes here are the real remote code, run by real
interpreters in real directories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adversarial.running import HANG, assert_clean, clean_env, mpdoctor
from conftest import dist_info
from interpreters import find_python
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.child import remote_argv

PYTHON38 = Path(find_python("3.8") or "python3.8")  # on PATH or in pyenv; a relative name that exists nowhere if none
AMP_USE = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
DEEP_CHAIN = "x = torch" + ".a" * 200_000 + ".autocast\n"


def run_part(python: str, part: str, cwd: Path, env: dict | None = None) -> dict:
    """One part of the environment probe (``target.py``), as the host runs it; its steps by name."""
    out = cwd / f"{part}.jsonl"
    limits = Budget.from_timeout(20)
    numbers = limits.env_limits() if part == "env" else limits.torch_limits()
    result = subprocess.run(
        remote_argv(python, "target", part, str(out), json.dumps(numbers)),
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=cwd,
        env=env or clean_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    steps = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if "data" in record:
            steps[record["step"]] = record["data"]
    assert steps.get("done") is True, steps.keys()
    return steps


@pytest.fixture
def project(tmp_path) -> Path:
    """A working directory with a real AMP use in train.py."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(AMP_USE)
    return root


def test_a_fifo_named_like_source_is_skipped_with_a_note_and_blocks_nothing(project):
    os.mkfifo(project / "evil.py")
    scan = run_part(sys.executable, "env", project)["project"]
    assert scan["files_scanned"] == 1
    assert [use["file"] for use in scan["torch_amp_uses"]] == ["train.py"]
    assert scan["skipped_files"] == ["evil.py: a FIFO (named pipe), not a regular file"]


@pytest.mark.parametrize("python", [sys.executable, str(PYTHON38)], ids=["this-python", "python3.8"])
def test_a_200000_deep_attribute_chain_costs_only_its_own_file(python, project):
    """3.11 raises RecursionError on it, 3.8 segfaults: neither may cost train.py's use."""
    if not Path(python).exists():
        pytest.skip(f"no {python} on this machine")
    (project / "deep.py").write_text(DEEP_CHAIN)
    scan = run_part(python, "env", project)["project"]
    assert [use["file"] for use in scan["torch_amp_uses"]] == ["train.py"]
    assert scan["files_scanned"] == 2
    assert len(scan["skipped_files"]) == 1 and scan["skipped_files"][0].startswith("deep.py: ")


def test_a_chain_split_over_many_lines_is_skipped_too(project):
    (project / "deep.py").write_text("x = (torch\n" + "    .a\n" * 30_000 + "    .autocast)\n")
    scan = run_part(sys.executable, "env", project)["project"]
    assert [use["file"] for use in scan["torch_amp_uses"]] == ["train.py"]
    assert scan["skipped_files"] == ["deep.py: more than 20000 lines continuing one expression, not parsed"]


@pytest.fixture
def fifo_metadata(tmp_path) -> Path:
    """A directory on sys.path holding a distribution whose METADATA is a FIFO."""
    site = tmp_path / "site"
    (site / "evil-1.0.dist-info").mkdir(parents=True)
    os.mkfifo(site / "evil-1.0.dist-info" / "METADATA")
    return site


def test_a_fifo_as_metadata_costs_its_distribution_not_the_inventory(fifo_metadata, tmp_path):
    steps = run_part(sys.executable, "env", tmp_path, clean_env(PYTHONPATH=str(fifo_metadata)))
    broken = [d for d in steps["distributions"] if d["metadata_path"].endswith("evil-1.0.dist-info")]
    assert len(broken) == 1
    assert "METADATA is a FIFO (named pipe), not a regular file: not read" in broken[0]["problems"][0]
    assert any(d["name"] == "torch" for d in steps["distributions"])  # the rest of the inventory is there


def test_a_fifo_as_metadata_does_not_stop_the_torch_part(fifo_metadata, tmp_path):
    """The apex step reads every distribution's metadata after `import torch`: it used to block there."""
    steps = run_part(sys.executable, "torch", tmp_path, clean_env(PYTHONPATH=str(fifo_metadata)))
    assert steps["import"]["ok"] is True
    assert "apex_loads" in steps and "cuda" in steps


def test_check_of_an_environment_with_a_fifo_metadata_names_it(fake_venv, tmp_path):
    venv = fake_venv("fifo-metadata", dist_info("fine", "1.0"))
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "evil-1.0.dist-info").mkdir()
    os.mkfifo(site / "evil-1.0.dist-info" / "METADATA")
    result = mpdoctor(
        "check",
        "--python",
        str(venv / "bin" / "python"),
        "--no-kernels",
        "--format",
        "json",
        "--select",
        "ENV",
        "--timeout",
        "20",
        cwd=tmp_path,
    )
    assert_clean(result, 0, 1)
    findings = {f["code"]: f for f in json.loads(result.stdout)["findings"]}
    assert "ENV001" not in findings  # the inventory finished
    assert "FIFO" in " ".join(findings["ENV002"]["evidence"] + [findings["ENV002"]["title"]])


def test_a_torch_raising_an_importerror_of_200000_characters_is_reported_not_hung(fake_venv, tmp_path):
    """Was "import torch hangs": the redactor was quadratic (issue 22 part A); the step file is bounded by _clip."""
    venv = fake_venv("huge-importerror", {"torch/__init__.py": "raise ImportError('B' * 200000)\n"})
    result = mpdoctor(
        "check",
        "--python",
        str(venv / "bin" / "python"),
        "--no-kernels",
        "--format",
        "json",
        "--select",
        "TORCH",
        "--timeout",
        "20",
        cwd=tmp_path,
    )
    assert_clean(result, 1)
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert "TORCH002" in codes and "TORCH004" not in codes


def test_a_fifo_as_metadata_does_not_stop_the_kernel_runner(fifo_metadata, tmp_path):
    """With kernels on, the runner is the torch part: its apex step read every METADATA and blocked (TORCH004/010)."""
    result = mpdoctor(
        "check",
        "--select",
        "TORCH,PREC",
        "--format",
        "json",
        "--timeout",
        "30",
        env=clean_env(PYTHONPATH=str(fifo_metadata)),
        cwd=tmp_path,
    )
    assert_clean(result, 0, 1)
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert not {"TORCH004", "TORCH010"} & set(codes), codes


# Chains of these many lines, all under the pre-parse bounds (20,000 lines continuing one expression): the
# first one this interpreter's parser refuses is the test's. 3.11 and 3.12.1 refuse 5,000; 3.13 (and later 3.12
# releases, whose C recursion limit was raised) parse 8,000 and refuse 10,000.
CHAIN_LINES = (5_000, 10_000, 19_000)


def chain(lines: int) -> str:
    return "x = (torch\n" + "    .a\n" * lines + "    .autocast)\n"


def refused_chain(python: str) -> str | None:
    """The shortest of the CHAIN_LINES chains ``python``'s own parser raises RecursionError on; None if none."""
    code = (
        "import ast, sys\n"
        "for n in map(int, sys.argv[1:]):\n"
        "    try:\n"
        "        ast.parse('x = (torch\\n' + '    .a\\n' * n + '    .autocast)\\n')\n"
        "    except RecursionError:\n"
        "        print(n)\n"
        "        break\n"
    )
    out = subprocess.run(
        [python, "-c", code, *map(str, CHAIN_LINES)], capture_output=True, text=True, timeout=HANG, check=True
    ).stdout.strip()
    return chain(int(out)) if out else None


def test_a_chain_the_parser_refuses_with_recursionerror_costs_only_its_file(project):
    """Under the pre-parse bounds, over what this Python's parser builds (RecursionError): only deep.py is lost."""
    text = refused_chain(sys.executable)
    if text is None:
        pytest.skip(
            f"Python {sys.version.split()[0]} parses every chain of {CHAIN_LINES} lines: no chain under the "
            "pre-parse bounds makes its parser raise RecursionError"
        )
    (project / "deep.py").write_text(text)
    scan = run_part(sys.executable, "env", project)["project"]
    assert [use["file"] for use in scan["torch_amp_uses"]] == ["train.py"]
    assert scan["skipped_files"] == ["deep.py: nested too deeply for the parser, not parsed"]


def test_a_child_that_floods_its_output_is_read_to_a_bound_keeping_its_last_line():
    """A probe's result is on its last line: a child printing 24 MB before it costs 16 MB of memory, not 24."""
    from mpdoctor.probes.child import MAX_OUTPUT, run_child

    flood = "import sys; sys.stdout.write('x' * (24 << 20) + '\\nRESULT\\n')"
    result = run_child([sys.executable, "-c", flood], 60)
    assert result.exit_code == 0
    assert len(result.stdout) <= MAX_OUTPUT and result.stdout.splitlines()[-1] == "RESULT"


FIFO_READS = """
import sys
from mpdoctor.probes.remote import apex, oneflow
root = sys.argv[1]
assert [line["line"] for line in apex.pth_lines([root])] == ["import apex_hook  # apex"]
assert apex.module_imports(root + "/apex/__init__.py") is not None
assert apex.elf_needed(root + "/apex/amp_C.so") is None
assert oneflow._read(root + "/oneflow/__init__.py") == b""
print("read past every FIFO")
"""


def test_fifos_where_the_apex_and_oneflow_probes_read_are_refused_not_waited_on(tmp_path):
    """A FIFO opened for reading blocks until a writer comes: as a .pth file, as apex's or oneflow's package
    files, as an extension module, each is passed over (the readers go through ``portable.files``). In a child
    with a deadline, so that a reader that waits fails the test instead of hanging it."""
    os.mkfifo(tmp_path / "evil.pth")
    (tmp_path / "good.pth").write_text("import apex_hook  # apex\n")
    for package in ("apex", "oneflow"):
        (tmp_path / package).mkdir()
        os.mkfifo(tmp_path / package / "__init__.py")
    os.mkfifo(tmp_path / "apex" / "amp_C.so")
    try:
        result = subprocess.run(
            [sys.executable, "-c", FIFO_READS, str(tmp_path)], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a probe reader waited on a FIFO")
    assert result.returncode == 0 and "read past every FIFO" in result.stdout, result.stderr[-2000:]
