"""The apex probe's parts on their own: reading imports with ast, walking a project, finding apex, loading extensions."""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap

from mpdoctor.probes.remote import apex as target_apex, loads as target_loads, scan as target_scan
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.environment import StepFile, apex_facts, merge_extension_loads
from mpdoctor.snapshot.apex import ApexExtension, ApexInfo


def imports_in(source):
    source = textwrap.dedent(source)
    return target_scan.apex_imports(ast.parse(source), source.splitlines())


def test_apex_imports_know_the_blocks_around_them():
    uses = imports_in('''\
        """Run `from apex import amp` if you must."""  # a docstring is not an import
        # from apex import amp
        from apex import amp
        import apex.optimizers as optimizers, os
        from .apex import local
        try:
            from apex.normalization import FusedRMSNorm, FusedLayerNorm
        except ImportError:
            pass
        if available():
            def later():
                import apex
        ''')
    facts = [(u["module"], u["names"], u["line"], u["guarded"], u["lazy"], u["conditional"]) for u in uses]
    assert facts == [
        ("apex", ["amp"], 3, False, False, False),
        ("apex.optimizers", [], 4, False, False, False),
        ("apex.normalization", ["FusedRMSNorm", "FusedLayerNorm"], 7, True, False, False),
        ("apex", [], 12, False, True, True),
    ]
    assert uses[0]["text"] == "from apex import amp"


def test_torch_amp_spellings_are_found_once_each():
    source = textwrap.dedent("""\
        import torch
        from torch.cuda.amp import GradScaler, autocast
        from torch import autocast as ac, nn
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda"):
            with torch.autocast("cuda"):
                y = torch.cuda.amp.autocast_mode
        """)
    uses = target_scan.torch_amp_uses(ast.parse(source), source.splitlines())
    assert [(u["what"], u["line"]) for u in uses] == [
        ("from torch.cuda.amp import GradScaler, autocast", 2),
        ("from torch import autocast", 3),
        ("torch.amp.GradScaler", 4),
        ("torch.autocast", 5),
    ]


