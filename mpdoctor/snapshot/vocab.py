"""The closed vocabularies of the JSON contracts: every status, kind and level a field can hold.

Each is a ``Literal`` type alias used in the dataclass annotations (snapshot,
device table, findings, explain and audit reports). The serde layer
(``mpdoctor.schema.serde``) lists the values as an ``enum`` in the shipped JSON
Schemas and accepts them when loading.

How a vocabulary evolves: a newer mpdoctor of the same schema version may write
a value that is not listed here. Loading keeps such a value as the plain string
(it never fails on it), and readers treat it as unknown: compare with the values
you know, never assume the list is complete. The JSON Schema says the same:
each such field is ``anyOf`` this version's ``enum`` or any string.

An empty string is listed where a field's default is empty: not recorded, or not
applicable (a test that is not SDPA has no backend). Each alias's comment names
where its values are produced; tests/test_schema.py ties the ones with a table in
code (OPS, TOLERANCE, FAMILIES, ...) to that table.

Two vocabularies are declared beside their users instead, where the layers
want them (README "Architecture"):

* ``SeverityName`` (``Finding.severity``: error, warning, info) and ``StepRole``
  (``FixStep.role``: step, alternative, inspect) in ``mpdoctor.findings``, beside the
  ``Severity`` enum: findings sit below the snapshot. They are re-exported here.
* ``ExplainFamily`` (``Explanation.family``: explain/signature.FAMILIES) in
  ``mpdoctor.explain.report``: `mpdoctor explain` must not load the snapshot
  package, and the snapshot may not import a report.
"""

from __future__ import annotations

from typing import Literal

from mpdoctor.findings import SeverityName, StepRole
from mpdoctor.portable.kernel_names import DTYPES, OPS, SDPA_BACKENDS

# ---------------------------------------------------------------- the snapshot

# ProbeRun.status. probes/environment.probe_run (ok, error, crashed, timeout); probes/kernels.torch_part
# (the supervisor's crashed or timeout of the CUDA steps); the default not-run: the probe never ran.
ProbeStatus = Literal["ok", "error", "crashed", "timeout", "not-run"]

# TorchInfo.status. probes/environment.torch_facts; unknown (the default) when the probe died before `import torch`.
TorchStatus = Literal["imported", "missing", "import-error", "import-crashed", "import-timeout", "mocked", "unknown"]

# NvmlInfo.status. probes/machine: nvml_record (ok, unavailable, error), the NVML child's end (timeout, error),
# pynvml missing (unavailable); not-run is the default.
NvmlStatus = Literal["ok", "unavailable", "error", "timeout", "not-run"]

# KernelInfo.status. probes/kernels.kernel_facts (ok, error, not-run when torch did not import); probes/collect
# (skipped: --no-kernels or no selected check needs them).
KernelStatus = Literal["ok", "skipped", "not-run", "error"]

# KernelInfo.mode. The CLI's --kernels (quick, full); empty when the kernels were skipped.
KernelMode = Literal["quick", "full", ""]

# DeviceKernels.status. The supervisor's end record (probes/remote/supervise: ok, error, crashed, timeout), the
# device step's own failure, or the runner's probe status when the device went down with it (probes/kernels);
# not-run is the default: the device's run never ended.
DeviceRunStatus = Literal["ok", "crashed", "timeout", "error", "not-run"]

# KernelResult.status. probes/remote/kernel_measure.record and kernel_suite (ok, unsupported, wrong, skipped), a
# test that raised or a result that does not parse (error, probes/remote/supervise and probes/kernels), the
# supervisor's record of a test that killed its worker (crashed, timeout). Empty: not recorded.
KernelResultStatus = Literal["ok", "unsupported", "wrong", "error", "crashed", "timeout", "skipped", ""]

# The microkernels' vocabulary is the kernel runner's own, shared with it (portable/kernel_names), not a copy.
# KernelResult.op: kernel_names.OPS (probes/kernels.known_key drops any other step).
KernelOp = Literal[OPS + ("",)]

# KernelResult.dtype: kernel_names.DTYPES (the keys of probes/remote/kernel_measure.TOLERANCE).
KernelDtype = Literal[DTYPES + ("",)]

# KernelResult.backend: kernel_names.SDPA_BACKENDS; empty for a test that is not SDPA.
SdpaBackend = Literal[SDPA_BACKENDS + ("",)]

# ApexInfo.resolution: probes/remote/apex.import_resolution (none is also the default).
ApexResolution = Literal["package", "namespace", "module", "none", "error"]

