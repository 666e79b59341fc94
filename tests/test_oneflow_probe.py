"""The oneflow probe's parts on their own: the static look at a oneflow package, what `import torch`
would load, the oneflow part run in a real child, the facts built from its steps, and the project scan.

No real OneFlow is needed: placeholders, fake cores and mock-torch layouts are written to tmp_path.
Whatever depends on which `torch` an interpreter finds runs in a fresh child interpreter, because
``importlib.util.find_spec("torch")`` answers from ``sys.modules`` once torch is imported.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import types
import zipfile
from pathlib import Path


from mpdoctor.probes.remote import apex as target_apex, oneflow as target_oneflow, scan as target_scan
from mpdoctor.probes.child import ChildResult
from mpdoctor.probes.environment import StepFile, oneflow_runtime, run_part
from mpdoctor.schema.serde import from_data
from mpdoctor.snapshot.oneflow import CoexistCase, OneflowBuild

REPO = Path(__file__).resolve().parent.parent
PYPI_WHEEL = REPO / "tests" / "fixtures" / "pypi" / "oneflow-0.7.0-py3-none-any.whl"
PLACEHOLDER_RAISE = (
    'raise RuntimeError("This package is a placeholder. Please install oneflow following the '
    'instructions in https://github.com/Oneflow-Inc/oneflow#install-oneflow")\n'
)
MOCK_TORCH_INIT = "import oneflow\n\ndef __getattr__(name):\n    return getattr(oneflow, name)\n"
CORE = "_oneflow_internal.cpython-311-x86_64-linux-gnu.so"


def write(path: Path, text: str | bytes = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def placeholder_site(site: Path) -> Path:
    """A site directory holding PyPI's oneflow 0.7.0 as it installs: a placeholder, no native core."""
    write(site / "oneflow" / "__init__.py", PLACEHOLDER_RAISE)
    write(site / "oneflow" / "version.py", '__version__ = "0.7.0"\n__git_commit__ = "9c7d1a99c8"\n')
    write(
        site / "oneflow-0.7.0.dist-info" / "WHEEL",
        "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.37.1)\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n",
    )
    return site / "oneflow"


# ---------------------------------------------------------------- build_facts: the package on disk


def test_build_facts_recognise_the_pypi_placeholder(tmp_path):
    directory = placeholder_site(tmp_path)
    facts = target_oneflow.build_facts(str(directory))
    assert facts["native_core"] == ""
    assert facts["placeholder_message"].startswith("This package is a placeholder")
    assert facts["placeholder_message"].endswith("#install-oneflow")  # the whole message, not the closing quote
    assert (facts["version"], facts["git_commit"]) == ("0.7.0", "9c7d1a99c8")
    assert facts["wheel_tags"] == ["py3-none-any"] and facts["purelib"] is True
    assert facts["metadata_dir"] == "oneflow-0.7.0.dist-info" and facts["has_mock_torch"] is False
    assert "error" not in facts
    assert from_data(OneflowBuild, facts).placeholder_message == facts["placeholder_message"]


def test_build_facts_on_the_real_pypi_wheel_unpacked(tmp_path):
    with zipfile.ZipFile(PYPI_WHEEL) as wheel:
        wheel.extractall(tmp_path)
    facts = target_oneflow.build_facts(str(tmp_path / "oneflow"))
    assert facts["native_core"] == "" and facts["placeholder_message"].startswith("This package is a placeholder")
    assert (facts["version"], facts["wheel_tags"], facts["purelib"]) == ("0.7.0", ["py3-none-any"], True)


def test_build_facts_find_the_native_core_of_a_real_build(tmp_path):
    directory = tmp_path / "oneflow"
    write(directory / "__init__.py", "from . import _oneflow_internal\n")
    write(directory / CORE, b"\x7fELF not really")
    write(directory / "version.py", "__version__ = '0.9.1.dev20240802+cu118'\n")
    write(directory / "mock_torch" / "__init__.py")
    write(
        tmp_path / "oneflow-0.9.1.dev20240802+cu118.dist-info" / "WHEEL",
        "Root-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_17_x86_64\nTag: cp311-cp311-manylinux2014_x86_64\n",
    )
    facts = target_oneflow.build_facts(str(directory))
    assert facts["native_core"] == str(directory / CORE)
    assert facts["placeholder_message"] == ""
    assert facts["version"] == "0.9.1.dev20240802+cu118" and facts["git_commit"] == ""
    assert facts["has_mock_torch"] is True and facts["purelib"] is False
    assert facts["wheel_tags"] == ["cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"]


