#!/usr/bin/env python3
"""Mine the precision messages of the libraries users run beside torch, and say which explain signature covers each.

    python tests/explain_ecosystem/mine.py              # every library: download (cached), mine, judge, write
    python tests/explain_ecosystem/mine.py onnx peft    # only these
    python tests/explain_ecosystem/mine.py --judge      # judge the committed tables again, no download

Issue 38, as tests/explain_torch/mine.py does for torch. Each library is taken from PyPI at the version pinned in
LIBRARIES (``pip download --no-deps``: a wheel where it carries the Python source, else the sdist), into a cache
under the temporary directory, never into the repository. Its Python files are read with ``ast``: the strings
given to a raised exception, ``warnings.warn``, a logger's warning/error call (``warn``, ``warning_once``,
``rank_zero_warn``...) and ``assert``'s message, f-string holes shown as ``{...}``, ``"...".format()`` and
``"..." % x`` as their template. For CTranslate2 the C++ messages are the printable strings of the wheel's
``libctranslate2.so`` that hold a precision word and a refusal, as torch's miner reads libtorch. A library's
C++/CUDA sources, where its archive carries them (flash-attn's csrc/), are read for the messages of
``TORCH_CHECK``, ``AT_ERROR``, ``TORCH_WARN`` and ``throw ...(...)``, joined as the macro joins them.

Libraries that are not on PyPI as Python source (NVIDIA apex, TGI's server, TensorRT's samples and tools) are read
from a git mirror at a pinned commit: the folder ``MPDOCTOR_CODE_MIRRORS`` names (default /work/.mirror) holds
``owner+name/repo`` git directories, as the `fetch` tool leaves them. Where the mirror is absent (CI has none) such
a library is skipped with the reason, and its committed table is judged again as it is (``--judge``).

A message is mined when it holds a precision word (a dtype, a low-precision name, precision, autocast, a loss
scale, a compute capability). Each is tried as one line, as a failing run prints it (``ValueError: <message>``,
``UserWarning: <message>``, holes filled with a dtype pair, a device, a name), and gets a verdict:

* ``covered``: the signature explain answers with;
* ``not-precision``: why it is not a precision failure (a precision word in passing, an argument check, an
  internal assertion...): explain must stay silent on it; one explain claims is a ``false-positive``;
* ``gap``: about precision, and no signature has its wording yet.

What is kept in the repository is each message's text, where it is in the package (file:line), the version and
the verdict: short error strings, as torch's table keeps torch's, and no code. Each table names the licence the
package declares.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from mpdoctor.explain.explainer import explain  # noqa: E402
from mpdoctor.explain.shapes import UNNAMED_NON_FINITE  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "mpdoctor-mine-ecosystem"
MIRRORS = Path(os.environ.get("MPDOCTOR_CODE_MIRRORS") or "/work/.mirror")
CXX_SUFFIXES = (".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp")


@dataclass(frozen=True)
class Library:
    name: str  # the table's name (tests/explain_ecosystem/<name>.json)
    pypi: str  # the distribution on PyPI
    version: str  # pinned: the table says what this version raises
    sdist: bool = False  # the wheel is not pure Python or not on PyPI for this platform: read the sdist
    roots: tuple[str, ...] = ()  # folders of the archive to read (its package); empty: every Python file
    binary: str = ""  # a shared library of the wheel whose strings are mined too (CTranslate2's C++ messages)
    note: str = ""  # anything the report should say about what was read
    skipped: str = ""  # why this library is not mined (the summary says so)
    repository: str = ""  # owner/name on GitHub: read from its git mirror at `commit`, not from PyPI
    commit: str = ""  # the pinned commit of `repository` (the table's version is its first 12 digits)
    cxx: tuple[str, ...] = ()  # folders whose C++/CUDA sources' TORCH_CHECK/AT_ERROR/throw messages are read too
    calls: tuple[str, ...] = ()  # the library's own message functions (log_single_rank, maybe_print, log_master)
    installed: str = ""  # an import name: read from that installed distribution (torch's own paths), not PyPI
    about: str = ""  # a regex: only the messages that match it are kept (torch's MPS and ROCm ones among all torch's)


class Unavailable(Exception):
    """The library's source cannot be read here (no git mirror of it, the pinned commit not in it, or the pinned
    version not installed): it is skipped with this reason and its committed table is judged as it is."""


LIBRARIES = (
    Library("onnx", "onnx", "1.23.2", roots=("onnx/",)),
    Library("onnxconverter-common", "onnxconverter-common", "1.16.0", roots=("onnxconverter_common/",)),
    Library(
        "onnxruntime",
        "onnxruntime",
        "1.32.0",
        roots=("onnxruntime/",),
        note="The Python side only (its C++ messages reach Python as `[ONNXRuntimeError]` texts).",
    ),
    Library(
        "ctranslate2",
        "ctranslate2",
        "4.8.5",
        roots=("ctranslate2/",),
        binary="libctranslate2.so",
        note="Its Python side, and the printable strings of the wheel's libctranslate2.so that hold a precision "
        "word and a refusal (its C++ messages).",
    ),
    Library("faster-whisper", "faster-whisper", "1.2.1", roots=("faster_whisper/",)),
    Library("openai-whisper", "openai-whisper", "20250625", sdist=True, roots=("whisper/",)),
    Library("accelerate", "accelerate", "1.15.0", roots=("accelerate/",)),
    Library("transformers", "transformers", "5.24.0", roots=("transformers/",)),
    Library("diffusers", "diffusers", "0.42.1", roots=("diffusers/",)),
    Library("peft", "peft", "0.21.2", roots=("peft/",)),
    Library("bitsandbytes", "bitsandbytes", "0.50.2", roots=("bitsandbytes/",)),
    Library("lightning", "lightning", "2.6.6", roots=("lightning/",)),
    Library("deepspeed", "deepspeed", "0.19.8", sdist=True, roots=("deepspeed/",)),
    Library("timm", "timm", "1.0.31", roots=("timm/",)),
    Library("ultralytics", "ultralytics", "8.4.190", roots=("ultralytics/",)),
    Library("xformers", "xformers", "0.0.35", sdist=True, roots=("xformers/",)),
    Library("triton", "triton", "3.9.0", roots=("triton/",)),
    Library("torchao", "torchao", "0.18.0", roots=("torchao/",)),
    Library("transformer-engine", "transformer-engine", "2.20.2", roots=("transformer_engine/",)),
    Library(
        "vllm",
        "vllm",
        "0.33.0",
        roots=("vllm/",),
        binary="_C_stable_libtorch.abi3.so",
        note="Its wheel's Python source (vendored third_party/ left out), and the printable strings of its "
        "_C_stable_libtorch.abi3.so that hold a precision word and a refusal (its C++/CUDA kernels' checks). Its "
        "vllm_flash_attn libraries are flash-attn's, mined from flash-attn's own sources.",
    ),
    Library(
        "nemo",
        "nemo-toolkit",
        "3.0.0",
        roots=("nemo/",),
    ),
    Library(
        "megatron-core",
        "megatron-core",
        "0.16.1",
        roots=("megatron/core/",),
        calls=("log_single_rank", "log_on_each_pipeline_stage", "print_rank_0", "warning_rank_0"),
        note="Also the messages it logs through log_single_rank(logger, logging.WARNING, ...) and its rank-0 "
        "printers (its INFO/DEBUG ones are no failure and are left out).",
    ),
    Library(
        "flash-attn",
        "flash-attn",
        "2.8.3.post2",
        sdist=True,
        roots=("flash_attn/",),
        cxx=("csrc/flash_attn/", "csrc/flash_attn_ck/", "csrc/layer_norm/", "csrc/fused_dense_lib/"),
        note="Its Python side (with the CuTe and Triton-AMD back ends) and the TORCH_CHECK messages of its own "
        "C++/CUDA sources (csrc/; the vendored cutlass and composable_kernel left out), from the sdist.",
    ),
    Library(
        "torch-tensorrt",
        "torch-tensorrt",
        "2.13.0",
        roots=("torch_tensorrt/",),
        binary="libtorchtrt.so",
        note="The release for torch 2.13 (the torch this project is built with): its Python side and the printable "
        "strings of its libtorchtrt.so that hold a precision word and a refusal (its C++ compiler's checks).",
    ),
    Library(
        "apex",
        "",
        "6424da3b4faa",
        repository="NVIDIA/apex",
        commit="6424da3b4faa6c8f062da4a48c424fff3f02d42d",
        roots=("apex/",),
        cxx=("csrc/", "apex/contrib/csrc/"),
        calls=("maybe_print", "warn_or_err"),
        note="Not on PyPI as source: read from its git repository at 25.09-52-g6424da3b (Python, and the TORCH_CHECK "
        "/ AT_ERROR messages of csrc/ and apex/contrib/csrc/). apex.amp, apex.parallel and apex.fp16_utils are "
        "gone from it: see apex-amp.",
    ),
    Library(
        "apex-amp",
        "",
        "e13873debc46",
        repository="NVIDIA/apex",
        commit="e13873debc4699d39c6861074b9a3b2a02327f92",
        roots=("apex/amp/", "apex/fp16_utils/", "apex/parallel/"),
        calls=("maybe_print", "warn_or_err"),
        note="apex's legacy mixed precision (apex.amp, apex.fp16_utils, apex.parallel), removed after tag 25.04: read "
        "at 25.04 itself, the last commit that has it, since older installs still print its messages (the loss "
        "scaler's overflow lines among them).",
    ),
    Library(
        "tgi",
        "",
        "db931fcf42da",
        repository="huggingface/text-generation-inference",
        commit="db931fcf42da018a3657580c64bf2720f167f9ab",
        roots=("server/text_generation_server/",),
        calls=("log_master", "log_once"),
        note="text-generation-inference's Python server (server/text_generation_server), from its git repository: "
        "it is not on PyPI. Also its log_master/log_once(logger.warning, ...) messages. Its Rust launcher and "
        "router name dtypes only as settings (no refusal).",
    ),
    Library(
        "tensorrt",
        "",
        "a892d22267d9",
        repository="NVIDIA/TensorRT",
        commit="a892d22267d9cd2dedc1a0893e6892ac901f6d3d",
        roots=(
            "samples/python/",
            "tools/Polygraphy/polygraphy/",
            "tools/onnx-graphsurgeon/onnx_graphsurgeon/",
            "tools/pytorch-quantization/pytorch_quantization/",
            "demo/",
        ),
        note="TensorRT OSS 11.1.0.106 from its git repository: its Python samples, demos and tools (Polygraphy, "
        "ONNX GraphSurgeon, pytorch-quantization). The builder's and runtime's own messages (fp16 flags, half2) are "
        "in the closed libnvinfer, which neither the repository nor a small wheel carries.",
    ),
    Library(
        "torch-fsdp",
        "torch",
        "2.13.0",
        installed="torch",
        roots=("torch/distributed/fsdp/",),
        note="torch's FSDP and FSDP2 (torch/distributed/fsdp, fully_shard in its _fully_shard/), read from the "
        "installed torch (never downloaded: a torch wheel from PyPI is gigabytes of CUDA). torch's own table "
        "(tests/explain_torch) reads none of these files.",
    ),
    Library(
        "torch-mps-rocm",
        "torch",
        "2.13.0",
        installed="torch",
        roots=("torch/",),
        about=r"\bmps\b|metal|rocm|\bhip\b|gfx\d|hipblas",
        note="The messages of the installed torch's Python side that name MPS (Metal) or ROCm (HIP). Their C++ "
        "checks are compiled only into the macOS and ROCm builds: not in this table (see the summary).",
    ),
    # Stop 35: the libraries beside torch that fresh rounds kept meeting (quantization toolkits, attention and
    # kernel libraries, serving stacks, fine-tuning wrappers, other frameworks' precision policies, exporters).
    Library("optimum-quanto", "optimum-quanto", "0.2.7", roots=("optimum/quanto/",)),
    Library("hqq", "hqq", "0.2.8.post1", sdist=True, roots=("hqq/",)),
    Library("gptqmodel", "gptqmodel", "7.7.0", sdist=True, roots=("gptqmodel/",)),
    Library("compressed-tensors", "compressed-tensors", "0.20.1", roots=("compressed_tensors/",)),
    Library("llmcompressor", "llmcompressor", "0.14.0.1", roots=("llmcompressor/",)),
    Library("nvidia-modelopt", "nvidia-modelopt", "0.47.0", roots=("modelopt/",)),
    Library("liger-kernel", "liger-kernel", "0.8.5", roots=("liger_kernel/",)),
    Library("sageattention", "sageattention", "1.0.6", roots=("sageattention/",)),
    Library("sglang", "sglang", "0.5.23", roots=("sglang/",)),
    Library("lmdeploy", "lmdeploy", "0.18.0", roots=("lmdeploy/",)),
    Library("trl", "trl", "1.16.0", roots=("trl/",)),
    Library("unsloth", "unsloth", "2026.10.9", roots=("unsloth/",)),
    Library("unsloth-zoo", "unsloth-zoo", "2026.10.9", roots=("unsloth_zoo/",)),
    Library("colossalai", "colossalai", "0.5.0", sdist=True, roots=("colossalai/",)),
    Library("mmengine", "mmengine", "0.10.7", roots=("mmengine/",)),
    Library("kornia", "kornia", "0.9.0", roots=("kornia/",)),
    Library("keras", "keras", "3.15.1", roots=("keras/",)),
    Library("jax", "jax", "0.10.2", roots=("jax/",)),
    Library("coremltools", "coremltools", "9.0", roots=("coremltools/",)),
    Library("openvino", "openvino", "2026.4.1", roots=("openvino/",)),
    # Stop 36: speech, vision-language and compression toolkits research code runs on, and Intel's stack.
    Library("open-clip-torch", "open-clip-torch", "3.3.0", roots=("open_clip/", "open_clip_train/")),
    Library("speechbrain", "speechbrain", "1.1.2", roots=("speechbrain/",)),
    Library("espnet", "espnet", "202511", roots=("espnet/", "espnet2/")),
    Library("nncf", "nncf", "3.4.0", roots=("nncf/",)),
    Library("neural-compressor", "neural-compressor", "3.10", roots=("neural_compressor/",)),
    Library(
        "intel-extension-for-pytorch", "intel-extension-for-pytorch", "2.8.0", roots=("intel_extension_for_pytorch/",)
    ),
)

# A message is about precision when it holds one of these (lower-cased).
PRECISION = re.compile(
    r"dtype|precision|autocast|grad.?scaler|loss.?scal|\bhalf\b|half2|bfloat16|float16|\bfp16|\bbf16|float8|\bfp8|"
    r"e4m3|e5m2|\btf32|tensorfloat|compute.?capabilit|mixed.?precision|\bamp\b|compute.?type|16-mixed|\bfp4|nvfp4",
    re.IGNORECASE,
)
# The same for a low precision proper: a message without one names a dtype only as a type or argument check.
LOW = re.compile(
    r"\bhalf\b|half2|bfloat16|float16|fp16|bf16|float8|fp8|e4m3|e5m2|tf32|tensorfloat|mixed.?precision|autocast|"
    r"grad.?scaler|loss.?scal|\bamp\b|16-?bit|16-mixed|capabilit|\bfp4|nvfp4|mxfp\d|\bsm_?\d|overflow|\bnan\b",
    re.IGNORECASE,
)
# Calls whose first argument is a message: raised exceptions and warnings by class, warnings.warn and the loggers'
# warning/error calls under their many names.
WARN_CALL = re.compile(r"(?:^|\.)(?:\w*warn\w*|error|critical|fatal|exception|warning_once|warning_advice)$")
EXCEPTION = re.compile(r"(?:^|\.)[A-Z]\w*(?:Error|Exception|Warning|Exit)$")
# Folders of a package that are its tests and examples, not what a user's run prints.
SKIP_PARTS = {"test", "tests", "testing", "examples", "benchmarks", "benchmark", "_vendor", "third_party"}
TEST_FILES = {"test.py", "tests.py", "conftest.py"}
# CTranslate2's C++ messages: a precision word and a refusal in one printable run.
BINARY_STEMS = re.compile(
    r"(?:float16|bfloat16|int8|float8|fp16|bf16|compute type|compute_type).{0,200}"
    r"(?:not support|unsupported|requires|cannot|invalid|expected|only)|"
    r"(?:not support|unsupported|requires|cannot|invalid|expected|only).{0,200}"
    r"(?:float16|bfloat16|int8|float8|fp16|bf16|compute type|compute_type)",
    re.IGNORECASE,
)
BINARY_NOISE = re.compile(r"^[\s#%$_(`'\"{]|::\w+\(|->|\bvoid\b|\btemplate\b|std::")


# ---------------------------------------------------------------------------------------------------- reading


def fetch(lib: Library) -> Path:
    """The library's archive, unpacked under CACHE (downloaded once): its metadata, licence files, and what is
    read of it (the Python and C++ files under its folders, the shared library whose strings are mined)."""
    target = CACHE / f"{lib.name}-{lib.version}"
    done = target / ".unpacked"
    if done.exists():
        return target
    download = CACHE / "downloads" / f"{lib.name}-{lib.version}"
    download.mkdir(parents=True, exist_ok=True)
    if not any(download.iterdir()):
        how = ["--no-binary", ":all:"] if lib.sdist else ["--only-binary", ":all:", *_platform()]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation", "-q", *how,
             f"{lib.pypi}=={lib.version}", "-d", str(download)],
            check=True,
            # the metadata is all pip needs to download an sdist: vLLM's setup.py builds nothing for an "empty"
            # target, flash-attn's nothing when told to skip its CUDA build
            env={**os.environ, "VLLM_TARGET_DEVICE": "empty", "FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"},
        )  # fmt: skip
    (archive,) = list(download.iterdir())
    target.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(target, [name for name in zipped.namelist() if _wanted(lib, name)])
    else:
        with tarfile.open(archive) as tarred:
            # an sdist holds one folder, name-version/: what is wanted is judged below it
            members = [m for m in tarred.getmembers() if _wanted(lib, m.name.partition("/")[2], sdist=True)]
            tarred.extractall(target, members, filter="data")
        (inner,) = [p for p in target.iterdir() if p.is_dir()]
        for child in inner.iterdir():
            child.rename(target / child.name)
        inner.rmdir()
        _flatten_src(target)
    done.write_text(archive.name, encoding="utf-8")
    return target


def _wanted(lib: Library, name: str, sdist: bool = False) -> bool:
    """Whether an archive member is unpacked: vLLM's wheel is 336 MB, mostly CUDA libraries nobody reads."""
    top = name.split("/", 1)[0]
    if not lib.roots or top.endswith((".dist-info", ".libs")) or top.upper().startswith(("LICENSE", "COPYING")):
        return True
    if sdist and ("/" not in name or top == "src"):  # PKG-INFO, LICENSE; a src/ layout is flattened later
        return True
    if lib.binary and Path(name).name.startswith(lib.binary.partition(".")[0]):
        return True
    if name.startswith(lib.cxx) and name.endswith(CXX_SUFFIXES):
        return True
    return name.startswith(lib.roots) and name.endswith(".py")


