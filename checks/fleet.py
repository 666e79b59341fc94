"""fleet: what `mpdoctor fleet` and `mpdoctor fleet compare` find across the ranks of one job.

These rules judge the ranks of a job, not one snapshot: ``mpdoctor.fleet.compare``
compares the ranks' fingerprints and stamps its findings with the rules declared
here, so their codes, names and documentation live in the registry like every
other code's (``mpdoctor checks``, ``mpdoctor rule FLEET001``; ``mpdoctor fleet
rules`` lists this family alone). Each finding carries its own severity, one of
its rule's ``severities``. Codes are never reused.
"""

from __future__ import annotations

from mpdoctor.checks.registry import RANKS, rule

FAMILY = "fleet"

RANK_MISSING = rule(
    "FLEET001",
    "rank-never-reported",
    family=FAMILY,
    subject=RANKS,
    doc="""
    A rank sent no report by the deadline, or its mpdoctor died: named by host and local rank, with its last step.

    ## Why it matters
    The job would meet the same rank at its first collective and hang there: a rank
    stuck importing torch, one whose node cannot reach rank 0's store, or one that
    crashed. Its heartbeat (a store key updated every second) says where it stopped.
    A report or heartbeat that is not what mpdoctor writes (not JSON, nested too
    deeply, a number of thousands of digits, a field of the wrong type) is this
    finding too, for that rank alone, with what was wrong: something other than this
    mpdoctor wrote the run's keys.

    ## Fix
    Run `mpdoctor check` on that node, in the rank's environment, and read its
    findings; when it stopped at `connecting`, check that MASTER_ADDR/MASTER_PORT are
    reachable from that node. For a value that could not be read, run the same
    mpdoctor version on every rank, and check what else can reach MASTER_PORT.
    """,
    severities=("error",),
)

STACK_DIFFERS = rule(
    "FLEET002",
    "versions-differ-across-ranks",
    family=FAMILY,
    subject=RANKS,
    doc="""
    Ranks run different versions of torch, its CUDA, cuDNN, NCCL, Python or other installed packages.

    ## Why it matters
    Mixed NCCL versions on one job hang or corrupt collectives (NVIDIA/nccl#1267); ranks'
    torch versions are never compared by init_process_group (pytorch#24273). Other
    packages (transformers, apex, ...) change which precision path a rank takes.

    ## Fix
    Install the same versions on every node (one lock file, one container image), and
    run `mpdoctor fleet` again.
    """,
    severities=("error", "warning", "info"),
)

DRIVER_DIFFERS = rule(
    "FLEET003",
    "driver-differs-across-ranks",
    family=FAMILY,
    subject=RANKS,
    doc="""
    Nodes run different NVIDIA drivers, or drivers that support different CUDA versions.

    ## Why it matters
    Identical pip lists do not make identical nodes: a different driver changes which
    CUDA and NCCL features work (NVIDIA/nccl#1381).

    ## Fix
    Install the same driver on every node (drain the odd node until it is updated).
    """,
    severities=("warning",),
)

GPU_DIFFERS = rule(
    "FLEET004",
    "gpu-differs-across-ranks",
    family=FAMILY,
    subject=RANKS,
    doc="""
    Ranks run on different GPU models, compute capabilities, or bf16 support (native on some ranks only).

    ## Why it matters
    A bf16 job runs emulated (much slower, sometimes differently rounded) where bf16 is
    not native, and the whole job waits for the slowest rank; kernels picked per
    architecture can differ numerically.

    ## Fix
    Schedule the job on one GPU type (a Slurm constraint or a node selector), or use a
    dtype every rank's GPU supports natively.
    """,
    severities=("warning",),
)

SLOW_GPU = rule(
    "FLEET005",
    "gpu-slower-than-its-peers",
    family=FAMILY,
    subject=RANKS,
    doc="""
    A GPU measured far slower than identical GPUs on other ranks (throttled, degraded, or shared).

    ## Why it matters
    Synchronous data parallelism runs at the pace of its slowest rank: one throttled
    GPU slows the whole job. Only GPUs of the same model are compared, and only beyond
    the threshold described in the finding, so timing noise is not blamed.

    ## Fix
    Look at that GPU's clocks, temperature and other processes (`nvidia-smi -q -d
    PERFORMANCE,CLOCK,TEMPERATURE`), run `dcgmi diag -r 2` on that node, and drain it
    until it measures like its peers.
    """,
    severities=("warning",),
)

ENV_DIFFERS = rule(
    "FLEET006",
    "environment-differs-across-ranks",
    family=FAMILY,
    subject=RANKS,
    doc="""
    An environment variable that changes numerics or communication differs across ranks (NCCL_*, TORCH_*, NVIDIA_TF32_OVERRIDE, ...).

    ## Why it matters
    NVIDIA_TF32_OVERRIDE=0 on one rank gives it other float32 matmul results; NCCL_*
    settings that differ across ranks can make NCCL pick incompatible protocols and hang.
    Variables set per rank by the launcher (CUDA_VISIBLE_DEVICES, TORCHELASTIC_*) are
    not compared.

    ## Fix
    Set these variables in one place that every rank reads (the job script, not a
    node's profile) and run `mpdoctor fleet` again. Values are shown redacted.
    """,
    severities=("warning",),
)

FINDING_ON_SOME = rule(
    "FLEET007",
    "finding-on-some-ranks-only",
    family=FAMILY,
    subject=RANKS,
    doc="""
    A single-process finding (a `mpdoctor check` code) appears on some ranks only: those ranks' setup differs.

    ## Why it matters
    A problem on one node (an apex impostor, a CPU-only torch) breaks the job as surely
    as one everywhere, but is easy to miss when a node is checked at random.

    ## Fix
    Follow that finding's own fix on the ranks named (`mpdoctor rule CODE`).
    """,
    severities=("warning",),
)

NO_GPU_OF_ITS_OWN = rule(
    "FLEET008",
    "rank-without-a-gpu-of-its-own",
    family=FAMILY,
    subject=RANKS,
    doc="""
    A rank's LOCAL_RANK selects no GPU of its own: fewer devices are visible to it than its node has local ranks, or two ranks of a node select the same GPU.

    ## Why it matters
    A job calls `torch.cuda.set_device(LOCAL_RANK)`: with fewer visible devices than
    local ranks that fails with "invalid device ordinal" (or, with `LOCAL_RANK %
    device_count`, two ranks share a GPU); ranks that share a GPU run at half speed
    and can run out of memory. Common when a Slurm step gives each task one GPU
    (`--gpus-per-task=1`) while the script still picks `cuda:LOCAL_RANK`.

    ## Fix
    Start as many ranks per node as it has GPUs (`--nproc-per-node` / `--ntasks-per-node`),
    and either leave every GPU visible to every rank (then `cuda:LOCAL_RANK`) or give
    each rank one GPU and use `cuda:0` in the script.
    """,
    severities=("warning",),
)