def write(path, text="", mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def test_project_scan_reads_the_code_and_skips_environments(tmp_path):
    write(tmp_path / "train.py", "from apex import amp\nwith torch.autocast('cuda'):\n    pass\n")
    write(tmp_path / "broken.py", "from apex import amp\ndef (:\n")  # a syntax error is skipped, not fatal
    write(tmp_path / "latin1.py", b"# caf\xe9\nfrom apex import amp\n")
    write(tmp_path / ".venv" / "pyvenv.cfg")
    write(tmp_path / ".venv" / "lib" / "x.py", "from apex import amp\n")
    write(tmp_path / "env" / "pyvenv.cfg")
    write(tmp_path / "env" / "y.py", "from apex import amp\n")
    write(tmp_path / "node_modules" / "z.py", "from apex import amp\n")
    write(tmp_path / "vendor" / "apex" / "tests" / "t.py", "from apex import amp\n")
    facts = target_scan.project_uses(str(tmp_path), 5.0, skip=[str(tmp_path / "vendor" / "apex")])
    assert sorted(u["file"] for u in facts["apex_uses"]) == ["latin1.py", "train.py"]
    assert [u["what"] for u in facts["torch_amp_uses"]] == ["torch.autocast"]
    assert facts["files_scanned"] == 3 and not facts["truncated"]


def test_project_scan_stops_at_its_budget_and_never_walks_root(tmp_path):
    for n in range(20):
        write(tmp_path / f"m{n:02}.py", "from apex import amp\n")
    facts = target_scan.project_uses(str(tmp_path), 5.0, max_files=5)
    assert facts["truncated"] and facts["files_scanned"] == 5
    root = target_scan.project_uses("/", 5.0)
    assert root["files_scanned"] == 0 and "root" in root["skipped"]


def test_locations_in_search_order_with_the_working_directory_last(tmp_path):
    first, second, cwd = tmp_path / "a", tmp_path / "b", tmp_path / "cwd"
    write(first / "apex" / "__init__.py")
    write(second / "apex.py")
    write(cwd / "apex" / "setup.py")
    os.symlink(first, tmp_path / "link")
    found = target_apex.find_locations(
        [str(first), str(tmp_path / "link"), str(second), str(tmp_path / "nope")], str(cwd)
    )
    assert [(f["kind"], f["source"]) for f in found] == [
        ("package", "sys.path"),
        ("module", "sys.path"),
        ("namespace", "cwd"),
    ]


def test_apex_facts_survive_a_broken_package(tmp_path):
    write(tmp_path / "apex" / "__init__.py", "def broken(:\n")
    write(tmp_path / "apex" / "normalization" / "__init__.py")
    write(tmp_path / "editable.pth", f"{tmp_path}/apex-src\nimport os\n")
    facts = target_apex.apex_facts([str(tmp_path)], str(tmp_path), str(tmp_path))
    assert facts["subpackages"] == ["normalization"] and facts["init_imports"] is None
    assert facts["init_error"].startswith("SyntaxError")
    assert [line["line"] for line in facts["pth_lines"]] == [f"{tmp_path}/apex-src"]
    assert target_apex.present(facts)
    assert not target_apex.present(target_apex.apex_facts([str(tmp_path / "empty")], "", str(tmp_path)))


def test_top_level_names_from_an_egg_info(tmp_path):
    import importlib.metadata as metadata

    info = write(
        tmp_path / "apex.egg-info" / "installed-files.txt",
        "../apex/__init__.py\n../amp_C.cpython-38-x86_64-linux-gnu.so\nPKG-INFO\n",
    ).parent
    write(info / "PKG-INFO", "Metadata-Version: 1.0\nName: apex\nVersion: 0.1\n")
    dist = metadata.PathDistribution(info)
    assert target_apex._top_levels(dist) == ["amp_C.cpython-38-x86_64-linux-gnu.so", "apex"]
    names = target_apex.extension_names([{"top_level": target_apex._top_levels(dist) + ["my_ext.cpython-38.so"]}])
    assert "my_ext" in names and "apex" not in names


def test_extension_loads_each_in_a_child(tmp_path, monkeypatch):
    write(tmp_path / "mpd_ok.py")
    write(tmp_path / "mpd_err.py", "raise ImportError('undefined symbol: _ZN3c10foo')\n")
    write(tmp_path / "mpd_crash.py", "import os, signal\nos.kill(os.getpid(), signal.SIGABRT)\n")
    write(tmp_path / "mpd_hang.py", "import time\ntime.sleep(60)\n")
    write(tmp_path / "mpd_exit.py", "import os\nos._exit(7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    budget = Budget.from_timeout(9)  # the torch part is handed these two: 3 s for all, 1 s each
    assert (budget.apex_loads, budget.apex_load_each) == (3.0, 1.0)
    results = target_loads.load_each(
        ["mpd_ok", "mpd_err", "mpd_crash", "mpd_hang", "mpd_exit", "mpd_ok"], budget.apex_load_each, budget.apex_loads
    )
    assert {name: r["status"] for name, r in results.items()} == {
        "mpd_ok": "ok",
        "mpd_err": "error",
        "mpd_crash": "crashed",
        "mpd_hang": "timeout",
        "mpd_exit": "crashed",
    }
    assert results["mpd_err"]["detail"] == "ImportError: undefined symbol: _ZN3c10foo"
    assert "SIGABRT" in results["mpd_crash"]["detail"] and "status 7" in results["mpd_exit"]["detail"]
    assert "mpd_ok" not in sys.modules  # the probe process itself imported nothing


def test_extension_loads_give_up_when_out_of_time(tmp_path, monkeypatch):
    write(tmp_path / "mpd_slow.py", "import time\ntime.sleep(60)\n")
    write(tmp_path / "mpd_after.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    budget = Budget.from_timeout(3)  # 1 s for all, and so 1 s each
    assert (budget.apex_loads, budget.apex_load_each) == (1.0, 1.0)
    results = target_loads.load_each(["mpd_slow", "mpd_slow2", "mpd_after"], budget.apex_load_each, budget.apex_loads)
    assert results["mpd_slow"]["status"] == "timeout"
    assert results["mpd_after"] == {"status": "not-tried", "detail": "out of time"}


def steps(*records):
    return StepFile("\n".join(json.dumps(r) for r in records))


def test_a_failed_apex_step_becomes_an_error_not_a_crash():
    info = apex_facts(steps({"step": "apex_error", "data": {"type": "OSError", "message": "boom"}}))
    assert info.error == "OSError: boom" and info.resolution == "none"
    junk = apex_facts(steps({"step": "apex", "data": {"locations": "not a list"}}))
    assert junk.locations == [] and junk.error == ""


def test_extension_loads_that_never_happened_say_why():
    apex = ApexInfo(extensions=[ApexExtension(name="amp_C")])
    merge_extension_loads(apex, steps({"step": "import", "data": {"ok": False}}))
    assert apex.extensions[0].load_status == "not-tried" and "torch did not import" in apex.extensions[0].load_detail
    merge_extension_loads(apex, steps({"step": "apex_loads", "begin": True}))
    assert "stopped while loading" in apex.extensions[0].load_detail
    merge_extension_loads(apex, steps({"step": "apex_loads", "data": {"amp_C": {"status": "ok", "detail": ""}}}))
    assert apex.extensions[0].load_status == "ok"


def test_pth_lines_about_apex_and_lines_that_only_hold_its_letters(tmp_path):
    """A .pth line is apex's when it is: a folder named apex003-... is no apex (its line was once to be deleted)."""
    site = tmp_path / "site"
    site.mkdir()
    checkout = tmp_path / "src" / "apex"  # a source checkout, added by a path line
    (checkout / "apex").mkdir(parents=True)
    holder = tmp_path / "vendored"  # a folder holding the apex package
    (holder / "apex").mkdir(parents=True)
    stranger = tmp_path / "apex003-xc5bbbh_" / "site"  # only the letters
    stranger.mkdir(parents=True)
    (site / "_torch.pth").write_text(
        f"{stranger}\n{checkout}\n{holder}\n/opt/eggs/apex-0.1-py3.11.egg\nimport apexlike\n"
    )
    (site / "__editable__.apex-0.1.pth").write_text(
        "import __editable___apex_0_1_finder; __editable___apex_0_1_finder.install()\n"
    )
    (site / "hooks.pth").write_text(
        "import __editable___apex_0_1_finder\nimport os; os.environ.setdefault('X', 'apex2')\n"
    )

    found = {(os.path.basename(line["file"]), line["line"]) for line in target_apex.pth_lines([str(site)])}

    assert ("_torch.pth", str(stranger)) not in found and ("_torch.pth", "import apexlike") not in found
    assert ("hooks.pth", "import os; os.environ.setdefault('X', 'apex2')") not in found
    assert {
        ("_torch.pth", str(checkout)),
        ("_torch.pth", str(holder)),
        ("_torch.pth", "/opt/eggs/apex-0.1-py3.11.egg"),
        ("hooks.pth", "import __editable___apex_0_1_finder"),
        ("__editable__.apex-0.1.pth", "import __editable___apex_0_1_finder; __editable___apex_0_1_finder.install()"),
    } <= found
