"""`-o PATH`, `--save-snapshot PATH` and standard output: nothing destroyed, every failure a message.

Before issue 22 a report *replaced* whatever was at PATH: run as root, ``-o
/dev/null`` would have replaced the system's ``/dev/null`` with a file; a FIFO or a
symlink (the link, not its target) too. An existing 0644 file came back 0600, a
write error was never reported, and standard output on ``/dev/full`` ended with a
traceback. The chosen semantics (docs/check.md "Writing reports"): only regular files are
replaced, symlinks are written through to their target, the mode is kept.

The character device here is one made for the test (``mknod``, so as root) with
``/dev/null``'s numbers: a regression must not cost this machine its ``/dev/null``.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import sys
from pathlib import Path

import pytest

from adversarial.running import assert_clean, clean_env, mpdoctor
from helpers import fixture_path

SNAPSHOT = str(fixture_path("cpu-laptop"))
OPTIONS = ["--output", "--save-snapshot"]


def report_to(option: str, path: Path, *extra: str, **kwargs):
    return mpdoctor("check", "--snapshot", SNAPSHOT, "--fail-on", "never", option, str(path), *extra, **kwargs)


@pytest.fixture
def char_device(tmp_path) -> Path:
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a character device needs root")
    return path


@pytest.mark.parametrize("option", OPTIONS)
def test_a_character_device_is_refused_and_stays_a_device(option, char_device):
    result = report_to(option, char_device)
    assert_clean(result, 2)
    assert "is a character device: mpdoctor replaces only regular files" in result.stderr
    assert stat.S_ISCHR(os.lstat(char_device).st_mode)


@pytest.mark.parametrize("option", OPTIONS)
def test_a_fifo_is_refused_without_blocking(option, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = report_to(option, fifo)
    assert_clean(result, 2)
    assert "is a FIFO (named pipe)" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_directory_is_refused(tmp_path):
    result = report_to("--output", tmp_path)
    assert_clean(result, 2)
    assert "is a directory" in result.stderr


@pytest.mark.parametrize("option", OPTIONS)
def test_a_symlink_is_written_through_to_its_target(option, tmp_path):
    target, link = tmp_path / "real.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target.name)
    assert_clean(report_to(option, link), 0)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text() != "old"


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to("made.txt")
    assert_clean(report_to("--output", link), 0)
    assert link.is_symlink() and (tmp_path / "made.txt").read_text().strip()


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640])
def test_an_existing_file_keeps_its_mode(mode, tmp_path):
    path = tmp_path / "report.txt"
    path.write_text("old")
    path.chmod(mode)
    assert_clean(report_to("--output", path), 0)
    assert stat.S_IMODE(path.stat().st_mode) == mode and path.read_text() != "old"


def test_a_new_file_gets_the_umask_default_not_0600(tmp_path):
    path = tmp_path / "new.txt"
    assert_clean(report_to("--output", path, preexec_fn=lambda: os.umask(0o022)), 0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def _small_file_limit():
    """A file size limit of 4 KB, with SIGXFSZ ignored: a write past it fails with EFBIG, a real write error."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_write_error_is_reported_with_exit_2_and_the_old_file_survives(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("the previous report")
    result = report_to("--output", path, "--format", "markdown", preexec_fn=_small_file_limit)
    assert_clean(result, 2)
    assert f"--output {path}: cannot write: File too large" in result.stderr
    assert path.read_text() == "the previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left behind


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--snapshot", SNAPSHOT),
        ("check", "--snapshot", SNAPSHOT, "-f", "json"),
        ("check", "--snapshot", SNAPSHOT, "-f", "markdown"),
        ("checks",),
    ],
    ids=["text", "json", "markdown", "checks"],
)
def test_stdout_on_a_full_disk_is_a_clean_exit_2(args):
    extra = ("--fail-on", "never") if args[0] == "check" else ()
    with open("/dev/full", "w") as full:
        result = mpdoctor(*args, *extra, stdout=full)
    assert_clean(result, 2)
    assert "mpdoctor: error: cannot write the output: No space left on device" in result.stderr


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_a_non_utf8_path_in_pythonpath_reaches_a_report_written_with_o(fmt, tmp_path):
    """A second `packaging` in a non-UTF-8 PYTHONPATH directory: STACK003 names its location, a surrogate escape
    in Python; the report shows it escaped, never a UnicodeEncodeError (exit 3 before)."""
    strange = os.fsencode(str(tmp_path)) + b"/caf\xe9"
    os.makedirs(strange + b"/packaging-0.1.dist-info")
    with open(strange + b"/packaging-0.1.dist-info/METADATA", "w") as handle:
        handle.write("Metadata-Version: 2.1\nName: packaging\nVersion: 0.1\n")
    env = {os.fsencode(k): os.fsencode(v) for k, v in clean_env().items()}
    env[b"PYTHONPATH"] = strange
    out = tmp_path / f"report.{fmt}"
    result = mpdoctor(
        "check",
        "--no-kernels",
        "--select",
        "STACK",
        "--format",
        fmt,
        "--fail-on",
        "never",
        "-o",
        str(out),
        "--timeout",
        "30",
        env=env,
        cwd=tmp_path,
    )
    assert_clean(result, 0)
    assert "caf\\udce9" in out.read_text(encoding="utf-8")


def test_a_non_utf8_python_path_reaches_a_report_written_with_o(tmp_path):
    folder = os.fsencode(str(tmp_path)) + b"/caf\xe9"
    os.mkdir(folder)
    python = folder + b"/python"
    os.symlink(os.fsencode(sys.executable), python)
    out = tmp_path / "report.md"
    result = mpdoctor(
        "check",
        "--python",
        os.fsdecode(python),
        "--no-kernels",
        "--select",
        "ENV",
        "--format",
        "markdown",
        "--fail-on",
        "never",
        "-o",
        str(out),
        "--timeout",
        "30",
        cwd=tmp_path,
    )
    assert_clean(result, 0)
    assert "caf\\udce9/python" in out.read_text(encoding="utf-8")


NO_TEMP = """\
import sys, tempfile
tempfile.tempdir = sys.argv.pop(1)
from mpdoctor.cli import main
sys.argv[0] = "mpdoctor"
main()
"""


@pytest.mark.parametrize("args", [("check", "--no-kernels"), ("audit", "PICKLE")])
def test_no_writable_temporary_directory_is_a_clear_message(args, tmp_path):
    """Root can write anywhere, so a machine with no usable temporary directory is simulated by pointing tempfile
    at one that does not exist: tempfile raises there exactly as when none of its candidates works."""
    import pickle

    weights = tmp_path / "w.pt"
    weights.write_bytes(pickle.dumps({"w": [1]}))
    argv = [a.replace("PICKLE", str(weights)) for a in args]
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", NO_TEMP, str(tmp_path / "gone"), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        cwd=tmp_path,
    )
    assert_clean(result, 1, 2)
    shown = result.stderr + result.stdout
    assert "no writable temporary directory" in shown and "set TMPDIR" in shown
