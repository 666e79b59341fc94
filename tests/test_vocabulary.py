"""One vocabulary: each shared list of names has one definition, and no copy of it is spelled anywhere else.

``VOCABULARY`` lists them: the precision microkernels' ops, dtypes and SDPA backends
(``mpdoctor/portable/kernel_names.py``, which the kernel runner in the target and the host
both import) and explain's families (``mpdoctor/explain/signature.py``). Every module that
reads one under a name of its own holds the very object (``test_every_reader_holds_the_one_definition``),
and nowhere in mpdoctor/ or checks/ is one written out again: a tuple, list, set or ``Literal[...]``
of the same names, a dict keyed by them, or a description string that lists them all
(``test_no_module_spells_a_vocabulary_out_again``). A value with a name of its own (a
tolerance per dtype) is keyed by the vocabulary, never by a copy of it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from mpdoctor.explain.signature import FAMILIES
from mpdoctor.portable import kernel_names as names

ROOT = Path(__file__).resolve().parent.parent

# Name -> (the definition, where it is defined, how narrowly a copy is looked for).
# "everywhere": any module of mpdoctor/ and checks/; "kernels": the microkernel modules only (KERNEL_MODULES), for a
# pair of names common enough to mean something else elsewhere (float16 and bfloat16 in a checkpoint's dtypes).
VOCABULARY = {
    "kernel_names.DTYPES": (names.DTYPES, "mpdoctor/portable/kernel_names.py", "everywhere"),
    "kernel_names.OPS": (names.OPS, "mpdoctor/portable/kernel_names.py", "everywhere"),
    "kernel_names.TIMED_OPS": (names.TIMED_OPS, "mpdoctor/portable/kernel_names.py", "everywhere"),
    "kernel_names.SDPA_BACKENDS": (names.SDPA_BACKENDS, "mpdoctor/portable/kernel_names.py", "everywhere"),
    "kernel_names.FUSED_SDPA": (names.FUSED_SDPA, "mpdoctor/portable/kernel_names.py", "everywhere"),
    "kernel_names.LOW_PRECISION": (names.LOW_PRECISION, "mpdoctor/portable/kernel_names.py", "kernels"),
    "explain.signature.FAMILIES": (FAMILIES, "mpdoctor/explain/signature.py", "everywhere"),
}
KERNEL_MODULES = re.compile(
    r"(^|/)(kernel_[a-z_]+|kernels|_kernels|precision_[a-z_]+|vocab|unmeasured)\.py$"
)  # the runner's, the snapshot's, the verdicts', the precision checks'


def _sources() -> list[Path]:
    return sorted(p for base in ("mpdoctor", "checks") for p in (ROOT / base).rglob("*.py"))


def _spelled(node: ast.AST) -> set[str] | None:
    """The names a literal spells out: a tuple, list or set of strings (``Literal[...]``'s included) or a dict's
    string keys, less the empty string (a field's "not recorded"); None for anything else."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = node.keys
    else:
        return None
    if len(items) < 2 or not all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
        return None
    return {i.value for i in items} - {""}


def _lists_all(text: str, vocabulary: tuple[str, ...]) -> bool:
    """A description that names every one of at least three names: "float32, tf32, float16, bfloat16 or ..."."""
    if len(vocabulary) < 3 or not all(n in text for n in vocabulary):  # the cheap test first
        return False
    return all(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in vocabulary)


def copies(path: Path, relative: str) -> list[str]:
    """Where ``path`` (``relative`` to the checkout) spells out a vocabulary it does not define."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    wanted = {
        label: value
        for label, (value, home, scope) in VOCABULARY.items()
        if relative != home and (scope == "everywhere" or KERNEL_MODULES.search(relative))
    }
    found = []
    for node in ast.walk(tree):
        spelled = _spelled(node)
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
        for label, value in wanted.items():
            if spelled is not None and spelled == set(value):
                found.append(f"{relative}:{node.lineno}: a copy of {label}")
            elif text is not None and id(node) not in docstrings and _lists_all(text, value):
                found.append(f"{relative}:{node.lineno}: a description copying {label}")
    return found


def test_no_module_spells_a_vocabulary_out_again():
    found = [line for path in _sources() for line in copies(path, path.relative_to(ROOT).as_posix())]
    assert found == []


@pytest.mark.parametrize(
    "text,expected",
    [
        ('KernelDtype = Literal["float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", ""]\n', "DTYPES"),
        ('COLUMNS = ("float8_e4m3fn", "float32", "tf32", "float16", "bfloat16")\n', "DTYPES"),  # in any order
        ('TOLERANCE = {"float32": 1, "tf32": 1, "float16": 1, "bfloat16": 1, "float8_e4m3fn": 1}\n', "DTYPES"),
        ('NUMERIC_OPS = ("matmul", "conv2d", "layer_norm", "softmax", "sdpa")\n', "TIMED_OPS"),
        ('x = fact("matmul, conv2d, layer_norm, softmax, sdpa, autocast or grad_scaler")\n', "OPS"),
        ('LOW = ("float16", "bfloat16")\n', "LOW_PRECISION"),
        ('Family = Literal["' + '", "'.join(FAMILIES) + '"]\n', "FAMILIES"),
    ],
)
def test_a_copy_is_found(tmp_path, text, expected):
    """The scan can fail: each kind of copy this round removed, planted in a kernel module, is reported."""
    planted = tmp_path / "kernel_matrix.py"
    planted.write_text(text)
    assert any(line.endswith(expected) for line in copies(planted, "mpdoctor/analysis/kernel_matrix.py"))


def test_a_pair_as_common_as_float16_and_bfloat16_is_the_kernels_only_outside_them(tmp_path):
    planted = tmp_path / "tree.py"
    planted.write_text('LOW_PRECISION = ("float16", "bfloat16")\nNAMES = ("float16", "float32")\n')
    assert copies(planted, "mpdoctor/checkpoint_audit/tree.py") == []


def test_every_reader_holds_the_one_definition():
    """Names kept for their readers are the definition itself, not an equal tuple."""
    from mpdoctor.analysis import kernel_matrix, kernel_view
    from mpdoctor.checks import _kernels
    from mpdoctor.explain.report import ExplainFamily
    from mpdoctor.probes.remote import kernel_measure, kernel_suite
    from mpdoctor.snapshot import vocab

    assert kernel_suite.OPS is names.OPS and kernel_suite.TIMED_OPS is names.TIMED_OPS
    assert kernel_suite.LOW_PRECISION is names.LOW_PRECISION
    assert _kernels.NUMERIC_OPS is names.TIMED_OPS and _kernels.LOW is names.LOW_PRECISION
    assert _kernels.FUSED_SDPA is names.FUSED_SDPA
    assert kernel_measure.CONCLUSIVE_ROUNDS is names.CONCLUSIVE_ROUNDS and kernel_view.CONCLUSIVE_ROUNDS == 3
    assert kernel_measure.kernel_key is names.kernel_key and kernel_measure.parse_key is names.parse_key
    assert kernel_view.SHORT is names.SHORT and kernel_matrix.COLUMNS is names.DTYPES
    assert get_args(vocab.KernelDtype) == names.DTYPES + ("",)
    assert get_args(vocab.KernelOp) == names.OPS + ("",)
    assert get_args(vocab.SdpaBackend) == names.SDPA_BACKENDS + ("",)
    assert get_args(ExplainFamily) == FAMILIES


def test_tables_keyed_by_a_vocabulary_cover_it_exactly():
    """A table built along a vocabulary (zip) must not silently drop or misplace a name when the list changes."""
    from mpdoctor.analysis.kernel_matrix import ROWS
    from mpdoctor.probes.remote import kernel_measure, kernel_suite

    assert tuple(kernel_measure.TOLERANCE) == names.DTYPES
    assert tuple(name for name, _, _ in kernel_suite.SDPA_BACKENDS) == names.SDPA_BACKENDS
    # ... each beside its own SDPBackend member (FLASH_ATTENTION is flash's)
    assert [member.split("_")[0].lower() for _, member, _ in kernel_suite.SDPA_BACKENDS] == list(names.SDPA_BACKENDS)
    assert tuple(names.SHORT) == names.DTYPES
    assert [op for op, backend in ROWS if not backend] == list(names.OPS)
    assert [backend for _, backend in ROWS if backend] == list(names.SDPA_BACKENDS)
