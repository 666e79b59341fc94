"""A whole training log whose end is a NaN: the precision the run switched into is read from the log's own header,
however far above the failure it stands (`shapes.cues.RUN_IN_LOW`), not only from the lines just above it.

The failure is real torch's: anomaly mode's message for a backward that produced a NaN, made here on the CPU. The
headers are the libraries' own strings: Lightning's banner (lightning/pytorch/trainer/connectors/
accelerator_connector.py, 2.6.6), a TrainingArguments dump's `fp16=True,`, accelerate's `mixed_precision: fp16`.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from mpdoctor.explain.explainer import explain

STEPS = 60  # progress lines between the header and the failure: far more than the lines read just above it


def _anomaly_error() -> str:
    """torch's own words for a backward that returned NaN (0/0), with anomaly detection on."""
    x = torch.tensor([0.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode warns that it is on, and where the NaN was made
        with torch.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as raised:
                (x / x).sum().backward()
    return f"RuntimeError: {raised.value}"


def _log(header: str, ending: str) -> str:
    steps = "\n".join(f"Epoch 0: {step}/{STEPS} loss={2.5 - step / 100:.3f}" for step in range(STEPS))
    return f"{header}\n{steps}\n{ending}"


@pytest.fixture(scope="module")
def nan_error() -> str:
    error = _anomaly_error()
    assert "returned nan values" in error
    return error


@pytest.mark.parametrize(
    "header",
    [
        "Using 16bit Automatic Mixed Precision (AMP)",
        "Using bfloat16 Automatic Mixed Precision (AMP)",
        "TrainingArguments(output_dir=out, fp16=True, learning_rate=5e-05,",
        "mixed_precision: fp16",
    ],
)
def test_a_nan_far_below_the_log_s_low_precision_header_is_the_precision_s(nan_error, header):
    found = explain(_log(header, nan_error), "train.log").recognised
    assert [item.family for item in found][:1] == ["numerics"]
    assert found[0].lines[0].text.startswith("RuntimeError: Function")  # the failure's line, not the header


@pytest.mark.parametrize(
    "header",
    [
        "",
        "TrainingArguments(output_dir=out, fp16=False, learning_rate=5e-05,",
        "Trainer(precision=32)",
        "the fp16 checkpoint was converted to fp32 first",  # a precision in passing is no run in it
    ],
)
def test_without_the_run_in_a_low_precision_a_nan_is_not_claimed(nan_error, header):
    assert explain(_log(header, nan_error), "train.log").recognised == []


def test_a_run_in_low_precision_that_ends_on_another_failure_is_not_claimed(nan_error):
    ending = "Traceback (most recent call last):\nKeyError: 'labels'"
    assert explain(_log("Using 16bit Automatic Mixed Precision (AMP)", ending), "train.log").recognised == []
