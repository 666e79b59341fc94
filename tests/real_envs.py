"""Real throwaway environments to check, and the fixes mpdoctor prints for them run for real.

A fix is only worth printing if pasting it works. These helpers make a real venv (with pip, from
the interpreter this test run's venv was made from), run ``mpdoctor check --python X --format json``
on it, pick a finding's fix commands (its first way: the steps before the first alternative, not the
ones that only look), run them in a shell as a user would, and check again.

    python = make_venv(tmp / "v", system_site=True)
    report = check(python, cwd=tmp)
    finding = findings(report, "STACK003")[0]
    run_commands(fix_commands(finding))
    assert not findings(check(python, cwd=tmp), "STACK003")

Other interpreters (Python 3.8, ...) are ``interpreters.py``'s; venvs without pip holding crafted
installs are ``apex_envs.py``'s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional

from interpreters import find_python


def base_python() -> str:
    """The interpreter to make venvs from, and to stand for a user's base Python: never a venv's own (a user
    site and --system-site-packages need a real base). The one this test run's venv was made from, else this
    Python when it is no venv, else this Python's version as a user's shell finds it. Under CI's activated venv
    ``python3.11`` on PATH is the venv's: found first, it hid the base and the user-site case skipped."""
    if sys.prefix != sys.base_prefix:
        made_from = getattr(sys, "_base_executable", "")
        if made_from and os.path.isfile(made_from):
            return made_from
    else:
        return sys.executable
    return find_python("%d.%d" % sys.version_info[:2]) or sys.executable


def make_venv(root: Path, *, system_site: bool = False, python: Optional[str] = None) -> Path:
    """A venv with pip at ``root`` (``--system-site-packages`` when asked); its interpreter."""
    args = [python or base_python(), "-m", "venv", *(["--system-site-packages"] if system_site else []), str(root)]
    subprocess.run(args, check=True, capture_output=True, timeout=120)
    return root / "bin" / "python"


def copy_venv(source: Path, root: Path, *, system_site: Optional[bool] = None) -> Path:
    """A copy of the venv ``source`` at ``root`` (seconds cheaper than ensurepip); its interpreter.

    A venv finds its prefix from its pyvenv.cfg, so ``python -m pip`` works in the copy (its bin/pip scripts
    still name the source). ``system_site`` switches --system-site-packages on or off in the copy.
    """
    shutil.copytree(source, root, symlinks=True)
    if system_site is not None:
        cfg = root / "pyvenv.cfg"
        value = "true" if system_site else "false"
        lines = [
            f"include-system-site-packages = {value}" if line.startswith("include-system-site-packages") else line
            for line in cfg.read_text().splitlines()
        ]
        cfg.write_text("\n".join(lines) + "\n")
    return root / "bin" / "python"


def child_env(**extra: str) -> dict:
    """This process's environment without what would change the target's sys.path (PYTHONPATH, PYTHONUSERBASE,
    PYTHONNOUSERSITE), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONUSERBASE", "PYTHONNOUSERSITE")}
    env.update(extra)
    return env


def check(python: os.PathLike | str, *args: str, cwd: Path, env: Optional[Mapping[str, str]] = None) -> dict:
    """``mpdoctor check --python PYTHON --format json`` (no kernels, never failing) run in ``cwd``: the report."""
    command = [sys.executable, "-m", "mpdoctor", "check", "--python", str(python), "--no-kernels"]
    command += ["--format", "json", "--fail-on", "never", *args]
    out = subprocess.run(command, cwd=cwd, env=dict(env or child_env()), capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def findings(report: dict, code: str = "") -> list[dict]:
    """The report's findings, of the check ``code`` when given."""
    return [f for f in report["findings"] if not code or f["code"] == code]


def fix_commands(finding: dict) -> list[str]:
    """The commands of a finding's first way that change something (its steps before the first alternative)."""
    out = []
    for i, step in enumerate(finding["fix"]):
        if step["role"] == "alternative" and i > 0:
            break
        if step["command"] and step["role"] != "inspect":
            out.append(step["command"])
    return out


