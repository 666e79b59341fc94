""" "Your code" is the user's project, decided explicitly, named in the report (mpdoctor/probes/remote/project_root.py).

A new user ran ``mpdoctor check`` in a folder of other people's clones and got
``error APEX006 your code imports apex.amp`` for files of repositories that were
not theirs. Here, on real directories with real ``git init`` repositories: a folder
of clones scans none of them and names them; a project is found from its root and
from a subdirectory; ``--project`` reads exactly the directory it names; venvs,
site-packages and nested clones are never "your code"; a bad ``--project`` is the
one usage error; the scan's budget follows ``--timeout`` and says how much it read.
End to end through the real CLI (``python -m mpdoctor``) for the main cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.remote import project_root, scan
from mpdoctor.snapshot.project import ProjectScan

# apex.amp and torch.autocast set up on one path: APEX007 (a bare import beside autocast would be no mix)
AMP_SCRIPT = (
    "import torch\nfrom apex import amp\nmodel, opt = amp.initialize(model, opt)\nwith torch.autocast('cuda'):\n"
    "    pass\n"
)


def git_init(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True)
    return path


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def check(cwd: Path, *args: str) -> tuple[dict, subprocess.CompletedProcess]:
    """`mpdoctor check` run from ``cwd`` on mpdoctor's own interpreter (torch, no apex): the JSON report."""
    result = run_cli(
        "check", "--no-kernels", "--select", "APEX,ENV003", "--format", "json", "--fail-on", "never", *args, cwd=cwd
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout), result


def cited(report: dict) -> list[str]:
    """Every evidence line of every finding."""
    return [line for finding in report["findings"] for line in finding["evidence"]]


@pytest.fixture(scope="module")
def clones(tmp_path_factory) -> Path:
    """A shared folder of other people's repositories: three clones that import apex.amp, and nothing else."""
    top = tmp_path_factory.mktemp("clones")
    for name in ("alpha", "beta", "gamma"):
        write(git_init(top / name) / "train.py", AMP_SCRIPT)
        write(top / name / "pkg" / "model.py", "from apex import amp\n")
    return top


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A real training project: a git repository whose script imports apex.amp, holding a venv, a clone of
    someone else's repository, a site-packages folder and caches, each with code that must not count."""
    root = git_init(tmp_path_factory.mktemp("project") / "myproject")
    write(root / "train.py", AMP_SCRIPT)
    write(root / "scripts" / "run.py", "import torch\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    write(root / "venv" / "lib" / "vendored.py", "from apex import amp\n")
    write(git_init(root / "third_party" / "apex-clone") / "clone.py", "from apex import amp\n")
    write(root / "libs" / "site-packages" / "pkg.py", "from apex import amp\n")
    write(root / "__pycache__" / "cached.py", "from apex import amp\n")
    write(root / "node_modules" / "n.py", "from apex import amp\n")
    write(root / "build" / "lib" / "b.py", "from apex import amp\n")
    write(root / "mypkg.egg-info" / "e.py", "from apex import amp\n")
    return root


# ---------------------------------------------------------------- through the CLI


def test_a_folder_of_clones_reports_none_of_their_code_and_names_them(clones):
    report, _ = check(clones)
    facts = report["snapshot"]["environment"]["project"]
    assert facts["root"] == str(clones) and "no project" in facts["root_reason"]
    assert facts["other_repositories"] == ["alpha", "beta", "gamma"] and facts["other_repositories_total"] == 3
    assert facts["files_scanned"] == 0 and facts["apex_uses"] == []
    assert not [f for f in report["findings"] if f["code"] in ("APEX006", "APEX007")]
    assert not [line for line in cited(report) if "train.py" in line or "model.py" in line]
    # the text report names the root and the repositories it left alone, and how to read one
    text = run_cli("check", "--no-kernels", "--select", "APEX", cwd=clones)
    assert text.returncode == 0, text.stderr
    assert f"project: {clones} (the working directory, which is no project" in text.stdout
    assert "3 other repositories below not scanned: alpha, beta, gamma; use --project DIR" in text.stdout


@pytest.mark.parametrize("where", [".", "scripts"])
def test_a_project_is_found_from_its_root_and_from_a_subdirectory(project, where):
    report, _ = check(project / where)
    facts = report["snapshot"]["environment"]["project"]
    assert facts["root"] == str(project)
    if where == ".":
        assert facts["root_reason"] == "the working directory: the root of a repository"
    else:
        assert facts["root_reason"] == "the repository that holds the working directory, scripts/ read first"
    # only the project's own two files: not the venv, the clone, site-packages, caches or build output
    assert facts["files_scanned"] == 2 and [u["file"] for u in facts["apex_uses"]] == ["train.py"]
    assert facts["other_repositories"] == [os.path.join("third_party", "apex-clone")]
    (apex006,) = [f for f in report["findings"] if f["code"] == "APEX006"]
    assert "your code" in apex006["title"]
    assert f"your code: {project} ({facts['root_reason']})" in apex006["evidence"]
    assert "train.py:2 `from apex import amp`" in apex006["evidence"]
    assert not [line for line in cited(report) if "clone.py" in line or "vendored.py" in line]


def test_project_reads_the_one_clone_it_names(clones):
    report, _ = check(clones, "--project", "beta")
    facts = report["snapshot"]["environment"]["project"]
    assert facts["root"] == str(clones / "beta") and facts["root_reason"] == project_root.GIVEN
    assert sorted(u["file"] for u in facts["apex_uses"]) == [os.path.join("pkg", "model.py"), "train.py"]
    findings = [f for f in report["findings"] if f["code"] in ("APEX006", "APEX007")]
    assert sorted(f["code"] for f in findings) == ["APEX006", "APEX007"]
    assert all(f"your code: {clones / 'beta'} (given with --project)" in f["evidence"] for f in findings)
    assert not [line for line in cited(report) if "alpha" in line or "gamma" in line]
    assert report["snapshot"]["invocation"]["project"] == "beta"  # fix commands that rerun mpdoctor keep it


@pytest.mark.parametrize(
    "value, message",
    [
        ("no-such-dir", "--project no-such-dir: no such directory"),
        ("alpha/train.py", "--project alpha/train.py: not a directory"),
        ("", "--project needs a directory"),
    ],
)
def test_a_bad_project_is_a_usage_error(clones, value, message):
    result = run_cli("check", "--no-kernels", "--project", value, cwd=clones)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"mpdoctor: error: {message} (see 'mpdoctor check --help')"


def test_project_and_snapshot_exclude_each_other(clones):
    result = run_cli("check", "--snapshot", "s.json", "--project", "alpha", cwd=clones)
    assert result.returncode == 2
    assert "--snapshot and --project exclude each other" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory whatever its mode")
def test_an_unreadable_project_is_a_usage_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0)
    try:
        result = run_cli("check", "--no-kernels", "--project", str(locked))
    finally:
        locked.chmod(0o755)
    assert result.returncode == 2 and f"--project {locked}: cannot be read" in result.stderr


