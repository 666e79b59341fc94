"""A stand-in CUDA ``torch`` for hardware this machine lacks: ``SOURCE`` is installed as
``torch/__init__.py`` in a throwaway test venv, and mpdoctor's real probes run in it.

It is not torch and runs no kernels. It answers the CUDA calls mpdoctor's probes make
with the recorded facts of incident 4's box (a TITAN RTX numbered first by CUDA, then a
GTX 1080 Ti), and it copies real torch's *fork rule* as measured on an H200 with torch
2.11.0+cu130 (the table in ``shared/captures/README.md``, next to
``h200-torch2.11-cu130-snapshot.json``): a process forked after its parent made one of
these calls can never use CUDA.

================================  ==================  ===================================
call in the parent before fork()  child can use CUDA  with PYTORCH_NVML_BASED_CUDA_CHECK=1
================================  ==================  ===================================
nothing                           yes                 yes
torch.cuda.is_available()         no                  yes
torch.cuda.device_count()         yes                 yes
torch.cuda.get_arch_list()        no                  no
torch.backends.cudnn.version()    no                  no
torch._C._cuda_getDeviceCount()   no                  no
torch.cuda.nccl.version()         yes                 yes
================================  ==================  ===================================

How, as in real torch: the first poisoning call registers an after-fork child handler
(``os.register_at_fork(after_in_child=...)``; real torch's C++ ``poison_fork()`` uses
``pthread_atfork``), which marks every child forked later as "in bad fork"
(``torch._C._cuda_isInBadFork()`` answers True there, and so does every process forked
from that child). ``is_available()`` poisons through ``_C._cuda_getDeviceCount()``,
unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` makes it count through NVML (here: the
device list) as real torch does; ``get_arch_list()`` calls ``is_available()`` and then
``_C._cuda_getArchFlags()``, which the stand-in makes poison too, so that the measured
"no" in the NVML column holds (the measurement says which call poisons, not which part
of it). ``device_count()`` and ``cuda.nccl.version()`` never poison.

In a bad-fork child the counts stay readable without raising (real torch inherits the
count its parent cached): ``is_available()``, ``device_count()`` and
``_C._cuda_getDeviceCount()`` still answer. What starts CUDA calls
``torch.cuda._lazy_init()`` first, which raises real torch's own ``FORK_ERROR`` there,
and which poisons later forks everywhere else (real torch's ``_cuda_init`` does). Those
entry points:

* ``torch.cuda``: ``init``, ``get_device_properties``, ``get_device_capability``,
  ``get_device_name``, ``set_device``, ``current_device``, ``synchronize``,
  ``is_bf16_supported``, ``Event``;
* tensors: ``torch.zeros``/``ones``/``empty``/``randn`` with a CUDA device, a
  ``Generator`` on a CUDA device, a tensor's ``.to``/``.cuda()`` onto a CUDA device.

So a correctly forked kernel worker gets through the kernel suite's device step
(``kernel_suite.device_info``: properties, ``set_device``, ``torch.zeros(1, device=...)``,
``synchronize``, ``is_bf16_supported``), and then its first real kernel fails honestly
with ``NO_KERNELS`` (``torch.randn`` and any tensor arithmetic raise it; anything else
this module lacks is an AttributeError naming the stand-in). The CPU is the same:
its device step works (``get_num_threads``), its kernels raise ``NO_KERNELS``.

It reads ``CUDA_VISIBLE_DEVICES`` as CUDA does (ordinals or ``GPU-<uuid>``, in the order given).
Test hooks, by environment variable: ``FAKE_TORCH_CUDA_INIT=abort|hang`` makes
``is_available()`` (the counting child's first CUDA call) kill or hang the process;
``FAKE_TORCH_BROKEN_DEVICE`` adds a third device whose properties raise;
``STANDIN_TORCH_LOG=path`` appends "pid event" lines: ``import``, ``fork`` (before each
fork of a process that imported torch) and ``poison <call>`` for each poisoning call.
"""

from __future__ import annotations

from conftest import dist_info

VERSION = "2.13.0+cu126"
# Real torch 2.11's text, copied from the H200 capture (torch.fact_errors["device 0"] of
# shared/captures/h200-torch2.11-cu130-snapshot.json, less its "RuntimeError: " prefix).
FORK_ERROR = (
    "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
    "you must use the 'spawn' start method"
)
NO_KERNELS = "stand-in torch: no kernels (a stand-in for CUDA hardware this machine lacks; see tests/cuda_standin.py)"

