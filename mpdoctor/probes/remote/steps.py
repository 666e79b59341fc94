"""The names written on both sides of the process boundary: probe parts, steps, step files.

The remote modules write step files (one JSON line per step, see
``supervise.StepWriter``); the host (``mpdoctor.probes.environment`` and
``kernels``) reads them back by the same names. Both sides take the names from
here, so a step renamed on one side cannot silently go missing on the other.
Constants only (it imports nothing), Python 3.8+, like the rest of this package.

The kernel suite's own step names (``"matmul/float16"``, ...) are built from
``kernel_suite.OPS`` and the dtypes by ``kernel_measure.kernel_key``, which the
host also uses to read them back.
"""

# ---------------------------------------------------------------- every step file

DONE = "done"  # the last line of a step file whose writer finished
PLAN = "plan"  # a supervised worker's first line: how many steps its plan has (for the host's progress display)
ERROR = "%s_error"  # target.guarded_step records a step that raised as ERROR % step, with the exception

# ---------------------------------------------------------------- the environment probe (target.py): parts

PART_ENV = "env"
PART_TORCH = "torch"
PART_ONEFLOW = "oneflow"
PART_FILE = "%s.jsonl"  # PART_FILE % part: the step file the host gives a part
# A part's command line: the part, its step file, its limits (one JSON object, from the host's Budget), switches:
NO_PROJECT = "no-project"  # the env part leaves the working directory unscanned and writes no PROJECT step
PROJECT_DIR = "project="  # "project=DIR": the env part scans DIR as the project (--project), not the one it finds
NO_CPU = "no-cpu"  # after the kernel runner's limits: time the CUDA devices only (a fleet rank's own GPU)
# After the limits, "names=cuda:3": time only as many CUDA devices as named, under those names. A fleet rank
# narrows CUDA_VISIBLE_DEVICES to its own GPU, which the runner then sees as cuda:0; the job calls it cuda:3.
NAMES = "names="

# the env part: no imports of what is diagnosed
PYTHON = "python"
MARKERS = "markers"
ENV = "env"
MODULES = "modules"
DISTRIBUTIONS = "distributions"
APEX = "apex"
APEX_USERS = "apex_users"
PROJECT = "project"
ONEFLOW = "oneflow"

# the torch part (also written by the kernel runner and its counting child)
FIND = "find"
IMPORT = "import"
BUILD = "build"
APEX_LOADS = "apex_loads"
CUDA = "cuda"
DEVICES = "devices"

# the oneflow part (oneflow.py; its first step is FIND too)
TORCH_IMPORT = "torch_import"
ONEFLOW_IMPORT = "oneflow_import"
ONEFLOW_BUILD = "oneflow_build"
COEXIST = "coexist"

# ---------------------------------------------------------------- the kernel runner (kernel_runner.py)

RUNNER_FILE = "runner.jsonl"  # the runner's own steps: IMPORT, CUDA, DEVICES (the device names), DONE
TORCH_FILE = "torch.jsonl"  # the torch part's steps, written by the runner up to CUDA
COUNT_FILE = "count.jsonl"  # the counting child's steps: CUDA (with the count), DEVICES
DEVICE_FILE = "device-%d.jsonl"  # DEVICE_FILE % n: the n-th entry of the runner's DEVICES step
QUIET_FILE = "quiet"  # the host creates it once its other probes are done; the CPU worker waits for it

# a device file: DEVICE first (starts the device), then the suite's tests, then RETIME
DEVICE = "device"
RETIME = "retime"

# ---------------------------------------------------------------- records the supervisor writes (supervise.py)

END = "end"  # how a supervised job ended: status, detail, restarts, seconds
BETWEEN_STEPS = "(between steps)"  # the step a worker that died or stalled outside any step is recorded under
BY = "by"  # a step's data with BY: SUPERVISOR was written by the supervisor for a worker that died in that step
SUPERVISOR = "runner"