# ApexLocation.kind: probes/remote/apex.find_locations.
ApexLocationKind = Literal["package", "namespace", "module", ""]

# ApexLocation.source: probes/remote/apex.find_locations.
ApexSearchSource = Literal["sys.path", "cwd"]

# ApexExtension.load_status: probes/remote/loads (ok, error, crashed, timeout, not-tried), passed on by
# probes/environment.merge_extension_loads; not-tried is the default.
LoadStatus = Literal["ok", "error", "crashed", "timeout", "not-tried"]

# OneflowRuntime.status: probes/environment.oneflow_runtime; not-run (the default) when no oneflow was found.
OneflowRuntimeStatus = Literal["imported", "import-error", "import-crashed", "import-timeout", "not-run"]

# OneflowRuntime.torch_status: probes/environment.oneflow_runtime; not-tried is the default.
OneflowTorchStatus = Literal["imported", "import-error", "import-crashed", "import-timeout", "not-tried"]

# TorchResolution.kind (snapshot.environment.oneflow.mock.torch.kind): probes/remote/oneflow.torch_resolution.
MockTorchKind = Literal["torch", "missing", "oneflow-mock-torch", "oneflow-hook", "oneflow-shim", "error"]

# OneflowRuntime.coexist_device and CoexistCase.device: probes/remote/oneflow.coexistence.
CoexistDevice = Literal["cuda", "cpu", ""]

# CoexistCase.name: the cases of probes/remote/oneflow.coexistence.
CoexistCaseName = Literal["fp16 input", "torch.autocast", "oneflow.autocast", ""]

# CoexistCase.status: probes/remote/oneflow.coexistence.
CoexistStatus = Literal["ok", "error", ""]

# ---------------------------------------------------------------- the device table (analysis/gpu_table)

# DeviceRow.source: analysis/gpu_map (observed_rows, predicted_rows, hidden_rows).
DeviceSource = Literal["cuda", "predicted", "nvml", ""]

# DeviceRow.matched_by: analysis/gpu_map._match and predicted_rows; empty when no NVML GPU matched.
MatchedBy = Literal["uuid", "pci-bus-id", "properties", "order-rules", ""]

# DeviceRow.fp16, bf16, tf32, fp8: analysis/capability.LEVELS, or empty when the compute capability is unknown.
PrecisionLevel = Literal["tensor-cores", "native", "slow", "emulated", "no", ""]

# VisibleEntry.kind: analysis/visible_devices (each Entry's kind).
VisibleEntryKind = Literal["index", "gpu-uuid", "mig-uuid", "invalid", ""]

# GpuView.order: analysis/gpu_map.effective_order (gpu_table.ORDERS, or unknown for any other text).
CudaOrder = Literal["FASTEST_FIRST", "PCI_BUS_ID", "unknown"]

# ---------------------------------------------------------------- the kernel verdicts (analysis/kernel_table)

# KernelVerdict.speed: analysis/kernel_view.judge_kernel. baseline: fp32 itself, what the others are measured
# against; fast, fine, slow, inconclusive: its speed against fp32 (kernel_view.verdict); empty: no speed to judge.
KernelSpeed = Literal["baseline", "fast", "fine", "slow", "inconclusive", ""]

# KernelVerdict.accuracy: analysis/kernel_view.ACCURACY, from the test's status; empty: not recorded.
KernelAccuracy = Literal["ok", "wrong", "unchecked", ""]

# ---------------------------------------------------------------- the audit report

# FileSummary.format: checkpoint_audit/sources.read (safetensors, pickle; empty when the file is not one mpdoctor
# reads or is missing), checkpoint_audit/api (memory: a state dict audited in memory).
WeightFormat = Literal["safetensors", "pickle", "memory", ""]

__all__ = [
    "ApexLocationKind",
    "ApexResolution",
    "ApexSearchSource",
    "CoexistCaseName",
    "CoexistDevice",
    "CoexistStatus",
    "CudaOrder",
    "DeviceRunStatus",
    "DeviceSource",
    "KernelAccuracy",
    "KernelDtype",
    "KernelMode",
    "KernelOp",
    "KernelResultStatus",
    "KernelSpeed",
    "KernelStatus",
    "LoadStatus",
    "MatchedBy",
    "MockTorchKind",
    "NvmlStatus",
    "OneflowRuntimeStatus",
    "OneflowTorchStatus",
    "PrecisionLevel",
    "ProbeStatus",
    "SdpaBackend",
    "SeverityName",
    "StepRole",
    "TorchStatus",
    "VisibleEntryKind",
    "WeightFormat",
]
