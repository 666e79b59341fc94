"""`mpdoctor.dtype_trace` on real tiny torch models on the CPU.

Incidents 3 and 5 of shared/incidents.md are reproduced as they happened (an fp32
mask concatenated with fp16 latents before an fp16 conv; an fp32 query meeting fp16
key and value in SDPA), with the error torch itself raises, and the trace must name
the module where the dtypes met, in its records and in the traceback the user sees.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import traceback
import weakref

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from mpdoctor.trace import hooks as trace_module  # noqa: E402  (after the torch skip)
from mpdoctor.trace import records as trace_records  # noqa: E402
from mpdoctor.trace import dtype_trace  # noqa: E402

HALF, FLOAT = torch.float16, torch.float32


def raised(model, *args, **kwargs):
    """Run ``model`` under a trace; return (trace, exception, the traceback text the user would see)."""
    with pytest.raises(Exception) as info:
        with dtype_trace(model) as trace:
            model(*args, **kwargs)
    exc = info.value
    return trace, exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def hooks_left(model):
    """Every forward hook table of every module, with whatever is still in it."""
    left = {}
    for name, module in model.named_modules():
        for table in (
            "_forward_hooks",
            "_forward_pre_hooks",
            "_forward_hooks_with_kwargs",
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks_always_called",
        ):
            if getattr(module, table, None):
                left[f"{name or '(root)'}.{table}"] = dict(getattr(module, table))
    return left


# ---------------------------------------------------------------- incident 3: fp32 mask, fp16 UNet block


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv_in = nn.Conv2d(cin, cout, 3, padding=1)
        self.act = nn.SiLU()
        self.conv_out = nn.Conv2d(cout, cout, 3, padding=1)

    def forward(self, x):
        return self.conv_out(self.act(self.conv_in(x)))


class InpaintUNet(nn.Module):
    """An inpainting UNet's first stage: latents and mask are concatenated on the channel axis."""

    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList([Block(5, 8), Block(8, 8)])

    def forward(self, latents, mask):
        x = torch.cat([latents, mask], dim=1)  # type promotion: fp16 with fp32 gives fp32
        for block in self.down:
            x = block(x)
        return x


def test_incident_3_an_fp32_mask_concatenated_with_fp16_latents_is_named_at_the_conv():
    model = InpaintUNet().half()
    latents = torch.randn(1, 4, 16, 16, dtype=HALF)
    mask = torch.ones(1, 1, 16, 16)  # created in the default dtype, fp32, as in the incident
    trace, exc, text = raised(model, latents, mask)

    assert type(exc) is RuntimeError
    assert "Input type (float) and bias type (c10::Half) should be the same" in str(exc)  # torch 2.13 CPU
    failure = trace.failure
    assert (failure.module, failure.cls) == ("down.0.conv_in", "Conv2d")
    assert [(t.dtype, t.shape) for t in failure.inputs] == [("float32", (1, 5, 16, 16))]
    assert {(t.name, t.dtype) for t in failure.params} == {("weight", "float16"), ("bias", "float16")}
    assert failure.produced == ()
    assert failure.dtypes == ("float32", "float16")
    # The note leads with where the dtypes first met: the model was given fp16 latents and an fp32 mask.
    assert (
        "mpdoctor dtype_trace: the dtypes first met in (root) (InpaintUNet): float16 from args[0]; "
        "float32 from args[1].\n"
        "  The forward raised later, inside down.0.conv_in (Conv2d): inputs float32 [1, 5, 16, 16]; "
        "parameters float16 (weight, bias); autocast off."
    ) in text
    assert trace.failure.origin == trace.mismatches[0] and trace.failure.origin.module == ""
    assert "float32 and float16 meet here." in text

    # The records show where the fp32 came from: the model itself was given fp16 and fp32.
    root = trace.calls[0]
    assert root.name == "" and [(t.name, t.dtype) for t in root.inputs] == [
        ("args[0]", "float16"),
        ("args[1]", "float32"),
    ]
    assert [c.name for c in trace.calls] == ["", "down.0", "down.0.conv_in"]
    assert [c.raised for c in trace.calls] == [True, True, True]
    # Where they meet: the model takes fp16 latents and an fp32 mask (its forward concatenates them), and the
    # conv then gets the fp32 result with fp16 weights.
    assert [str(m) for m in trace.mismatches] == [
        "(root) (InpaintUNet): float16 from args[0]; float32 from args[1]",
        "down.0.conv_in (Conv2d): inputs float32, parameters float16",
    ]


