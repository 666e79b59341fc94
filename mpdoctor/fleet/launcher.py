"""Which launcher started this process, and what it says about the rank: read from environment variables only.

torchrun (torch elastic) sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/
``MASTER_PORT``; Slurm's ``srun`` sets ``SLURM_PROCID``/``SLURM_NTASKS``/
``SLURM_LOCALID`` and the step's node list but no rendezvous address (the usual
recipe: the first host of the node list, a port derived from the job id); Open MPI
sets ``OMPI_COMM_WORLD_*`` and MPICH/Intel MPI ``PMI_RANK``/``PMI_SIZE``, and both
need ``MASTER_ADDR``/``MASTER_PORT`` from the job script; ``RANK``/``WORLD_SIZE`` with
``MASTER_ADDR`` and no torchrun (a Kubeflow PyTorchJob) is torch's ``env://``
convention. Pure functions of a mapping.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional


class LaunchError(ValueError):
    """The environment names no launcher, or an incomplete one; the message is meant for the user."""


@dataclass(frozen=True)
class Launch:
    """This process's place in the job, as its launcher described it."""

    launcher: str  # torchrun, env (RANK/WORLD_SIZE/MASTER_ADDR without torchrun), slurm, openmpi or pmi
    rank: int
    world_size: int
    local_rank: int
    host: str  # this node's name
    master_addr: str  # where rank 0's store listens (or torchrun's agent store)
    master_port: int
    run_id: str  # keys in a shared store are prefixed with it, so two runs never mix
    agent_store: bool = False  # torchrun's agent already hosts the store: every rank is a client


SLURM_PORT_BASE, SLURM_PORT_SPAN = 29500, 10000  # the common recipe: 29500 + job id % 10000


def detect(env: Mapping[str, str], host: Optional[str] = None) -> Launch:
    """The launch described by ``env`` (``os.environ``); raises :class:`LaunchError` when it describes none."""
    host = host or env.get("SLURMD_NODENAME") or socket.gethostname()
    if "RANK" in env and "WORLD_SIZE" in env and "TORCHELASTIC_RUN_ID" in env:
        return _launch(
            "torchrun",
            env,
            host,
            "RANK",
            "WORLD_SIZE",
            "LOCAL_RANK",
            run_id=env["TORCHELASTIC_RUN_ID"] + "." + env.get("TORCHELASTIC_RESTART_COUNT", "0"),
            agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
        )
    if "RANK" in env and "WORLD_SIZE" in env and "MASTER_ADDR" in env:
        # torch's env:// convention without torchrun: a Kubeflow PyTorchJob, a hand-written launcher.
        return _launch("env", env, host, "RANK", "WORLD_SIZE", "LOCAL_RANK", run_id=env.get("MASTER_PORT", ""))
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
        job = env.get("SLURM_JOB_ID", "")
        addr = env.get("MASTER_ADDR")
        if not addr:  # the first node of the step's list, as the usual recipe (`scontrol show hostnames | head -1`)
            host_count(nodes)  # an absurd list is refused in words; the first name costs one name (lazy)
            addr = next(hostlist(nodes), "") or host
        port = env.get("MASTER_PORT") or (str(SLURM_PORT_BASE + int(job) % SLURM_PORT_SPAN) if job.isdigit() else "")
        return _launch(
            "slurm",
            {**env, "MASTER_ADDR": addr, "MASTER_PORT": port},
            host,
            "SLURM_PROCID",
            "SLURM_NTASKS",
            "SLURM_LOCALID",
            run_id=f"{job}.{env.get('SLURM_STEP_ID', '0')}",
        )
    if "OMPI_COMM_WORLD_RANK" in env:
        return _launch(
            "openmpi",
            env,
            host,
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            run_id=env.get("OMPI_MCA_orte_ess_jobid", ""),
        )
    if "PMI_RANK" in env:
        local = "MPI_LOCALRANKID" if "MPI_LOCALRANKID" in env else "PMI_LOCAL_RANK"
        return _launch("pmi", env, host, "PMI_RANK", "PMI_SIZE", local, run_id=env.get("PMI_ID", ""))
    raise LaunchError(
        "not started by a launcher: run it as `torchrun --nproc-per-node N -m mpdoctor fleet`, "
        "`srun mpdoctor fleet` or `mpirun ... mpdoctor fleet` (no RANK/WORLD_SIZE, SLURM_PROCID, "
        "OMPI_COMM_WORLD_RANK or PMI_RANK in the environment)"
    )


