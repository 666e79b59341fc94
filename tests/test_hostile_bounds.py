"""Every child output and every target-provided string has a bound (``mpdoctor/portable/limits.py``).

Issue 40, items 5 and 6: a flooding `--python` filled the temporary directory (its output went to unbounded
files, about 220 MB/s); a dist-info with a 50 MB Version took 65 s and printed a 52 MB report; a 1.5 GB step
line ended in MemoryError. The inputs come from ``adversarial.round3``'s generators, scaled to a few times
their bound: what is tested is the bound, not the size.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

from adversarial.round3 import dist_info, flood_source, oversized, step_lines
from mpdoctor.portable import limits
from mpdoctor.probes import child

# ---------------------------------------------------------------- a flooding child (item 5)


class DiskWatch:
    """A watch for run_child that looks at the files of ``directory`` this process holds open (the child's output
    files are anonymous temporary files there: they show in /proc/self/fd only): the most disk space one takes, and
    how much the child wrote between two looks (at least: a file emptied between two looks shows only what came
    after). Disk space, not size: a file whose start was given back (a hole) keeps its size and holds only its
    tail.

    A child can write gigabytes a second into the page cache, so no file can be held below what it writes between
    two looks: the bound is half the spool (where it is cut), the tail kept, and what was written during the cut
    and since."""

    def __init__(self, directory: str) -> None:
        self.directory, self.most, self.growth, self.written = directory, 0, 0, 0
        self.sizes: dict[int, int] = {}

    def __call__(self, elapsed):
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith(self.directory):
                    info = os.fstat(int(fd))
                    before = self.sizes.get(int(fd), 0)
                    grew = info.st_size - before if info.st_size >= before else info.st_size  # emptied meanwhile
                    self.sizes[int(fd)] = info.st_size
                    self.growth, self.written = max(self.growth, grew), self.written + grew
                    self.most = max(self.most, info.st_blocks * 512)
            except OSError:  # closed meanwhile
                continue
        return None

    @property
    def bound(self) -> int:
        return limits.CHILD_SPOOL // 2 + limits.CHILD_KEPT + 2 * self.growth + (4 << 20)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see the child's temporary files")
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flooding_child_is_cut_to_the_bound_keeping_its_last_line_and_saying_so(stream, tmp_path, monkeypatch):
    """96 MB written (three times CHILD_SPOOL): the temporary file never grows past half the spool plus what the
    child writes between two looks; the last line survives; the result says how much was cut."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    watch = DiskWatch(str(tmp_path))
    source = flood_source(rate_mb=96, stream=stream, last_line="RESULT")
    result = child.run_child([sys.executable, "-c", source], 120, watch=watch)
    assert result.exit_code == 0, result.describe()
    text = result.stdout if stream == "stdout" else result.stderr
    assert text.splitlines()[-1] == "RESULT" and len(text) <= limits.CHILD_KEPT
    assert watch.most <= watch.bound, (watch.most, watch.bound)  # before: 96 MB, all of it
    cut = result.stdout_cut if stream == "stdout" else result.stderr_cut
    assert cut >= (96 << 20) - limits.CHILD_KEPT - limits.CHILD_SPOOL
    assert f"its output was cut: {cut / 1e6:.1f} MB of {stream} dropped" in result.describe()


def test_a_child_that_floods_until_killed_costs_its_bound_not_the_disk(tmp_path, monkeypatch):
    """It floods forever: killed at its limit (3 s), its files held to the bound all along, below what it wrote."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    watch = DiskWatch(str(tmp_path))
    result = child.run_child([sys.executable, "-c", flood_source(rate_mb=1), "forever"], 3, watch=watch)
    assert result.timed_out and "its output was cut" in result.describe()
    assert watch.most <= watch.bound and watch.most < watch.written, (watch.most, watch.bound, watch.written)


def test_where_no_hole_can_be_punched_the_file_is_cut_instead(tmp_path, monkeypatch):
    """A file system without hole punching (or not Linux): the spool empties its file past the bound instead, as
    before hole punching; what the child writes during a cut may be lost, the bound holds all the same."""
    from mpdoctor.probes import child_output

    monkeypatch.setattr(child_output, "punch_hole", lambda fd, offset, length: False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    watch = DiskWatch(str(tmp_path))
    result = child.run_child([sys.executable, "-c", flood_source(rate_mb=1), "forever"], 3, watch=watch)
    assert result.timed_out and "its output was cut" in result.describe()
    assert watch.most <= watch.bound and watch.most < watch.written, (watch.most, watch.bound, watch.written)
    assert len(result.stdout) + len(result.stderr) <= 2 * limits.CHILD_KEPT


# ---------------------------------------------------------------- target data (item 6)


@pytest.fixture(scope="module")
def oversized_site(tmp_path_factory):
    """A site directory with one distribution whose Name, Version and Requires-Dist are each over their bound."""
    site = tmp_path_factory.mktemp("site")
    dist_info(
        site,
        "hostile-" + "n" * (2 * limits.DIST_NAME),
        oversized(limits.DIST_VERSION, seed=7),
        [f"dep{i} ({oversized(limits.DIST_REQUIRE, seed=i)})" for i in range(limits.DIST_REQUIRES + 40)],
        summary=oversized(limits.DIST_SUMMARY, seed=9),
    )
    return site


def test_each_field_of_a_distribution_is_cut_where_it_is_read_and_the_cut_said(oversized_site):
    from importlib.metadata import PathDistribution

    from mpdoctor.probes.remote.target import distribution_facts

    (folder,) = oversized_site.glob("*.dist-info")
    facts = distribution_facts(PathDistribution(folder))
    assert len(facts["name"]) <= limits.DIST_NAME and len(facts["version"]) <= limits.DIST_VERSION
    assert len(facts["requires"]) == limits.DIST_REQUIRES
    assert all(len(r) <= limits.DIST_REQUIRE for r in facts["requires"])
    assert len(facts["summary"]) <= limits.DIST_SUMMARY
    said = " ".join(facts["problems"])
    assert f"Version is {3 * limits.DIST_VERSION} characters long: the first {limits.DIST_VERSION - 3} kept" in said
    assert f"more than {limits.DIST_REQUIRES} Requires-Dist lines" in said and "Name is " in said


def test_the_check_of_an_environment_holding_it_stays_small(oversized_site, tmp_path):
    """The real CLI, the distribution on the target's path: the report quotes no field past its bound."""
    from adversarial.running import assert_clean, clean_env, mpdoctor

    result = mpdoctor(
        "check", "--no-kernels", "--format", "json", cwd=tmp_path, env=clean_env(PYTHONPATH=str(oversized_site))
    )
    assert_clean(result, 0, 1)
    (dist,) = [
        d for d in json.loads(result.stdout)["snapshot"]["environment"]["distributions"] if "hostile" in d["name"]
    ]
    assert len(dist["version"]) <= limits.DIST_VERSION and len(dist["requires"]) == limits.DIST_REQUIRES
    assert any("Version is " in p for p in dist["problems"])


def test_a_step_line_over_its_bound_is_dropped_unread_and_the_rest_read(tmp_path):
    from mpdoctor.probes.remote import supervise

    path = tmp_path / "env.jsonl"
    step_lines(path, limits.STEP_LINE + (1 << 20))
    data, _ = supervise.read_steps(str(path))  # the one reader, both sides (the host's StepFile: step_text)
    assert data == {"before": data["before"], "after": "ok", "done": None}