def test_incident_3_with_the_mask_in_fp16_there_is_nothing_to_report():
    model = InpaintUNet().half()
    with dtype_trace(model) as trace:
        out = model(torch.randn(1, 4, 16, 16, dtype=HALF), torch.ones(1, 1, 16, 16, dtype=HALF))
    assert out.dtype == HALF
    assert trace.failure is None and trace.mismatches == []
    assert len(trace.calls) == 1 + 2 * 4  # the model, then each block with its conv, SiLU, conv
    assert all(c.finished and not c.raised for c in trace.calls)
    assert trace.calls[-1].name == "down.1.conv_out" and trace.calls[-1].output_dtypes == ("float16",)


# ---------------------------------------------------------------- incident 5: fp32 query, fp16 key/value in SDPA


class CrossAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, encoder_out):
        q = self.split(self.q_proj(x))
        k, v = self.split(self.k_proj(encoder_out)), self.split(self.v_proj(encoder_out))
        out = F.scaled_dot_product_attention(q, k, v)
        return self.o_proj(out.transpose(1, 2).flatten(2))


class Decoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = CrossAttention(dim)

    def forward(self, x, encoder_out):
        return self.attn(self.norm(x), encoder_out=encoder_out)


class TTS(nn.Module):
    """Dia-like: the encoder and the key/value projections were cast to fp16 on load, the query path was not."""

    def __init__(self, dim=32):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.decoder = Decoder(dim)

    def forward(self, text, audio):
        return self.decoder(audio, self.encoder(text))


def incident_5_model():
    model = TTS()
    model.encoder.half()
    model.decoder.attn.k_proj.half()
    model.decoder.attn.v_proj.half()
    return model