_SOURCE = r'''
"""A stand-in CUDA torch from mpdoctor's tests (tests/cuda_standin.py): not torch, it runs no kernels."""
import os
import sys
import types

__version__ = "2.13.0+cu126"
_FORK_ERROR = @FORK_ERROR@
_NO_KERNELS = @NO_KERNELS@


class version:
    cuda = "12.6"
    hip = None
    git_version = "fake"


class _Uuid:  # torch._C._CUuuid: str() is the hex without NVML's GPU- prefix
    def __init__(self, text):
        self.text = text
    def __str__(self):
        return self.text


class _Props:
    def __init__(self, name, major, minor, memory, sms, uuid, bus):
        self.name, self.major, self.minor = name, major, minor
        self.total_memory, self.multi_processor_count, self.is_integrated = memory, sms, False
        self.uuid = _Uuid(uuid)
        self.pci_domain_id, self.pci_bus_id, self.pci_device_id = 0, bus, 0


# CUDA's FASTEST_FIRST order on the TITAN RTX + GTX 1080 Ti box.
_DEVICES = [
    _Props("NVIDIA TITAN RTX", 7, 5, 24 * 2**30, 72, "b8c41e02-7d6a-4f3b-a9e5-2c0d8f1b7a64", 0x81),
    _Props("NVIDIA GeForce GTX 1080 Ti", 6, 1, 11 * 2**30, 28, "5d2e7a3c-1f0b-9c4e-8a21-6b3f0d9e4c17", 0x02),
]
if os.environ.get("FAKE_TORCH_BROKEN_DEVICE"):
    _DEVICES.append(None)
# CUDA_VISIBLE_DEVICES as CUDA reads it: ordinals or GPU-<uuid> (a unique prefix will do), in the order given, up
# to the first entry that names no device (or one named already); set but empty: no device.
_visible = os.environ.get("CUDA_VISIBLE_DEVICES")
if _visible is not None:
    _all, _DEVICES = _DEVICES, []
    for _entry in _visible.split(","):
        _entry = _entry.strip()
        _found = [p for i, p in enumerate(_all) if _entry == str(i) or (
            p is not None and _entry.startswith("GPU-") and len(_entry) > 4 and str(p.uuid).startswith(_entry[4:]))]
        if len(_found) != 1 or any(_found[0] is p for p in _DEVICES):
            break
        _DEVICES.append(_found[0])


# ---------------------------------------------------------------- the fork rule

_state = {"poisoned": False, "bad_fork": False, "initialized": False, "device": 0}
_LOG = os.environ.get("STANDIN_TORCH_LOG")


def _log(event):
    if _LOG:
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, ("%d %s\n" % (os.getpid(), event)).encode())
        finally:
            os.close(fd)


if _LOG:
    _log("import")
    os.register_at_fork(before=lambda: _log("fork"))


def _in_bad_fork():  # real torch: the pthread_atfork child handler poison_fork() registered
    _state["bad_fork"] = True
    _state["initialized"] = False


def _poison_fork(call):
    _log("poison " + call)
    if not _state["poisoned"]:
        _state["poisoned"] = True
        os.register_at_fork(after_in_child=_in_bad_fork)


def _nvml_based_check():
    return os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"


def _module(name, **attrs):
    module = types.ModuleType(__name__ + "." + name)
    module.__dict__.update(attrs)
    sys.modules[module.__name__] = module
    return module


def _cuda_getDeviceCount():
    _poison_fork("torch._C._cuda_getDeviceCount()")
    return len(_DEVICES)


def _cuda_getArchFlags():
    _poison_fork("torch._C._cuda_getArchFlags()")
    return "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"


_C = _module("_C", _cuda_getDeviceCount=_cuda_getDeviceCount, _cuda_getArchFlags=_cuda_getArchFlags,
             _cuda_isInBadFork=lambda: _state["bad_fork"])


def _lazy_init():
    if _state["initialized"]:
        return
    if _state["bad_fork"]:
        raise RuntimeError(_FORK_ERROR)
    _poison_fork("torch.cuda._lazy_init()")
    _state["initialized"] = True


def _is_cuda(device):
    return device is not None and str(getattr(device, "type", device)).startswith("cuda")


def _index(device=None):
    """A CUDA device's ordinal from None, an int, "cuda", "cuda:N" or a device object; checked."""
    if device is None or str(device) == "cuda":
        index = _state["device"]
    elif isinstance(device, int):
        index = device
    elif isinstance(device, str) and device.startswith("cuda:"):
        index = int(device[5:])
    elif not isinstance(device, str) and getattr(device, "index", None) is not None:  # a torch.device
        index = device.index
    else:
        raise ValueError("Expected a cuda device, but got: %s" % (device,))
    if not 0 <= index < len(_DEVICES):
        raise AssertionError("Invalid device id")
    return index


def _properties(device=None):
    _lazy_init()
    props = _DEVICES[_index(device)]
    if props is None:
        raise RuntimeError("CUDA error: unspecified launch failure")
    return props


def _is_available():
    if os.environ.get("FAKE_TORCH_CUDA_INIT") == "abort":  # a driver that kills CUDA initialisation
        os.abort()
    if os.environ.get("FAKE_TORCH_CUDA_INIT") == "hang":
        import time
        time.sleep(600)
    if _nvml_based_check():
        return _device_count() > 0
    return _C._cuda_getDeviceCount() > 0


def _device_count():  # real torch counts through NVML here, and poisons nothing
    return len(_DEVICES)


def _get_arch_list():
    if not _is_available():
        return []
    flags = _C._cuda_getArchFlags()
    return flags.split() if flags else []


def _set_device(device):
    _lazy_init()
    _state["device"] = _index(device)


def _current_device():
    _lazy_init()
    return _state["device"]


def _synchronize(device=None):
    _lazy_init()
    _index(device)


def _is_bf16_supported(including_emulation=True):
    _lazy_init()
    return _properties(_current_device()).major >= 8 or bool(including_emulation)


def _get_device_capability(device=None):
    props = _properties(device)
    return props.major, props.minor


class _Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _lazy_init()
    def record(self, stream=None):
        pass
    def synchronize(self):
        pass
    def elapsed_time(self, end):
        raise RuntimeError(_NO_KERNELS)


def _nccl_version():  # NCCL_VERSION_CODE as torch was built: reading it starts nothing
    return (2, 21, 5)


cuda = _module(
    "cuda", _lazy_init=_lazy_init, init=_lazy_init,
    is_initialized=lambda: _state["initialized"] and not _state["bad_fork"],
    is_available=_is_available, device_count=_device_count, get_arch_list=_get_arch_list,
    get_device_properties=_properties, get_device_capability=_get_device_capability,
    get_device_name=lambda device=None: _properties(device).name, set_device=_set_device,
    current_device=_current_device, synchronize=_synchronize, is_bf16_supported=_is_bf16_supported, Event=_Event,
)
cuda.nccl = _module("cuda.nccl", version=_nccl_version)


def _cudnn_version():
    _poison_fork("torch.backends.cudnn.version()")
    return 90100


backends = _module("backends")
backends.cudnn = _module("backends.cudnn", version=_cudnn_version)


# ---------------------------------------------------------------- tensors: placed, never computed


def _place(device):
    if _is_cuda(device):
        _lazy_init()
        return "cuda:%d" % _index(device)
    return "cpu"


class Tensor:
    def __init__(self, device="cpu"):
        self.device = device
    def to(self, *args, **kwargs):
        target = kwargs.get("device", args[0] if args else None)
        return Tensor(_place(target)) if _is_cuda(target) else self
    def cuda(self, device=None):
        return Tensor(_place(device if device is not None else "cuda"))
    def __getattr__(self, name):  # any other tensor method would run a kernel
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(_NO_KERNELS)
    def _no_kernels(self, *args, **kwargs):
        raise RuntimeError(_NO_KERNELS)
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __matmul__ = _no_kernels
    __getitem__ = __neg__ = __float__ = __bool__ = _no_kernels


def zeros(*size, device=None, **kwargs):
    return Tensor(_place(device))


ones = empty = zeros


def randn(*size, device=None, **kwargs):
    _place(device)
    raise RuntimeError(_NO_KERNELS)


class Generator:
    def __init__(self, device="cpu"):
        self.device = _place(device)
    def manual_seed(self, seed):
        return self


def get_num_threads():
    return 1


def __getattr__(name):
    raise AttributeError("the stand-in torch (tests/cuda_standin.py) has no %r: it runs no kernels" % name)
'''
SOURCE = _SOURCE.replace("@FORK_ERROR@", repr(FORK_ERROR)).replace("@NO_KERNELS@", repr(NO_KERNELS))


def files(with_dist_info: bool = True) -> dict:
    """The stand-in's files for ``fake_venv``: torch/__init__.py, and torch's dist-info unless told not to."""
    return {"torch/__init__.py": SOURCE, **(dist_info("torch", VERSION) if with_dist_info else {})}


def python(fake_venv) -> str:
    """The interpreter of the session's one stand-in venv (``fake_venv`` is conftest's fixture)."""
    return str(fake_venv.python(fake_venv("cuda-standin", files())))