def test_build_facts_without_a_dist_info_leave_the_wheel_fields_out(tmp_path):
    write(tmp_path / "oneflow" / "__init__.py")
    write(tmp_path / "oneflow" / "_oneflow_internal.pyd")  # Windows spelling counts too
    write(tmp_path / "oneflow" / "_oneflow_internal_helpers.py")  # not a core
    facts = target_oneflow.build_facts(str(tmp_path / "oneflow"))
    assert facts["native_core"].endswith("_oneflow_internal.pyd")
    assert not {"metadata_dir", "wheel_tags", "purelib"} & set(facts)


def test_build_facts_of_an_unreadable_directory_are_an_error_not_an_exception(tmp_path):
    missing = target_oneflow.build_facts(str(tmp_path / "nope"))
    assert missing["error"].startswith("FileNotFoundError") and missing["directory"] == str(tmp_path / "nope")
    a_file = write(tmp_path / "oneflow.py")
    assert target_oneflow.build_facts(str(a_file))["error"].startswith("NotADirectoryError")
    assert from_data(OneflowBuild, missing).error == missing["error"]


# ---------------------------------------------------------------- what `import torch` would load (in a child)


MOCK_FACTS = """\
import json, sys
from mpdoctor.probes.remote import apex as target_apex, oneflow as target_oneflow
entries = [p for p in sys.path if p]
print(json.dumps(target_oneflow.mock_torch_facts(entries, target_apex.pth_lines)))
"""

HOOK = """\
import importlib.abc, importlib.machinery, json, sys
from mpdoctor.probes.remote import apex as target_apex, oneflow as target_oneflow

class MockTorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name == "torch" else None

MockTorchFinder.__module__ = "oneflow.mock_torch.mock_importer"  # where mock_torch.enable() puts it
sys.meta_path.insert(0, MockTorchFinder())
print(json.dumps(target_oneflow.mock_torch_facts([], target_apex.pth_lines)))
"""


