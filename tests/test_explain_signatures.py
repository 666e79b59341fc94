"""Every known failure is held to its own data: its real examples are recognised (and it is the
explanation given for them), its near-misses are not, and its patterns stay linear."""

from __future__ import annotations

import re

try:  # the regex parser's own modules; sre_parse and sre_constants are their deprecated names
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # Python before 3.11
    import sre_constants
    import sre_parse

import pytest

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import find
from mpdoctor.explain.signature import FAMILIES, ID_PATTERN
from mpdoctor.checks.registry import builtin_registry

SIGNATURES = all_signatures()
BY_ID = {s.id: s for s in SIGNATURES}
MAX_GAP = 200  # the longest a non-literal repeat may run
MIN_LITERAL = 4  # every pattern starts with a literal this long, so the regex engine skips to its occurrences


def examples():
    return [pytest.param(s, text, id=f"{s.id}-{i}") for s in SIGNATURES for i, text in enumerate(s.examples)]


def near_misses():
    return [pytest.param(s, text, id=f"{s.id}-{i}") for s in SIGNATURES for i, text in enumerate(s.near_misses)]


def test_every_module_of_signatures_on_disk_is_loaded():
    """The signatures explain matches are every module's under explain/known/ that declares them: a module left
    out of ``known.MODULES`` would never match, whatever its tests say (they import it directly)."""
    import importlib
    from pathlib import Path

    from mpdoctor.explain import known

    on_disk = {}
    for path in sorted(Path(known.__file__).parent.glob("*.py")):
        module = importlib.import_module(f"mpdoctor.explain.known.{path.stem}")
        if hasattr(module, "SIGNATURES"):
            on_disk[path.stem] = module
    listed = {module.__name__.rpartition(".")[2] for module in known.MODULES}
    assert sorted(listed) == sorted(on_disk)
    assert {s.id for s in SIGNATURES} == {s.id for module in on_disk.values() for s in module.SIGNATURES}


def test_signature_data_is_well_formed():
    codes = [check.code for check in builtin_registry().snapshot_checks()]  # what `explain --check` can select
    assert len(BY_ID) == len(SIGNATURES), "duplicate ids"
    for s in SIGNATURES:
        assert ID_PATTERN.match(s.id), s.id
        assert s.family in FAMILIES, s.id
        assert s.title and s.cause and s.fixes and s.examples, s.id
        assert s.sources and all(src.startswith("https://") for src in s.sources), s.id
        assert all(n == n.lower() and n for n in s.needles), s.id
        for check in s.checks:
            assert any(code.startswith(check) for code in codes), f"{s.id}: no check {check}"


@pytest.mark.parametrize("signature,text", examples())
def test_each_example_is_recognised_as_its_signature(signature, text):
    found = [m.signature.id for m in find(text, SIGNATURES)]
    assert signature.id in found, f"{signature.id} not recognised; found {found}"


@pytest.mark.parametrize("signature,text", near_misses())
def test_each_near_miss_is_not(signature, text):
    assert signature.id not in [m.signature.id for m in find(text, SIGNATURES)]


def _repeats(tree, inside=False):
    """Yield (max, nested) for every repeat in a parsed pattern."""
    for op, value in tree:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, body = value
            yield high, inside
            yield from _repeats(body, True)
        elif op == sre_constants.SUBPATTERN:
            yield from _repeats(value[-1], inside)
        elif op == sre_constants.BRANCH:
            for branch in value[1]:
                yield from _repeats(branch, inside)


def _leading_literal(tree) -> int:
    """How many literal characters every match must start with."""
    count = 0
    for op, value in tree:
        if op == sre_constants.LITERAL:
            count += 1
        elif op == sre_constants.SUBPATTERN:
            return count + _leading_literal(value[-1])
        elif op == sre_constants.BRANCH:
            return count + min(_leading_literal(branch) for branch in value[1])
        else:
            return count
    return count