def _platform() -> list[str]:
    tags = (
        "manylinux_2_34_x86_64",
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_24_x86_64",
        "manylinux2014_x86_64",
        "manylinux1_x86_64",
    )
    return ["--python-version", "3.11", *[arg for tag in tags for arg in ("--platform", tag)]]


def _flatten_src(target: Path) -> None:
    """An sdist with a src/ layout: its packages sit at the top, as a wheel's do."""
    src = target / "src"
    if src.is_dir() and not (target / "src" / "__init__.py").exists():
        for child in src.iterdir():
            if not (target / child.name).exists():
                child.rename(target / child.name)


def archive_name(lib: Library) -> str:
    return (CACHE / f"{lib.name}-{lib.version}" / ".unpacked").read_text(encoding="utf-8")


def licence(root: Path) -> str:
    """What the package declares: License-Expression, else License, else its licence classifiers."""
    for meta in list(root.glob("*.dist-info/METADATA")) + [root / "PKG-INFO"]:
        if not meta.exists():
            continue
        text = meta.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0]
        fields = dict(re.findall(r"^(License-Expression|License): ?(.+)$", text, re.MULTILINE))
        if fields.get("License-Expression"):
            return fields["License-Expression"].strip()
        classifiers = re.findall(r"^Classifier: License :: (?:OSI Approved :: )?(.+)$", text, re.MULTILINE)
        if classifiers:
            return "; ".join(classifiers)
        if fields.get("License") and len(fields["License"]) < 60:
            return fields["License"].strip()
    # no declaration in the metadata: the licence file the archive carries, recognised by its standard wording
    for path in list(root.glob("*.dist-info/licenses/LICENSE*")) + list(root.glob("LICENSE*")):
        named = licence_of_text(path.read_text(encoding="utf-8", errors="replace"))
        if named:
            return f"{named} (its {path.name} file)"
    return "unknown"


