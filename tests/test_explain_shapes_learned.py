"""The general reader's shapes learned from rounds 26 and 28 (issue 38's stop 37), on those rounds' own messages: each
read from the round's file by its thread, never retyped, with the collector's label checked first; and the words the
vocabulary reads as a low precision (or not: a path, a list of dtypes, audio's 16-bit samples).
"""

from __future__ import annotations

import pytest


# Round 26's general shapes, on its own messages (read from the round's file by thread, never retyped)
ROUND_26 = [
    ("https://github.com/ServeurpersoCom/acestep.cpp/issues/69", "op-support"),  # ggml: `Missing CPY op for types`
    ("https://github.com/mozilla-ai/llamafile/issues/499", "op-support"),  # ggml: `unsupported op 'MUL_MAT' on bf16`
    (
        "https://github.com/vllm-project/vllm-metal/pull/690",
        "op-support",
    ),  # NumPy: `data type 'bfloat16' not understood`
    ("https://github.com/1CatAI/1Cat-vLLM/issues/433", "compiler"),  # nvcc: `identifier "make_bfloat162" is undefined`
    ("https://github.com/punica-ai/punica/issues/42", "compiler"),
    ("https://github.com/EricLBuehler/candle-vllm/issues/112", "compiler"),  # nvcc's `kernel.cu(126)` location
    ("https://github.com/facebookresearch/metaseq/issues/175", "dtype"),  # "mixing fp32 and fp16"
    ("https://github.com/marin-community/levanter/pull/522", "dtype"),  # "a mismatch with the type of"
    ("https://github.com/bklynhlth/openwillis/issues/147", "hardware"),  # "float16 is not supported on my system"
    ("https://github.com/modular/modular/issues/5187", "hardware"),  # `only supported on sm90`, fp8 named above
    ("https://github.com/QwenLM/Qwen3-ASR/pull/191", "attention"),  # SDPA's `No available kernel`, quoted cut
    (
        "https://github.com/nerdyrodent/CLIP-Guided-Diffusion/issues/5",
        "cpu-half",
    ),  # `'unfolded2d_copy not implemented'`
    ("https://github.com/asteroid-team/asteroid/issues/252", "numerics"),  # "16bit training ... results are worse"
    ("https://github.com/meizhong986/WhisperJAV/issues/414", "numerics"),  # 数值不稳定, 乱码
    ("https://github.com/albarji/mixture-of-diffusers/issues/3", "overflow"),  # "cast ... into `torch.float16`"
    ("https://github.com/OpenBuddy/OpenBuddy/issues/23", None),  # bf16 only in a checkpoint's path
]


# And round 28's
ROUND_28 = [
    ("https://github.com/lc700x/desktop2stereo/issues/12", "numerics"),  # "I haven't this problem with fp32"
    ("https://github.com/NVIDIA-AI-IOT/redtail/issues/100", "numerics"),  # "doesn't seem to be right", in fp16
    ("https://github.com/HabanaAI/vllm-fork/issues/443", "numerics"),  # "not as good as that on Float32"
    ("https://github.com/mlc-ai/web-stable-diffusion/issues/45", "compiler"),  # TVM: "must be equal", dynamo
    ("https://github.com/lllyasviel/ControlNet/issues/64", "mps"),  # MLIR's unranked `tensor<*xf16>`
    ("https://github.com/BBC-Esq/VectorDB-Plugin/issues/262", "hardware"),  # "if cuda compute is below 8.6"
    ("https://github.com/cocktailpeanut/fluxgym/issues/241", "hardware"),  # "My card ... doesn't support bf16"
    ("https://github.com/truera/trulens/pull/662", "op-support"),  # "numpy does not have a bfloat dtype"
    ("https://github.com/yisol/IDM-VTON/issues/79", None),  # an image cast's line in a traceback, another error
    ("https://github.com/openclimatefix/graph_weather/issues/49", "dtype"),  # markdown italics: "... found Half_"
]


def _round_entry(name: str, source: str) -> dict:
    from heldout import Round

    (entry,) = [e for e in Round(name).messages if e["source"] == source]
    return entry


@pytest.mark.parametrize(
    "name,source,family",
    [("round26.json", *case) for case in ROUND_26] + [("round28.json", *case) for case in ROUND_28],
    ids=lambda v: v.split("/")[4] if str(v).startswith("http") else v,
)
def test_rounds_26_and_28s_general_shapes(name, source, family):
    from heldout import first_family

    entry = _round_entry(name, source)
    assert entry["family"] == family  # the collector's label
    assert first_family(entry["message"]) == family


@pytest.mark.parametrize(
    "text,names",
    [
        ("fp8_rowwise requires contiguous 2D FP32/FP16/BF16 on SM89+", ["fp16", "bf16"]),  # a list, no path
        ("loading C:\\models\\llama-7b-fp16\\model.bin", []),  # a path
        ("16bit PCM wav at 44.1 kHz", []),  # audio samples are int16
        ("trained with 16-bit mixed precision", ["fp16"]),
        ("numpy does not have a bfloat dtype", ["bf16"]),
        ("input types 'tensor<2x1280xf32>' and 'tensor<*xf16>'", ["fp16"]),  # fp32 too, but no low one
    ],
)
def test_what_is_written_low_and_what_is_not(text, names):
    from mpdoctor.explain.shapes.vocabulary import written_low

    assert written_low(text.lower()) == names