def test_incident_5_an_fp32_query_with_fp16_key_and_value_is_named_at_the_attention_block():
    model = incident_5_model()
    text_in, audio = torch.randn(2, 12, 32, dtype=HALF), torch.randn(2, 8, 32)
    trace, exc, text = raised(model, text_in, audio)

    assert type(exc) is RuntimeError
    assert (
        "Expected query, key, and value to have the same dtype, but got query.dtype: float "
        "key.dtype: c10::Half and value.dtype: c10::Half instead."
    ) in str(exc)
    failure = trace.failure
    assert (failure.module, failure.cls) == ("decoder.attn", "CrossAttention")
    assert [(t.name, t.dtype, t.shape) for t in failure.inputs] == [
        ("args[0]", "float32", (2, 8, 32)),
        ("encoder_out", "float16", (2, 12, 32)),
    ]  # a keyword input too
    assert [(p.module, p.cls, p.outputs[0].dtype) for p in failure.produced] == [
        ("q_proj", "Linear", "float32"),
        ("k_proj", "Linear", "float16"),
        ("v_proj", "Linear", "float16"),
    ]
    params = {t.name: t.dtype for t in failure.params}
    assert params["q_proj.weight"] == params["o_proj.weight"] == "float32"
    assert params["k_proj.weight"] == params["v_proj.bias"] == "float16"
    assert (
        "mpdoctor dtype_trace: the dtypes first met in (root) (TTS): float16 from args[0]; float32 from args[1].\n"
        "  The forward raised later, inside decoder.attn (CrossAttention): "
        "inputs float32 [2, 8, 32], float16 [2, 12, 32] (encoder_out); "
        "parameters float32 (q_proj.weight, q_proj.bias, o_proj.weight, o_proj.bias), "
        "float16 (k_proj.weight, k_proj.bias, v_proj.weight, v_proj.bias); autocast off."
    ) in text
    assert (
        "before the error, its submodules produced: q_proj (Linear) float32 [2, 8, 32]; "
        "k_proj (Linear) float16 [2, 12, 32]; v_proj (Linear) float16 [2, 12, 32]."
    ) in text
    # o_proj never ran: the error came first.
    assert "decoder.attn.o_proj" not in [c.name for c in trace.calls]
    # Each projection got what its weights expect; the dtypes meet in the attention module, which has no
    # parameters of its own: its inputs differ, and so do the outputs of q_proj and k_proj/v_proj it combines.
    attn = next(m for m in trace.mismatches if m.module == "decoder.attn")
    assert (attn.cls, attn.param_dtypes) == ("CrossAttention", ())
    assert attn.combined == (("q_proj", "float32"), ("k_proj", "float16"), ("v_proj", "float16"))
    # An input that a sibling returned is named with it: the fp32 args[0] is decoder.norm's output.
    assert attn.producers == {
        "float32": ("args[0] (decoder.norm)", "q_proj"),
        "float16": ("encoder_out", "k_proj", "v_proj"),
    }
    assert str(attn) == (
        "decoder.attn (CrossAttention): float32 from args[0] (decoder.norm), q_proj; "
        "float16 from encoder_out, k_proj, v_proj"
    )
    # The model and the decoder are handed both dtypes too (audio fp32, the encoder's output fp16);
    # no projection is a mismatch.
    assert [str(m) for m in trace.mismatches[:2]] == [
        "(root) (TTS): float16 from args[0]; float32 from args[1]",
        "decoder (Decoder): float32 from args[0]; float16 from args[1] (encoder)",
    ]
    assert len(trace.mismatches) == 3
    data = json.loads(json.dumps(trace.to_data()))
    assert data["mismatches"][2]["producers"] == {
        "float32": ["args[0] (decoder.norm)", "q_proj"],
        "float16": ["encoder_out", "k_proj", "v_proj"],
    }
    assert data["calls"][2]["sources"] == [{"input": "args[1]", "module": "encoder"}]
    assert data["calls"][4]["combined"] == [
        {"module": "q_proj", "dtype": "float32"},
        {"module": "k_proj", "dtype": "float16"},
        {"module": "v_proj", "dtype": "float16"},
    ]


def test_incident_5_fixed_by_casting_the_query_path_runs_clean():
    model = incident_5_model()
    model.decoder.half()
    with dtype_trace(model) as trace:
        out = model(torch.randn(2, 12, 32, dtype=HALF), torch.randn(2, 8, 32, dtype=HALF))
    assert out.dtype == HALF and trace.failure is None and trace.mismatches == []


# ---------------------------------------------------------------- a Linear given fp32 with fp16 weights


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


def test_a_linear_with_fp16_weights_given_fp32_input_is_the_failure():
    model = Classifier()
    model.head.half()
    trace, exc, text = raised(model, torch.randn(3, 16))

    assert type(exc) is RuntimeError
    assert "mat1 and mat2 must have the same dtype, but got Float and Half" in str(exc)
    failure = trace.failure
    assert (failure.module, failure.cls, failure.index) == ("head", "Linear", 4)
    assert [str(t) for t in failure.inputs] == ["float32 [3, 16]"]
    assert [(t.name, str(t)) for t in failure.params] == [("weight", "float16 [4, 16]"), ("bias", "float16 [4]")]
    assert failure.error.startswith("RuntimeError: mat1 and mat2 must have the same dtype")
    note = (
        "mpdoctor dtype_trace: raised inside head (Linear): inputs float32 [3, 16]; "
        "parameters float16 (weight, bias); autocast off.\n  float32 and float16 meet here."
    )
    assert failure.note == note and exc.__notes__ == [note] and note in text
    assert [(m.module, m.input_dtypes, m.param_dtypes) for m in trace.mismatches] == [
        ("head", ("float32",), ("float16",))
    ]
    # The exception is torch's own, raised where torch raised it: the trace left no frame in it.
    frames = traceback.extract_tb(exc.__traceback__)
    assert frames[-1].filename.replace("\\", "/").endswith("torch/nn/modules/linear.py")
    assert not any(f.filename.replace("\\", "/").endswith("mpdoctor/trace/hooks.py") for f in frames)