def licence_of_text(text: str) -> str:
    for words, name in LICENCE_WORDS:
        if words in text:
            return name
    return ""


LICENCE_WORDS = (
    ("GNU AFFERO GENERAL PUBLIC LICENSE", "AGPL-3.0"),
    ("Apache License", "Apache-2.0"),
    ("Neither the name", "BSD-3-Clause"),
    ("Redistribution and use in source and binary forms", "BSD"),
    ("Permission is hereby granted, free of charge", "MIT"),
)


def _skipped(relative: str) -> bool:
    """A package's tests, examples and vendored code: not what a user's run prints."""
    name = relative.rsplit("/", 1)[-1]
    return bool(SKIP_PARTS & set(relative.split("/")[:-1])) or name.startswith("test_") or name in TEST_FILES


def python_files(root: Path, lib: Library):
    tops = [root / folder for folder in lib.roots] or [root]
    for path in sorted(p for top in tops if top.is_dir() for p in top.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if not _skipped(relative):
            yield relative, path


def python_messages(root: Path, lib: Library):
    """(message, where, kind) for each message-bearing call or assert that holds a precision word."""
    for relative, path in python_files(root, lib):
        yield from python_source_messages(relative, path.read_bytes(), lib)


def python_source_messages(relative: str, source: bytes, lib: Library):
    if lib.about and not re.search(lib.about.encode(), source, re.IGNORECASE):
        return  # no message of this file can be kept: not parsed (torch-mps-rocm reads only a few of torch's)
    try:
        with warnings.catch_warnings():  # a library's invalid escape sequences are its own business
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    own = re.compile(r"(?:^|\.)(?:%s)$" % "|".join(map(re.escape, lib.calls))) if lib.calls else None
    for node in ast.walk(tree):
        for text, kind in _messages_of(node, own):
            text = " ".join(text.split())
            if len(text) > 15 and PRECISION.search(text) and _has_words(text):
                yield text, f"{relative}:{node.lineno}", kind


def _messages_of(node, own=None):
    if isinstance(node, ast.Assert) and node.msg is not None:
        yield _literal(node.msg), "AssertionError"
    if not isinstance(node, ast.Call):
        return
    name = ast.unparse(node.func)
    if own is not None and own.search(name):
        yield from _own_call(node)
        return
    if EXCEPTION.search(name):
        kind = name.rsplit(".", 1)[-1]
    elif WARN_CALL.search(name):
        kind = "UserWarning" if "warn" in name.lower() else "ERROR"
        for keyword in node.keywords:  # warnings.warn(msg, category=FutureWarning)
            if keyword.arg == "category":
                kind = ast.unparse(keyword.value).rsplit(".", 1)[-1]
        if len(node.args) > 1 and EXCEPTION.search(ast.unparse(node.args[1])):
            kind = ast.unparse(node.args[1]).rsplit(".", 1)[-1]
    else:
        return
    args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg in ("msg", "message")]
    for arg in args[:1]:
        yield _literal(arg), kind


