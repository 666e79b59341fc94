"""The probes post what they are doing to a progress board, in order, and how each task ended.

Real probes: the CPU build of torch installed here, and fake venvs whose torch hangs or crashes on import. A
recording board keeps every post; no timing is asserted, only what was posted and in which order.
"""

from __future__ import annotations

import sys
from typing import Optional

import pytest

from mpdoctor.doctor.gather import Options, gather
from mpdoctor.probes.collect import take_snapshot
from mpdoctor.probes.budget import Budget
from mpdoctor.probes.follow import StepFile
from mpdoctor.probes.progress import ProgressBoard


class RecordingBoard(ProgressBoard):
    """A board that also keeps every post, in the order they came: (what, task, text, completed, total)."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[tuple[str, str, Optional[str], Optional[int], Optional[int]]] = []

    def start(self, name, text="", total=None, unit=""):
        super().start(name, text, total, unit)
        self.posts.append(("start", name, text, None, total))

    def update(self, name, text=None, completed=None, total=None, unit=None):
        super().update(name, text, completed, total, unit)
        self.posts.append(("update", name, text, completed, total))

    def finish(self, name, text=None):
        super().finish(name, text)
        self.posts.append(("finish", name, text, None, None))

    def texts(self, task: str) -> list[str]:
        return [text for _, name, text, _, _ in self.posts if name == task and text]

    def index(self, task: str, text: str) -> int:
        return next(i for i, (_, name, said, _, _) in enumerate(self.posts) if name == task and said == text)

    def ending(self, task: str) -> str:
        return [text for what, name, text, _, _ in self.posts if what == "finish" and name == task][-1]


@pytest.fixture(scope="module")
def cpu_check() -> RecordingBoard:
    board = RecordingBoard()
    snapshot = gather(Options(python=sys.executable, kernels="quick", progress=board))
    assert snapshot.torch.status == "imported" and snapshot.kernels.status == "ok"
    return board


def test_the_torch_task_follows_the_import_and_ends_done(cpu_check):
    texts = cpu_check.texts("torch")
    assert texts.index("finding torch") < texts.index("importing torch") < texts.index("reading torch's build")
    assert cpu_check.ending("torch") == "done"


def test_the_cpu_kernels_count_their_tests_up_to_the_plan(cpu_check):
    posts = [post for post in cpu_check.posts if post[1] == "kernels cpu"]
    assert posts, "no kernel task"
    assert cpu_check.index("torch", "importing torch") < cpu_check.posts.index(posts[0])
    totals = {total for _, _, _, _, total in posts if total is not None}
    assert len(totals) == 1 and totals.pop() > 10
    done = [completed for what, _, _, completed, _ in posts if what == "update" and completed is not None]
    assert (
        done == sorted(done)
        and done[-1] == cpu_check.tasks()[[t.name for t in cpu_check.tasks()].index("kernels cpu")].total
    )
    texts = cpu_check.texts("kernels cpu")
    assert texts.index("starting the device") < texts.index("running tests") < texts.index("summarising the timings")
    assert cpu_check.ending("kernels cpu") == "done"


def test_the_inventory_says_when_it_scans_the_project_and_every_task_ends(cpu_check):
    assert "scanning the project" in cpu_check.texts("inventory")
    assert cpu_check.ending("inventory") == "done"
    assert cpu_check.ending("nvml")  # "no NVIDIA driver" here; "done" where there is one
    assert all(task.finished for task in cpu_check.tasks()), cpu_check.tasks()


def test_the_torch_part_posts_the_same_steps_without_kernels():
    board = RecordingBoard()
    take_snapshot(sys.executable, Budget.from_timeout(60), "off", project=False, progress=board)
    texts = board.texts("torch")
    assert texts.index("importing torch") < texts.index("starting CUDA")  # no devices to list on this machine
    assert board.ending("torch") == "done"
    assert not [post for post in board.posts if post[1].startswith("kernels")]
    assert "scanning the project" not in board.texts("inventory")  # not asked to


@pytest.mark.parametrize("kernels", ["quick", "off"])
def test_a_torch_that_hangs_ends_its_task_timed_out(fake_venv, kernels):
    venv = fake_venv("progress-torch-hangs", {"torch/__init__.py": "import time\ntime.sleep(600)\n"})
    board = RecordingBoard()
    snapshot = take_snapshot(
        str(fake_venv.python(venv)), Budget.from_timeout(2), kernels, project=False, progress=board
    )
    assert snapshot.torch.status == "import-timeout"
    assert board.texts("torch")[-2:] == ["importing torch", "timed out after 2 s"]


def test_a_torch_that_crashes_ends_its_task_crashed(fake_venv):
    venv = fake_venv("progress-torch-aborts", {"torch/__init__.py": "import os\nos.abort()\n"})
    board = RecordingBoard()
    snapshot = take_snapshot(str(fake_venv.python(venv)), Budget.from_timeout(20), "off", project=False, progress=board)
    assert snapshot.torch.status == "import-crashed"
    assert board.ending("torch") == "crashed (was killed by SIGABRT)"


def test_a_step_file_is_read_a_line_at_a_time_as_it_grows(tmp_path):
    path = tmp_path / "steps.jsonl"
    follower = StepFile(str(path))
    assert list(follower.entries()) == []  # not there yet
    path.write_text('{"step": "import", "begin": true}\n{"step": "imp')
    assert list(follower.entries()) == [("import", True, None)]
    with path.open("a") as handle:
        handle.write('ort", "data": {"ok": true}}\nnot json\n')
    assert list(follower.entries()) == [("import", False, {"ok": True})]
    assert list(follower.entries()) == []
