"""Bad input and faults become a clear finding or message: never a traceback, never a hang.

Each environment here is a real throwaway venv on disk (``python -m venv
--without-pip``) with fake packages in its site-packages, diagnosed by the real
CLI in a subprocess. One failing probe part or check must not cost the others.
"""

from __future__ import annotations

import copy
import ctypes.util
import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import pynvml
import pytest

from conftest import dist_info
from real_envs import run_commands
from mpdoctor.probes.machine import nvml_facts, probe_nvml
from mpdoctor.checks.registry import Registry
from mpdoctor.doctor.judge import run_checks
from mpdoctor.findings import FixStep, error, warning
from mpdoctor.snapshot import Machine, Snapshot

FIXTURES = Path(__file__).parent / "fixtures"


# ---------------------------------------------------------------- helpers


def cli(*args: str, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real ``mpdoctor`` CLI in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout


def json_report(proc: subprocess.CompletedProcess) -> dict:
    """The JSON report on stdout, after checking that mpdoctor itself did not blow up.

    A target's own traceback is legitimately part of the report (torch.error_traceback
    and TORCH002's evidence); nothing else may contain one.
    """
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    scrubbed = copy.deepcopy(report)
    scrubbed["snapshot"]["torch"]["error_traceback"] = ""
    for finding in scrubbed["findings"]:
        if finding["code"] == "TORCH002":
            finding["evidence"] = []
    assert "Traceback" not in json.dumps(scrubbed), json.dumps(scrubbed, indent=1)
    return report


def findings(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def one(report: dict, code: str) -> dict:
    found = findings(report, code)
    assert len(found) == 1, [(f["code"], f["title"]) for f in report["findings"]]
    return found[0]


def dist_names(report: dict) -> set[str]:
    return {d["name"] for d in report["snapshot"]["environment"]["distributions"]}


def check_python(python: Path | str, *extra: str, timeout_opt: str = "20", timeout: float = 60):
    return cli("check", "--python", str(python), "--format", "json", "--timeout", timeout_opt, *extra, timeout=timeout)


def torch_venv(fake_venv, name: str, init: str) -> Path:
    """A venv whose torch 2.3.0 is a real distribution with this ``__init__.py``."""
    return fake_venv(name, {"torch/__init__.py": init, **dist_info("torch", "2.3.0")})


# ---------------------------------------------------------------- 1. torch missing


def test_venv_without_torch_reports_torch_missing(fake_venv):
    venv = fake_venv("no-torch")
    proc = check_python(fake_venv.python(venv))
    report = json_report(proc)
    assert proc.returncode == 1  # TORCH001 is an error
    finding = one(report, "TORCH001")
    assert finding["severity"] == "error"
    assert "not installed" in finding["title"]
    assert any(str(fake_venv.python(venv)) in line for line in finding["evidence"])
    snap = report["snapshot"]
    assert snap["torch"]["status"] == "missing"
    assert snap["environment"]["probe"]["status"] == "ok"
    assert snap["environment"]["python"]["prefix"] == str(venv)
    assert not findings(report, "ENV001")


# ---------------------------------------------------------------- 2. import raises


CUDNN_ERROR = "libcudnn.so.9: cannot open shared object file: No such file or directory"


def test_torch_import_error_is_reported_with_its_message(fake_venv):
    venv = torch_venv(fake_venv, "torch-import-error", f"raise ImportError({CUDNN_ERROR!r})\n")
    proc = check_python(fake_venv.python(venv))
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "TORCH002")
    assert finding["severity"] == "error"
    assert "libcudnn.so.9: cannot open shared object file" in finding["title"]
    assert any("libcudnn.so.9" in line for line in finding["evidence"])
    assert any(
        "LD_LIBRARY_PATH" in step["text"] or "LD_LIBRARY_PATH" in (step["command"] or "") for step in finding["fix"]
    )
    # The reinstall keeps the installed version, read from the fake distribution.
    assert any("torch==2.3.0" in (step["command"] or "") for step in finding["fix"])
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "import-error"
    assert torch["error_type"] == "ImportError"
    assert CUDNN_ERROR in torch["error_message"]
    assert torch["probe"]["status"] == "ok"  # the probe itself survived the failing import
    assert "torch" in dist_names(report)
    assert not findings(report, "ENV001")


def test_a_torch_with_no_install_record_is_moved_aside_never_reinstalled_unpinned(fake_venv):
    """A torch/ directory with no dist-info (a copied or half-removed install): pip knows no version to reinstall, and
    an unpinned `pip install torch` would fetch PyPI's newest CUDA build. The fix moves it aside (run here for real)
    and installs the build this machine needs from PyTorch's own index."""
    venv = fake_venv("torch-no-record", {"torch/__init__.py": "raise ImportError('half-removed install')\n"})
    report = json_report(check_python(fake_venv.python(venv)))
    steps = [step["command"] or "" for step in one(report, "TORCH002")["fix"]]
    installs = [c for c in steps if re.search(r"-m pip install\b", c)]
    assert installs and all("--index-url https://download.pytorch.org/whl/" in c for c in installs), steps
    assert not any("--force-reinstall" in c for c in steps), steps
    move = [c for c in steps if c.startswith("mv ")]
    assert len(move) == 1, steps
    run_commands(move, cwd=venv)
    again = json_report(check_python(fake_venv.python(venv)))
    assert not findings(again, "TORCH002") and findings(again, "TORCH001")  # torch is now simply missing
    assert list(venv.rglob("torch.broken/__init__.py"))  # kept, to restore


def test_import_error_with_markup_renders_as_text(fake_venv):
    """Rich markup in a target's error message must not break the terminal renderer."""
    venv = torch_venv(fake_venv, "torch-markup-error", "raise RuntimeError('bad [/bold] lib [red]x')\n")
    proc = cli("check", "--python", str(fake_venv.python(venv)), "--timeout", "20")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert "TORCH002" in proc.stdout
    assert "bad [/bold] lib [red]x" in proc.stdout


# ---------------------------------------------------------------- 3. import aborts


def test_torch_import_that_aborts_is_a_crash_finding_and_inventory_survives(fake_venv, tmp_path):
    venv = torch_venv(fake_venv, "torch-abort", "import os\nos.abort()\n")
    proc = cli("check", "--python", str(fake_venv.python(venv)), "--format", "json", "--timeout", "20", cwd=tmp_path)
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "TORCH003")
    assert finding["severity"] == "error"
    assert "SIGABRT" in finding["title"]
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "import-crashed"
    assert torch["probe"]["status"] == "crashed"
    assert torch["probe"]["step"] == "import"
    assert "SIGABRT" in torch["probe"]["detail"]
    assert torch["probe"]["exit_code"] == -6
    # The inventory runs in its own process: the crash of the torch part does not cost it.
    env = report["snapshot"]["environment"]
    assert env["probe"]["status"] == "ok"
    (dist,) = [d for d in env["distributions"] if d["name"] == "torch"]
    assert dist["version"] == "2.3.0"
    assert not findings(report, "ENV001")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_crash_renders_in_every_format(fake_venv, tmp_path, fmt):
    venv = torch_venv(fake_venv, "torch-abort", "import os\nos.abort()\n")
    proc = cli("check", "--python", str(fake_venv.python(venv)), "--format", fmt, "--timeout", "20", cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 1
    assert "TORCH003" in proc.stdout and "SIGABRT" in proc.stdout


# ---------------------------------------------------------------- 4. import hangs


def test_torch_import_that_hangs_is_abandoned_at_the_timeout(fake_venv):
    venv = torch_venv(fake_venv, "torch-hang", "import time\ntime.sleep(600)\n")
    start = time.monotonic()
    proc = check_python(fake_venv.python(venv), timeout_opt="3", timeout=60)
    elapsed = time.monotonic() - start
    assert elapsed < 20, f"took {elapsed:.1f} s with --timeout 3"
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "TORCH004")
    assert finding["severity"] == "error"
    assert "hangs" in finding["title"]
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "import-timeout"
    assert torch["probe"]["status"] == "timeout"
    assert torch["probe"]["step"] == "import"
    assert report["snapshot"]["environment"]["probe"]["status"] == "ok"
    assert "torch" in dist_names(report)


