"""Copies of one package on sys.path, judged on real environments: STACK003 and the pip fixes of a PEP 668 Python.

A venv made with --system-site-packages shadows the base's pip and setuptools by design; a user-site install
shadows the base's copy; Debian ships cryptography with a .dist-info and an .egg-info of one dpkg install. None of
them may be told to uninstall anything. A real duplicate (two .dist-info of one package in the venv's own
site-packages, as an interrupted upgrade leaves) keeps a fix, and that fix is run here for real.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpdoctor.checks import fixes
from mpdoctor.checks.stack_duplicates import duplicate_distribution
from mpdoctor.snapshot import Distribution, PythonInfo, Snapshot
from real_envs import base_python, check, child_env, copy_venv, findings, fix_commands, make_venv, proves, run_commands

# Debian's interpreter, where the FHS puts it: skipped where there is none or it is not externally managed.
SYSTEM_PYTHON = "/usr/bin/python3"


def every_command(report: dict) -> list[str]:
    return [s["command"] for f in report["findings"] for s in f["fix"] if s["command"]]


def removes(command: str, name: str) -> bool:
    """Does this command uninstall ``name`` with pip, or delete its files?"""
    return bool(re.search(rf"\buninstall\b.*\s{re.escape(name)}(\s|$)", command)) or (
        command.startswith("rm ") and f"/{name}" in command
    )


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A fresh venv with pip (ensurepip's), made once: the tests below work on copies."""
    root = tmp_path_factory.mktemp("fresh")
    make_venv(root / "v")
    return root / "v"


@pytest.fixture(scope="module")
def system_site_venv(tmp_path_factory, fresh_venv) -> tuple[Path, dict]:
    """As `python -m venv --system-site-packages` makes it."""
    root = tmp_path_factory.mktemp("shadow")
    python = copy_venv(fresh_venv, root / "v", system_site=True)
    return python, check(python, cwd=root)


def test_a_system_site_venv_is_never_told_to_remove_its_own_pip(system_site_venv):
    python, report = system_site_venv
    dists = report["snapshot"]["environment"]["distributions"]
    # pip is in the venv and in the base: the probe says which is which
    assert {d["site"] for d in dists if d["name"] == "pip"} == {"environment", "base"}
    assert not any(removes(c, n) for c in every_command(report) for n in ("pip", "setuptools", "wheel"))
    for finding in findings(report, "STACK003"):  # a same-version shadow is no finding; any other names the winner
        assert "imports get" in finding["title"] and any("first on sys.path" in e for e in finding["evidence"])


@pytest.fixture(scope="module")
def user_site(tmp_path_factory) -> tuple[str, dict, str, str, dict]:
    """The base interpreter with a user site (PYTHONUSERBASE in a temporary directory) holding another six."""
    base = base_python()
    found = subprocess.run(
        [base, "-s", "-c", "import importlib.metadata as m; print(m.version('six'))"], capture_output=True, text=True
    )
    if found.returncode != 0:
        pytest.skip(f"{base} has no six to shadow")
    have = found.stdout.strip()
    other = "1.16.0" if have != "1.16.0" else "1.15.0"
    root = tmp_path_factory.mktemp("usersite")
    env = child_env(PYTHONUSERBASE=str(root / "userbase"))
    install = [base, "-m", "pip", "install", "--user", "--no-deps", "--no-warn-script-location", f"six=={other}"]
    subprocess.run(install, env=env, check=True, capture_output=True, timeout=180)
    return base, env, have, other, check(base, "--select", "STACK003", cwd=root, env=env)


