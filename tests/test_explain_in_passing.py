"""What explain says when a precision is only named in passing: every text here is a real one, from a held-out
round's thread (labelled there) or a signature's own example, never typed from memory.

* An environment fault beside the precision (a CPU-only torch, xFormers built for another torch, a GradScaler that
  turned itself off without CUDA) is a notice with its fix, not a mixed-precision failure: rounds 7, 11 and 12 label
  each of them no precision failure.
* A line whose writer already ran without the low precision and still failed ("I switch to fp32 but loss is nan now")
  is no precision failure (round 13), while "switching to float32 resolves the NaN" still is (round 12).
* A precision warning logged above a run that ended on another failure (a KeyError) is a notice (round 15), while
  the same warning above a crash's last words stays the failure.
* xFormers' "No operator found" whose listing gives only the build's reasons ("xFormers wasn't build with CUDA
  support") is the build's notice (rounds 17 and 20), while a listing that also refuses the dtype or the GPU stays
  the attention failure (rounds 6 and 10), and so does a paste without its listing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpdoctor.explain.explainer import explain
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.ruled_out import precision_ruled_out

HELDOUT = Path(__file__).parent / "explain_heldout"
SIGNATURES = {s.id: s for s in all_signatures()}


def _message(round_name: str, thread: str) -> dict:
    (entry,) = [e for e in json.loads((HELDOUT / round_name).read_text())["messages"] if e["source"].endswith(thread)]
    return entry


@pytest.mark.parametrize(
    "signature",
    [
        "driver-torch-cpu-only",
        "driver-not-found",
        "attention-xformers-built-for-other-torch",
        "attention-xformers-not-built",
        "scaler-disabled-no-cuda",
    ],
)
def test_an_environment_fault_beside_the_precision_is_a_notice(signature):
    for example in SIGNATURES[signature].examples:
        report = explain(example, "log")
        assert report.recognised == []
        assert [item.id for item in report.notices] == [signature]
        assert report.notices[0].fixes  # still answered with its fix


@pytest.mark.parametrize(
    ("round_name", "thread"),
    [
        ("round7.json", "Comfy-Org/ComfyUI/issues/6612"),
        ("round11.json", "MIC-DKFZ/nnUNet/issues/2447"),
        ("round12.json", "Comfy-Org/ComfyUI-Manager/issues/926"),  # "Forcing FP16." below the warning
        ("round12.json", "Rudrabha/Wav2Lip/issues/502"),
    ],
)
def test_the_rounds_environment_faults_are_no_precision_failure(round_name, thread):
    entry = _message(round_name, thread)
    assert entry["family"] is None
    report = explain(entry["message"], "log")
    assert report.recognised == [] and report.notices


def test_a_writer_who_ruled_the_precision_out():
    fp32_still_nan = _message("round13.json", "facebookresearch/fairseq/issues/2696")
    assert fp32_still_nan["family"] is None
    assert precision_ruled_out(fp32_still_nan["message"].lower())
    assert explain(fp32_still_nan["message"], "issue").recognised == []
    # "switching to float32 ... resolves the NaN issue": the precision is the cause, not ruled out
    fp32_resolves = _message("round12.json", "NVlabs/MambaVision/issues/38")
    assert fp32_resolves["family"] == "numerics"
    assert not precision_ruled_out(fp32_resolves["message"].lower())
    assert [item.family for item in explain(fp32_resolves["message"], "issue").recognised][:1] == ["numerics"]


def test_a_precision_warning_above_another_failure_is_a_notice():
    entry = _message("round15.json", "OpenBMB/MiniCPM/issues/92")
    assert entry["family"] is None and "KeyError: 'messages'" in entry["message"]
    report = explain(entry["message"], "log")
    assert report.recognised == []
    assert [item.id for item in report.notices] == ["attention-kernel-half-only"]
    # the same warning, with the run ending on it (the KeyError's traceback cut away), is the failure
    warning = entry["message"].split("Traceback (most recent call last):")[0]
    assert [item.id for item in explain(warning, "log").recognised] == ["attention-kernel-half-only"]


def test_a_crash_s_last_words_do_not_make_the_failure_above_them_a_notice():
    entry = _message("round5.json", "AshleyYakeley/stable-diffusion-rocm/issues/4")
    assert entry["message"].rstrip().endswith("Aborted (core dumped)")
    assert [item.family for item in explain(entry["message"], "log").recognised] == [entry["family"]]


@pytest.mark.parametrize(
    ("round_name", "thread"),
    [("round17.json", "ZHO-ZHO-ZHO/ComfyUI-InstantID/issues/89"), ("round20.json", "wusize/CLIPSelf/issues/10")],
)
def test_xformers_refusing_every_kernel_only_for_its_build_is_a_notice(round_name, thread):
    entry = _message(round_name, thread)
    assert entry["family"] is None and "No operator found" in entry["message"]
    report = explain(entry["message"], "log")
    assert report.recognised == []
    assert [item.id for item in report.notices] == ["attention-xformers-not-built"]
    assert any(step.command == "python -m xformers.info" for step in report.notices[0].fixes)
    assert any("wasn't build with CUDA support" in line.text for line in report.notices[0].lines)  # its evidence
    # the same listing as torch raises it, the error's name on the failure's own line
    head, listing = entry["message"].split("No operator found", 1)
    raised = "NotImplementedError: No operator found" + listing
    report = explain(raised, "log")
    assert report.recognised == [] and [item.id for item in report.notices] == ["attention-xformers-not-built"]
    # as the CLI reads it (bytes, Windows line ends)
    raw = entry["message"].replace("\n", "\r\n").encode("utf-8")
    report = explain(raw, "log")
    assert report.recognised == [] and [item.id for item in report.notices] == ["attention-xformers-not-built"]
    # the same listing followed by another traceback: the reasons end where it starts
    followed = entry["message"] + "\nTraceback (most recent call last):\nKeyError: 'x'"
    report = explain(followed, "log")
    assert report.recognised == [] and [item.id for item in report.notices] == ["attention-xformers-not-built"]


@pytest.mark.parametrize(
    ("round_name", "thread"),
    [("round6.json", "camenduru/DeepCache-colab/issues/2"), ("round10.json", "Comfy-Org/ComfyUI/issues/3959")],
)
def test_xformers_refusing_the_dtype_or_the_gpu_too_is_the_attention_failure(round_name, thread):
    entry = _message(round_name, thread)
    assert entry["family"] == "attention" and "xFormers wasn't build with CUDA support" in entry["message"]
    report = explain(entry["message"], "log")
    assert [item.id for item in report.recognised][:1] == ["attention-xformers-no-operator"]
    assert "attention-xformers-not-built" in [item.id for item in report.notices]  # the build is broken too


def test_xformers_no_operator_without_its_listing_stays_the_attention_failure():
    entry = _message("round20.json", "wusize/CLIPSelf/issues/10")
    head = entry["message"].split("`cutlassF`")[0]  # the inputs, no kernel's reasons
    assert [item.id for item in explain(head, "log").recognised] == ["attention-xformers-no-operator"]