@pytest.mark.parametrize("at_exit", ["import time; time.sleep(600)", "import os; os.abort()"], ids=["hangs", "aborts"])
@pytest.mark.parametrize("kernels", [("--no-kernels",), ()], ids=["torch-part", "kernel-runner"])
def test_a_torch_that_hangs_or_crashes_at_exit_costs_nothing(fake_venv, at_exit, kernels):
    """Every result is flushed to the step file before a probe child ends, and the child ends with os._exit:
    an exit handler (here torch's own, as a stand-in for one that hangs in a driver at shutdown) never runs,
    so it can neither hold the check until the timeout nor turn a finished probe into a crash. The same for
    the torch part (--no-kernels) and for the kernel runner, which is the torch part otherwise."""
    init = f"import atexit\n__version__ = '2.3.0'\natexit.register(lambda: exec({at_exit!r}))\n"
    venv = torch_venv(fake_venv, "torch-bad-exit", init)
    proc = check_python(fake_venv.python(venv), *kernels, timeout_opt="10", timeout=60)
    report = json_report(proc)
    torch = report["snapshot"]["torch"]
    assert torch["probe"]["status"] == "ok", torch["probe"]
    assert torch["status"] != "import-timeout" and not findings(report, "TORCH004")
    assert report["snapshot"]["environment"]["probe"]["status"] == "ok"


