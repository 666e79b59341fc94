"""`mpdoctor explain` on failures provoked on the real torch installed here (issue 29).

tests/explain_torch/provoke.py runs ops, dtypes, autocast, GradScaler and SDPA backends on the CPU torch in a fresh
interpreter and hands back torch's own exception and warning texts: nothing here writes a message it then matches.
Each must be recognised, in the family the case expects and naming the op when torch's text names one; the real
failures that are not precision failures (shapes, memory, integer dtypes, fp32 against fp64) must not be, also
with fp16 tensors in them. A CPU failure must get CPU advice only.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL

pytest.importorskip("torch")

PROVOKE = Path(__file__).parent / "explain_torch" / "provoke.py"
MIN_DISTINCT = 80
CUDA_ONLY_FIX = re.compile(r"autocast\(\s?[\"']cuda|CUDA_DEVICE_ORDER|device_type=[\"']cuda", re.IGNORECASE)


@lru_cache(maxsize=1)
def provoked() -> dict:
    result = subprocess.run([sys.executable, str(PROVOKE)], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(result.stdout)


def test_enough_distinct_real_failures_were_provoked():
    cases = provoked()["cases"]
    failed = {name: case["texts"] for name, case in cases.items() if not case["texts"]}
    assert not failed, f"these no longer fail on torch {provoked()['torch']}: {sorted(failed)}"
    distinct = {case["texts"][0] for case in cases.values()}
    assert len(distinct) >= MIN_DISTINCT, len(distinct)


def test_every_real_failure_is_recognised_with_its_family_and_op():
    wrong = []
    for name, case in provoked()["cases"].items():
        text = case["texts"][0]  # the exception, or the first warning when the case only warns
        report = explain(text, name)
        found = report.recognised or report.notices  # a case that only warns of a deprecation: a notice
        if not found:
            wrong.append((name, "not recognised", text))
            continue
        first = found[0]
        if first.family not in case["expect"]:
            wrong.append((name, f"family {first.family}, expected {case['expect']}", text))
        op = case["op"]
        if op and op.lower() not in f"{first.title} {first.cause}".lower():
            wrong.append((name, f"op {op} not named in {first.title!r}", text))
    assert not wrong, "\n".join(map(repr, wrong))


def test_real_errors_that_are_not_precision_failures_stay_unrecognised():
    report = provoked()["not_precision"]
    assert all(report.values()), [name for name, texts in report.items() if not texts]
    wrong = {}
    for name, texts in report.items():
        # alone, and as a log line of an fp16 run would carry it: "half"/"fp16" around it change nothing
        for text in (texts[0], f"[fp16 run, model.half()] step 12: {texts[0]}"):
            ids = [item.id for item in explain(text, name).recognised]
            if ids:
                wrong[name] = (ids, text)
    assert not wrong, wrong


def test_a_cpu_failure_gets_cpu_advice_and_cpu_checks(tmp_path):
    """The whole traceback of a real CPU failure: no CUDA-only fix, no GPU check for --check to run."""
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "a = torch.randn(4, 4, dtype=torch.float16)\n"
        "b = torch.randn(4, 4)\n"
        "def step():\n"
        "    return torch.mm(a, b)\n"
        "step()\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" in result.stderr
    (item,) = explain(result.stderr, "train.py").recognised
    assert item.family == "dtype"
    assert not [step.text for step in item.fixes if CUDA_ONLY_FIX.search(f"{step.text} {step.command or ''}")]
    assert item.checks and not [code for code in item.checks if code.startswith(("GPU", "PREC002", "PREC006"))]


def test_the_same_kind_of_failure_on_a_gpu_keeps_its_gpu_advice():
    """CUDA kernels' names say where they ran; the texts are torch's (cited in torch_grammar.md)."""
    signatures = {s.id: s for s in all_signatures()}
    cuda = signatures["op-support-no-kernel-cuda"]
    for text in cuda.examples:
        (item,) = explain(text, "gpu").recognised
        assert item.id == cuda.id and "on the GPU" in item.title
        assert any('autocast("cuda"' in step.text for step in item.fixes)
    cpu = signatures["cpu-half-no-kernel"]
    (item,) = explain(cpu.examples[0], "cpu").recognised
    assert not any("cuda" in step.text.lower() for step in item.fixes)


def test_the_explanation_names_the_op_and_dtypes_from_the_line():
    text = provoked()["cases"]["index-add"]["texts"][0]
    (item,) = explain(text, "x").recognised
    assert "index_add_" in item.title and "float16" in item.title and "float32" in item.title
    assert "index_add_" in item.fixes[0].text


def test_cuda_only_texts_from_torchs_source_are_recognised():
    """What only a CUDA torch raises, recorded from pytorch's source with where it lives (cuda_texts.py)."""
    sys.path.insert(0, str(PROVOKE.parent))
    from cuda_texts import CUDA_ONLY

    wrong = []
    for text, where, family in CUDA_ONLY:
        assert where.startswith("aten/") and ": " in where, where  # a path in pytorch and the symbol raising it
        found = explain(text, "cuda").recognised
        if not found or found[0].family != family:
            wrong.append((text, family, [item.id for item in found]))
    assert not wrong, wrong


