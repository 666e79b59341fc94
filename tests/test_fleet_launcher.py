"""Which launcher started a rank, from its environment variables.

The Slurm values are recorded from a real `srun -n 3 -O` on a single-node Slurm 22.05
(Debian's slurmctld + slurmd) on this machine; test_fleet_run.py runs `srun` itself where
a Slurm cluster is up. Open MPI and PMI values are written from their documentation
(no MPI here), labelled so.
"""

from __future__ import annotations

import pytest

from mpdoctor.fleet.launcher import LaunchError, detect, expand_hostlist, host_count, hostlist

TORCHRUN = {
    "RANK": "2",
    "WORLD_SIZE": "3",
    "LOCAL_RANK": "2",
    "LOCAL_WORLD_SIZE": "3",
    "GROUP_RANK": "0",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29400",
    "TORCHELASTIC_RUN_ID": "none",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
}
# Recorded: rank 1 of `srun -n 3 -O env` (job 4, step 0) on the host "vm".
SLURM = {
    "SLURMD_NODENAME": "vm",
    "SLURM_JOB_ID": "4",
    "SLURM_JOB_NODELIST": "vm",
    "SLURM_LOCALID": "1",
    "SLURM_NODEID": "0",
    "SLURM_NTASKS": "3",
    "SLURM_PROCID": "1",
    "SLURM_STEP_ID": "0",
    "SLURM_STEP_NODELIST": "vm",
}


def test_torchrun():
    launch = detect(TORCHRUN, host="vm")
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank) == ("torchrun", 2, 3, 2)
    assert (launch.master_addr, launch.master_port, launch.agent_store) == ("127.0.0.1", 29400, True)
    assert launch.run_id == "none.0"


def test_a_torchrun_restart_gets_other_keys():
    assert detect({**TORCHRUN, "TORCHELASTIC_RESTART_COUNT": "1"}).run_id != detect(TORCHRUN).run_id


def test_torch_env_convention_without_torchrun():
    """A Kubeflow PyTorchJob sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (per its documentation)."""
    env = {"MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "4", "RANK": "3"}
    launch = detect(env, host="job-worker-2")
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank) == ("env", 3, 4, 0)
    assert not launch.agent_store


def test_slurm_recorded_values():
    launch = detect(SLURM)
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank, launch.host) == ("slurm", 1, 3, 1, "vm")
    # Slurm sets no rendezvous: the first host of the step's node list, and a port from the job id.
    assert (launch.master_addr, launch.master_port, launch.run_id) == ("vm", 29504, "4.0")


def test_slurm_multi_node_takes_the_first_host_and_honours_master_addr():
    env = {**SLURM, "SLURM_STEP_NODELIST": "gpu[07-09,12]", "SLURM_JOB_ID": "123456"}
    assert (detect(env).master_addr, detect(env).master_port) == ("gpu07", 29500 + 3456)
    assert detect({**env, "MASTER_ADDR": "head", "MASTER_PORT": "6000"}).master_addr == "head"


def test_open_mpi_documented_values():
    env = {
        "OMPI_COMM_WORLD_RANK": "5",
        "OMPI_COMM_WORLD_SIZE": "8",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "MASTER_ADDR": "node1",
        "MASTER_PORT": "29500",
    }
    launch = detect(env, host="node3")
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank) == ("openmpi", 5, 8, 1)


def test_pmi_documented_values():
    env = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "3", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"}
    assert (detect(env).launcher, detect(env).rank, detect(env).local_rank) == ("pmi", 3, 3)


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "not started by a launcher"),
        ({"PMI_RANK": "0", "PMI_SIZE": "2", "MASTER_PORT": "1"}, "MASTER_ADDR is not set"),
        ({**TORCHRUN, "RANK": "3"}, "RANK=3 is not below WORLD_SIZE=3"),
        ({**TORCHRUN, "WORLD_SIZE": "three"}, "WORLD_SIZE='three' is not a non-negative integer"),
        ({**TORCHRUN, "MASTER_PORT": "70000"}, "MASTER_PORT=70000 is not a TCP port"),
        ({**SLURM, "SLURM_JOB_ID": ""}, "MASTER_PORT is not set"),
    ],
)
def test_incomplete_launches_are_one_line_errors(env, message):
    with pytest.raises(LaunchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        detect(env, host="h")


@pytest.mark.parametrize(
    "text, hosts",
    [
        ("vm", ["vm"]),
        ("node[01-03,07],gpu5", ["node01", "node02", "node03", "node07", "gpu5"]),
        ("a[8-11]", ["a8", "a9", "a10", "a11"]),
        ("rack1-n[1,3]-ib", ["rack1-n1-ib", "rack1-n3-ib"]),
    ],
)
def test_slurm_host_lists_expand_as_scontrol_does(text, hosts):
    assert expand_hostlist(text) == hosts


def test_fleet_outside_a_launcher_is_a_usage_error(monkeypatch):
    from typer.testing import CliRunner

    from mpdoctor.cli import app

    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(app, ["fleet"])
    assert result.exit_code == 2 and "not started by a launcher" in result.output


def test_the_fleet_package_ships():
    """pyproject lists its packages one by one: without this line a wheel has no `mpdoctor fleet`."""
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert "mpdoctor.fleet" in pyproject["tool"]["setuptools"]["packages"]


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "0"])
def test_fleet_refuses_endless_deadlines(value):
    from typer.testing import CliRunner

    from mpdoctor.cli import app

    result = CliRunner().invoke(app, ["fleet", "--deadline", value])
    assert result.exit_code == 2 and "Invalid value for '--deadline'" in result.output


def test_full_snapshots_need_a_directory_to_save_them(monkeypatch):
    from typer.testing import CliRunner

    from mpdoctor.cli import app

    result = CliRunner().invoke(app, ["fleet", "--full-snapshots"])
    assert result.exit_code == 2 and "--full-snapshots needs --save-snapshots DIR" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "nodes, message",
    [
        ("gpu[0-9999999999]", "node number '0-9999999999' has more than 9 digits"),
        ("gpu[0-" + "9" * 5000 + "]", "has more than 9 digits"),
        ("gpu[0-999999999]", "names more than 1048576 hosts"),
        ("n[0-999999],m[0-99999]", "names more than 1048576 hosts"),
    ],
)
def test_an_absurd_slurm_node_list_is_refused_in_words_without_expanding_it(nodes, message):
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": nodes}
    with pytest.raises(LaunchError, match=message):
        detect(env, host="h")


def test_the_first_slurm_host_is_taken_lazily():
    env = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "gpu[007-900000]"}
    assert detect(env, host="h").master_addr == "gpu007"
    assert next(hostlist("gpu[007-900000],x")) == "gpu007" and host_count("gpu[007-900000],x") == 899995


def test_fleet_under_an_absurd_slurm_node_list_is_a_usage_error_not_2_9_gb(tmp_path):
    """Once the whole list was expanded: 2.9 GB, then MemoryError, exit 3. Capped at 1 GB here, so it fails fast."""
    import os
    import resource
    import subprocess
    import sys

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(SLURM_PROCID="0", SLURM_NTASKS="1", SLURM_JOB_ID="42", SLURM_JOB_NODELIST="gpu[0-9999999999]")
    result = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "fleet", "--no-kernels"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        preexec_fn=capped,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Slurm node list" in result.stderr and "set MASTER_ADDR" in result.stderr