def test_the_table_marks_only_the_failing_and_mismatched_rows():
    model = Classifier()
    model.head.half()
    trace, _, _ = raised(model, torch.randn(3, 16))
    rows = str(trace).splitlines()
    assert rows[0].split() == ["#", "module", "class", "inputs", "params", "outputs", "autocast"]
    marked = [row for row in rows[1:6] if "<-" in row]
    assert len(marked) == 1 and marked[0].split()[:3] == ["4", "head", "Linear"]
    assert marked[0].endswith("<- raised here")
    assert rows[2].split() == ["1", "backbone", "Sequential", "float32[3,16]", "-", "float32[3,16]", "off"]
    assert trace.failure.note in str(trace)
    data = json.loads(json.dumps(trace.to_data()))
    assert data["failure"]["module"] == "head" and data["failure"]["dtypes"] == ["float32", "float16"]
    assert data["mismatches"] == [
        {
            "index": 4,
            "module": "head",
            "class": "Linear",
            "input_dtypes": ["float32"],
            "param_dtypes": ["float16"],
            "producers": {},
        }
    ]
    assert data["calls"][4]["params"] == [
        {"name": "weight", "dtype": "float16", "shape": [4, 16]},
        {"name": "bias", "dtype": "float16", "shape": [4]},
    ]


# ---------------------------------------------------------------- mismatches that do not raise; autocast


class Upcast(nn.Module):
    """Casts its input up itself: fp16 in, fp32 scale, no error, a silent fp32 island."""

    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return (x.float() * self.scale).to(x.dtype)


