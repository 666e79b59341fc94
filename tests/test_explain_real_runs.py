"""explain on whole logs of real runs, made on this kind of machine (torch 2.13 on the CPU) with the libraries'
real releases: lightning 2.6.6, bitsandbytes 0.50.2, diffusers 0.42.1 with transformers 5.24. Only the venv's and
the scripts' paths were shortened. Each log once made explain claim a precision failure that was not one:

* a Lightning bf16-mixed run that finished, whose model summary notes it sizes bf16-mixed in 32 bits;
* a bitsandbytes paged optimizer on the CPU, falling back to a plain one (Python prints the warning's source line
  under it, `get_state_buffer(p, dtype=torch.uint8)`: library code, not a word of the message);
* an fp16 diffusers pipeline on the CPU whose tokenizer crashed (`OverflowError: int too big to convert`) after
  diffusers warned that fp16 pipelines on the CPU "will fail": a prediction, not the failure that ended the run;

and one was a real precision failure it missed: Lightning's transformer-engine (fp8) precision without
TransformerEngine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

RUNS = Path(__file__).parent / "fixtures" / "explain_runs"


def explain(name: str) -> tuple[int, dict]:
    done = run_cli("explain", "--file", str(RUNS / name), "-f", "json")
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize(
    "name, notices",
    [
        ("lightning-bf16-mixed-ok.log", ["framework-lightning-summary-precision"]),
        ("bitsandbytes-paged-adamw-cpu.log", []),
        ("diffusers-fp16-cpu-tokenizer-overflow.log", ["cpu-half-precision-needs-gpu"]),
    ],
)
def test_a_run_that_no_precision_stopped_is_claimed_by_nothing(name, notices):
    status, report = explain(name)
    assert status == 1 and report["recognised"] == [], [r["id"] for r in report["recognised"]]
    assert sorted({n["id"] for n in report["notices"]}) == notices


def test_lightnings_fp8_precision_without_transformer_engine_is_recognised():
    status, report = explain("lightning-transformer-engine-cpu.log")
    assert status == 0
    (found,) = report["recognised"]
    assert (found["id"], found["family"]) == ("hardware-fp8-lightning-needs-transformer-engine", "hardware")
    assert any('precision="bf16-mixed"' in step["text"] for step in found["fixes"])


def test_an_input_fed_in_the_wrong_type_is_told_to_take_the_type_the_model_declares():
    """onnxruntime 1.32, a float32 model fed float16: the fix casts to float32 (it once said float16 whatever the
    model declared, which repeats the error)."""
    status, report = explain("onnxruntime-fp16-input-fp32-model.log")
    (found,) = report["recognised"]
    assert found["id"] == "dtype-runtime-input-type-unexpected"
    first = found["fixes"][0]["text"]
    assert "x.astype(np.float32)" in first and "np.float16" not in first, first
