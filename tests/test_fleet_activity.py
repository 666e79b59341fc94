"""The heartbeat's step, in words, from what a rank's check posts to its progress board."""

from __future__ import annotations

from mpdoctor.fleet.activity import CHECKING, JUDGING, check_step
from mpdoctor.probes.progress import ProgressBoard


def test_nothing_posted_yet_is_starting_the_check():
    assert check_step(ProgressBoard().tasks()) == CHECKING


def test_a_torch_import_is_the_news_over_the_inventory_beside_it():
    board = ProgressBoard()
    board.start("inventory", "listing installed packages")
    board.start("nvml", "asking the NVIDIA driver")
    board.start("torch", "importing torch")
    assert check_step(board.tasks()) == "importing torch"
    board.update("torch", "starting CUDA")
    assert check_step(board.tasks()) == "starting CUDA"


def test_kernels_name_their_device_without_a_count_that_would_reset_the_clock():
    board = ProgressBoard()
    board.start("torch", "importing torch")
    board.finish("torch")
    board.start("kernels cuda:1", "matmul bfloat16", total=40, unit="tests")
    board.update("kernels cuda:1", completed=12)
    board.start("inventory", "listing installed packages")
    assert check_step(board.tasks()) == "running kernels on cuda:1"


def test_every_probe_ended_is_judging():
    board = ProgressBoard()
    for name in ("torch", "inventory", "nvml"):
        board.start(name, "x")
        board.finish(name)
    assert check_step(board.tasks()) == JUDGING