class KeepNormsFp32(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.scale = Upcast(16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.scale(self.norm(self.embed(x))))


def keep_norms_fp32():
    model = KeepNormsFp32()
    model.embed.half()
    model.out.half()
    return model


def test_mismatches_list_modules_that_ran_with_inputs_and_weights_in_different_dtypes():
    model = keep_norms_fp32()
    with dtype_trace(model) as trace:
        out = model(torch.randn(2, 8, dtype=HALF))
    assert out.dtype == HALF  # torch 2.13's CPU LayerNorm takes fp16 input with fp32 weights
    assert trace.failure is None
    assert [(m.module, m.cls, m.input_dtypes, m.param_dtypes) for m in trace.mismatches] == [
        ("norm", "LayerNorm", ("float16",), ("float32",)),
        ("scale", "Upcast", ("float16",), ("float32",)),
    ]
    assert all(c.autocast is False and c.autocast_dtype is None for c in trace.calls)
    assert sum("<- mismatch" in row for row in trace.table().splitlines()) == 2


class TwoPaths(nn.Module):
    """No parameters of its own: one child in fp32, one in fp16, their outputs added (a silent upcast)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8).half()

    def forward(self, x):
        return self.a(x) + self.b(x.half())  # type promotion: fp32 + fp16 gives fp32, no error


class ToFloat(nn.Module):
    def forward(self, x):
        return x.float()


def test_a_container_that_combines_its_childrens_outputs_in_two_dtypes_is_where_they_meet():
    model = nn.Sequential(TwoPaths(), nn.Linear(8, 2))
    with dtype_trace(model) as trace:
        out = model(torch.randn(2, 8))
    assert out.dtype == FLOAT and trace.failure is None
    (meet,) = trace.mismatches
    assert (meet.module, meet.cls, meet.input_dtypes, meet.param_dtypes) == ("0", "TwoPaths", ("float32",), ())
    assert meet.producers == {"float32": ("a",), "float16": ("b",)}
    assert str(meet) == "0 (TwoPaths): float32 from a; float16 from b"
    assert [row.split()[1] for row in trace.table().splitlines() if "<- mismatch" in row] == ["0"]


def test_a_chain_that_changes_dtype_is_no_meeting():
    # Each child's output is the next child's very input: the Sequential only passes it on.
    model = nn.Sequential(nn.Linear(8, 8).half(), ToFloat(), nn.Linear(8, 8))
    with dtype_trace(model) as trace:
        out = model(torch.randn(2, 8, dtype=HALF))
    assert out.dtype == FLOAT
    assert [c.output_dtypes for c in trace.calls[1:]] == [("float16",), ("float32",), ("float32",)]
    assert trace.mismatches == [] and all(c.combined == () for c in trace.calls)


def test_under_autocast_nothing_is_a_mismatch():
    model = keep_norms_fp32()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with dtype_trace(model) as trace:
            model(torch.randn(2, 8, dtype=HALF))
    assert trace.calls and all(c.autocast is True and c.autocast_dtype == "bfloat16" for c in trace.calls)
    assert trace.mismatches == []
    assert trace.calls[1].name == "embed" and trace.calls[1].output_dtypes == ("bfloat16",)  # autocast cast it
    assert "bfloat16" in trace.table().splitlines()[1]


# ---------------------------------------------------------------- hooks, outputs, memory, re-entrant calls


class Shared(nn.Module):
    """The same block applied twice, and a norm, so one module has two calls."""

    def __init__(self):
        super().__init__()
        self.block = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.block(self.block(x)))


def test_hooks_are_removed_after_a_normal_exit_and_the_outputs_are_unchanged():
    torch.manual_seed(0)
    model = Shared()
    x = torch.randn(4, 8)
    expected = model(x)
    with dtype_trace(model) as trace:
        assert len(hooks_left(model)) >= 3 * 2  # the trace is really hooked in while it runs
        traced = model(x)
    assert hooks_left(model) == {}
    assert torch.equal(traced, expected) and traced.dtype == expected.dtype
    assert [c.name for c in trace.calls] == ["", "block", "block", "norm"]
    first, second = trace.calls[1], trace.calls[2]
    assert first.index != second.index and first.parent == second.parent == 0
    assert first.finished and second.finished and second.inputs[0].dtype == "float32"


def test_hooks_are_removed_after_an_exception():
    model = Classifier()
    model.head.half()
    raised(model, torch.randn(3, 16))
    assert hooks_left(model) == {}
    model.head.float()
    assert model(torch.randn(3, 16)).shape == (3, 4)


def test_the_users_own_hooks_are_left_in_place():
    model = Shared()
    seen = []
    handle = model.block.register_forward_hook(lambda mod, args, out: seen.append(out.dtype))
    with dtype_trace(model):
        model(torch.randn(2, 8))
    assert list(model.block._forward_hooks) == [handle.id] and hooks_left(model).keys() == {"block._forward_hooks"}
    assert seen == [FLOAT, FLOAT]


def test_the_model_called_twice_in_one_trace_gives_two_sets_of_records():
    model = Classifier()
    with dtype_trace(model) as trace:
        model(torch.randn(3, 16))
        model(torch.randn(5, 16))
    roots = [c for c in trace.calls if c.name == ""]
    assert [c.index for c in roots] == [0, 5] and [c.inputs[0].shape for c in roots] == [(3, 16), (5, 16)]
    assert [c.parent for c in trace.calls] == [None, 0, 1, 1, 0, None, 5, 6, 6, 5]


def test_no_tensor_is_kept_alive_by_the_trace():
    model = Classifier()
    model.head.half()
    x = torch.randn(3, 16)
    ref = weakref.ref(x)
    with pytest.raises(RuntimeError):
        with dtype_trace(model) as trace:
            model(x)
    del x
    gc.collect()  # the exception's frames held x until pytest.raises let it go
    assert ref() is None
    assert trace.failure is not None and trace._pending is None

    model.head.float()
    y = torch.randn(3, 16)
    with dtype_trace(model) as trace:
        out = model(y)
    refs = [weakref.ref(y), weakref.ref(out)]
    del y, out
    assert [r() for r in refs] == [None, None]
    assert len(trace.calls) == 5


# ---------------------------------------------------------------- exceptions the trace must not misread


class Fallback(nn.Module):
    """Tries a fast path that raises, catches it, and takes a slow path: a normal forward."""

    def __init__(self):
        super().__init__()
        self.fast = nn.Linear(8, 8).half()
        self.slow = nn.Linear(8, 8)

    def forward(self, x):
        try:
            return self.fast(x)
        except RuntimeError:
            return self.slow(x)


def test_an_exception_caught_inside_the_model_is_not_a_failure():
    model = nn.Sequential(Fallback(), nn.Linear(8, 2))
    with dtype_trace(model) as trace:
        out = model(torch.randn(2, 8))
    assert out.shape == (2, 2) and trace.failure is None
    by_name = {c.name: c for c in trace.calls}
    assert by_name["0.fast"].raised and not by_name["0.fast"].finished
    assert by_name["0.slow"].finished and by_name["0"].finished and by_name["1"].finished
    assert by_name["1"].parent == 0 and by_name["0.slow"].parent == 1
    assert hooks_left(model) == {}


def test_a_later_real_failure_after_a_caught_one_is_still_found():
    model = nn.Sequential(Fallback(), nn.Linear(8, 2).half())
    trace, exc, text = raised(model, torch.randn(2, 8))
    assert (trace.failure.module, trace.failure.cls) == ("1", "Linear")
    # The caught failure was the first place fp32 met the fp16 weights: the note leads with it.
    assert "the dtypes first met in 0.fast (Linear): inputs float32, parameters float16." in text
    assert "raised later, inside 1 (Linear): inputs float32 [2, 8]" in text


def test_a_model_run_inside_an_except_block_records_normal_calls():
    model = Classifier()
    try:
        raise ValueError("the user's own, being handled")
    except ValueError:
        with dtype_trace(model) as trace:
            model(torch.randn(3, 16))
    assert trace.failure is None and all(c.finished and not c.raised for c in trace.calls)


def test_an_error_outside_every_module_gets_no_note():
    model = Classifier()
    with pytest.raises(ZeroDivisionError) as info:
        with dtype_trace(model) as trace:
            model(torch.randn(3, 16))
            1 / 0
    assert trace.failure is None and not getattr(info.value, "__notes__", None)
    assert len(trace.calls) == 5 and hooks_left(model) == {}


def test_the_note_goes_into_the_message_before_python_3_11(monkeypatch):
    monkeypatch.setattr(trace_records, "_HAS_NOTES", False)
    model = Classifier()
    model.head.half()
    trace, exc, text = raised(model, torch.randn(3, 16))
    assert type(exc) is RuntimeError and not hasattr(exc, "__notes__")
    message, note = str(exc).split("\n", 1)
    assert message == "mat1 and mat2 must have the same dtype, but got Float and Half"
    assert note == trace.failure.note
    assert note.startswith("mpdoctor dtype_trace: raised inside head (Linear): inputs float32 [3, 16]")
    assert f"RuntimeError: {message}\n{note}" in text


def test_the_args_path_leaves_a_non_text_message_alone(monkeypatch):
    monkeypatch.setattr(trace_records, "_HAS_NOTES", False)
    exc = RuntimeError(42)
    trace_records.attach_note(exc, "note")
    assert exc.args == (42,)


# ---------------------------------------------------------------- the module itself


def test_importing_the_trace_does_not_import_torch():
    code = "import sys, mpdoctor.trace.hooks; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_a_non_module_is_refused():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        dtype_trace(lambda x: x)


def test_max_calls_bounds_the_records():
    model = Classifier()
    with dtype_trace(model, max_calls=3) as trace:
        model(torch.randn(3, 16))
        model(torch.randn(3, 16))
    assert len(trace.calls) == 3 and trace.dropped == 7
    assert "7 more calls not recorded" in trace.table()


# ---------------------------------------------------------------- older torch: fewer hook options, older autocast API


@pytest.mark.parametrize(
    "pre, post",
    [
        (({"with_kwargs": True},), ({"with_kwargs": True},)),  # torch 2.0: no always_call
        (({},), ({},)),  # torch 1.x: no keyword arguments either
    ],
)
def test_without_always_call_the_last_open_call_is_the_failure(monkeypatch, pre, post):
    monkeypatch.setattr(trace_module, "_PRE_HOOK_OPTIONS", pre)
    monkeypatch.setattr(trace_module, "_POST_HOOK_OPTIONS", post)
    trace, exc, text = raised(InpaintUNet().half(), torch.randn(1, 4, 16, 16, dtype=HALF), torch.ones(1, 1, 16, 16))
    assert (trace.failure.module, trace.failure.inputs[0].dtype) == ("down.0.conv_in", "float32")
    assert "raised later, inside down.0.conv_in (Conv2d): inputs float32 [1, 5, 16, 16]" in text

    model = incident_5_model()
    trace, exc, text = raised(model, torch.randn(2, 12, 32, dtype=HALF), torch.randn(2, 8, 32))
    assert trace.failure.module == "decoder.attn"
    assert [p.module for p in trace.failure.produced] == ["q_proj", "k_proj", "v_proj"]
    assert [c.raised for c in trace.calls] == [True, False, True, False, True, False, False, False]
    assert [t.name for t in trace.failure.inputs] == (["args[0]", "encoder_out"] if pre[0] else ["args[0]"])
    attn = next(m for m in trace.mismatches if m.module == "decoder.attn")  # found from the calls left open
    assert attn.combined == (("q_proj", "float32"), ("k_proj", "float16"), ("v_proj", "float16"))
    assert hooks_left(model) == {}


def test_autocast_is_read_through_the_older_per_device_functions():
    class OldTorch:  # torch before 2.4: no device argument, CPU and CUDA apart
        def is_autocast_enabled():
            return True

        def is_autocast_cpu_enabled():
            return False

        def get_autocast_cpu_dtype():
            return torch.bfloat16

        def get_autocast_gpu_dtype():
            return torch.float16

    is_enabled, get_dtype = trace_module._autocast_queries(OldTorch)
    assert (is_enabled("cpu"), is_enabled("cuda")) == (False, True)
    assert (get_dtype("cpu"), get_dtype("cuda")) == (torch.bfloat16, torch.float16)
    with pytest.raises(ValueError):
        is_enabled("xpu")  # unknown to that torch: the call records autocast as None
    is_enabled, get_dtype = trace_module._autocast_queries(torch)
    assert is_enabled is torch.is_autocast_enabled and get_dtype is torch.get_autocast_dtype


def test_two_traces_over_one_model_add_the_note_once():
    model = Classifier()
    model.head.half()
    with pytest.raises(RuntimeError) as info:
        with dtype_trace(model) as outer, dtype_trace(model.head) as inner:
            model(torch.randn(3, 16))
    assert outer.failure.note == inner.failure.note.replace("inside (root) (Linear)", "inside head (Linear)")
    assert len(info.value.__notes__) == 2  # the inner trace knows the head as its root: a different text
    with pytest.raises(RuntimeError) as info:
        with dtype_trace(model), dtype_trace(model):
            model(torch.randn(3, 16))
    assert len(info.value.__notes__) == 1
    assert hooks_left(model) == {}


class Embeddings(nn.Module):
    """BERT's embeddings: word and position embeddings summed, then a LayerNorm."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(10, 8)
        self.position_embeddings = nn.Embedding(10, 8)
        self.LayerNorm = nn.LayerNorm(8)

    def forward(self, ids):
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(ids))