def _launch(
    launcher: str,
    env: Mapping[str, str],
    host: str,
    rank: str,
    size: str,
    local: str,
    *,
    run_id: str,
    agent_store: bool = False,
) -> Launch:
    numbers = {name: _integer(env, name, launcher) for name in (rank, size)}
    # MPICH sets no local rank everywhere: then every rank is its node's first, which only costs parallel kernels.
    local_rank = _integer(env, local, launcher) if local in env else 0
    if not 0 <= numbers[rank] < numbers[size]:
        raise LaunchError(f"{launcher}: {rank}={numbers[rank]} is not below {size}={numbers[size]}")
    addr = env.get("MASTER_ADDR", "")
    if not addr:
        raise LaunchError(
            f"{launcher}: MASTER_ADDR is not set; export the host of rank 0, e.g. "
            "MASTER_ADDR=$(hostname) on the first node"
        )
    port = _integer(env, "MASTER_PORT", launcher)
    if not 0 < port < 65536:
        raise LaunchError(f"{launcher}: MASTER_PORT={port} is not a TCP port")
    return Launch(launcher, numbers[rank], numbers[size], local_rank, host, addr, port, run_id or "run", agent_store)


def _integer(env: Mapping[str, str], name: str, launcher: str) -> int:
    value = env.get(name, "")
    if not re.fullmatch(r"\s*\d+\s*", value):
        raise LaunchError(
            f"{launcher}: {name}={value!r} is not a non-negative integer" if value else f"{launcher}: {name} is not set"
        )
    return int(value)


MAX_HOSTS = 1 << 20  # hosts a Slurm node list may name: the largest machines have some 10^5 nodes
MAX_INDEX_DIGITS = 9  # digits of a node number in a range: "gpu[0-9999999999]" is refused before any counting


def hostlist(text: str) -> Iterator[str]:
    """Slurm's compressed host list, expanded one name at a time: ``node[01-03,07],gpu5`` -> node01 node02 node03
    node07 gpu5.

    The forms ``scontrol show hostnames`` expands: comma-separated names, each with at most one bracketed range
    list, zero-padding kept. Anything else is kept as it is. Lazy, so that the first host of
    ``gpu[0-9999999999]`` costs one name, not 2.9 GB; ``host_count`` bounds the whole.
    """
    for match in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", text):
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            yield prefix + suffix
            continue
        for part in ranges.split(","):
            span = _range(part)
            if span is None:  # "7", "a-b": one name, as the old expansion had it
                low, _, high = part.partition("-")
                yield f"{prefix}{part if high else low}{suffix}"
                continue
            width = len(part.partition("-")[0])
            for n in range(span[0], span[1] + 1):
                yield f"{prefix}{n:0{width}d}{suffix}"


def _range(part: str) -> Optional[tuple]:
    """``(low, high)`` of a numeric range part ("01-03"); None for a part that names one host ("7", "a-b", "5-").

    Raises LaunchError for a number of more than MAX_INDEX_DIGITS digits: no node is numbered so, and
    ``int()`` of thousands of digits is refused by Python itself.
    """
    low, _, high = part.partition("-")
    if not (high and low.isdigit() and high.isdigit() and low.isascii() and high.isascii()):
        return None
    if len(low) > MAX_INDEX_DIGITS or len(high) > MAX_INDEX_DIGITS:
        raise LaunchError(
            f"Slurm node list: node number {part[:40]!r} has more than {MAX_INDEX_DIGITS} digits, which no "
            "allocation has; set MASTER_ADDR to the host of rank 0"
        )
    return int(low), int(high)


def host_count(text: str) -> int:
    """How many hosts ``text`` names, counted without expanding it; LaunchError when no job could have that many."""
    total = 0
    for match in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", text):
        ranges = match.group(2)
        for part in [""] if ranges is None else ranges.split(","):
            span = _range(part)
            total += 1 if span is None else max(0, span[1] - span[0] + 1)
            if total > MAX_HOSTS:
                raise LaunchError(
                    f"Slurm node list {text[:60]!r}{'...' if len(text) > 60 else ''} names more than {MAX_HOSTS} "
                    "hosts: it is not a real allocation; set MASTER_ADDR to the host of rank 0"
                )
    return total


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list as a list (see ``hostlist``); LaunchError when it names over MAX_HOSTS hosts."""
    host_count(text)
    return list(hostlist(text))