def run_commands(commands: list[str], *, cwd: Path, env: Optional[Mapping[str, str]] = None) -> list[str]:
    """Run each command in a POSIX shell, as pasted, in order; stop at the first that fails. Their outputs."""
    outputs = []
    for command in commands:
        done = subprocess.run(
            ["sh", "-c", command], cwd=cwd, env=dict(env or child_env()), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"$ {command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout + done.stderr)
    return outputs


# ---------------------------------------------------------------- states to build, and the proof of a fix

# Codes whose printed fix a test runs for real (``proves``), by the test that does: docs/checks.md lists them.
PROVEN_BY_RUNNING: dict[str, list[str]] = {}


def proves(*codes: str):
    """Mark a test as running the printed fix of ``codes`` for real (the list docs/checks.md must give)."""

    def mark(test):
        for code in codes:
            PROVEN_BY_RUNNING.setdefault(code, []).append(f"{test.__module__}::{test.__name__}")
        return test

    return mark


def site_packages(python: os.PathLike | str) -> Path:
    """The venv's own site-packages."""
    return next((Path(python).parent.parent / "lib").glob("python3*/site-packages"))


def pip(python: os.PathLike | str, *args: str, cwd: Optional[Path] = None) -> str:
    """``python -m pip ARGS`` (failing the test when pip fails): its output."""
    command = [str(python), "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(command, cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def runs(python: os.PathLike | str, code: str, *, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """``python -c CODE`` in the target, as a user's script would run it."""
    return subprocess.run(
        [str(python), "-c", code], cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=120
    )


def make_wheel(
    directory: Path,
    name: str,
    version: str,
    *,
    requires=(),
    files: Optional[dict] = None,
    summary="",
    tag: str = "py3-none-any",
):
    """A real wheel of a tiny package (crafted metadata: ``requires`` as Requires-Dist) for pip to install: its path.

    ``files`` maps paths in the wheel to text or bytes (a compiled module); ``tag`` is the wheel's tag (a
    platform one, ``cp311-cp311-linux_x86_64``, makes it a platlib wheel, as a build with compiled parts is)."""
    import base64
    import hashlib
    import zipfile

    files = dict(files if files is not None else {f"{name.replace('-', '_')}/__init__.py": ""})
    contents = {relative: data if isinstance(data, bytes) else data.encode() for relative, data in files.items()}
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}"]
    contents[f"{info}/METADATA"] = ("\n".join(metadata + [f"Requires-Dist: {req}" for req in requires]) + "\n").encode()
    purelib = "true" if tag.endswith("-none-any") else "false"
    contents[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: mpdoctor-tests\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n"
    ).encode()
    record = []
    for relative, data in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{relative},sha256={digest},{len(data)}")
    contents[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    path = directory / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for relative, data in contents.items():
            wheel.writestr(relative, data)
    return path


def runtime_distributions(name: str):
    """This test run's distribution ``name`` and those it requires at run time (its requirements, followed), less
    pip, setuptools and wheel: a venv has its own, and a second copy would be a finding."""
    from importlib import metadata

    from packaging.requirements import Requirement

    todo, seen = [name], set()
    while todo:
        try:
            dist = metadata.distribution(todo.pop())
        except metadata.PackageNotFoundError:
            continue
        if dist.metadata["Name"].lower() in seen:
            continue
        seen.add(dist.metadata["Name"].lower())
        if dist.metadata["Name"].lower() in ("pip", "setuptools", "wheel"):
            continue
        yield dist
        for line in dist.requires or []:
            req = Requirement(line)
            if not req.marker or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)


def top_entries(dist) -> dict[str, Path]:
    """The top-level files and directories of site-packages that a distribution installed, by name: their paths."""
    top = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
    return {
        entry: Path(str(dist.locate_file(entry)))
        for entry in top
        if entry != "__pycache__" and Path(str(dist.locate_file(entry))).exists()
    }


def torch_site(root: Path) -> Path:
    """A directory of links to this test run's torch and what it imports at run time (its requirements, followed):
    a venv given it on a .pth line (``add_site``) imports the real torch without a 900 MB install, and its pip sees
    that torch as installed outside the environment, so no fix run in the venv can change or remove it."""
    root.mkdir(parents=True, exist_ok=True)
    for dist in runtime_distributions("torch"):
        for entry, source in top_entries(dist).items():
            if not (root / entry).exists():
                (root / entry).symlink_to(source)
    return root


def install_copy(python: os.PathLike | str, name: str) -> list[str]:
    """Put this test run's distribution ``name``, and what it requires at run time, into the venv's own
    site-packages as pip installed them (their files, dist-info, RECORD): what that venv's pip then does to them
    (uninstall, reinstall) it does for real. The names put there.

    Package files are hard links where the file system allows (torch's 900 MB in a second or two): pip and rm
    replace or unlink a file, never write into it, so this test run's own stay as they are. The dist-info
    directories are real copies, free to damage. Never write into a package file in place (``write_text``
    truncates the file both names share): replace it.
    """

    def link(source, target):
        try:
            os.link(source, target)
        except OSError:  # another file system, or no hard links there
            shutil.copy2(source, target)

    site, names = site_packages(python), []
    for dist in runtime_distributions(name):
        names.append(dist.metadata["Name"])
        for entry, source in top_entries(dist).items():
            target = site / entry
            if target.exists() or target.is_symlink():
                continue
            copy = shutil.copy2 if entry.endswith(".dist-info") else link
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True, copy_function=copy)
            else:
                copy(source, target)
    return names