def test_the_mined_table_is_in_the_repo_and_counts_its_rows():
    """tests/explain_torch/torch_grammar.md (made by mine.py) lists each mined message and what covers it."""
    table = (PROVOKE.parent / "torch_grammar.md").read_text(encoding="utf-8")
    signatures = {s.id for s in [*all_signatures(), *GENERAL.values()]}  # the general reader's answers too
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 100
    for cells in rows:
        covered, reason = cells[-2].strip(), cells[-1].strip(" |")
        assert covered in signatures or (covered == "-" and reason), cells
    totals = re.search(r"^\| all \| (\d+) \| (\d+) \|$", table, re.MULTILINE)
    assert totals and int(totals.group(1)) == len(rows)
    assert int(totals.group(2)) == sum(1 for cells in rows if cells[-2].strip() != "-")


def _section(table: str, title: str) -> list[str]:
    """The lines of one section of torch_grammar.md, from its heading to the next (as mine.table writes them)."""
    lines = table.splitlines()
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def test_the_miner_run_again_gives_the_table_in_the_repo():
    """torch_grammar.md is mine.py's output, not a record to trust: the miner runs again here on the torch
    installed, and its sections must come out as committed. The Python layer and the CUDA-only texts are mined
    and judged again in full; the ATen section (a scan of libtorch_cpu.so that costs seconds) is judged again
    from its rows: each message, as mine.py tries it, must still get the signature the table names."""
    import torch

    sys.path.insert(0, str(PROVOKE.parent))
    import mine

    table = (PROVOKE.parent / "torch_grammar.md").read_text(encoding="utf-8")
    assert f"from torch {torch.__version__} " in table  # mined from this very torch
    torch_dir = Path(torch.__file__).parent
    python_layer, _, _ = mine.table("Python layer", mine.rows(mine.python_messages(torch_dir), python=True))
    assert python_layer == _section(table, "Python layer")
    cuda_title = "CUDA-only (from pytorch's source, cited)"
    cuda_rows = mine.rows(
        (text, f"[{where.split(':')[0]}]({mine.PYTORCH}{where.split(':')[0]}):{where.split(':', 1)[1]}")
        for text, where, _ in mine.CUDA_ONLY
    )
    assert mine.table(cuda_title, cuda_rows)[0] == _section(table, cuda_title)
    stale = []
    for line in _section(table, "ATen (libtorch_cpu.so strings holding a grammar stem)"):
        if not line.startswith("| `"):
            continue
        cell, _, rest = line[3:].partition("` | ")
        text, covered = cell.replace("\\|", "|"), rest.split(" | ")[1].strip()
        if len(text) < 220:  # a row cut at 220 characters cannot be tried again from the table
            now = mine.covered(text) or "-"
            if now != covered:
                stale.append((text, covered, now))
    assert not stale, stale