# ---------------------------------------------------------------- 4b. other torch-part faults


def test_interpreter_that_aborts_at_startup_is_env001(fake_venv, tmp_path):
    """A broken .pth file kills every process of that interpreter: both probe parts die."""
    venv = fake_venv("pth-abort", {"zz-broken.pth": "import os; os.abort()\n"})
    proc = cli("check", "--python", str(fake_venv.python(venv)), "--format", "json", "--timeout", "20", cwd=tmp_path)
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "ENV001")
    assert "SIGABRT" in finding["title"]
    assert "probe status: crashed" in finding["evidence"][0]
    snap = report["snapshot"]
    assert snap["environment"]["probe"]["status"] == "crashed"
    assert snap["torch"]["probe"]["status"] == "crashed"
    assert snap["machine"]["nvml"]["status"] != "not-run"


def test_interpreter_that_hangs_at_startup_is_env001_within_the_timeout(fake_venv):
    venv = fake_venv("pth-hang", {"zz-hang.pth": "import time; time.sleep(600)\n"})
    start = time.monotonic()
    proc = check_python(fake_venv.python(venv), timeout_opt="2")
    assert time.monotonic() - start < 15
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "ENV001")
    assert "did not finish within 2 s" in finding["title"]
    assert report["snapshot"]["environment"]["probe"]["status"] == "timeout"


# A leftover ``torch/`` directory with no ``__init__.py`` (what an interrupted
# ``pip uninstall torch`` leaves behind) imports as an empty namespace package.
LEFTOVER_TORCH = {"torch/lib/libtorch_cpu.so": b"", "torch/include/ATen/ATen.h": "// leftover\n"}


def test_torch_probe_survives_a_torch_module_without_cuda(fake_venv):
    venv = fake_venv("torch-leftover-dir", LEFTOVER_TORCH)
    proc = check_python(fake_venv.python(venv))
    torch = json.loads(proc.stdout)["snapshot"]["torch"]
    assert torch["status"] == "imported"
    assert torch["probe"]["status"] == "ok", torch["probe"]
    assert "version" in torch["fact_errors"]  # what could not be read is recorded, not fatal
    json_report(proc)  # and mpdoctor's own probe left no traceback in the report


def test_leftover_torch_directory_is_not_reported_as_healthy(fake_venv):
    venv = fake_venv("torch-leftover-dir", LEFTOVER_TORCH)
    proc = check_python(fake_venv.python(venv))
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert [f for f in report["findings"] if f["code"].startswith("TORCH") and f["severity"] == "error"]
    assert proc.returncode == 1


def test_background_process_started_by_torch_is_not_a_hang(fake_venv):
    venv = torch_venv(
        fake_venv,
        "torch-spawns-daemon",
        (
            "import subprocess, types\n"
            "subprocess.Popen(['sleep', '60'])  # a helper daemon that outlives the import\n"
            "__version__ = '2.3.0'\n"
            "version = types.SimpleNamespace(cuda=None, hip=None, git_version='0' * 40)\n"
            "backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: None))\n"
            "cuda = types.SimpleNamespace(get_arch_list=lambda: [], is_available=lambda: False, device_count=lambda: 0)\n"
        ),
    )
    start = time.monotonic()
    proc = check_python(fake_venv.python(venv), timeout_opt="3")
    elapsed = time.monotonic() - start
    report = json_report(proc)
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "imported" and torch["version"] == "2.3.0"
    assert not findings(report, "TORCH010"), findings(report, "TORCH010")
    assert torch["probe"]["status"] == "ok", torch["probe"]
    assert elapsed < 30  # the daemon's 60 s were not waited out (seconds to spare for a busy machine)