def _own_call(node):
    """A library's own message function: log_single_rank(logger, logging.WARNING, msg), log_master(logger.warning,
    msg), maybe_print(msg). The message is its first argument built from text; the others say the level, and an
    INFO or DEBUG one is no failure."""
    args = list(node.args) + [k.value for k in node.keywords if k.arg in ("msg", "message")]
    texts = [(arg, _literal(arg)) for arg in args]
    message = next((arg for arg, text in texts if _has_words(text)), None)
    if message is None:
        return
    level = " ".join(ast.unparse(arg) for arg in args if arg is not message).lower()
    if re.search(r"info|debug", level):
        return
    yield _literal(message), "UserWarning" if "warn" in level else "ERROR"


def _literal(node) -> str:
    """The message a node builds, its holes as ``{...}``; "" when it is not a string built from literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value)[:60] + "}" for v in node.values
        )
    if isinstance(node, ast.Name):  # a string built elsewhere and joined on: a hole
        return "{" + node.id + "}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return left + right if left and right else left or right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):  # "..." % x: the template, holes as {...}
        return re.sub(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifgx]", "{...}", _literal(node.left))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _literal(node.func.value)  # "...{}...".format(x): the template
    return ""


def _has_words(text: str) -> bool:
    """At least three words outside the holes: a bare ``{msg}`` or a name is no message."""
    return len(re.findall(r"[A-Za-z]{2,}", re.sub(r"\{[^{}]*\}", " ", text))) >= 3


# C++/CUDA: the checks whose arguments torch joins into the message (after the condition where there is one),
# and the exceptions thrown with one. TORCH_CHECK's failure reaches Python as a RuntimeError.
CXX_CALL = re.compile(
    r"\b(TORCH_CHECK(?:_VALUE|_TYPE|_NOT_IMPLEMENTED)?|STD_TORCH_CHECK|AT_ERROR|AT_ASSERTM|TORCH_INTERNAL_ASSERT|"
    r"TORCH_WARN(?:_ONCE)?|throw\s+(?:std::|c10::)?\w+)\s*\("
)
CXX_KINDS = {
    "TORCH_CHECK_VALUE": (1, "ValueError"),
    "TORCH_CHECK_TYPE": (1, "TypeError"),
    "TORCH_CHECK_NOT_IMPLEMENTED": (1, "NotImplementedError"),
    "AT_ERROR": (0, "RuntimeError"),
    "TORCH_WARN": (0, "UserWarning"),
    "TORCH_WARN_ONCE": (0, "UserWarning"),
}
CXX_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def cxx_messages(relative: str, source: str):
    """(message, where, kind) for each TORCH_CHECK/AT_ERROR/TORCH_WARN/throw in one C++ or CUDA file that holds a
    precision word: string literals joined, every other argument a ``{hole}``, as the macro joins them."""
    code = _without_comments(source)
    for found in CXX_CALL.finditer(code):
        macro = found.group(1)
        skip, kind = CXX_KINDS.get(macro, (0 if macro.startswith("throw") else 1, "RuntimeError"))
        args = _cxx_arguments(code, found.end())
        text = " ".join("".join(_cxx_piece(arg) for arg in args[skip:]).split())
        if len(text) > 15 and PRECISION.search(text) and _has_words(text):
            yield text, f"{relative}:{code.count(chr(10), 0, found.start()) + 1}", kind


def _without_comments(source: str) -> str:
    """The source with its comments blanked (newlines kept, so line numbers hold): an apostrophe in a comment
    inside a call would otherwise open a character literal."""
    return re.sub(
        r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'',
        lambda m: m.group(0) if m.group(0)[0] in "\"'" else re.sub(r"[^\n]", " ", m.group(0)),
        source,
        flags=re.DOTALL,
    )


def _cxx_arguments(code: str, start: int) -> list[str]:
    """The top-level arguments of the call whose "(" ends at start (the scan stops at its ")")."""
    args, depth, current, i = [], 0, [], start
    while i < len(code) and i < start + 4000:
        char = code[i]
        if char in "\"'":
            literal = re.compile(r'"(?:[^"\\\n]|\\.)*"' if char == '"' else r"'(?:[^'\\\n]|\\.)*'").match(code, i)
            end = literal.end() if literal else i + 1
            current.append(code[i:end])
            i = end
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            args.append("".join(current))
            current = []
            i += 1
            continue
        current.append(char)
        i += 1
    return args + ["".join(current)]


def _cxx_piece(arg: str) -> str:
    """One argument as the message shows it: its string literals' text, a macro's #name and anything else as
    a hole; `a + b` and `a << b` joined."""
    pieces = []
    for part in re.split(r"<<|\+(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", arg):
        part = part.strip()
        if not part:
            continue
        literals = CXX_STRING.findall(part)
        rest = CXX_STRING.sub(" ", part).strip()
        if literals and not re.sub(r"#\s*\w+", "", rest).strip():
            # "a" "b" and #x "b": adjacent literals join; a macro's #x is the argument's name
            stringified = re.findall(r"#\s*(\w+)", rest)
            pieces.append("".join("{" + s + "}" for s in stringified) + "".join(_cxx_unescape(lit) for lit in literals))
        else:
            pieces.append("{" + " ".join(part.split())[:60] + "}")
    return "".join(pieces)


def _cxx_unescape(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": " ", "t": " "}.get(m.group(1), m.group(1)), literal[1:-1])


def cxx_files(root: Path, lib: Library):
    for top in (root / folder for folder in lib.cxx):
        for path in sorted(p for p in top.rglob("*") if p.suffix in CXX_SUFFIXES and p.is_file()):
            relative = path.relative_to(root).as_posix()
            if not _skipped(relative):
                yield relative, path.read_bytes()


def binary_messages(root: Path, lib: Library):
    if not lib.binary:
        return
    # auditwheel names a bundled library with a hash: ctranslate2.libs/libctranslate2-a7a60d30.so.4.8.5
    stem, _, suffix = lib.binary.partition(".")
    found = sorted(p for p in root.rglob(f"{stem}*.{suffix}*") if p.is_file())
    seen = set()
    for path in found[:1]:
        for hit in re.finditer(rb"[\x20-\x7e]{16,300}", path.read_bytes()):
            text = hit.group(0).decode("ascii").strip()
            if text in seen or BINARY_NOISE.search(text) or not BINARY_STEMS.search(text) or not _has_words(text):
                continue
            seen.add(text)
            yield text, path.relative_to(root).as_posix(), "RuntimeError"


# ---------------------------------------------------------------------------------------------------- git mirrors


def mirror_of(lib: Library) -> Path:
    """The git directory of the library's repository under MIRRORS, holding its pinned commit."""
    folder = MIRRORS / lib.repository.replace("/", "+")
    for candidate in (folder / "repo", folder, MIRRORS / lib.repository):
        if (candidate / "HEAD").is_file():
            has = subprocess.run(
                ["git", "--git-dir", str(candidate), "cat-file", "-e", f"{lib.commit}^{{commit}}"], capture_output=True
            )
            if has.returncode != 0:
                raise Unavailable(f"the git mirror {candidate} has no commit {lib.commit}")
            return candidate
    raise Unavailable(f"no git mirror of {lib.repository} in {MIRRORS} (MPDOCTOR_CODE_MIRRORS)")


