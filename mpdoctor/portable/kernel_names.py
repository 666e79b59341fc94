"""The precision microkernels' vocabulary: the names of their ops, dtypes and SDPA backends, defined once.

The kernel runner in the target (``probes/remote/kernel_suite``, ``kernel_measure``) runs
and names the tests by them; on the host the snapshot's closed vocabularies
(``snapshot/vocab``), the verdicts and the matrix (``analysis``) and the precision checks
read them from here. ``tests/test_vocabulary.py`` lists every shared value and fails on a
literal copy of one anywhere else in mpdoctor.
"""

# Every dtype a test runs in, fp32 (the baseline) first: also the order of the matrix's columns.
DTYPES = ("float32", "tf32", "float16", "bfloat16", "float8_e4m3fn")
# How the report writes each (a matrix's header, "matmul fp16").
SHORT = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}
# The dtypes of mixed precision that every device is tested in (fp8 only where the device claims it).
LOW_PRECISION = ("float16", "bfloat16")

# Every op, in the order a device runs them: the matrix's rows.
OPS = ("matmul", "conv2d", "layer_norm", "softmax", "sdpa", "autocast", "grad_scaler")
# The ops that compute numbers, whose speed and accuracy are measured; autocast and grad_scaler test what
# torch does with dtypes, not a kernel.
TIMED_OPS = OPS[:5]

# The SDPA backends a test can be restricted to, in the order they are tried; the fused ones first.
SDPA_BACKENDS = ("flash", "efficient", "cudnn", "math")
FUSED_SDPA = SDPA_BACKENDS[:3]

# Undisturbed timing rounds a speed ratio needs before its spread means anything: the host's verdicts
# (mpdoctor.analysis.kernel_view) take this very constant, and the runner's compare() stops an op early
# when fewer could come of more rounds.
CONCLUSIVE_ROUNDS = 3


def kernel_key(op, dtype, backend=""):
    """A test's step name, which is also its key in an op's timings: ``"matmul/float16"``, ``"sdpa/float16/flash"``.

    The one way the key is built, in the target and on the host (``mpdoctor.probes.kernels`` re-joins
    the timings to the results by it); :func:`parse_key` reads it back.
    """
    return "/".join(part for part in (op, dtype, backend) if part)


def parse_key(key):
    """``"sdpa/float16/flash"`` as (op, dtype, backend); missing parts are empty."""
    op, _, rest = key.partition("/")
    dtype, _, backend = rest.partition("/")
    return op, dtype, backend


def listed(names):
    """``("a", "b", "c")`` as "a, b or c": a vocabulary in a field's description, never copied by hand."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