@pytest.mark.parametrize("signature", SIGNATURES, ids=[s.id for s in SIGNATURES])
def test_patterns_stay_linear(signature):
    for pattern in signature.patterns:
        tree = sre_parse.parse(pattern)
        for high, nested in _repeats(tree):
            assert not nested, f"{signature.id}: nested repeat in {pattern!r}"
            assert high != sre_constants.MAXREPEAT and high <= MAX_GAP, f"{signature.id}: unbounded {pattern!r}"
        assert _leading_literal(tree) >= MIN_LITERAL, f"{signature.id}: {pattern!r} must start with a literal"
        re.compile(pattern)


# ---------------------------------------------------------------- what the knowledge says, beyond matching


def test_every_family_has_a_signature():
    # The report's vocabulary (explain.report.ExplainFamily) is FAMILIES itself: tests/test_vocabulary.py.
    assert {s.family for s in SIGNATURES} == set(FAMILIES)  # no family without a signature


def test_alternatives_name_what_tells_them_apart_and_real_checks():
    codes = [check.code for check in builtin_registry().snapshot_checks()]  # what `explain --check` can select
    for s in SIGNATURES:
        for other in s.alternatives:
            assert other.cause and other.tell, s.id
            for check in other.checks:
                assert any(code.startswith(check) for code in codes), f"{s.id}: no check {check}"


# Dtype failures raised before any forward runs, where the tracer has nothing to trace: FSDP refuses the
# parameters when the model is wrapped.
BEFORE_FORWARD = {"fsdp-flat-param-mixed-dtypes"}
# dtype failures of an exported model in another runtime (ONNX Runtime, a TensorRT builder): no torch forward to trace
OUTSIDE_TORCH = {"dtype-runtime-input-type-unexpected", "dtype-builder-no-format-for-data-types"}


def test_every_dtype_mismatch_points_to_dtype_trace():
    for s in SIGNATURES:
        if s.family == "dtype" and s.id not in BEFORE_FORWARD | OUTSIDE_TORCH:
            assert any("mpdoctor.dtype_trace(model)" in step.text for step in s.fixes), s.id


def test_the_dtype_trace_fix_runs_as_written(tmp_path):
    """The two lines the fixes print, pasted around a real fp16/fp32 mix on the CPU, name the module."""
    import subprocess
    import sys
    import textwrap

    step = next(step for step in BY_ID["dtype-matmul-mismatch"].fixes if "dtype_trace" in step.text)
    pasted = textwrap.dedent(step.text.split(":\n", 1)[1])
    script = tmp_path / "train.py"
    script.write_text(
        "import torch, mpdoctor\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4).half())\n"
        "inputs = (torch.randn(2, 4),)\n" + pasted + "\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "mat1 and mat2 must have the same dtype" in result.stderr
    assert "mpdoctor dtype_trace: raised inside 1 (Linear)" in result.stderr


def test_the_readme_coverage_table_matches_the_signatures():
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in readme.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and (cells[0].strip("`") in FAMILIES or cells[0] == "all"):
            rows[cells[0].strip("`")] = (int(cells[2]), int(cells[3]))
    expected = {
        family: (
            len([s for s in SIGNATURES if s.family == family]),
            len({u for s in SIGNATURES if s.family == family for u in s.sources}),
        )
        for family in FAMILIES
    }
    expected["all"] = (len(SIGNATURES), len({u for s in SIGNATURES for u in s.sources}))
    assert rows == expected  # families, signature counts and source counts, as the README states them


@pytest.mark.parametrize(
    "signature,text", [p for p in examples() if not (p.values[0].frames or p.values[0].not_frames)]
)
def test_each_example_is_recognised_in_any_case(signature, text):
    """People paste messages lower-cased or shouting (issue titles, `str.lower()`d logs)."""
    for variant in (text.lower(), text.upper()):
        assert signature.id in [m.signature.id for m in find(variant, SIGNATURES)], variant


def test_patterns_spell_letters_literally():
    """Signature.compiled lower-cases each pattern to match lower-cased lines (signature.folded): a letter
    hidden in an escape or a group name would not be folded."""
    for s in SIGNATURES:
        for pattern in s.patterns:
            assert not re.search(r"\\[xuUN]|\(\?P|\(\?[aiLmsux]", pattern), f"{s.id}: {pattern!r}"
