"""`mpdoctor explain` on rounds 9 to 13 (tests/explain_heldout/round9.json ... round13.json): fresh pools of real messages
collected one after another in issue 38's stop 32, after the sealed round 8, each from kinds of source no earlier set
had used (each round's `about` says which, and what was dropped):

* round 9, 142 messages: training-side and inference/kernel libraries (Lightning, accelerate, DeepSpeed, apex, Horovod,
  vLLM, TensorRT-LLM, ONNX Runtime, AutoAWQ, ComfyUI, MPS, Intel XPU, executorch...);
* round 10, 120: model and research repositories and applications, and the PyTorch ecosystem's core repositories;
* round 11, 151: LLM, chat and speech code (many from the Chinese open-source community), and scientific, vision,
  audio and 3D machine learning;
* round 12, 156: consumer image, video and audio applications and their extensions, and training code people adapt;
* round 13, 139: robotics, reinforcement learning, MLOps and accelerators other than CUDA GPUs (XLA, Ascend, Neuron,
  Gaudi, DirectML), and medical imaging, OCR, video, speech and embedding code; collected last, measured fresh on the
  stop's final code (9922149) before it was learned from;
* round 14, 232 (stop 33): the long tail of LLM training, quantization and serving, science and domain ML, research
  code, detection and tracking, speech synthesis and NLP libraries; measured at that stop's start (0225671) and after
  it learned again from the older rounds (e6ea1c0), then read whole to learn from;
* round 15, 87 (collected at the end of stop 33, after its learning): talking-head, avatar and video generation code,
  local LLM and VLM apps, agent and RAG stacks, tabular, AutoML, self-supervised, continual and federated learning
  code; measured fresh at stop 33's start (0225671) and its final code (8fab39e), read as counts only until stop 34
  read it whole to learn from;
* round 17, 143 (stop 34, collected after the sealed round 16): GANs, image restoration and controllable diffusion
  add-ons, NLP toolkits (Chinese and multilingual ones too), video understanding and geometry, training utilities and
  smaller frameworks (Keras 3 on torch, skorch, optimizer research code, reinforcement-learning libraries); measured at
  the stop's start (a1cfada) and at b623079, then read whole to learn from;
* round 18, 115 (stop 34, after round 17 was learned from): edge, embedded and non-NVIDIA accelerators (WebGPU and
  ONNX Runtime Web, OpenCL, Metal, Arm, Edge TPU, Qualcomm), probabilistic and scientific computing (JAX, NumPy,
  SciPy among them), document AI and CLIP-style and VLM fine-tuning code, domain foundation models; measured at the
  stop's start (a1cfada) and at 8308915 (34 of 73 both times: nothing learned from rounds 15 and 17 reached it), then
  read whole to learn from;
* round 20, 101 (stop 35, collected at its start): LLM evaluation, interpretability, model-editing and merging tools,
  model compression (pruning, sparsity, research quantization), vision backbone and image-generation research code,
  small-LLM pretraining and the long tail of LLM serving and offloading; measured at the stop's start (92c3b15), then
  read whole to learn from;
* round 24, 123 (stop 36): pose and motion, open-vocabulary segmentation and diffusion editing, MoE, code and math
  LLMs, pretraining infrastructure, edge, browser and Windows toolchains; measured at 6fce3d5 and 69858c0, then read
  whole to learn from;
* round 26, 98 (stop 37, collected at its start beside the sealed round 27): molecular ML, LLM stacks outside the
  mainstream, speech toolkits and generative-model research code; measured at 43605b1 and 4732ada, then read whole
  to learn from;
* round 28, 67 (stop 37, after round 26 was learned, beside the sealed round 29; short, the search budget ran out):
  depth, flow and matting code, agent and RAG apps on local models, personalization and editing research, graph ML;
  measured at 43605b1 and 9a086df, then read whole to learn from.

Each round was checked in code to share no thread and no text with any earlier set (round 8 included) or mined table,
labelled before measuring, measured twice before anything was learned from it (`measured_at`: its stop's start,
ea72e7f or 0225671, and the commit of the moment), then read whole to learn from (`measured_at.whole_round_learned`): they are
older sets now, no part of them held out. The figures are in docs/explain.md.
"""

from __future__ import annotations

import pytest

from heldout import SplitRound, first_family