def test_a_module_that_only_promoted_the_dtype_leads_the_note_not_the_one_that_raised():
    # One embedding left in fp32 in a bf16 model: the sum promotes to fp32 silently, and the error comes from
    # the LayerNorm it feeds. The note must name the embeddings, where the dtypes met, first.
    model = nn.Sequential(Embeddings(), nn.Linear(8, 2)).to(torch.bfloat16)
    model[0].word_embeddings.float()
    trace, exc, text = raised(model, torch.arange(4)[None])
    assert (trace.failure.module, trace.failure.cls) == ("0.LayerNorm", "LayerNorm")
    assert trace.failure.origin is not None and trace.failure.origin.module == "0"
    assert exc.__notes__[0].startswith(
        "mpdoctor dtype_trace: the dtypes first met in 0 (Embeddings): float32 from word_embeddings; "
        "bfloat16 from position_embeddings.\n  The forward raised later, inside 0.LayerNorm (LayerNorm): "
    )
    assert trace.to_data()["failure"]["origin"]["module"] == "0"


class TimestepUNet(nn.Module):
    """diffusers' UNet2DConditionModel in small: a parameter-free sinusoidal timestep projection always gives
    fp32; the UNet casts it to the sample's dtype before its time MLP takes it (``cast=True``), or, in the
    broken variant, adds it to the features as it is."""

    def __init__(self, cast: bool):
        super().__init__()
        self.cast = cast
        self.conv_in = nn.Conv2d(4, 8, 3, padding=1)
        self.time_proj = SinusoidalProjection()
        self.time_embedding = nn.Linear(8, 8)
        self.conv_out = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, sample, timestep):
        t_emb = self.time_proj(timestep)
        if self.cast:
            t_emb = t_emb.to(dtype=sample.dtype)
            emb = self.time_embedding(t_emb)
        else:
            emb = t_emb  # the fp32 embedding meets the fp16 features below
        return self.conv_out(self.conv_in(sample) + emb[:, :, None, None])


