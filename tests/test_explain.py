"""`mpdoctor explain`: reading messages, tracebacks and logs in every shape, and the answers it gives.

The knowledge itself is held to its data in test_explain_signatures.py; this file
tests the reader, the matcher's context rules, the CLI contract and the JSON.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from helpers import run_cli
from mpdoctor.explain.explainer import MAX_INPUT, explain, read_stream
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL, UNNAMED_NON_FINITE
from mpdoctor.explain.cleaning import clean
from mpdoctor.explain.matcher import MAX_LINE, find
from mpdoctor.explain.report import SCHEMA_PATH, explain_schema

DTYPE = "RuntimeError: expected scalar type Float but found Half"
APEX_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    out = model(x)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py", line 416, in forward\n'
    "    return fused_rms_norm_affine(input, self.weight, self.normalized_shape, self.eps)\n"
    f"{DTYPE}\n"
)


def ids(text):
    return [m.signature.id for m in find(text, all_signatures())]


# ---------------------------------------------------------------- reading any input


def test_clean_removes_colours_controls_and_windows_line_ends():
    raw = b"\x1b[31mRuntimeError\x1b[0m: expected\x00 scalar type Float but found Half\r\nnext\rlast\xff\xfe"
    text = clean(raw)
    assert text.startswith("RuntimeError: expected scalar type Float but found Half\nnext\nlast")
    assert "\x1b" not in text and "\x00" not in text and "\r" not in text
    assert ids(raw) == ["dtype-expected-scalar-type"]


def test_typographic_quotes_are_read_as_the_ascii_ones():
    # a message pasted through a chat or a word processor: the same failure, on the same line
    message = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'"
    curly = "first line\nRuntimeError: \u201caddmm_impl_cpu_\u201d not implemented for \u2018Half\u2019"
    for raw in (curly, curly.encode("utf-8"), bytearray(curly.encode("utf-8"))):
        assert clean(raw) == "first line\n" + message
        assert ids(raw) == ids(message) == ["cpu-half-matmul"]
    assert explain(curly, "paste").recognised[0].lines[0].line == 2


def test_vertical_tab_and_form_feed_are_spaces_not_glue():
    # removed outright they glued "found Half\x0bfoo" into "Halffoo", and the message went unrecognised
    message = "RuntimeError: expected scalar type Float but found Half"
    for sep in ("\x0b", "\x0c"):
        for raw in (
            (message + sep + "foo").encode(),
            message + sep + "foo",
            (message + sep + "foo\xff").encode("latin-1"),
        ):
            assert clean(raw).startswith(message + " foo")
            assert ids(raw) == ids(message + "\nfoo") == ["dtype-expected-scalar-type"]


def test_binary_junk_and_invalid_utf8_are_read_not_raised():
    junk = bytes(range(256)) * 200 + b"\n" + DTYPE.encode() + b"\n" + bytes(range(255, -1, -1)) * 50
    assert "dtype-expected-scalar-type" in ids(junk)


def test_a_truncated_traceback_still_gives_its_context():
    cut = APEX_TRACEBACK.split("\n", 3)[3]  # the head and the first frame are gone
    assert ids("Traceback (most recent call last):\n" + cut) == ["apex-fused-norm-dtype"]
    # no traceback header, as issues often quote one: the frames right above the error are still its own
    assert ids(cut) == ["apex-fused-norm-dtype"]
    assert ids(cut.replace("    return", "my notes:\n    return")) == ["dtype-expected-scalar-type"]  # not above it


def test_windows_paths_count_as_frames():
    windows = APEX_TRACEBACK.replace(
        "/opt/conda/lib/python3.10/site-packages/apex/normalization/",
        "C:\\\\Python310\\\\lib\\\\site-packages\\\\apex\\\\normalization\\\\",
    )
    windows = windows.replace("\\\\", "\\")
    assert ids(windows) == ["apex-fused-norm-dtype"]


def test_torchrun_prefixed_frames_count():
    prefixed = "\n".join(f"[rank0]: {line}" for line in APEX_TRACEBACK.splitlines())
    assert ids(prefixed) == ["apex-fused-norm-dtype"]


def test_context_decides_the_explanation():
    assert ids(DTYPE) == ["dtype-expected-scalar-type"]
    assert ids(APEX_TRACEBACK) == ["apex-fused-norm-dtype"]
    (match,) = find(APEX_TRACEBACK, all_signatures())
    assert [frame.file for frame in match.frames] == [
        "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py"
    ]


def test_a_later_traceback_has_its_own_context():
    log = (
        APEX_TRACEBACK + "retrying without apex\n" + "Traceback (most recent call last):\n"
        '  File "train.py", line 30, in <module>\n' + DTYPE + "\n"
    )
    assert set(ids(log)) == {"apex-fused-norm-dtype", "dtype-expected-scalar-type"}


def test_the_error_that_ended_the_run_comes_before_a_warning_above_it(tmp_path):
    """Real torch: CPU autocast refuses float64 with a warning, then a matmul fails on fp32 meeting fp16. The error
    is explained first, though its line comes after the warning's; the warning keeps its explanation, second."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = tmp_path / "run.py"
    script.write_text(
        "import torch\n"
        'with torch.autocast("cpu", dtype=torch.float64):\n'
        "    torch.nn.functional.linear(torch.randn(2, 4), torch.randn(3, 4).half())\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "UserWarning" in run.stderr, run.stderr
    found = find(run.stderr, all_signatures())
    assert [m.signature.family for m in found] == ["dtype", "cpu-half"], [m.signature.id for m in found]
    assert found[0].lines[0][0] > found[1].lines[0][0]  # the error's line is the later one
    # warnings alone, or errors alone, keep the order they appear in
    warning = run.stderr.split("Traceback")[0]
    assert [m.signature.family for m in find(warning + warning, all_signatures())] == ["cpu-half"]
    assert ids(DTYPE + "\n" + APEX_TRACEBACK) == ["dtype-expected-scalar-type", "apex-fused-norm-dtype"]


def test_lines_are_numbered_and_capped():
    log = "\n".join(f"step {i}" for i in range(1000)) + "\n" + "\n".join([DTYPE] * 50) + "\n"
    (match,) = find(log, all_signatures())
    assert [number for number, _ in match.lines] == [1001, 1002, 1003, 1004, 1005]


def test_adversarial_lines_are_cut_and_finish():
    """Lines made of the needles' pieces, megabytes long, with no real message in them."""
    needles = sorted({n for s in all_signatures() for n in s.needles})
    near = "".join(f"{needle} {needle[:-1]} " for needle in needles)  # every needle, then a cut-short copy
    line = near * (4 * MAX_LINE // max(1, len(near)) + 1)
    data = "\n".join([line] * 20)
    # Whatever the needles' lines happen to spell must be found once each, and the scan must end.
    first = ids(line[:MAX_LINE])
    assert ids(data) == first


def test_a_large_log_is_read_in_one_pass():
    body = "epoch 1 step 10 loss 0.25 lr 1e-4 dtype float16 half\n" * 200_000  # ~10 MB of plausible noise
    result = find(body + APEX_TRACEBACK, all_signatures())
    assert [m.signature.id for m in result] == ["apex-fused-norm-dtype"]
    assert result[0].lines[0][0] == 200_000 + 6


def test_stdin_keeps_the_end_of_an_overlong_stream():
    import io

    data, cut = read_stream(io.BytesIO(b"x" * 3000 + b"END"), limit=1000)
    assert cut and len(data) == 1000 and data.endswith(b"END")
    assert read_stream(io.BytesIO(b"short"), limit=1000) == (b"short", False)
    assert MAX_INPUT >= 100 << 20  # a 100 MB log is read whole


# ---------------------------------------------------------------- the command


def test_cli_argument_stdin_and_file(tmp_path):
    by_argument = run_cli("explain", DTYPE)
    assert by_argument.returncode == 0, by_argument.stderr
    assert "expected scalar type Float but found Half" in by_argument.stdout
    log = tmp_path / "train.log"
    log.write_bytes(b"\x1b[1mstarting\x1b[0m\r\n" + APEX_TRACEBACK.encode().replace(b"\n", b"\r\n"))
    by_file = run_cli("explain", "--file", str(log), "--format", "json")
    assert by_file.returncode == 0, by_file.stderr
    assert [item["id"] for item in json.loads(by_file.stdout)["recognised"]] == ["apex-fused-norm-dtype"]
    by_stdin = run_cli("explain", "-", input=APEX_TRACEBACK)
    assert by_stdin.returncode == 0 and "apex" in by_stdin.stdout
    assert "pip uninstall -y apex" in by_stdin.stdout


def test_nothing_recognised_says_so_and_exits_1():
    result = run_cli("explain", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert result.returncode == 1
    assert "No known mixed-precision failure recognised" in result.stdout
    data = json.loads(run_cli("explain", "all fine", "--format", "json").stdout)
    assert data["recognised"] == []


@pytest.mark.parametrize(
    "args,message",
    [
        ((), "exactly one of them"),
        (("text", "--file", "x.log"), "exactly one of them"),
        (("--file", "/nonexistent/x.log"), "no such file"),
        (("--file", "/"), "is a directory"),
        (("text", "--python", "/usr/bin/python3"), "only applies with --check"),
    ],
)
def test_usage_errors_exit_2_without_a_traceback(args, message):
    result = run_cli("explain", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_json_is_versioned_and_matches_the_shipped_schema():
    assert json.loads(SCHEMA_PATH.read_text()) == explain_schema()  # regenerate: python -m mpdoctor.schema
    data = json.loads(run_cli("explain", "-", "--format", "json", input=APEX_TRACEBACK).stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(data)
    assert list(data)[:2] == ["schema_version", "mpdoctor_version"]
    (item,) = data["recognised"]
    assert item["lines"] == [{"line": 6, "text": DTYPE}]
    assert item["frames"] == [
        "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py:416 in forward"
    ]
    assert item["fixes"][0]["command"] == "pip uninstall -y apex"
    assert item["sources"] and item["checks"]


def _real_deprecation_warning() -> str:
    """The FutureWarning the installed torch itself prints for the old autocast spelling (no text from memory)."""
    import warnings

    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.amp.autocast(enabled=False)
    (warning,) = [w for w in caught if issubclass(w.category, FutureWarning)]
    return f"FutureWarning: {warning.message}"


def test_a_deprecation_is_a_notice_not_a_failure():
    """Held-out rounds 12 and 14 label torch's deprecation warnings no failure: explain answers them with the call
    that replaces them, among the notices, and a real failure after one is still read (here by its shape)."""
    deprecation = _real_deprecation_warning()
    result = run_cli("explain", "-", "--format", "json", input=deprecation)
    assert result.returncode == 1  # nothing failed
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(data)
    assert data["recognised"] == []
    (notice,) = data["notices"]
    assert notice["id"] == "scaler-amp-api-deprecated" and "torch.amp.autocast" in notice["fixes"][0]["text"]
    text = run_cli("explain", deprecation).stdout
    assert "No known mixed-precision failure recognised" in text and "only 1 notice" in text
    # round 9's SimpleTuner thread: a kernel's failed dtype check, which only the general reader knows
    failure = "RuntimeError: Expected A.dtype() == at::kBFloat16 to be true, but got false."
    report = explain(f"{deprecation}\n{failure}", "log")
    assert [item.id for item in report.recognised] == ["general-op-support"]
    assert [item.id for item in report.notices] == ["scaler-amp-api-deprecated"]


def test_secrets_in_the_input_do_not_reach_the_output():
    canary = "hf_CANARYcanaryCANARYcanary1234"
    text = f"HF_TOKEN={canary} https://user:p4ssw0rd@example.com/x {DTYPE}"
    for fmt in ("text", "json"):
        result = run_cli("explain", text, "--format", fmt)
        assert result.returncode == 0
        assert canary not in result.stdout and "p4ssw0rd" not in result.stdout


def test_list_shows_every_signature():
    result = run_cli("explain", "--list", "--format", "json")
    listed = json.loads(result.stdout)
    general = [s.id for s in GENERAL.values()] + [UNNAMED_NON_FINITE.id]
    assert [s["id"] for s in listed] == [s.id for s in all_signatures()] + general
    assert all(s["sources"] and s["examples"] for s in listed)
    text = run_cli("explain", "--list")
    assert "apex-fused-norm-dtype" in text.stdout and "learned from:" in text.stdout


def test_check_runs_the_confirming_checks_here():
    result = run_cli("explain", "-", "--check", "--format", "json", "--timeout", "60", input=APEX_TRACEBACK)
    data = json.loads(result.stdout)
    assert data["checked"] is True and data["check_error"] == ""
    # this machine has no apex: the apex checks find nothing, and the report says they ran
    assert data["recognised"][0]["findings"] == []
    text = run_cli("explain", "-", "--check", input=APEX_TRACEBACK)
    assert "those checks found nothing" in text.stdout


def test_explain_imports_neither_torch_nor_anything_heavy():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mpdoctor", "explain", DTYPE], capture_output=True, text=True
    )
    assert result.returncode == 0
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    # torch is what users debug; pydantic is what typer 0.29 would pull in (pyproject pins below it);
    # the snapshot and probes are only for --check (the redactor, shared with the probed interpreter, lives
    # in mpdoctor.portable, outside probes; the progress board, a dict under a lock, is what reading a big log
    # posts to; the --timeout option every probing command shares, read into a Budget: probes/budget.py, a leaf
    # module, with the default it takes from portable/limits.py; the CLI's entry point making itself a child
    # subreaper before any command runs: probes/orphans.py, a leaf module)
    for heavy in ("torch", "pydantic", "mpdoctor.snapshot", "mpdoctor.doctor.diagnose"):
        assert heavy not in imported, heavy
    shared = {"mpdoctor.probes", "mpdoctor.probes.progress", "mpdoctor.probes.budget", "mpdoctor.probes.orphans"}
    assert not {name for name in imported if name.startswith("mpdoctor.probes")} - shared


def test_the_report_counts_what_it_read():
    report = explain(b"one\ntwo\n" + DTYPE.encode(), "stdin")
    assert report.input_lines == 3 and report.input_bytes == len(b"one\ntwo\n" + DTYPE.encode())


INCIDENTS = [  # ../shared/incidents.md: the message each one began with, the explanation, a confirming check
    (APEX_TRACEBACK, "apex-fused-norm-dtype", "APEX005"),
    (
        "RuntimeError: InferDataType Failed. Expected kFloat, but got kFloat16",
        "oneflow-infer-dtype-mismatch",
        "ONEFLOW005",
    ),
    (
        "RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half",
        "dtype-matmul-mismatch",
        "PREC007",
    ),
    (
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
        "dtype-conv-input-weight-type",
        "PREC007",
    ),
    (
        "RuntimeError: Input type (float) and bias type (c10::Half) should be the same",
        "dtype-conv-input-weight-type",
        "PREC007",
    ),
    (
        "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::Half != float",
        "dtype-matmul-mismatch",
        "GPU002",
    ),
    (
        "RuntimeError: Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: "
        "c10::Half and value.dtype: c10::Half instead.",
        "dtype-sdpa-qkv-mismatch",
        "PREC007",
    ),
]


@pytest.mark.parametrize("message,expected,check", INCIDENTS, ids=[i[1] + "-" + i[2] for i in INCIDENTS])
def test_every_incident_message_gets_its_explanation(message, expected, check):
    (match,) = find(message, all_signatures())
    assert match.signature.id == expected
    assert check in match.signature.checks
