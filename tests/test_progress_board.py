"""The progress board: what workers post is what a display reads, in order, from any thread."""

from __future__ import annotations

import threading

from mpdoctor.probes.progress import SILENT, ProgressBoard


def test_tasks_keep_the_order_they_began_in_and_their_latest_state():
    board = ProgressBoard()
    board.start("inventory", "listing packages")
    board.start("torch", "importing torch")
    board.update("inventory", "scanning the project")
    board.update("torch", completed=3, total=40, unit="tests")
    board.finish("inventory")

    inventory, torch = board.tasks()
    assert (inventory.name, inventory.text, inventory.finished) == ("inventory", "scanning the project", True)
    assert (torch.name, torch.text, torch.finished) == ("torch", "importing torch", False)
    assert (torch.completed, torch.total, torch.unit) == (3, 40, "tests")


def test_a_new_text_restarts_the_step_clock_and_the_same_text_does_not():
    board = ProgressBoard()
    board.start("torch", "importing torch")
    first = board.tasks()[0].step_started
    board.update("torch", "importing torch", completed=1)
    assert board.tasks()[0].step_started == first
    board.update("torch", "starting CUDA")
    later = board.tasks()[0]
    assert later.step_started >= first and later.started <= later.step_started
    assert later.text == "starting CUDA"


def test_an_update_for_an_unknown_task_starts_it_and_finish_of_an_unknown_task_is_ignored():
    board = ProgressBoard()
    board.finish("never started")
    board.update("explain", completed=10, total=100, unit="bytes")
    (task,) = board.tasks()
    assert (task.name, task.completed, task.total, task.unit) == ("explain", 10, 100, "bytes")


def test_finish_can_say_how_the_task_ended():
    board = ProgressBoard()
    board.start("torch", "importing torch")
    board.finish("torch", "timed out after 60 s")
    assert board.tasks()[0].text == "timed out after 60 s" and board.tasks()[0].finished


def test_a_read_is_a_copy_the_writers_cannot_change():
    board = ProgressBoard()
    board.start("audit", total=5, unit="files")
    seen = board.tasks()
    board.update("audit", completed=5)
    assert seen[0].completed == 0 and board.tasks()[0].completed == 5


def test_many_threads_posting_at_once_lose_no_task_and_no_count():
    board = ProgressBoard()
    names = [f"kernels cuda:{i}" for i in range(8)]

    def work(name: str) -> None:
        board.start(name, "timing", total=500, unit="tests")
        for done in range(1, 501):
            board.update(name, completed=done)
        board.finish(name)

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        board.tasks()  # a display reading while they write
    for thread in threads:
        thread.join()
    tasks = {task.name: task for task in board.tasks()}
    assert set(tasks) == set(names)
    assert all(task.completed == 500 and task.finished for task in tasks.values())


def test_the_silent_board_records_nothing():
    SILENT.start("torch", "importing torch")
    SILENT.update("torch", completed=1)
    SILENT.finish("torch")
    assert SILENT.tasks() == []