class SinusoidalProjection(nn.Module):
    def forward(self, timestep):
        freqs = torch.arange(4, dtype=torch.float32)
        angles = timestep.float()[:, None] * freqs[None]
        return torch.cat([angles.sin(), angles.cos()], dim=1)


@pytest.mark.parametrize("dtype", [HALF, torch.bfloat16])
def test_an_output_cast_to_the_models_dtype_before_use_is_no_mismatch(dtype):
    # A clean fp16/bf16 UNet once read "(root): float32 from time_proj; float16 from conv_out": the fp32
    # timestep embedding was cast before any op took it, so no dtypes met.
    model = TimestepUNet(cast=True).to(dtype)
    with dtype_trace(model) as trace:
        model(torch.randn(1, 4, 8, 8, dtype=dtype), torch.tensor([10]))
    assert trace.mismatches == [] and trace.failure is None


def test_children_outputs_that_really_meet_are_still_a_mismatch():
    # The same fp32 embedding added to the fp16 features as it is: the sum is fp32, and conv_out (left in
    # fp32, so nothing raises) takes it: the dtypes met in the UNet's own forward.
    model = TimestepUNet(cast=False).half()
    model.conv_out.float()
    with dtype_trace(model) as trace:
        model(torch.randn(1, 4, 8, 8, dtype=HALF), torch.tensor([10]))
    assert trace.failure is None
    [mismatch] = trace.mismatches
    assert mismatch.module == "" and mismatch.producers["float32"][0] == "time_proj"
    assert mismatch.producers["float16"] == ("conv_in",)