# ---------------------------------------------------------------- the rule, on real directories


def test_a_home_directory_in_git_is_not_every_folder_s_project(tmp_path, monkeypatch):
    """Dotfiles kept in git make the home directory a repository: a folder in it is still its own project."""
    home = git_init(tmp_path / "home")
    work = write(home / "work" / "exp" / "train.py", AMP_SCRIPT).parent
    monkeypatch.setenv("HOME", str(home))
    chosen = project_root.choose(str(work))
    assert chosen["root"] == str(work) and "Python files (train.py)" in chosen["reason"]
    assert project_root.choose(str(home))["root"] == str(home)  # run from home itself: it is the repository


def test_a_project_file_makes_the_working_directory_the_root(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "src" / "x" / "train.py", AMP_SCRIPT)
    write(tmp_path / "packages" / "inner" / "setup.py", "")  # a package of this monorepo: read
    write(tmp_path / "packages" / "inner" / "inner.py", "from apex import amp\n")
    facts = scan.project_facts(str(tmp_path), 30.0)
    assert facts["root_reason"] == "the working directory: it holds pyproject.toml"
    assert sorted(u["file"] for u in facts["apex_uses"]) == [
        os.path.join("packages", "inner", "inner.py"),
        os.path.join("src", "x", "train.py"),
    ]


def test_a_folder_of_scripts_leaves_downloaded_projects_alone(tmp_path):
    """A sdist or a zip of a repository unpacked beside your scripts is someone else's project, not yours."""
    write(tmp_path / "train.py", AMP_SCRIPT)
    write(tmp_path / "apex-23.05" / "setup.py", "")
    write(tmp_path / "apex-23.05" / "apex" / "amp" / "x.py", "from apex import amp\n")
    write(tmp_path / "helpers" / "util.py", "from apex import amp\n")  # a plain folder of yours: read
    facts = scan.project_facts(str(tmp_path), 30.0)
    assert sorted(u["file"] for u in facts["apex_uses"]) == [os.path.join("helpers", "util.py"), "train.py"]
    assert facts["other_repositories"] == ["apex-23.05"]


def test_installed_packages_are_never_your_project(tmp_path):
    site = write(tmp_path / "lib" / "python3.11" / "site-packages" / "transformers" / "trainer.py", AMP_SCRIPT)
    facts = scan.project_facts(str(site.parent), 30.0)
    assert facts["files_scanned"] == 0 and facts["apex_uses"] == []
    assert "inside installed packages (site-packages)" in facts["skipped"]
    summary = ProjectScan(skipped=facts["skipped"]).summary()
    assert summary.startswith("project: not scanned: the working directory is inside installed packages")