# Every set in the order it was collected: a round holds nothing of those before it.
ORDER = [
    "messages.json",
    "round3.json",
    "round4.json",
    "round5.json",
    "round6.json",
    "round7.json",
    "round8.json",
    "round9.json",
    "round10.json",
    "round11.json",
    "round12.json",
    "round13.json",
    "round14.json",
    "round15.json",
    "round16.json",
    "round17.json",
    "round18.json",
    "round19.json",
    "round20.json",
    "round21.json",
    "round22.json",
    "round23.json",
    "round24.json",
    "round25.json",
    "round26.json",
    "round27.json",
    "round28.json",
    "round29.json",
]
# name -> (the commits of the two measurements before learning, (least mixed, least other), negatives explain claims
# today: source -> why it is a real false positive, a strict xfail: SplitRound.others)
ROUNDS = {
    "round9.json": (("ea72e7f", "017d572"), (100, 30), {}),
    "round10.json": (("ea72e7f", "3e9abaf"), (85, 30), {}),
    "round11.json": (("ea72e7f", "24dacb4"), (110, 40), {}),
    "round12.json": (("ea72e7f", "a180f5a"), (110, 40), {}),
    "round13.json": (("ea72e7f", "9922149"), (90, 40), {}),
    "round14.json": (("0225671", "e6ea1c0"), (140, 80), {}),
    "round15.json": (("0225671", "8fab39e"), (55, 28), {}),
    "round17.json": (
        ("a1cfada", "b623079"),
        (90, 44),
        {
            "https://github.com/asieradzk/RL_Matrix/issues/28": (
                "torch's 'probability tensor contains either inf, nan or element < 0' is read as the numerics family "
                "(rounds 11 and 15 label it so, fp16 generation's NaNs); here it is a reinforcement-learning policy "
                "diverging at a high learning rate in full precision, which the message alone does not say"
            ),
        },
    ),
    "round18.json": (("a1cfada", "8308915"), (70, 40), {}),
    # measured once before learning: nothing was learned before it in its stop, so both measurements are the start's
    "round20.json": (("92c3b15", "92c3b15"), (60, 30), {}),
    # collected after stop 36's first changes (69858c0); measured there and at the stop's start, the same figure
    "round24.json": (
        ("6fce3d5", "69858c0"),
        (60, 40),
        {
            "https://github.com/alex-hh/profam/pull/364": (
                "transformers' 'Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the "
                "current dype ... is torch.float32' is read as the attention family (rounds 6 and 10 label it so: "
                "the model runs in fp32 under FlashAttention); here Lightning casts the model to bf16 right after the "
                "warning, which the message alone does not say"
            ),
        },
    ),
    # collected at stop 37's start beside the sealed round 27; 4732ada (a notice for unnamed NaNs) changed no answer
    "round26.json": (
        ("43605b1", "4732ada"),
        (55, 30),
        {
            "https://github.com/flashinfer-ai/flashinfer/issues/157": (
                "flashinfer's 'BatchPrefillWithPagedKVCache failed to dispatch with dtype Half' is read as the "
                "attention family (a fused attention kernel refusing the run's dtype); here the dispatch failed for "
                "Gemma's head dimension 256, which that release had no kernel for in any dtype, and the message "
                "names only the dtype"
            ),
            "https://github.com/MadryLab/dataset-interfaces/issues/1": (
                "accelerate's 'Unknown mixed_precision mode: fp32. Choose between ...' is a precision setting "
                "refused (framework-precision-setting-unknown, learned from threads labelled so); the collector "
                "labelled it no precision failure, since full precision is accelerate's 'no' and nothing failed in "
                "a low precision"
            ),
        },
    ),
    # collected after round 26 was learned (9a086df), beside the sealed round 29; measured there and at the start
    "round28.json": (
        ("43605b1", "9a086df"),
        (40, 20),
        {
            "https://github.com/Anbeeld/beellama.cpp/issues/120": (
                "llama-server's 'Unsupported cache type: kvarn6' with its usage listing 'allowed values: f32, f16, "
                "bf16, ...' is read as a dtype refused; the collector labelled it no precision failure, since the "
                "value refused is a cache type that build takes only for the V cache, not a dtype"
            ),
        },
    ),
}
LOADED = {name: SplitRound(name) for name in ROUNDS}


@pytest.mark.parametrize("name", ROUNDS)
def test_the_set_is_what_it_says(name):
    round_ = LOADED[name]
    assert round_.problems() == []
    assert round_.composition_problems(*ROUNDS[name][1]) == []
    assert round_.wrong_splits() == []


@pytest.mark.parametrize("name", ROUNDS)
def test_held_out_from_the_earlier_sets(name):
    # no thread, and no whole message text, that an earlier set (round 8 included) or a mined table holds
    assert LOADED[name].already_in(ORDER[: ORDER.index(name)]) == []


@pytest.mark.parametrize("name", ROUNDS)
def test_the_measurements_before_learning_are_recorded(name):
    round_ = LOADED[name]
    measured = round_.data["measured_at"]
    first, second = ROUNDS[name][0]
    for commit in (first, second):
        before = measured[commit]
        assert (before["mixed"], before["other"]) == (len(round_.mixed), len(round_.other))
        wrong = before["mixed_silent"] + before["mixed_wrong_family"]
        assert wrong == before["mixed"] - before["mixed_right_family_first"]
        assert (
            sum(before[s]["mixed_right_family_first"] for s in ("learn", "held")) == before["mixed_right_family_first"]
        )
        for split in ("learn", "held"):
            assert before[split]["mixed"] == sum(bool(e["family"]) for e in round_.mixed if e["split"] == split)
    # the later measurement, still before learning, was no worse: what changed between them was learned elsewhere
    assert measured[second]["mixed_right_family_first"] >= measured[first]["mixed_right_family_first"]
    assert round_.whole_round_problems() == []


@pytest.mark.parametrize("name", ROUNDS)
def test_mixed_precision_messages_get_their_family_first(name):
    wrong = LOADED[name].wrong_families()
    assert not wrong, wrong


@pytest.mark.parametrize("name", ROUNDS)
def test_the_known_gaps_are_still_gaps(name):
    closed = LOADED[name].closed_gaps()
    assert not closed, f"explained now: take them out of known_gaps in {name}: {closed}"


OTHERS = [
    pytest.param(name, *param.values, marks=param.marks, id=f"{name.removesuffix('.json')}-other-{i}")
    for name in ROUNDS
    for i, param in enumerate(LOADED[name].others(ROUNDS[name][2]))
]


@pytest.mark.parametrize("name, entry", OTHERS)
def test_other_errors_stay_not_recognised(name, entry):
    assert first_family(entry["message"]) is None, (entry["source"], entry["cause"])