def mirror_files(lib: Library, folders: tuple[str, ...], suffixes: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """(path, content) of the files under folders at the pinned commit, read in one `git cat-file --batch`."""
    if not folders:
        return []
    git = ["git", "--git-dir", str(mirror_of(lib))]
    listed = subprocess.run(
        [*git, "ls-tree", "-r", "-z", "--full-tree", lib.commit, "--", *folders], capture_output=True, check=True
    ).stdout.decode()
    blobs = []  # (path, object id)
    for entry in filter(None, listed.split("\0")):
        info, path = entry.split("\t", 1)
        if info.split()[1] == "blob" and path.endswith(suffixes) and not _skipped(path):
            blobs.append((path, info.split()[2]))
    batch = subprocess.run(
        [*git, "cat-file", "--batch"], input="".join(f"{oid}\n" for _, oid in blobs).encode(), capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    files, at = [], 0
    for path, _ in sorted(blobs):
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        files.append((path, batch[header_end + 1 : header_end + 1 + size]))
        at = header_end + 1 + size + 1  # the content, then a newline
    return files


def mirror_licence(lib: Library) -> str:
    shown = subprocess.run(
        ["git", "--git-dir", str(mirror_of(lib)), "show", f"{lib.commit}:LICENSE"], capture_output=True
    )
    named = licence_of_text(shown.stdout.decode("utf-8", "replace")) if shown.returncode == 0 else ""
    return f"{named} (its LICENSE file)" if named else "unknown"


# ---------------------------------------------------------------------------------------------------- installed


def installed_root(lib: Library) -> Path:
    """The site-packages folder that holds the installed distribution, when it is the pinned version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        have = version(lib.pypi)
    except PackageNotFoundError:
        raise Unavailable(f"{lib.pypi} is not installed here") from None
    if have.split("+")[0] != lib.version:
        raise Unavailable(f"{lib.pypi} {have} is installed here, the table is of {lib.version}")
    spec = importlib.util.find_spec(lib.installed)
    return Path(spec.origin).parents[1]


def all_messages(lib: Library) -> tuple[list[tuple[str, str, str]], dict]:
    """Every mined (message, where, kind) of the library, and where it was read from (archive, licence)."""
    if lib.repository:
        python = mirror_files(lib, lib.roots, (".py",))
        cxx = mirror_files(lib, lib.cxx, CXX_SUFFIXES)
        found = [m for path, data in python for m in python_source_messages(path, data, lib)]
        source = {"archive": f"github.com/{lib.repository}@{lib.commit}", "licence": mirror_licence(lib)}
        root = None
    elif lib.installed:
        root = installed_root(lib)
        found = list(python_messages(root, lib))
        dist = f"{lib.pypi} {version_installed(lib.pypi)} installed"
        source = {"archive": dist, "licence": licence_installed(lib.pypi)}
        cxx = []
    else:
        root = fetch(lib)
        found = list(python_messages(root, lib))
        cxx = list(cxx_files(root, lib))
        source = {"archive": archive_name(lib), "licence": licence(root)}
    for path, data in cxx:
        found += cxx_messages(path, data.decode("utf-8", "replace"))
    if root is not None:
        found += binary_messages(root, lib)
    return found, source


def version_installed(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def licence_installed(name: str) -> str:
    from importlib.metadata import metadata

    meta = metadata(name)
    return (meta.get("License-Expression") or meta.get("License") or "unknown").strip()


# ---------------------------------------------------------------------------------------------------- judging


def sample(text: str, kind: str) -> str:
    """The message as a failing run prints it: holes filled (a dtype pair, a device, a name), under its kind."""
    dtypes = iter(["torch.float16", "torch.float32"] + ["torch.float32"] * 6)

    def hole(found: re.Match) -> str:
        inside = found.group(0).lower()
        if inside.startswith(("{type(", "{type (")) or "__class__" in inside or "__name__" in inside:
            return "OtherClass"  # a class's name (`{type(x).__name__}`), never a dtype
        if "device" in inside:
            return "cuda"
        if "dtype" in inside:
            return next(dtypes)
        if "type" in inside or "precision" in inside:
            return "float16"
        if inside == "{}" and "type" in text.lower():  # C++'s fmt holes have no names: a type there is a dtype
            return "float16"
        return "x"

    line = re.sub(r"\{[^{}]{0,120}\}", hole, text)
    line = line.replace("{{", "{").replace("}}", "}")
    if kind == "ERROR":
        return line
    return f"{kind}: {line}"


# Why a message that holds a precision word is still not a precision failure (regexes over the message, its holes
# blanked). HARD reasons say the message is no failure at all: explain must stay silent on it, and a table shows a
# message it claims as "claimed". SOFT reasons say the words come for any dtype: with its holes filled with an
# fp16/fp32 pair the message can still be a real mismatch, and explain may claim it.
DEPRECATION = "a deprecation or renaming notice: the run goes on, nothing failed"
HARD = (
    (
        r"deprecat|will be removed|no longer (?:supported|used|needed)|has been renamed|is renamed",
        DEPRECATION,
    ),
    (
        r"must be a torch\.dtype|is not a valid torch\.dtype|not a torch\.dtype|should be a torch\.dtype|"
        r"expected a torch\.dtype|dtype string|cannot convert .{0,40}to (?:a )?torch\.dtype|"
        r"dtype (?:must|should) be (?:a|an|of type) (?:torch\.dtype|str|string)",
        "an argument's type check (a dtype object expected): API misuse, not a precision failure",
    ),
    (
        r"not implemented|notimplemented|subclass(?:es)? (?:must|should)|\babstract\b|must override|should override",
        "an unimplemented API",
    ),
)
SOFT = (
    (
        r"\b(?:int|uint|bool|long|complex|string|str|object|categorical|category)\w* (?:dtype|type|tensor)|"
        r"\bint(?:4|8|16|32|64)\b|integer|complex|boolean|torch\.bool\b|torch\.long\b|np\.int|numpy",
        "about integer, boolean, complex or numpy dtypes, not a low floating precision",
    ),
    (
        r"shape|size mismatch|dimension|\bndim|number of (?:elements|dims)|contiguous|stride|layout|block dim",
        "a shape, size or layout check that also names the dtype",
    ),
    (
        r"compute capabilit|\bsm_?\d",
        "a compute-capability check that names no low precision: an op's or a build's GPU requirement",
    ),
)
HARD = tuple((re.compile(p, re.IGNORECASE), why) for p, why in HARD)
SOFT = tuple((re.compile(p, re.IGNORECASE), why) for p, why in SOFT)
# A low floating precision named outright: then an integer or shape word beside it does not make it "not precision".
LOW_FLOAT = re.compile(
    r"\bhalf\b|half2|bfloat16|float16|fp16|bf16|float8|fp8|e4m3|e5m2|\bfp4|nvfp4|mxfp\d|autocast|scal", re.I
)
# Tensors whose dtypes must agree, or must be one dtype, with the dtypes themselves only holes (FSDP2's `FSDP expects
# uniform original parameter dtype but got {orig_dtypes}`, flash-attn's `query and key must have the same dtype`): a
# mixed-precision failure whatever the holes print, so no low-precision word is needed to count it as precision.
DTYPE_AGREEMENT = re.compile(
    r"(?:same|uniform|matching|consistent|identical) (?:\w+ ){0,3}(?:d(?:ata ?)?types?|scalar types?|type as)\b|"
    r"\bd(?:ata ?)?types? (?:mismatch|must (?:match|agree|be the same)|should (?:match|be the same)|do(?:es)? not match)|"
    r"\bmismatch(?:ed|ing)? (?:\w+ ){0,2}d(?:ata ?)?types?\b",
    re.IGNORECASE,
)
# Only when no low precision is named: the words then come for any dtype.
NO_LOW_PRECISION = "names a dtype only in passing (a type, a config key, a tensor's metadata): no low precision"
# A library's own wordings that are no failure (hard): (regex over the lower-cased message, why).
LIBRARY_REASONS: dict[str, tuple[tuple[str, str], ...]] = {
    # every library's: judged on the message with its holes (a `{type(x)}` hole says what is checked)
    "*": (
        (
            r"\bhalf (?:of|the|a|an)\b|\b(?:first|second|one|other) half\b|\bhalf-head|split-half",
            "'half' as a fraction (half of the heads, the first half of a batch), not the dtype",
        ),
        (
            r"(?:got|found|but is|is):? \{type\(|found \{[a-z_.]{0,40}__class__",
            "a check of an object's class (a module, tensor subclass or quantizer of the wrong class): API misuse "
            "or an internal invariant, not a precision failure",
        ),
        (
            r"has no data|with no data|without any data|is missing (?:\{|row|column|per tensor)|copy_from_storage|"
            r"is required to generate|cannot generate fp|neither rowwise nor columnwise|to populate _data|"
            r"unexpected numel|invalid metadata for|unknown fsdp transport|already registered to|"
            r"in saved fp8 metadata|more modules than expected|as byte array|partitioned swap (?:buffers|pool)|"
            r"requires rowwise or columnwise data|original_shape has not been set|cannot be none because|"
            r"swap buffers|numel of fp16 buffers|mismatch in number of fp16 params",
            "an internal invariant of the library's own quantized-tensor or buffer bookkeeping, not the run's "
            "precision",
        ),
        (
            # (a package to install is no argument: "triton_kernels is required for native MXFP4 ... Install")
            r"\b(?:[a-z0-9]+_[a-z0-9_]+|offs|kwargs?|args) (?:is|are) required (?:for|with|to)\b(?!.*\binstall)|"
            r"(?:kwargs?|args) (?:must be|not) provided|must be provided in kwargs|requires module to have|"
            r"must be an instance of|is not a [a-z0-9]{2,12} dtype",
            "an argument the caller must pass (or its type): API misuse, not a precision failure",
        ),
    ),
    # the invariants of the fp8/fp4 tensor classes, as their op handlers, storage layouts and FSDP transport check them;
    # and TransformerEngine's precision debug features (nvdlfw_inspect): their own settings and skipped statistics
    "transformer-engine": (
        (
            r"columnwise-only|columnwise (?:transpose|fsdp)|column-wise data|rowwise data|rowwise_usage is|"
            r"fsdp gather|can only update float8|shape for transpose-only|invalid tensor for updating|metadata does not match|"
            r"data is not initialized|cannot (?:reset|recreate|store) |non-fp8 (?:blockwise )?quantizer|"
            r"non-none amax|global_amax_\w+ must be set|or nvfp4 groupedtensor",
            "an invariant of TransformerEngine's own fp8/fp4 tensor classes (their storage layouts, FSDP transport, "
            "op handlers), not the run's precision",
        ),
        (
            r"nvtorch inspect error|\[log(?:fp8|nvfp4)tensorstats\]",
            "a setting of TransformerEngine's debug statistics features (nvdlfw_inspect), or a statistic skipped: "
            "no failed run",
        ),
    ),
    "torchao": (
        (
            r"expecting (?:both|all) |should have same |to be a dtensor if|unsupported semantics for|for autocast w/|"
            r"dtype kwarg for autocast|must match elem_dtype|scale dim[12] should be|o_inv_scale node|_device is none|"
            r"weight must be nvfp4tensor",
            "an invariant of torchao's own float8/MX/NVFP4 tensor classes (their op handlers and layouts), not the "
            "run's precision",
        ),
    ),
    # apex's legacy FP16_Optimizer tells what it wraps, through the same printer as its overflow lines
    "apex-amp": (
        (
            r"processing param group|received torch\.cuda\.\w+tensor with",
            "an informational line apex's FP16_Optimizer prints while it wraps the optimizer's parameters",
        ),
    ),
}


def not_precision_reason(library: str, text: str) -> tuple[str, bool]:
    """Why the message is not a precision failure ("" when it may be one), and whether that is a hard reason."""
    lower = text.lower()
    for words, why in LIBRARY_REASONS.get(library, ()) + LIBRARY_REASONS["*"]:
        if re.search(words, lower):
            return why, True
    blanked = re.sub(r"\{[^{}]*\}", " ", text)  # the holes' names (torch_dtype=...) are not what the text says
    for pattern, why in HARD:
        if pattern.search(blanked):
            return why, True
    if not LOW.search(blanked) and not DTYPE_AGREEMENT.search(blanked):
        return NO_LOW_PRECISION, False
    if not LOW_FLOAT.search(blanked):
        for pattern, why in SOFT:
            if pattern.search(blanked):
                return why, False
    return "", False


def judge(library: str, text: str, kind: str) -> dict:
    """The verdict for one mined message, from its text alone (no download): what the test runs again."""
    report = explain(sample(text, kind), library)
    # a deprecation is answered as a notice; the hint for NaNs in a text that names no precision answers nothing
    found = report.recognised or [n for n in report.notices if n.id != UNNAMED_NON_FINITE.id]
    signature = found[0].id if found else None
    why, hard = not_precision_reason(library, text)
    if signature and hard and why == DEPRECATION and "deprecat" in signature:
        # a precision tool's deprecation (apex.amp, torch.cuda.amp) that explain answers on purpose, with the move
        # to make: no failure, yet an answer the user wants
        return {"verdict": "covered", "signature": signature, "why": ""}
    if signature and hard:
        # no failure at all, yet explain claims it: the table shows it until one side is fixed
        return {"verdict": "claimed", "signature": signature, "why": why}
    if signature:
        return {"verdict": "covered", "signature": signature, "why": ""}
    if why:
        return {"verdict": "not-precision", "signature": None, "why": why}
    return {"verdict": "gap", "signature": None, "why": gap_reason(text)}


def gap_reason(text: str) -> str:
    lower = text.lower()
    if re.search(r"capabilit|\bsm_?\d|ampere|hopper|blackwell|architecture|\bgpu\b.{0,30}support", lower):
        return "a hardware capability refusal in this library's own words: no signature has them yet"
    if re.search(r"only support|not support|unsupported|must be|should be|expected|requires?", lower):
        return "a dtype or precision refusal in this library's own words: no signature has them yet"
    return "about precision, in a wording no signature has yet"


# ---------------------------------------------------------------------------------------------------- tables


def mined_rows(lib: Library) -> tuple[list[tuple[str, str, str]], dict]:
    """The library's (message, where, kind), each once, and where they were read from."""
    found, source = all_messages(lib)
    about = re.compile(lib.about, re.IGNORECASE) if lib.about else None
    seen, rows = set(), []
    for text, where, kind in found:
        if (text, where) in seen or (about and not about.search(text)):
            continue
        seen.add((text, where))
        rows.append((text, where, kind))
    return rows, source


def mine(lib: Library) -> dict:
    found, source = mined_rows(lib)
    rows = [{"message": t, "where": w, "kind": k, **judge(lib.name, t, k)} for t, w, k in found]
    return {
        "library": lib.name,
        "pypi": lib.pypi,
        "version": lib.version,
        "archive": source["archive"],
        "licence": source["licence"],
        "note": lib.note,
        "mined_by": f"python tests/explain_ecosystem/mine.py {lib.name}",
        "messages": rows,
    }


def counts(table: dict) -> dict:
    verdicts = [row["verdict"] for row in table["messages"]]
    return {name: verdicts.count(name) for name in ("covered", "not-precision", "gap", "claimed")} | {
        "mined": len(verdicts)
    }


def report(table: dict) -> str:
    """The markdown coverage report of one library's table (what the test compares with the committed file)."""
    c = counts(table)
    lines = [
        f"# {table['library']} {table['version']}: precision messages, mined",
        "",
        f"Generated by `{table['mined_by']}` from `{table['archive']}` ({source_kind(table)}; licence: "
        f"{table['licence']}). Do not edit by hand.",
    ]
    if table["note"]:
        lines += ["", table["note"]]
    lines += [
        "",
        "Each message is tried as one line, as a failing run prints it (`<kind>: <message>`, holes filled with a "
        "dtype pair, a device, a name); only the message and where it is in the package are kept.",
        "",
        "| mined | covered | not precision | gaps | claimed but not precision |",
        "|---|---|---|---|---|",
        f"| {c['mined']} | {c['covered']} | {c['not-precision']} | {c['gap']} | {c['claimed']} |",
        "",
    ]
    for verdict, title, last in (
        ("gap", "Gaps: about precision, not covered", "why not covered"),
        ("claimed", "Claimed by explain, but not a precision failure", "why not precision"),
        ("covered", "Covered", "signature"),
        ("not-precision", "Not precision failures", "why not"),
    ):
        rows = [row for row in table["messages"] if row["verdict"] == verdict]
        if not rows:
            continue
        lines += [f"## {title} ({len(rows)})", "", f"| message | where | {last} |", "|---|---|---|"]
        for row in rows:
            cell = row["message"].replace("|", "\\|").replace("`", "'")[:200]
            lines.append(f"| `{cell}` | {row['where']} | {row['signature'] or row['why']} |")
        lines.append("")
    return "\n".join(lines)


def source_kind(table: dict) -> str:
    if table["archive"].startswith("github.com/"):
        return "its git repository, not on PyPI as source"
    if table["archive"].endswith(" installed"):
        return "the installed package"
    return "PyPI"


def summary(tables: list[dict]) -> str:
    lines = [
        "# The ecosystem's precision messages, mined: coverage by library",
        "",
        "Generated by `python tests/explain_ecosystem/mine.py` (do not edit by hand); one report per library beside "
        "this file.",
        "",
        "| library | version | licence | mined | covered | not precision | gaps | claimed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for table in tables:
        c = counts(table)
        lines.append(
            f"| [{table['library']}]({table['library']}.md) | {table['version']} | {table['licence']} | {c['mined']} "
            f"| {c['covered']} | {c['not-precision']} | {c['gap']} | {c['claimed']} |"
        )
    lines += ["", "torch's own paths, against torch's table (tests/explain_torch/torch_grammar.md):", ""]
    lines += [f"- {line}" for line in torch_paths([t for t in tables if t["library"].startswith("torch-")])]
    skipped = [f"- {lib.name} {lib.version}: {lib.skipped}" for lib in LIBRARIES if lib.skipped]
    lines += ["", "Not mined:", ""] + skipped + [f"- {line}" for line in NOT_MINED]
    return "\n".join(lines) + "\n"


TORCH_TABLE = HERE.parent / "explain_torch" / "torch_grammar.md"
# What torch's table would hold of each path: rows whose message or place names it.
TORCH_PATHS = (
    ("FSDP/FSDP2", r"fsdp|flat.?param|fully_shard|sharded_grad_scaler", "torch-fsdp"),
    ("MPS", r"\bmps\b|metal", "torch-mps-rocm"),
    ("ROCm", r"rocm|\bhip\b|gfx\d|hipblas", "torch-mps-rocm"),
)


def torch_paths(tables: list[dict]) -> list[str]:
    """One line per torch path the issue names: how many rows torch's own table has of it, and what is mined here."""
    rows = [line for line in TORCH_TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    by_name = {table["library"]: table for table in tables}
    lines = []
    for title, words, name in TORCH_PATHS:
        held = sum(bool(re.search(words, row, re.IGNORECASE)) for row in rows)
        table = by_name.get(name)
        found = (
            [r for r in table["messages"] if re.search(words, f"{r['message']} {r['where']}", re.I)] if table else []
        )
        covered = sum(r["verdict"] == "covered" for r in found)
        lines.append(
            f"{title}: {held} of the {len(rows)} rows of torch's table are about it (it reads torch/amp, "
            "torch/cuda/amp, the attention and Inductor entry points and the CPU build's libtorch_cpu.so); "
            f"[{name}]({name}.md) holds {len(found)} messages of it, {covered} covered, from files torch's table does "
            "not read (nothing is mined twice)."
        )
    return lines


# What the issue names but no table can hold, and why.
NOT_MINED = (
    "torch's MPS and ROCm C++ checks (aten/src/ATen/native/mps, the USE_ROCM branches): compiled only into the macOS "
    "and ROCm builds, so the CPU wheel's libtorch_cpu.so has none of them, and pytorch's repository snapshot (4 GB) "
    "is over what the fetch tool brings (500 MB). Only torch's Python-side MPS/ROCm messages are mined "
    "(torch-mps-rocm).",
    "TensorRT's builder and runtime messages (fp16/int8 flags, half2, Cast and mixed-type layers): they are in the "
    "closed-source libnvinfer. Its repository's Python samples, demos and tools are mined (tensorrt); its plugins' "
    "C++ checks (PLUGIN_VALIDATE/PLUGIN_ASSERT) print conditions, not precision messages; its ONNX parser is a "
    "submodule (onnx/onnx-tensorrt) the snapshot does not hold.",
)


def load(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


def write(table: dict) -> None:
    (HERE / f"{table['library']}.json").write_text(
        json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (HERE / f"{table['library']}.md").write_text(report(table), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("libraries", nargs="*", help="names from LIBRARIES (default: all)")
    parser.add_argument("--judge", action="store_true", help="judge the committed tables again, no download")
    args = parser.parse_args(argv)
    chosen = [lib for lib in LIBRARIES if (not args.libraries or lib.name in args.libraries) and not lib.skipped]
    unknown = set(args.libraries) - {lib.name for lib in LIBRARIES}
    if unknown:
        parser.error(f"unknown libraries: {sorted(unknown)}")
    for lib in chosen:
        table = None
        if not args.judge:
            try:
                table = mine(lib)
            except Unavailable as why:
                print(f"{lib.name}: not mined here: {why}; its committed table is judged as it is", file=sys.stderr)
        if table is None:
            table = load(lib.name)
            for row in table["messages"]:
                row.update(judge(lib.name, row["message"], row["kind"]))
        write(table)
        c = counts(table)
        print(f"{lib.name} {lib.version}: {c}", file=sys.stderr)
    tables = [load(lib.name) for lib in LIBRARIES if not lib.skipped and (HERE / f"{lib.name}.json").exists()]
    (HERE / "README.md").write_text(summary(tables), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