def child_facts(tmp_path: Path, pythonpath: list[Path], code: str = MOCK_FACTS, flags: tuple[str, ...] = ()) -> dict:
    """mock_torch_facts() in a fresh interpreter whose PYTHONPATH is ``pythonpath`` (then this repository)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), str(REPO)])
    done = subprocess.run(
        [sys.executable, *flags, "-c", code], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_torch_from_oneflows_mock_torch_directory(tmp_path):
    site = tmp_path / "site"
    write(site / "oneflow" / "__init__.py")
    init = write(site / "oneflow" / "mock_torch" / "torch" / "__init__.py", MOCK_TORCH_INIT)
    mock_dir = site / "oneflow" / "mock_torch"
    facts = child_facts(tmp_path, [mock_dir, site, tmp_path / "decoy"])
    assert facts["torch"]["kind"] == "oneflow-mock-torch"
    assert facts["torch"]["origin"] == str(init)
    assert facts["path_entries"] == [str(mock_dir)]
    assert facts["hooks"] == [] and facts["preloaded"] == []  # found, not imported


def test_torch_from_a_small_shim_that_imports_oneflow(tmp_path):
    shim = write(tmp_path / "shim" / "torch" / "__init__.py", '"""torch, by way of OneFlow."""\nimport oneflow\n')
    facts = child_facts(tmp_path, [tmp_path / "shim"])
    assert facts["torch"] == {"kind": "oneflow-shim", "origin": str(shim), "loader": facts["torch"]["loader"]}
    assert facts["path_entries"] == []  # a shim elsewhere is not the mock_torch directory


def test_a_small_torch_that_imports_oneflow_extras_is_no_shim(tmp_path):
    write(tmp_path / "shim" / "torch" / "__init__.py", "import oneflow_extras\nfrom oneflowish import x\n")
    assert child_facts(tmp_path, [tmp_path / "shim"])["torch"]["kind"] == "torch"


def test_the_installed_torch_is_torch(tmp_path):
    facts = child_facts(tmp_path, [])
    torch = facts["torch"]
    assert torch["kind"] == "torch"
    assert torch["origin"].endswith(os.path.join("site-packages", "torch", "__init__.py"))
    assert not torch["loader"].startswith("oneflow")
    assert facts["path_entries"] == [] and facts["hooks"] == []


def test_no_torch_at_all_is_missing(tmp_path):
    facts = child_facts(tmp_path, [], flags=("-S",))  # no site-packages: no torch
    assert facts["torch"] == {"kind": "missing", "origin": ""}


def test_an_import_hook_from_oneflow_answers_for_torch(tmp_path):
    facts = child_facts(tmp_path, [], code=HOOK)
    assert facts["torch"]["kind"] == "oneflow-hook"
    assert facts["torch"]["loader"] == "oneflow.mock_torch.mock_importer"
    assert facts["hooks"] == ["oneflow.mock_torch.mock_importer.MockTorchFinder"]


def test_pth_lines_that_wire_mock_torch_in_are_found(tmp_path):
    site = tmp_path / "site"
    write(site / "oneflow_mock.pth", "# added by hand\n/opt/oneflow/python/oneflow/mock_torch\n/opt/unrelated\n")
    write(site / "other.pth", "/opt/something/else\n")
    facts = child_facts(tmp_path, [site])
    ours = [line for line in facts["pth_lines"] if line["file"].startswith(str(site))]
    assert ours == [{"file": str(site / "oneflow_mock.pth"), "line": "/opt/oneflow/python/oneflow/mock_torch"}]


def test_mock_torch_facts_in_process_read_entries_and_pth_files(tmp_path):
    site = tmp_path / "site"
    write(site / "hook.pth", "import oneflow.mock_torch as m; m.enable()\n")
    mock_dir = tmp_path / "src" / "oneflow" / "mock_torch"
    facts = target_oneflow.mock_torch_facts(
        [str(site), str(mock_dir) + os.sep, str(tmp_path / "mock_torch")], target_apex.pth_lines
    )
    assert facts["path_entries"] == [str(mock_dir) + os.sep]  # a trailing separator is still that directory
    assert [line["line"] for line in facts["pth_lines"]] == ["import oneflow.mock_torch as m; m.enable()"]


# ---------------------------------------------------------------- imported_as: what an imported torch is


def fake_torch(file: str) -> types.ModuleType:
    module = types.ModuleType("torch")
    module.__file__ = file
    return module


def test_imported_as_oneflow_itself():
    assert target_oneflow.imported_as(types.ModuleType("oneflow")) == "oneflow"


def test_imported_as_the_mock_torch_module_only_with_oneflow_imported(tmp_path, monkeypatch):
    mocked = fake_torch(str(tmp_path / "site" / "oneflow" / "mock_torch" / "torch" / "__init__.py"))
    monkeypatch.setitem(sys.modules, "oneflow", types.ModuleType("oneflow"))
    assert target_oneflow.imported_as(mocked) == "oneflow"
    monkeypatch.delitem(sys.modules, "oneflow")
    assert target_oneflow.imported_as(mocked) == "torch"


def test_imported_as_a_plain_torch_is_torch(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "oneflow", types.ModuleType("oneflow"))
    assert target_oneflow.imported_as(fake_torch(str(tmp_path / "site-packages" / "torch" / "__init__.py"))) == "torch"
    # a directory merely named like mock_torch, not oneflow's, is not the mock
    assert target_oneflow.imported_as(fake_torch(str(tmp_path / "mock_torch" / "torch" / "__init__.py"))) == "torch"
    assert target_oneflow.imported_as(types.ModuleType("torch")) == "torch"  # no __file__ at all


# ---------------------------------------------------------------- the oneflow part, run for real in a child


def test_the_placeholder_fails_to_import_and_torch_is_not_tried(tmp_path, monkeypatch):
    placeholder_site(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    result, steps = run_part(sys.executable, "oneflow", 20)
    runtime = oneflow_runtime(result, steps)
    assert runtime.probe.status == "ok", (runtime.probe, result.stderr)
    assert steps.data["find"] == {"found": True, "origin": str(tmp_path / "site" / "oneflow" / "__init__.py")}
    assert runtime.status == "import-error" and runtime.error_type == "RuntimeError"
    assert "placeholder" in runtime.error_message
    assert runtime.torch_status == "not-tried" and "torch_import" not in steps.data
    assert runtime.version == "" and runtime.coexist == []  # nothing past the failed import


def test_a_oneflow_that_kills_its_interpreter_is_an_import_crash(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write(site / "oneflow" / "__init__.py", "import os\nos.kill(os.getpid(), 9)\n")
    write(site / "oneflow" / "_oneflow_internal.so", b"only looked for by name")
    monkeypatch.setenv("PYTHONPATH", str(site))
    result, steps = run_part(sys.executable, "oneflow", 60)
    runtime = oneflow_runtime(result, steps)
    assert runtime.status == "import-crashed", (runtime.probe, result.stderr)
    assert runtime.probe.status == "crashed" and runtime.probe.step == "oneflow_import"
    assert "SIGKILL" in runtime.error_message
    # a native core was there, so torch was imported first, as OneDiff does
    assert runtime.torch_status == "imported" and runtime.torch_imported_as == "torch"


def test_a_oneflow_that_hangs_on_import_is_an_import_timeout(tmp_path, monkeypatch):
    write(tmp_path / "site" / "oneflow" / "__init__.py", "import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    result, steps = run_part(sys.executable, "oneflow", 2)
    runtime = oneflow_runtime(result, steps)
    assert result.timed_out and result.seconds < 10
    assert runtime.status == "import-timeout"
    assert runtime.probe.status == "timeout" and runtime.probe.step == "oneflow_import"
    assert "did not finish within 2 s" in runtime.error_message


def test_no_oneflow_anywhere_is_not_run(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "empty"))
    result, steps = run_part(sys.executable, "oneflow", 20)
    runtime = oneflow_runtime(result, steps)
    assert steps.data["find"] == {"found": False, "origin": ""} and steps.done
    assert runtime.status == "not-run" and runtime.probe.status == "ok"
    assert runtime.torch_status == "not-tried" and runtime.error_message == ""


# ---------------------------------------------------------------- oneflow_runtime from the step lines


def steps(*records) -> StepFile:
    return StepFile("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records))


def clean_exit() -> ChildResult:
    return ChildResult(exit_code=0, timed_out=False, seconds=4.2, stdout="", stderr="")


FOUND = {"step": "find", "data": {"found": True, "origin": "/x/oneflow/__init__.py"}}
TORCH_OK = {"step": "torch_import", "data": {"ok": True, "warnings": [], "imported_as": "torch"}}
ONEFLOW_OK = {"step": "oneflow_import", "data": {"ok": True, "warnings": ["CPU autocast is not supported"]}}
BUILD = {
    "step": "oneflow_build",
    "data": {
        "file": "/x/oneflow/__init__.py",
        "has_internal": True,
        "version": "0.9.1.dev20240802+cu118",
        "git_commit": "abc1234",
        "with_cuda": True,
        "get_cuda_version": 11080,
        "cuda_available": False,
        "errors": {"with_enterprise": "AttributeError: x"},
    },
}
COEXIST = {
    "step": "coexist",
    "data": {
        "device": "cpu",
        "cases": [
            {
                "name": "fp16 input",
                "device": "cpu",
                "status": "ok",
                "oneflow_autocast": False,
                "output_dtype": "float16",
                "warnings": [],
            },
            {
                "name": "torch.autocast",
                "device": "cpu",
                "status": "error",
                "detail": "RuntimeError: InferDataType Failed. Expected kFloat16, but got kFloat",
                "oneflow_autocast": False,
                "torch_output_dtype": "float16",
                "warnings": [],
            },
        ],
    },
}
DONE = {"step": "done", "data": True}


def test_a_full_run_fills_every_field():
    runtime = oneflow_runtime(
        clean_exit(),
        steps(
            FOUND,
            {"step": "torch_import", "begin": True},
            TORCH_OK,
            {"step": "oneflow_import", "begin": True},
            ONEFLOW_OK,
            {"step": "oneflow_build", "begin": True},
            BUILD,
            {"step": "coexist", "begin": True},
            COEXIST,
            DONE,
        ),
    )
    assert runtime.probe.status == "ok" and runtime.status == "imported"
    assert (runtime.torch_status, runtime.torch_imported_as) == ("imported", "torch")
    assert runtime.import_warnings == ["CPU autocast is not supported"]
    assert (runtime.error_type, runtime.error_message) == ("", "")
    assert runtime.version == "0.9.1.dev20240802+cu118" and runtime.git_commit == "abc1234"
    assert runtime.file == "/x/oneflow/__init__.py"
    assert runtime.cuda_version == "11080" and runtime.with_cuda is True
    assert runtime.with_enterprise is None  # its collection raised: recorded as an error, not a value
    assert runtime.cuda_available is False and runtime.device_count is None
    assert runtime.fact_errors == {"with_enterprise": "AttributeError: x"}
    assert runtime.coexist_device == "cpu" and runtime.coexist_error == ""
    assert all(isinstance(case, CoexistCase) for case in runtime.coexist)
    torch_case = runtime.coexist[1]
    assert (torch_case.name, torch_case.status, torch_case.torch_output_dtype) == ("torch.autocast", "error", "float16")
    assert torch_case.oneflow_autocast is False and torch_case.detail.startswith("RuntimeError: InferDataType Failed")
    assert torch_case.output_dtype == ""  # it raised before giving one
    assert runtime.coexist[0].output_dtype == "float16"


def test_junk_types_from_the_child_are_dropped_not_raised():
    junk_build = {
        "step": "oneflow_build",
        "data": {
            "version": None,
            "with_cuda": "yes",
            "with_enterprise": 1,
            "cuda_available": "no",
            "device_count": "two",
            "get_cuda_version": None,
            "errors": ["not", "a", "dict"],
        },
    }
    runtime = oneflow_runtime(
        clean_exit(),
        steps(
            FOUND,
            {"step": "torch_import", "data": "not a dict"},
            {"step": "oneflow_import", "data": {"ok": True, "warnings": "not a list"}},
            junk_build,
            {"step": "coexist", "data": {"device": None, "cases": [{"name": "x", "oneflow_autocast": "maybe"}]}},
            "{truncated line",
            DONE,
        ),
    )
    assert runtime.status == "imported" and runtime.import_warnings == []
    assert runtime.torch_status == "not-tried"
    assert (runtime.with_cuda, runtime.with_enterprise, runtime.cuda_available, runtime.device_count) == (
        None,
        None,
        None,
        None,
    )
    assert runtime.version == "" and runtime.cuda_version == "" and runtime.fact_errors == {}
    assert runtime.coexist == [] and runtime.coexist_device == ""


def test_a_boolean_device_count_is_no_count():
    build = {"step": "oneflow_build", "data": {"cuda_available": True, "device_count": True}}
    assert oneflow_runtime(clean_exit(), steps(FOUND, ONEFLOW_OK, build, DONE)).device_count is None
    build["data"]["device_count"] = 2
    assert oneflow_runtime(clean_exit(), steps(FOUND, ONEFLOW_OK, build, DONE)).device_count == 2


def test_a_failed_import_keeps_its_exception():
    failed = {
        "step": "oneflow_import",
        "data": {"ok": False, "type": "ImportError", "message": "libcudart.so.11.0: cannot open shared object file"},
    }
    runtime = oneflow_runtime(clean_exit(), steps(FOUND, TORCH_OK, failed, DONE))
    assert (runtime.status, runtime.error_type) == ("import-error", "ImportError")
    assert runtime.error_message.startswith("libcudart.so.11.0")
    assert runtime.version == "" and runtime.coexist == []


def test_nothing_found_means_not_run_whatever_else_is_there():
    runtime = oneflow_runtime(
        clean_exit(), steps({"step": "find", "data": {"found": False, "error": "x"}}, ONEFLOW_OK, BUILD, DONE)
    )
    assert runtime.status == "not-run" and runtime.version == "" and runtime.torch_status == "not-tried"
    assert oneflow_runtime(clean_exit(), steps(DONE)).status == "not-run"


def test_a_coexist_step_cut_short_by_the_timeout_says_so():
    killed = ChildResult(exit_code=None, timed_out=True, seconds=30.0, stdout="", stderr="")
    runtime = oneflow_runtime(killed, steps(FOUND, TORCH_OK, ONEFLOW_OK, BUILD, {"step": "coexist", "begin": True}))
    assert runtime.probe.status == "timeout" and runtime.probe.step == "coexist"
    assert runtime.status == "imported" and runtime.version == "0.9.1.dev20240802+cu118"  # what came before stays
    assert runtime.coexist == []
    assert runtime.coexist_error == "the probe did not finish within 30 s and was killed during it"


def test_a_coexist_step_that_raised_records_the_error():
    error = {"step": "coexist_error", "data": {"type": "RuntimeError", "message": "no kernel"}}
    runtime = oneflow_runtime(
        clean_exit(), steps(FOUND, TORCH_OK, ONEFLOW_OK, BUILD, {"step": "coexist", "begin": True}, error, DONE)
    )
    assert runtime.coexist_error == "RuntimeError: no kernel" and runtime.coexist == []
    assert oneflow_runtime(clean_exit(), steps(FOUND, ONEFLOW_OK, DONE)).coexist_error == ""


def test_a_torch_import_under_mock_torch_is_oneflow():
    mocked = {"step": "torch_import", "data": {"ok": True, "warnings": [], "imported_as": "oneflow"}}
    runtime = oneflow_runtime(clean_exit(), steps(FOUND, mocked, ONEFLOW_OK, DONE))
    assert (runtime.torch_status, runtime.torch_imported_as) == ("imported", "oneflow")
    failed = {"step": "torch_import", "data": {"ok": False, "type": "OSError", "message": "libtorch_cpu.so"}}
    assert oneflow_runtime(clean_exit(), steps(FOUND, failed, ONEFLOW_OK, DONE)).torch_status == "import-error"


def test_a_crash_while_importing_torch_is_torch_s_not_oneflow_s():
    crashed = ChildResult(exit_code=-11, timed_out=False, seconds=1.0, stdout="", stderr="Segmentation fault")
    runtime = oneflow_runtime(crashed, steps(FOUND, {"step": "torch_import", "begin": True}))
    assert runtime.probe.status == "crashed" and runtime.probe.step == "torch_import"
    assert runtime.torch_status == "import-crashed"
    assert runtime.status == "not-run"  # oneflow itself was never imported
    assert runtime.error_message.startswith("not tried: the probe")


# ---------------------------------------------------------------- the project scan: OneFlow use in the code


ONEFLOW_SOURCE = '''\
"""Speed a pipeline up with OneFlow. Usage:

    import oneflow