# ---------------------------------------------------------------- 5. no such interpreter


def test_missing_interpreter_is_a_usage_error():
    proc = cli("check", "--python", "/does/not/exist")
    no_traceback(proc)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpdoctor: error: ")
    assert "no such interpreter" in lines[0]
    assert proc.stdout == ""


def test_missing_interpreter_on_path_is_a_usage_error():
    proc = cli("check", "--python", "no-such-python-mpdoctor-test")
    no_traceback(proc)
    assert proc.returncode == 2
    assert "no such interpreter" in proc.stderr


@pytest.mark.parametrize("kind", ["directory", "not-executable"])
def test_interpreter_that_cannot_be_run_is_a_usage_error(tmp_path, kind):
    target = tmp_path / "python"
    if kind == "directory":
        target.mkdir()
    else:
        target.write_text("#!/bin/sh\n")
        target.chmod(0o644)
    proc = cli("check", "--python", str(target))
    no_traceback(proc)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "not an executable file" in proc.stderr


# ---------------------------------------------------------------- 6. not a Python


@pytest.fixture(scope="module")
def not_pythons(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("not-python")
    script = root / "shell-script"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    junk = root / "junk-binary"  # executable bit, but no shebang and no ELF header
    junk.write_bytes(b"\x00\x01\x02 not a program\n")
    junk.chmod(0o755)
    return {"shell-script": str(script), "bin-true": "/bin/true", "junk-binary": str(junk)}


@pytest.mark.parametrize("which", ["shell-script", "bin-true", "junk-binary"])
def test_python_that_is_not_python_is_env001_and_other_checks_still_run(not_pythons, which):
    proc = check_python(not_pythons[which])
    report = json_report(proc)
    assert proc.returncode == 1
    finding = one(report, "ENV001")
    assert finding["severity"] == "error"
    assert finding["title"].startswith("cannot inventory the Python environment")
    assert finding["fix"]
    snap = report["snapshot"]
    assert snap["environment"]["probe"]["status"] == "error"
    assert snap["environment"]["probe"]["detail"]
    # The machine probe does not depend on the target interpreter: it still ran.
    assert snap["machine"]["nvml"]["status"] != "not-run"
    # The torch part failed the same way; no torch verdict is invented from it.
    assert snap["torch"]["probe"]["status"] == "error"
    assert not [f for f in report["findings"] if f["code"].startswith("TORCH")]


# ---------------------------------------------------------------- 7. broken metadata


BROKEN_DISTS = {
    "noname-1.0.dist-info": "no Name in metadata",
    # importlib.metadata treats an unreadable METADATA (here a directory) as absent.
    "dirmeta-1.0.dist-info": "no Name in metadata",
    "badbytes-1.0.dist-info": "metadata unreadable: 'utf-8' codec can't decode",
}


@pytest.fixture(scope="module")
def broken_metadata_report(fake_venv) -> tuple[Path, subprocess.CompletedProcess]:
    venv = fake_venv(
        "broken-metadata",
        {
            "noname-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nSummary: lost its name\n",
            "dirmeta-1.0.dist-info/METADATA": None,  # a directory where the file should be
            "badbytes-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: bad\xff\xfebytes\nVersion: 1\xc3(\n",
            **dist_info("goodpkg", "1.0"),
        },
    )
    return venv, check_python(fake_venv.python(venv))


def test_broken_metadata_is_env002_naming_each_directory(broken_metadata_report):
    venv, proc = broken_metadata_report
    report = json_report(proc)
    env = report["snapshot"]["environment"]
    assert env["probe"]["status"] == "ok"
    assert env["distributions_error"] == ""
    assert "goodpkg" in dist_names(report)  # the sound distribution still came through
    found = findings(report, "ENV002")
    assert len(found) == len(BROKEN_DISTS), [f["title"] for f in found]
    for directory, problem in BROKEN_DISTS.items():
        (finding,) = [f for f in found if any(line.endswith(directory) for line in f["evidence"])]
        assert finding["severity"] == "warning"
        assert problem in finding["title"]
        assert any(directory in (step["command"] or "") for step in finding["fix"])
    assert not findings(report, "ENV001")
    assert not findings(report, "MPD001")
    one(report, "TORCH001")  # the other checks still ran


def test_broken_metadata_exit_code_follows_the_worst_finding(broken_metadata_report):
    _, proc = broken_metadata_report
    assert proc.returncode == 1  # TORCH001 (no torch here) is an error; ENV002 is a warning


# ---------------------------------------------------------------- 8. bad snapshots


def _valid_snapshot() -> dict:
    return json.loads((FIXTURES / "cpu-laptop.json").read_text(encoding="utf-8"))


def _with(path: tuple[str, ...], value) -> dict:
    data = _valid_snapshot()
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


BAD_SNAPSHOTS = {
    "truncated": (json.dumps(_valid_snapshot())[:200], "invalid JSON"),
    "list": ("[1, 2, 3]", "expected a JSON object"),
    "newer-schema": (json.dumps(_with(("schema_version",), 99)), "upgrade mpdoctor"),
    "wrong-type": (json.dumps(_with(("torch", "version"), 5)), "$.torch.version: expected str, got int"),
    "no-schema-version": (json.dumps({"torch": {}}), "no integer schema_version"),
    "bool-schema-version": (json.dumps(_with(("schema_version",), True)), "no integer schema_version"),
    "schema-version-0": (json.dumps(_with(("schema_version",), 0)), "unknown snapshot schema version 0"),
    "nested-wrong-type": (
        json.dumps(_with(("environment", "distributions"), [{"name": ["x"]}])),
        "$.environment.distributions[0].name: expected str, got list",
    ),
    "report-with-bad-snapshot": (json.dumps({"findings": [], "snapshot": "nope"}), "'snapshot' is not an object"),
    "not-utf8": (b"\xff\xfe{\x00", "not UTF-8"),
    "empty": ("", "invalid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_SNAPSHOTS))
def test_bad_snapshot_is_a_one_line_usage_error(tmp_path, case):
    content, expected = BAD_SNAPSHOTS[case]
    path = tmp_path / f"{case}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    proc = cli("check", "--snapshot", str(path), "--format", "json")
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpdoctor: error: ")
    assert expected in lines[0]


def test_newer_schema_message_names_both_versions(tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps(_with(("schema_version",), 99)), encoding="utf-8")
    proc = cli("check", "--snapshot", str(path))
    assert proc.returncode == 2
    assert "99" in proc.stderr and "newer than this mpdoctor understands" in proc.stderr
    assert "pip install -U mpdoctor" in proc.stderr


def test_deeply_nested_snapshot_is_a_usage_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    proc = cli("check", "--snapshot", str(path))
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpdoctor: error: ") and "snapshot" in lines[0]


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_snapshot_path_is_a_usage_error(tmp_path, kind):
    path = tmp_path / "snap.json"
    if kind == "directory":
        path.mkdir()
    proc = cli("check", "--snapshot", str(path))
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.startswith("mpdoctor: error: cannot read snapshot")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_valid_snapshot_still_works(tmp_path):
    """The control for the bad-snapshot cases: the fixture itself is accepted."""
    proc = cli("check", "--snapshot", str(FIXTURES / "cpu-laptop.json"), "--format", "json")
    report = json_report(proc)
    assert proc.returncode == 0
    assert report["findings"] == []


# ---------------------------------------------------------------- 8b. bad output paths


@pytest.mark.parametrize("option", ["--output", "--save-snapshot"])
@pytest.mark.parametrize("where", ["missing-dir", "is-a-dir"])
def test_unwritable_output_path_is_a_usage_error(tmp_path, option, where):
    target = tmp_path / "no-such-dir" / "out.json" if where == "missing-dir" else tmp_path
    proc = cli("check", "--snapshot", str(FIXTURES / "cpu-laptop.json"), "--format", "json", option, str(target))
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpdoctor: error: "), proc.stderr
    assert str(target) in lines[0]
    assert ".mpdoctor-" not in proc.stderr


def test_unwritable_output_path_does_not_traceback(tmp_path):
    """What holds today: a clean message and a non-zero exit, never a traceback."""
    proc = cli(
        "check", "--snapshot", str(FIXTURES / "cpu-laptop.json"), "--output", str(tmp_path / "no-such-dir" / "out.md")
    )
    no_traceback(proc)
    assert proc.returncode != 0
    assert proc.stderr.startswith("mpdoctor: ")
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- 9. a check that raises


def test_a_crashing_check_is_mpd001_and_the_others_still_report():
    registry = Registry({"test": "TST"})  # a family of its own, prefix TST

    def explodes(snap):
        """Raises."""
        raise KeyError("no-such-fact")

    def explodes_midway(snap):
        """Yields, then raises."""
        yield warning("half a verdict")
        raise ZeroDivisionError("division by zero in a check")

    def works(snap):
        """Finds something."""
        yield error("a real problem", ["fact"], [FixStep("fix it")])

    registry.add("TST001", "test-explodes", "test", explodes)
    registry.add("TST002", "test-explodes-midway", "test", explodes_midway)
    registry.add("TST003", "test-works", "test", works)
    result = run_checks(Snapshot(), registry)

    crashes = [f for f in result if f.code == "MPD001"]
    assert len(crashes) == 2
    first, second = crashes
    assert first.name == "check-crashed" and first.family == "mpdoctor"
    assert "TST001" in first.title and "test-explodes" in first.title
    assert "KeyError" in first.title and "no-such-fact" in first.title
    assert "TST002" in second.title and "ZeroDivisionError" in second.title
    assert any("explodes" in line for line in first.evidence)  # where it raised
    assert first.fix
    (good,) = [f for f in result if f.code == "TST003"]
    assert good.title == "a real problem" and good.severity == "error"
    assert good.name == "test-works" and good.family == "test"


def test_fresh_registry_leaves_the_builtin_one_alone():
    from mpdoctor.checks.registry import builtin_registry

    registry = Registry({"test": "TST"})
    registry.add("TST001", "test-only", "test", lambda snap: [])
    assert builtin_registry().get("TST001") is None


# ---------------------------------------------------------------- 10. NVML


def _raises(exc):
    def call(*args):
        raise exc

    return call


def _rm_mismatch_nvml():
    return types.SimpleNamespace(
        nvmlInit=_raises(pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)),
        nvmlShutdown=lambda: None,
    )


def test_nvml_version_mismatch_is_an_error_fact():
    exc = pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    assert type(exc).__name__ == "NVMLError_LibRmVersionMismatch"  # the real pynvml class
    info = nvml_facts(_rm_mismatch_nvml)
    assert info.status == "error"
    assert info.reason == "LibRmVersionMismatch"
    assert info.detail


def test_drv001_tells_to_reboot_after_a_driver_upgrade():
    info = nvml_facts(_rm_mismatch_nvml)
    snap = Snapshot(machine=Machine(nvml=info))
    from mpdoctor.checks.registry import builtin_registry

    result = run_checks(snap, builtin_registry().select(["DRV001"]))
    (finding,) = result
    assert finding.code == "DRV001" and finding.severity == "error"
    assert "LibRmVersionMismatch" in finding.title
    assert any("reboot" in step.text.lower() or "reboot" in (step.command or "") for step in finding.fix)


def fake_pynvml(tmp_path: Path, monkeypatch, init_body: str) -> None:
    """A stand-in pynvml for the NVML child (a child of this interpreter: it inherits PYTHONPATH)."""
    (tmp_path / "pynvml.py").write_text(f"def nvmlInit():\n    {init_body}\n\ndef nvmlShutdown():\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))


def test_nvml_hang_is_abandoned_at_the_timeout(tmp_path, monkeypatch):
    fake_pynvml(tmp_path, monkeypatch, "import time; time.sleep(60)")
    start = time.monotonic()
    info = probe_nvml(timeout=0.5)
    elapsed = time.monotonic() - start
    assert elapsed < 10, elapsed  # the child's 60 s were not waited out (room for a busy machine)
    assert info.status == "timeout"
    assert "0.5 s" in info.detail
    assert 0.4 <= info.seconds < 10


def test_nvml_loader_that_raises_is_unavailable():
    def missing():
        raise ImportError("No module named 'pynvml'")

    info = nvml_facts(missing)
    assert info.status == "unavailable"
    assert info.reason == "PynvmlMissing"


def test_nvml_that_crashes_is_an_error_fact_and_mpdoctor_survives(tmp_path, monkeypatch):
    """A segfault inside libnvidia-ml kills only the NVML child: mpdoctor (this process) goes on."""
    from mpdoctor.checks.registry import builtin_registry

    fake_pynvml(tmp_path, monkeypatch, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    info = probe_nvml(timeout=10)
    assert (info.status, info.reason) == ("error", "Crashed"), info
    assert "SIGSEGV" in info.detail
    (finding,) = run_checks(Snapshot(machine=Machine(nvml=info)), builtin_registry().select(["DRV001"]))
    assert finding.severity == "error" and "Crashed" in finding.title


def test_check_survives_an_nvml_that_crashes(tmp_path):
    # On PYTHONPATH in a directory of its own: mpdoctor's children drop an entry that names the working directory.
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "pynvml.py").write_text(
        "import os, signal\n\ndef nvmlInit():\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHOME"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    proc = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "check", "--no-kernels", "--format", "json", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    report = json_report(proc)
    assert report["snapshot"]["machine"]["nvml"]["reason"] == "Crashed"
    assert "NVML fails: Crashed" in one(report, "DRV001")["title"]


def _two_gpu_nvml():
    gpus = [
        (b"NVIDIA GeForce RTX 3090", b"GPU-aaaa", b"00000000:3B:00.0", (8, 6)),
        ("NVIDIA A100-SXM4-80GB", "GPU-bbbb", "00000000:AF:00.0", (8, 0)),
    ]
    return types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"535.113.01",
        nvmlSystemGetNVMLVersion=lambda: "12.535.113.01",
        nvmlSystemGetCudaDriverVersion=lambda: 12020,
        nvmlDeviceGetCount=lambda: len(gpus),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: gpus[h][0],
        nvmlDeviceGetUUID=lambda h: gpus[h][1],
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=gpus[h][2]),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=24 * 2**30),
        # A GPU (or driver) that cannot say: the field is left empty, not a crash.
        nvmlDeviceGetCudaComputeCapability=lambda h: (
            gpus[h][3] if h == 0 else _raises(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED))()
        ),
    )


