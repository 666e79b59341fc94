#!/usr/bin/env python3
"""Mine torch's own precision messages from the installed torch and say which explain signature covers each.

    python tests/explain_torch/mine.py > tests/explain_torch/torch_grammar.md

Three sources, all torch's own text (issue 29):

* the Python layer (torch/amp, torch/cuda/amp, torch/cpu/amp, torch/backends/cuda, torch/nn/attention,
  torch/_inductor/compile_fx.py, torch/nn/functional.py, torch/nn/modules/rnn.py): the strings given to
  ``warnings.warn`` and to raised exceptions, read with ``ast``; f-string holes shown as ``{...}``;
* ATen: the printable strings of libtorch_cpu.so (TORCH_CHECK and dispatch-macro texts, often in pieces, since
  TORCH_CHECK joins its arguments at run time) that hold one of the grammar stems below;
* CUDA-only texts, from pytorch's source with a citation (cuda_texts.py).

Each is tried as a one-line message (holes filled: a dtype pair, a device, a kernel name) and the table says
which signature recognised it, or why it is left out. Stdlib only, plus mpdoctor and the installed torch.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuda_texts import CUDA_ONLY, PYTORCH  # noqa: E402

from mpdoctor.explain.explainer import explain  # noqa: E402
from mpdoctor.explain.shapes import UNNAMED_NON_FINITE  # noqa: E402

PYTHON_FILES = (
    "amp/autocast_mode.py",
    "amp/grad_scaler.py",
    "cuda/amp/autocast_mode.py",
    "cuda/amp/grad_scaler.py",
    "cpu/amp/autocast_mode.py",
    "cpu/amp/grad_scaler.py",
    "backends/cuda/__init__.py",
    "nn/attention/__init__.py",
    "_inductor/compile_fx.py",
    "nn/functional.py",
    "nn/modules/rnn.py",
)
PRECISION = re.compile(
    r"dtype|precision|autocast|gradscaler|\bhalf|bfloat16|float16|fp16|bf16|float8|fp8|sdp_kernel|unscale|inf checks",
    re.IGNORECASE,
)
# ATen's grammar stems: the parts of its dtype checks that every instance shares.
STEMS = re.compile(
    r"not implemented for '|low precision dtypes|same scalar type|same dtype|dtypes must be the same|"
    r"out tensor to have dtype|type promoting not supported|^unsupported dtype|mkl fft doesn't support|"
    r"scaling configuration|tensorwise scaling|rowwise scaling|to be float8 matrix|promotion for float8|"
    r"expected scalar type|found dtype|mixed dtype|mismatch dtype between|attn_mask dtype|expected dtype |"
    r"should be the same|does not match weight dtype|halftensor is not supported|low precision",
    re.IGNORECASE,
)
# Printable runs of the library that are documentation, schemas or code, not messages.
NOISE = re.compile(
    r"^[\s#%$_(`'\"{]|->|::\w+\(|\(Tensor|INTERNAL ASSERT|zero_point|zero-point|Constrain|Attribute '|"
    r"^The |^Target size|It takes value|number of elements of"
)


def python_messages(torch_dir: Path):
    for relative in PYTHON_FILES:
        path = torch_dir / relative
        if not path.exists():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if not (name.endswith("warn") or name[:1].isupper() and name.endswith(("Error", "Warning"))):
                continue
            for arg in node.args[:1]:
                text = _literal(arg)
                # every message of GradScaler's own files is about its contract, whatever words it uses
                if text and (PRECISION.search(text) or "grad_scaler" in relative) and len(text) > 15:
                    yield text.strip(), f"torch/{relative}:{node.lineno}"


def _literal(node) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}" for v in node.values
        )
    if isinstance(node, ast.Name):  # a string built elsewhere and joined on: a hole, like an f-string's
        return "{" + node.id + "}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return left + right if left and right else ""
    return ""


def aten_messages(library: Path):
    seen = set()
    data = library.read_bytes()
    for found in re.finditer(rb"[\x20-\x7e]{12,400}", data):
        text = found.group(0).decode("ascii")
        if text in seen or NOISE.search(text) or not STEMS.search(text):
            continue
        seen.add(text)
        yield text, "libtorch_cpu.so"


def sample(text: str, python: bool = False) -> str:
    """The message as a failing run would print it: holes filled with a dtype pair, a device, a kernel name.
    A piece of a TORCH_CHECK that ends where a value is joined on gets "Half and Float"; a piece that starts
    with ": " gets an op name. A complete message is tried as it is."""
    pair = ["torch.float16", "torch.float32"] if python else ["Half", "Float"]
    dtypes = iter(pair + [pair[1]] * 4)

    def hole(found: re.Match) -> str:
        inside = found.group(0).lower()
        if "device" in inside:
            return "CUDA"
        if "dtype" in inside or "type" in inside:
            return next(dtypes, pair[1])
        return "x"

    text = re.sub(r"\{[^{}]{0,120}\}", hole, text)
    if text.startswith('" not implemented for'):
        text = '"some_kernel' + text + "Half'"
    elif text.startswith(": "):
        text = "some_op" + text
    if text.endswith((" ", ":", "=", "(")):
        text = text + " Half and Float"
    return "RuntimeError: " + " ".join(text.split())


def covered(text: str, python: bool = False) -> str:
    report = explain(sample(text, python), "mined")
    # a deprecation is answered as a notice; the hint for NaNs in a text that names no precision answers nothing
    found = report.recognised or [n for n in report.notices if n.id != UNNAMED_NON_FINITE.id]
    return found[0].id if found else ""


# Why a message that is about precision's tools is still left out (matched as substrings, lower-case).
REASONS = (
    ("unsupported autocast device_type", "a device string torch does not know: not a precision failure"),
    ("requires a callable", "autocast used as a decorator on a non-callable: API misuse, no precision story"),
    ("scripting mode", "TorchScript internals"),
    ("_scale is none in", "an internal assertion of GradScaler"),
    ("should not be none after lazy init", "an internal assertion of GradScaler"),
    ("initialized before _scale", "an internal assertion of GradScaler"),
    ("new_scale should be", "an argument check of GradScaler.update(new_scale=...)"),
    ("_get_scale_async returned none", "an internal assertion of GradScaler"),
    ("growth factor must be", "an argument check of GradScaler's constructor"),
    ("backoff factor must be", "an argument check of GradScaler's constructor"),
    ("must be a tensor or an iterable of tensors", "an argument check of GradScaler.scale(): not a precision failure"),
    ("expected param to be torch.tensor", "an argument check of GradScaler's optimizer walk: not a precision failure"),
    ("state dict is empty", "a checkpoint of a disabled GradScaler: not a failure"),
    ("pickled", "GradScaler pickling"),
    ("tensorfloat32 tensor cores", "a performance hint (TF32), not a failure"),
    ("stop passing itself", "a GradScaler/optimizer API notice"),
    ("_none_or_dtype", "internal argument check"),
    ("options`` ignored", "linear_cross_entropy option notice"),
)


def left_out_reason(text: str) -> str:
    lower = text.lower()
    for words, reason in REASONS:
        if words in lower:
            return reason
    if not re.search(r"half|bfloat16|float16|float8|fp8|fp16|bf16|autocast|scal(?:e|ing)|precision", lower):
        return "names no low-precision dtype: the same words come for integer or fp32/fp64 tensors"
    if "complex" in lower:
        return "complex dtypes: not a mixed-precision failure"
    if "quantiz" in lower or "qadd" in lower or "int8" in lower:
        return "quantized-tensor (int8) API, not mixed precision"
    return "not covered yet: a fragment whose dtypes torch joins on elsewhere, or a wording no family has"


def rows(messages, python: bool = False):
    for text, where in messages:
        signature = covered(text, python)
        yield text, where, signature, "" if signature else left_out_reason(text)


def table(title: str, items) -> list[str]:
    lines = [f"## {title}", "", "| message | where | covered by | left out because |", "|---|---|---|---|"]
    count = covered_count = 0
    for text, where, signature, reason in items:
        count += 1
        covered_count += bool(signature)
        cell = text.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{cell[:220]}` | {where} | {signature or '-'} | {reason} |")
    lines += ["", f"{covered_count} of {count} covered.", ""]
    return lines, count, covered_count


def main() -> None:
    import torch

    torch_dir = Path(torch.__file__).parent
    out = [
        "# torch's precision messages, mined",
        "",
        f"Generated by `python tests/explain_torch/mine.py` from torch {torch.__version__} (do not edit by hand).",
        "Each message is tried as `RuntimeError: <message>` with its holes filled (a dtype pair, a device, a kernel",
        "name); `covered by` is the signature `mpdoctor explain` answers with.",
        "",
    ]
    totals = []
    for title, items in (
        ("Python layer", rows(python_messages(torch_dir), python=True)),
        (
            "ATen (libtorch_cpu.so strings holding a grammar stem)",
            rows(aten_messages(torch_dir / "lib" / "libtorch_cpu.so")),
        ),
        (
            "CUDA-only (from pytorch's source, cited)",
            rows(
                (text, f"[{where.split(':')[0]}]({PYTORCH}{where.split(':')[0]}):{where.split(':', 1)[1]}")
                for text, where, _ in CUDA_ONLY
            ),
        ),
    ):
        lines, count, hits = table(title, items)
        out += lines
        totals.append((title, count, hits))
    out += ["## Totals", "", "| source | messages | covered |", "|---|---|---|"]
    out += [f"| {title} | {count} | {hits} |" for title, count, hits in totals]
    all_count, all_hits = sum(t[1] for t in totals), sum(t[2] for t in totals)
    out += [f"| all | {all_count} | {all_hits} |", ""]
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