def test_a_nested_repository_in_the_subdirectory_read_first_is_still_left_out(project):
    facts = scan.project_facts(str(project / "third_party"), 30.0)
    assert facts["root"] == str(project)
    assert facts["other_repositories"] == [os.path.join("third_party", "apex-clone")]
    assert [u["file"] for u in facts["apex_uses"]] == ["train.py"]


def test_findings_cite_only_files_under_the_root():
    """A snapshot written by hand may hold uses outside the root: no finding about your code cites them."""
    from mpdoctor.snapshot.apex import ApexImport
    from mpdoctor.snapshot.project import CodeUse

    uses = [ApexImport(module="apex", names=["amp"], file=name, line=1) for name in ("ok.py", "../x.py", "/abs.py")]
    scan_facts = ProjectScan(root="/p", apex_uses=uses, torch_amp_uses=[CodeUse(file="../t.py", line=1)])
    assert [use.file for use in scan_facts.under_root(scan_facts.apex_uses)] == ["ok.py"]
    assert scan_facts.under_root(scan_facts.torch_amp_uses) == []


# ---------------------------------------------------------------- the budget follows --timeout


def test_the_scan_budget_follows_the_timeout():
    assert Budget.from_timeout(60).project_scan == 1.5  # the default is unchanged
    assert Budget.from_timeout(600).project_scan == pytest.approx(15.0)  # ten times the time, ten times the scan
    assert Budget.from_timeout(0.5).project_scan == pytest.approx(0.5 / 6)
    assert scan.file_cap(Budget.from_timeout(60).project_scan) == 3000
    assert scan.file_cap(Budget.from_timeout(600).project_scan) == 30000


def test_a_scan_stopped_early_says_how_much_it_read(tmp_path):
    for n in range(30):
        write(tmp_path / f"m{n:02}.py", "import torch\n")
    facts = scan.project_facts(str(tmp_path), 1e-9)  # out of time before the first read
    assert facts["truncated"] and facts["files_found"] == 30 and facts["files_scanned"] == 0
    summary = ProjectScan(**{k: v for k, v in facts.items() if k not in ("apex_uses",)}).summary()
    assert "0 Python files read of 30 listed: the scan stopped early" in summary


def test_a_scan_that_stopped_early_is_a_warning_with_the_way_to_finish_it(tmp_path):
    """A scan cut short may have missed an error in the code it never read: ENV003 is a warning (not an info that
    leaves CI green with an unread `from apex import amp`), and its first fix gives the scan more time."""
    from mpdoctor.doctor.judge import judge
    from mpdoctor.snapshot import Snapshot

    for n in range(30):
        write(tmp_path / f"m{n:02}.py", "import torch\n")
    facts = scan.project_facts(str(tmp_path), 1e-9)
    snap = Snapshot()
    snap.environment.project = ProjectScan(**{k: v for k, v in facts.items() if k not in ("apex_uses",)})
    (finding,) = judge(snap, select=["ENV003"])
    assert finding.severity == "warning" and "stopped early" in finding.title
    assert finding.fix[0].command.startswith("mpdoctor check --timeout ")
    # files only skipped for what they are (a FIFO) stay an info
    snap.environment.project = ProjectScan(root=str(tmp_path), files_scanned=29, skipped_files=["f.py: a FIFO"])
    (finding,) = judge(snap, select=["ENV003"])
    assert finding.severity == "info"


def test_a_file_the_scan_cannot_read_is_named(tmp_path, monkeypatch):
    """Permission denied (a mode-000 file, mpdoctor run as another user): named among the files left unread, not
    passed over as if it were not there. (The suite runs as root here, who reads any file: the refusal is the
    error the reader raises for such a file.)"""
    from mpdoctor.probes.remote import listing

    write(tmp_path / "train.py", "import torch\n")
    write(tmp_path / "secret_stuff.py", "from apex import amp\n")
    real = listing.read

    def read(path, regular, limit):
        if path.endswith("secret_stuff.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, regular, limit)

    monkeypatch.setattr(listing, "read", read)
    facts = scan.project_facts(str(tmp_path), 30)
    assert facts["files_found"] == 2 and facts["files_scanned"] == 1
    assert facts["skipped_files"] == ["secret_stuff.py: cannot be read (Permission denied)"]


def test_the_early_start_reads_project_as_the_cli_does(clones):
    """A plain check with --project starts early with the same directory the CLI resolves; a bad one, not at all."""
    from mpdoctor.probes.prescan import check_request

    request = check_request(["check", "--no-kernels", "--project", str(clones / "alpha")], lambda path: "")
    assert request is not None and request.project_dir == str(clones / "alpha") and request.project
    assert check_request(["check", "--project", str(clones / "nope")], lambda path: "") is None
    assert check_request(["check", "--project", str(clones / "alpha" / "train.py")], lambda path: "") is None