def test_nvml_facts_are_normalised():
    info = nvml_facts(_two_gpu_nvml)
    assert info.status == "ok", info
    assert info.driver_version == "535.113.01"
    assert info.cuda_driver_version == "12.2"
    assert len(info.gpus) == 2
    first, second = info.gpus
    assert first.pci_bus_id == "0000:3b:00.0"
    assert first.name == "NVIDIA GeForce RTX 3090" and first.uuid == "GPU-aaaa"
    assert first.compute_capability == "8.6"
    assert first.memory_total == 24 * 2**30
    assert second.pci_bus_id == "0000:af:00.0"
    assert second.compute_capability == ""


def test_nvml_gpu_that_cannot_be_opened_keeps_its_index():
    def no_permission():
        fake = _two_gpu_nvml()
        fake.nvmlDeviceGetHandleByIndex = lambda i: (
            i if i == 0 else _raises(pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION))()
        )
        return fake

    info = nvml_facts(no_permission)
    assert info.status == "ok"
    assert [g.index for g in info.gpus] == [0, 1]
    assert info.gpus[1].error.startswith("NoPermission")
    assert info.gpus[1].name == ""


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has an NVIDIA driver")
def test_real_pynvml_without_a_driver_is_unavailable():
    info = probe_nvml(timeout=10)
    assert info.status == "unavailable"
    assert info.reason == "LibraryNotFound"
    snap = Snapshot(machine=Machine(nvml=info))
    from mpdoctor.checks.registry import builtin_registry

    assert run_checks(snap, builtin_registry().select(["DRV001"])) == []  # no driver is not a fault


def test_a_python_too_old_to_probe_says_so():
    from interpreters import find_pythons

    old = find_pythons("2.7", "3.6")
    if not old:
        pytest.skip("no Python older than 3.8 on this machine")
    proc = cli("check", "--python", old[0], "--format", "json", "--timeout", "20")
    report = json_report(proc)
    assert "is too old: mpdoctor can diagnose Python 3.8 or newer" in one(report, "ENV001")["title"]