def local_wheels(name: str, version: str) -> list[Path]:
    """Wheels of ``name`` ``version`` in the find-links directories of pip's configuration here (PIP_FIND_LINKS,
    pip.conf): what pip installs without a network; none means installing it would download it."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], env=child_env(), capture_output=True, text=True, timeout=60
    )
    places = os.environ.get("PIP_FIND_LINKS", "").split()
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            places += value.strip().strip("'\"").split()
    found: list[Path] = []
    for place in dict.fromkeys(places):
        directory = Path(place.removeprefix("file://"))
        if directory.is_dir():
            found += directory.glob(f"{name.replace('-', '_')}-{version}-*.whl")
    return found


def add_site(python: os.PathLike | str, directory: Path, name: str = "_test_site") -> Path:
    """Put ``directory`` on the venv's sys.path with a .pth file: the file."""
    pth = site_packages(python) / f"{name}.pth"
    pth.write_text(f"{directory}\n")
    return pth


def way_commands(finding: dict, way: int = 0) -> list[str]:
    """The commands that change something of a finding's ``way``-th way (0: its first; n: the n-th alternative with
    the steps after it)."""
    ways: list[list[dict]] = []
    for step in finding["fix"]:
        if not ways or (step["role"] == "alternative" and ways[-1]):
            ways.append([])
        ways[-1].append(step)
    if way >= len(ways):
        return []
    return [s["command"] for s in ways[way] if s["command"] and s["role"] != "inspect"]


def serious(report: dict) -> set:
    """The warnings and errors of a report, by code and title."""
    return {(f["code"], f["title"]) for f in findings(report) if f["severity"] not in ("info",)}


def prove_fix(
    python: os.PathLike | str,
    code: str,
    *,
    cwd: Path,
    way: int = 0,
    env: Optional[Mapping[str, str]] = None,
    title: str = "",
) -> tuple[dict, dict, list[str]]:
    """Check, take the finding ``code`` (the one whose title contains ``title``), run its ``way`` as pasted, check
    again: the finding is gone, no new warning or error came, and pip still runs. The reports and the commands run."""
    before = check(python, cwd=cwd, env=env)
    found = [f for f in findings(before, code) if title in f["title"]]
    assert found, f"no {code} finding: {[(f['code'], f['title']) for f in findings(before)]}"
    commands = way_commands(found[0], way)
    assert commands, f"{code} has no command to run in way {way}: {found[0]['fix']}"
    run_commands(commands, cwd=cwd, env=env)
    after = check(python, cwd=cwd, env=env)
    left = [f["title"] for f in findings(after, code) if title in f["title"]]
    assert not left, f"after {commands}: {code} still says {left}"
    assert serious(after) <= serious(before), f"after {commands}, new: {serious(after) - serious(before)}"
    version = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("pip "), version.stderr
    return before, after, commands