"""
import oneflow as flow
import torch
from onediff.infer_compiler import oneflow_compile


def run(unet, m, x):
    with torch.autocast("cuda"):
        y = m(x)
    with flow.autocast("cuda"):
        y = m(x)
    unet = oneflow_compile(unet)
    m = torch.compile(m, backend="inductor")
    return compile(m, backend="oneflow"), y
'''


def uses_in(source: str) -> list[dict]:
    return target_scan.oneflow_uses(ast.parse(source), source.splitlines())


def test_oneflow_uses_name_each_real_use_once_in_line_order():
    uses = uses_in(ONEFLOW_SOURCE)
    assert [(u["what"], u["line"]) for u in uses] == [
        ("import oneflow", 5),
        ("from onediff.infer_compiler import oneflow_compile", 7),
        ("oneflow.autocast", 13),
        ("oneflow_compile", 15),
        ('compile(backend="oneflow")', 17),
    ]
    assert [u["text"] for u in uses] == [
        "import oneflow as flow",
        "from onediff.infer_compiler import oneflow_compile",
        'with flow.autocast("cuda"):',
        "unet = oneflow_compile(unet)",
        'return compile(m, backend="oneflow"), y',
    ]


def test_oneflow_uses_other_spellings():
    source = textwrap.dedent("""\
        import oneflow
        import onediffx.deep_cache, numpy
        from oneflow import nn
        with oneflow.amp.autocast("cuda"):
            pass
        unet = onediff.infer_compiler.oneflow_compile(unet)
        with oneflow.autocast("cuda"):
            pass
        """)
    assert [(u["what"], u["line"]) for u in uses_in(source)] == [
        ("import oneflow", 1),
        ("import onediffx.deep_cache", 2),
        ("from oneflow import nn", 3),
        ("oneflow.autocast", 4),
        ("oneflow_compile", 6),
    ]


def test_a_relative_import_of_a_local_oneflow_module_is_not_oneflow():
    assert uses_in("from .oneflow import local\nfrom ..onediff.utils import helper\n") == []


def test_a_file_that_only_mentions_oneflow_has_no_uses():
    assert uses_in('"""Run `import oneflow` then `flow.autocast`."""\n# import oneflow\nx = "oneflow_compile"\n') == []
    # without `import oneflow as flow`, flow.autocast is someone else's
    assert uses_in("import flow\nwith flow.autocast('cuda'):\n    pass\n") == []


def test_project_uses_report_oneflow_uses_with_the_relative_file(tmp_path):
    write(tmp_path / "pipelines" / "sd.py", ONEFLOW_SOURCE)
    write(tmp_path / "notes.py", '"""We tried oneflow once."""\n')
    write(tmp_path / ".venv" / "pyvenv.cfg")
    write(tmp_path / ".venv" / "lib" / "oneflow_user.py", "import oneflow\n")
    facts = target_scan.project_uses(str(tmp_path), 2.0)
    assert {u["file"] for u in facts["oneflow_uses"]} == {os.path.join("pipelines", "sd.py")}
    assert [u["what"] for u in facts["oneflow_uses"]] == [u["what"] for u in uses_in(ONEFLOW_SOURCE)]
    assert [u["what"] for u in facts["torch_amp_uses"]] == ["torch.autocast"]
    assert facts["files_scanned"] == 2 and facts["apex_uses"] == []
