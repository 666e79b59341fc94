"""What the imported torch reports of its build, of CUDA and of each device: the torch part's facts.

Loaded beside ``target.py`` (stdlib only, Python 3.8+, judges nothing; torch is handed in, never imported
here), whose torch part and the kernel runner write each as a step. Each fact is read on its own: one that
raises is recorded under "errors" with its exception, and the others are kept. The build facts start no CUDA;
the CUDA and device facts do, so they run only where no CUDA worker is forked afterwards.
"""

import warnings

from ._portable import limits, redact


def _call(facts, key, func):
    """Record func()'s result under key, or the exception that it raised."""
    try:
        facts[key] = func()
    except Exception as exc:
        facts.setdefault("errors", {})[key] = "%s: %s" % (
            type(exc).__name__,
            redact.redact_clip(exc, limits.ERROR_TEXT, tail=True),
        )


def _warning_texts(caught):
    return [
        redact.redact_clip("%s: %s" % (w.category.__name__, w.message), limits.WARNING_TEXT, tail=True) for w in caught
    ]


def torch_build_facts(torch):
    """What the build says of itself without starting CUDA: safe in a process that forks CUDA workers later.

    Nothing here may call into CUDA (see ``torch_cuda_facts``). ``torch.cuda.nccl.version()``
    reads the library's own constant and was measured fork-safe on torch 2.11.
    """
    facts = {}
    _call(facts, "version", lambda: str(torch.__version__))
    _call(facts, "file", lambda: getattr(torch, "__file__", None))
    _call(facts, "cuda", lambda: getattr(torch.version, "cuda", None))
    _call(facts, "hip", lambda: getattr(torch.version, "hip", None))
    _call(facts, "git_version", lambda: getattr(torch.version, "git_version", None))
    # Newer torch ships the arch list of each official CUDA build; use it for fixes.
    # getattr all the way: a leftover torch/ directory imports with no .cuda at all.
    table = getattr(getattr(torch, "cuda", None), "PYTORCH_RELEASES_CODE_CC", None)
    if table is not None:
        _call(facts, "release_archs", lambda: release_archs(table))
    from . import nccl

    return nccl.with_nccl(facts, torch)  # NCCL as torch loads it (fleet compares it across ranks)


def release_archs(table):
    """``torch.cuda.PYTORCH_RELEASES_CODE_CC`` as {cuda: {host: [cc, ...]}}, whichever shape this torch ships.

    Seen: {cuda: {host: set}} and {cuda: set} (torch 2.11: one set of ccs per CUDA
    version, for every host). A set alone is filed under host "any"; anything else raises
    TypeError or ValueError, recorded as a fact error by the caller.
    """

    def ccs(value):
        if isinstance(value, (set, frozenset, list, tuple)):
            return sorted(int(cc) for cc in value)
        raise TypeError("unexpected %s in PYTORCH_RELEASES_CODE_CC" % type(value).__name__)

    if not isinstance(table, dict):
        raise TypeError("PYTORCH_RELEASES_CODE_CC is a %s, not a dict" % type(table).__name__)
    out = {}
    for cuda, by_host in table.items():
        if isinstance(by_host, dict):
            out[str(cuda)] = {str(host): ccs(value) for host, value in by_host.items()}
        else:
            out[str(cuda)] = {"any": ccs(by_host)}
    return out


# Every call here starts CUDA, or marks the process so that a child it forks later can
# never use CUDA ("Cannot re-initialize CUDA in forked subprocess"), measured on torch
# 2.11 + H200: is_available() (unless PYTORCH_NVML_BASED_CUDA_CHECK=1),
# get_arch_list() (it calls is_available), backends.cudnn.version() and
# _C._cuda_getDeviceCount(). So they run only in a process that forks no CUDA worker
# afterwards: the kernel runner's counting child, or the torch part after its forks.
def torch_cuda_facts(torch):
    """CUDA's availability and device count, with the build facts that need CUDA (under "build")."""
    facts = {}
    build = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _call(facts, "available", lambda: bool(torch.cuda.is_available()))
        _call(facts, "device_count", lambda: int(torch.cuda.device_count()))
        _call(build, "cudnn", lambda: torch.backends.cudnn.version())
        _call(build, "arch_list", lambda: list(torch.cuda.get_arch_list()))
    facts["build"] = build
    facts["warnings"] = _warning_texts(caught)
    return facts


def _pci_bus_id(props):
    """torch 2.8+ exposes the PCI location as ints; render it like NVML (normalised)."""
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if any(not isinstance(part, int) for part in parts):
        return ""
    return "%04x:%02x:%02x.0" % tuple(parts)


def device_facts(torch, ordinal):
    """One CUDA device's properties; getattr throughout, older torch lacks uuid and pci_*."""
    props = torch.cuda.get_device_properties(ordinal)
    uuid = getattr(props, "uuid", None)
    memory = getattr(props, "total_memory", None)
    sms = getattr(props, "multi_processor_count", None)
    integrated = getattr(props, "is_integrated", None)
    return {
        "ordinal": ordinal,
        "name": str(getattr(props, "name", "")),
        "compute_capability": "%s.%s" % (props.major, props.minor),
        "memory_total": int(memory) if memory is not None else None,
        "multiprocessor_count": int(sms) if sms is not None else None,
        "uuid": str(uuid) if uuid is not None else "",
        "pci_bus_id": _pci_bus_id(props),
        "is_integrated": bool(integrated) if integrated is not None else None,
    }


def torch_device_facts(torch, torch_count):
    """Every device CUDA enumerates. Starts CUDA, so it runs as its own step.

    ``torch_count`` is torch.cuda.device_count() from the step before, used only
    when this torch lacks the runtime call.
    """
    facts = {}
    # The runtime's count, not torch.cuda.device_count(): before CUDA starts, torch
    # parses CUDA_VISIBLE_DEVICES itself (against NVML) and can disagree with CUDA.
    runtime_count = getattr(getattr(torch, "_C", None), "_cuda_getDeviceCount", None)
    if runtime_count is not None:
        _call(facts, "runtime_device_count", lambda: int(runtime_count()))
    count = facts.get("runtime_device_count")
    if count is None:
        count = torch_count if isinstance(torch_count, int) else 0
    devices = []
    for ordinal in range(count):
        try:
            devices.append(device_facts(torch, ordinal))
        except Exception as exc:
            error = "%s: %s" % (type(exc).__name__, redact.redact_clip(exc, limits.ERROR_TEXT, tail=True))
            facts.setdefault("errors", {})["device %d" % ordinal] = error
    facts["devices"] = devices
    return facts
