"""The smaller items of issue 40 (item 10) that are fixed: each once cost far more than its input deserved.

* ``-o`` through another user's symlink in a sticky shared directory (``/tmp``) wrote the report over the
  link's target, bypassing ``fs.protected_symlinks``;
* 9,999 ranks that never reached the store printed some 70,000 lines, one finding each;
* an 80,000-entry ``CUDA_VISIBLE_DEVICES`` took 32 s to judge.
"""

from __future__ import annotations

import io
import os
import random
import time

import pytest

from mpdoctor.analysis.visible_devices import Device, read_visible_devices
from mpdoctor.fleet.gathered import judge_gathered
from mpdoctor.fleet.launcher import Launch
from mpdoctor.fleet.protocol import Gathered
from mpdoctor.portable import limits
from mpdoctor.render.output import OutputError, write_report


@pytest.mark.skipif(os.geteuid() != 0, reason="making a symlink another user owns needs root")
def test_a_report_is_not_written_through_another_users_link_in_a_sticky_directory(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # as /tmp
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    planted = shared / "report.json"
    os.symlink(victim, planted)
    os.lchown(planted, 4242, 4242)  # another user's link
    with pytest.raises(OutputError, match="owned by another user .uid 4242. in a shared sticky directory"):
        write_report(str(planted), "report\n")
    assert victim.read_text() == "mine\n" and os.path.islink(planted)
    os.lchown(planted, os.geteuid(), os.getegid())  # this user's own link: written through, as documented
    write_report(str(planted), "report\n")
    assert victim.read_text() == "report\n" and os.path.islink(planted)


@pytest.mark.parametrize("seed", range(3))
def test_thousands_of_ranks_that_never_came_are_one_finding_and_one_line(seed):
    from rich.console import Console

    from mpdoctor.render.fleet import render_fleet_text

    rng = random.Random(seed)
    world = rng.randint(2000, 10000)
    came = set(rng.sample(range(world), rng.randint(1, 20))) | {0}
    report = judge_gathered(Gathered({r: {"rank": r} for r in came}), Launch("env", 0, world, 0, "h", "h", 1, "r"))
    missing = [f for f in report.findings if f.code == "FLEET001"]
    assert len(missing) == 1 and missing[0].title.startswith(f"{world - len(came)} ranks never reached the store")
    buffer = io.StringIO()
    render_fleet_text(report, Console(file=buffer, width=120, force_terminal=False, color_system=None))
    assert len(buffer.getvalue().splitlines()) < 40 and len(buffer.getvalue()) < 20_000


@pytest.mark.parametrize("seed", range(3))
def test_a_visible_devices_value_longer_than_any_node_is_read_to_its_bound(seed):
    rng = random.Random(seed)
    gpus = [Device(f"GPU-{i:08x}-1111-2222-3333-444444444444", i) for i in range(8)]
    count = rng.randint(20 * limits.VISIBLE_ENTRIES, 80 * limits.VISIBLE_ENTRIES)
    raw = ",".join(rng.choice([str(rng.randrange(8)), gpus[rng.randrange(8)].uuid[:12]]) for _ in range(count))
    began = time.process_time()
    selection = read_visible_devices(raw, gpus, cuda_order=gpus)
    assert len(selection.entries) + len(selection.ignored) <= limits.VISIBLE_ENTRIES
    assert f"has {count} entries: only the first {limits.VISIBLE_ENTRIES} are read" in " ".join(selection.problems)
    assert time.process_time() - began < 2.0  # a guard against a hang, not a benchmark (80k entries: 0.5 s before)