def test_a_user_site_copy_is_said_to_win_and_nothing_of_the_base_is_removed(user_site):
    base, env, have, other, report = user_site
    # what Python really imports, as the finding must say
    imported = subprocess.run(
        [base, "-c", "import six; print(six.__version__)"], env=env, capture_output=True, text=True
    )
    assert imported.stdout.strip() == other
    (finding,) = [f for f in findings(report, "STACK003") if f["title"].startswith("six ")]
    assert finding["title"].startswith(f"six {other} in the user site shadows {have}")
    assert any("the user site comes before site-packages" in e for e in finding["evidence"])
    assert finding["severity"] == "info"  # six is no precision package: a note, not a warning
    assert not any(removes(c, "six") for c in every_command(report))
    # the way it offers to the base's copy works: PYTHONNOUSERSITE=1 imports the base's six
    (way,) = [s["command"] for s in finding["fix"] if s["command"]]
    assert way == "export PYTHONNOUSERSITE=1"
    shell = f"{way}; {base} -c 'import six; print(six.__version__)'"
    assert subprocess.run(["sh", "-c", shell], env=env, capture_output=True, text=True).stdout.strip() == have


@pytest.fixture(scope="module")
def duplicate(tmp_path_factory, fresh_venv) -> tuple[Path, Path, dict]:
    """A venv whose own site-packages holds pip's metadata twice, as an interrupted upgrade leaves it."""
    root = tmp_path_factory.mktemp("duplicate")
    python = copy_venv(fresh_venv, root / "v")
    (real,) = (root / "v").glob("lib/python*/site-packages/pip-*.dist-info")
    stale = real.with_name("pip-23.0.dist-info")
    shutil.copytree(real, stale)
    metadata = stale / "METADATA"
    metadata.write_text(re.sub(r"(?m)^Version: .*$", "Version: 23.0", metadata.read_text()))
    return root, python, check(python, cwd=root)


@proves("STACK003")
def test_a_real_duplicate_keeps_a_fix_that_works_when_run(duplicate):
    root, python, report = duplicate
    (finding,) = findings(report, "STACK003")
    assert finding["severity"] == "warning" and "in one directory" in finding["title"]
    commands = fix_commands(finding)
    assert commands and not any(removes(c, "pip") and "uninstall" in c for c in commands)
    run_commands(commands, cwd=root)
    after = check(python, cwd=root)
    assert findings(after, "STACK003") == []
    serious = lambda report: {(f["code"], f["title"]) for f in findings(report) if f["severity"] != "info"}  # noqa: E731
    assert serious(after) <= serious(report)  # nothing new (torch is missing in both: TORCH001)
    version = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("pip ")


def externally_managed_python() -> str:
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"no {SYSTEM_PYTHON} (a distribution's Python) on this machine")
    stdlib = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isfile(os.path.join(stdlib, "EXTERNALLY-MANAGED")):
        pytest.skip(f"{SYSTEM_PYTHON} is not externally managed (no EXTERNALLY-MANAGED in {stdlib})")
    return SYSTEM_PYTHON


def test_the_distribution_python_keeps_its_packages_and_gets_pep668_aware_fixes(tmp_path):
    """Judged only: no fix is ever run against the system Python."""
    python = externally_managed_python()
    report = check(python, cwd=tmp_path)
    env = report["snapshot"]["environment"]
    assert env["python"]["externally_managed"] is True
    distro = {d["name"] for d in env["distributions"] if d["site"] == "distro" and d["installer"] in ("", "debian")}
    assert distro, "a distribution's Python with no package of its own"
    commands = every_command(report)
    assert not any(removes(c, name) for c in commands for name in distro)
    assert not [f for f in findings(report, "STACK003") if f["title"].startswith("cryptography")]
    for command in commands:
        if re.search(r"-m pip (install|uninstall)\b", command):
            assert "-m venv" in command or ("--break-system-packages" in command and "RISKY" in command), command
    # the refusal those fixes avoid, as pip writes it (a dry run: nothing is installed even if pip did not refuse)
    refused = subprocess.run([python, "-m", "pip", "install", "--dry-run", "six"], capture_output=True, text=True)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr


def test_the_pep668_install_command_works_as_pasted(tmp_path):
    """fixes.pip on an externally managed Python: the venv it installs into is made and used, $HOME expanded."""
    info = PythonInfo(executable=base_python(), prefix="/usr", base_prefix="/usr", externally_managed=True)
    snap = Snapshot()
    snap.environment = dataclasses.replace(snap.environment, python=info)
    command = fixes.pip(snap, "install", "--no-deps", "six")
    assert fixes.command(base_python(), "-m", "venv") in command and "PEP 668" in command
    # a venv of the user's own at ~/venv, made from another Python: the fix must leave it as it is
    own = tmp_path / "venv"
    own.mkdir()
    (own / "pyvenv.cfg").write_text("home = /opt/python3.12/bin\nversion = 3.12.1\n")
    for _ in range(2):  # pasted twice: the second run reuses the venv the first made
        run_commands([command], cwd=tmp_path, env=child_env(HOME=str(tmp_path)))
        venv_python = tmp_path / ".venvs" / "system-python" / "bin" / "python"
        assert subprocess.run([str(venv_python), "-c", "import six"], capture_output=True).returncode == 0
    assert (own / "pyvenv.cfg").read_text() == "home = /opt/python3.12/bin\nversion = 3.12.1\n"
    assert sorted(p.name for p in own.iterdir()) == ["pyvenv.cfg"]
    # with HOME unset the shell stops before making anything at the root
    unset = {k: v for k, v in child_env().items() if k != "HOME"}
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=unset, capture_output=True, text=True)
    assert done.returncode != 0 and "HOME" in done.stderr
    assert not Path("/.venvs").exists()


def _snap(*dists: tuple[str, str, str, str]) -> Snapshot:
    """A snapshot of a venv (/home/user/venv) holding ``dists``: (version, directory, site kind, installer)."""
    python = PythonInfo(executable="/home/user/venv/bin/python", prefix="/home/user/venv", base_prefix="/usr")
    snap = Snapshot()
    found = [
        Distribution(name="six", version=v, location=d, metadata_path=f"{d}/six-{v}.dist-info", site=k, installer=i)
        for v, d, k, i in dists
    ]
    snap.environment = dataclasses.replace(snap.environment, python=python, distributions=found)
    return snap


VENV_SITE, BASE_SITE, DEBIAN = (
    "/home/user/venv/lib/python3.11/site-packages",
    "/usr/local/lib/python3.11",
    "/usr/lib/python3/dist-packages",
)


@pytest.mark.parametrize(
    "dists, wanted",
    [
        # dpkg's own two records of one install: nothing to say
        ([("1.16.0", DEBIAN, "distro", ""), ("1.16.0", DEBIAN, "distro", "")], None),
        # dpkg's records of two versions: said, with no command (pip must not touch them)
        ([("1.16.0", DEBIAN, "distro", ""), ("1.15.0", DEBIAN, "distro", "")], ("info", "no command")),
        # conda's and pip's records in one directory: conda's to repair
        (
            [("1.16.0", VENV_SITE, "environment", "conda"), ("1.15.0", VENV_SITE, "environment", "pip")],
            ("info", "no command"),
        ),
        # a pip duplicate outside this environment: its pip would refuse, so words only
        ([("1.16.0", BASE_SITE, "base", "pip"), ("1.15.0", BASE_SITE, "base", "pip")], ("warning", "no command")),
        # the same duplicate in the venv's own site-packages: a fix to run
        (
            [("1.16.0", VENV_SITE, "environment", "pip"), ("1.15.0", VENV_SITE, "environment", "pip")],
            ("warning", "command"),
        ),
    ],
)
def test_who_owns_a_same_directory_duplicate_decides_its_fix(dists, wanted):
    found = list(duplicate_distribution(_snap(*dists)))
    if wanted is None:
        assert found == []
        return
    (finding,) = found
    commands = [s.command for s in finding.fix if s.command]
    assert (finding.severity, "command" if commands else "no command") == wanted
    assert not any("uninstall" in c for c in commands)
