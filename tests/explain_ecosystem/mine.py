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
``libctranslate2.so`` that hold a precision word and a refusal, as torch's miner reads libtorch.

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
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from mpdoctor.explain.explainer import explain  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "mpdoctor-mine-ecosystem"


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
        sdist=True,
        roots=("vllm/",),
        skipped="pip cannot download its sdist without building its metadata, and that needs vLLM's build "
        "requirements: under --no-build-isolation it stops at `No module named 'setuptools_rust'`, with build "
        "isolation pip would install the CUDA torch vLLM pins (gigabytes); its wheel is compiled CUDA code of "
        "hundreds of MB. vLLM's fp16/bf16 refusals reach explain through the general grammar (compute "
        "capability, kernels that take only fp16/bf16).",
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
    r"grad.?scaler|loss.?scal|\bamp\b|16-?bit|16-mixed|capabilit|\bfp4|nvfp4|\bsm_?\d|overflow|\bnan\b",
    re.IGNORECASE,
)
# Calls whose first argument is a message: raised exceptions and warnings by class, warnings.warn and the loggers'
# warning/error calls under their many names.
WARN_CALL = re.compile(r"(?:^|\.)(?:\w*warn\w*|error|critical|fatal|exception|warning_once|warning_advice)$")
EXCEPTION = re.compile(r"(?:^|\.)[A-Z]\w*(?:Error|Exception|Warning|Exit)$")
# Folders of a package that are its tests and examples, not what a user's run prints.
SKIP_PARTS = {"test", "tests", "testing", "examples", "benchmarks", "benchmark", "_vendor", "third_party"}
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
    """The library's archive, unpacked under CACHE (downloaded once)."""
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
            # vLLM's setup.py builds nothing for an "empty" target: its metadata is all pip needs to download it
            env={**os.environ, "VLLM_TARGET_DEVICE": "empty"},
        )  # fmt: skip
    (archive,) = list(download.iterdir())
    target.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(target)
    else:
        with tarfile.open(archive) as tarred:
            tarred.extractall(target, filter="data")
        (inner,) = [p for p in target.iterdir() if p.is_dir()]  # an sdist holds one folder, name-version/
        for child in inner.iterdir():
            child.rename(target / child.name)
        inner.rmdir()
        _flatten_src(target)
    done.write_text(archive.name, encoding="utf-8")
    return target


def _platform() -> list[str]:
    tags = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux2014_x86_64")
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
        text = path.read_text(encoding="utf-8", errors="replace")
        for words, name in LICENCE_WORDS:
            if words in text:
                return f"{name} (its {path.name} file)"
    return "unknown"


LICENCE_WORDS = (
    ("GNU AFFERO GENERAL PUBLIC LICENSE", "AGPL-3.0"),
    ("Apache License", "Apache-2.0"),
    ("Neither the name", "BSD-3-Clause"),
    ("Redistribution and use in source and binary forms", "BSD"),
    ("Permission is hereby granted, free of charge", "MIT"),
)


def python_files(root: Path, lib: Library):
    tops = [root / folder for folder in lib.roots] or [root]
    for path in sorted(p for top in tops if top.is_dir() for p in top.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if SKIP_PARTS & set(relative.split("/")[:-1]) or path.name.startswith("test_"):
            continue
        yield relative, path


def python_messages(root: Path, lib: Library):
    """(message, where, kind) for each message-bearing call or assert that holds a precision word."""
    for relative, path in python_files(root, lib):
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            for text, kind in _messages_of(node):
                text = " ".join(text.split())
                if len(text) > 15 and PRECISION.search(text) and _has_words(text):
                    yield text, f"{relative}:{node.lineno}", kind


def _messages_of(node):
    if isinstance(node, ast.Assert) and node.msg is not None:
        yield _literal(node.msg), "AssertionError"
    if not isinstance(node, ast.Call):
        return
    name = ast.unparse(node.func)
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


# ---------------------------------------------------------------------------------------------------- judging


def sample(text: str, kind: str) -> str:
    """The message as a failing run prints it: holes filled (a dtype pair, a device, a name), under its kind."""
    dtypes = iter(["torch.float16", "torch.float32"] + ["torch.float32"] * 6)

    def hole(found: re.Match) -> str:
        inside = found.group(0).lower()
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
HARD = (
    (
        r"deprecat|will be removed|no longer (?:supported|used|needed)|has been renamed|is renamed",
        "a deprecation or renaming notice: the run goes on, nothing failed",
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
)
HARD = tuple((re.compile(p, re.IGNORECASE), why) for p, why in HARD)
SOFT = tuple((re.compile(p, re.IGNORECASE), why) for p, why in SOFT)
# A low floating precision named outright: then an integer or shape word beside it does not make it "not precision".
LOW_FLOAT = re.compile(
    r"\bhalf\b|half2|bfloat16|float16|fp16|bf16|float8|fp8|e4m3|e5m2|\bfp4|nvfp4|autocast|scal", re.I
)
# Only when no low precision is named: the words then come for any dtype.
NO_LOW_PRECISION = "names a dtype only in passing (a type, a config key, a tensor's metadata): no low precision"
# A library's own wordings that are no failure (hard): (regex over the lower-cased message, why).
LIBRARY_REASONS: dict[str, tuple[tuple[str, str], ...]] = {}


def not_precision_reason(library: str, text: str) -> tuple[str, bool]:
    """Why the message is not a precision failure ("" when it may be one), and whether that is a hard reason."""
    lower = text.lower()
    for words, why in LIBRARY_REASONS.get(library, ()):
        if re.search(words, lower):
            return why, True
    blanked = re.sub(r"\{[^{}]*\}", " ", text)  # the holes' names (torch_dtype=...) are not what the text says
    for pattern, why in HARD:
        if pattern.search(blanked):
            return why, True
    if not LOW.search(blanked):
        return NO_LOW_PRECISION, False
    if not LOW_FLOAT.search(blanked):
        for pattern, why in SOFT:
            if pattern.search(blanked):
                return why, False
    return "", False


def judge(library: str, text: str, kind: str) -> dict:
    """The verdict for one mined message, from its text alone (no download): what the test runs again."""
    found = explain(sample(text, kind), library).recognised
    signature = found[0].id if found else None
    why, hard = not_precision_reason(library, text)
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


def mine(lib: Library) -> dict:
    root = fetch(lib)
    seen, rows = set(), []
    for text, where, kind in list(python_messages(root, lib)) + list(binary_messages(root, lib)):
        if (text, where) in seen:
            continue
        seen.add((text, where))
        rows.append({"message": text, "where": where, "kind": kind, **judge(lib.name, text, kind)})
    return {
        "library": lib.name,
        "pypi": lib.pypi,
        "version": lib.version,
        "archive": archive_name(lib),
        "licence": licence(root),
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
        f"Generated by `{table['mined_by']}` from `{table['archive']}` (PyPI; licence: {table['licence']}). "
        "Do not edit by hand.",
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
    lines += ["", "Not mined:", ""] + [f"- {lib.name} {lib.version}: {lib.skipped}" for lib in LIBRARIES if lib.skipped]
    return "\n".join(lines) + "\n"


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
        if args.judge:
            table = load(lib.name)
            for row in table["messages"]:
                row.update(judge(lib.name, row["message"], row["kind"]))
        else:
            table = mine(lib)
        write(table)
        c = counts(table)
        print(f"{lib.name} {lib.version}: {c}", file=sys.stderr)
    tables = [load(lib.name) for lib in LIBRARIES if not lib.skipped]
    (HERE / "README.md").write_text(summary(tables), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
