"""`mpdoctor explain` on hostile input (issue 22): nothing it reads can hang it, grow it without bound or hide
an error line from it.

Each case is one the issue reproduced against the old reader and matcher. A case that hung runs through the
real CLI in a child with a generous timeout (a guard against a hang, not a measure of speed); work that grew
faster than the input is counted (regex calls), never timed. Figures: bench/bench_hostile.py.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess

import pytest

from helpers import run_cli
from mpdoctor.explain import cleaning, explainer, matcher
from mpdoctor.explain.explainer import InputError, explain, read_file, read_stream
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import find

ERROR = "RuntimeError: expected scalar type Float but found Half"
HANG_GUARD = 120  # seconds: the old matcher never finished; the new one takes well under a second


def recognised(data) -> dict[str, int]:
    """{signature id: line number of its first line}."""
    return {m.signature.id: m.lines[0][0] for m in find(data, all_signatures())}


@pytest.mark.parametrize("count", [1, 10, 59, 60, 61, 500])
def test_dotted_capital_i_neither_hangs_nor_hides_the_error(count):
    # 'İ'.lower() is two characters: offsets found in the lower-cased text were used on the text itself
    text = "\u0130" * count + "\n" + ERROR + "\n"
    assert recognised(text) == {"dtype-expected-scalar-type": 2}
    assert recognised(("x \u0130 " * count) + "\n" * count + ERROR) == {"dtype-expected-scalar-type": count + 1}


def test_sixty_dotted_capitals_through_the_cli(tmp_path):
    log = tmp_path / "dotted.log"
    log.write_text("\u0130" * 60 + "\n" + ERROR + "\n", encoding="utf-8")
    result = run_cli("explain", "--file", str(log), "--format", "json", timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr
    assert [(r["id"], r["lines"][0]["line"]) for r in json.loads(result.stdout)["recognised"]] == [
        ("dtype-expected-scalar-type", 2)
    ]


def test_five_megabytes_of_random_bytes_before_a_real_error_line():
    junk = random.Random(22).randbytes(5 << 20)
    data = junk + b"\n" + ERROR.encode() + b"\n"
    expected = cleaning.clean(junk + b"\n").count("\n") + 1
    assert recognised(data).get("dtype-expected-scalar-type") == expected


def test_a_device_is_refused_not_read_forever():
    result = run_cli("explain", "--file", "/dev/zero", timeout=HANG_GUARD)
    assert result.returncode == 2
    assert "not a regular file" in result.stderr and "Traceback" not in result.stderr
    with pytest.raises(InputError, match="not a regular file"):
        read_file("/dev/zero")


def test_a_named_pipe_is_read_like_stdin(tmp_path):
    """`--file <(zcat run.log.gz)`: the user named a pipe, so it is read to its end in bounded chunks."""
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'printf "noise\\n%s\\n" "{ERROR}" > "{fifo}"'])
    try:
        result = run_cli("explain", "--file", str(fifo), "--format", "json", timeout=HANG_GUARD)
    finally:
        writer.wait(timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["recognised"], result.stdout


class Endless(io.RawIOBase):
    """A stream that never ends (`yes | mpdoctor explain -`), counting what was read from it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert size > 0, "an unbounded read of an endless stream"
        self.served += size
        return b"y\n" * (size // 2) + b"y" * (size % 2)


def test_an_endless_stream_is_read_in_bounded_chunks_and_abandoned():
    stream = Endless()
    data, cut = read_stream(stream, limit=1000, most=5 << 20)
    assert cut and len(data) == 1000
    assert stream.served <= (5 << 20) + 1  # stops at ``most`` (+1: the byte that says there was more)


def test_a_stream_that_ends_at_the_bound_is_not_called_cut():
    assert read_stream(io.BytesIO(b"a" * 100), limit=1000, most=100) == (b"a" * 100, False)


def test_the_size_a_file_claims_is_not_trusted(tmp_path, monkeypatch):
    # /proc files claim 0 bytes and have content; a log can grow between stat and read
    assert b"Name:" in read_file("/proc/self/status")[0]
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 5000 + b"END")
    data, cut = read_file(str(big), limit=1000)
    assert cut and len(data) == 1000 and data.endswith(b"END")
    monkeypatch.setattr(explainer, "CHUNK", 7)  # odd chunks still keep exactly the last ``limit`` bytes
    assert read_file(str(big), limit=1000) == (data, True)


def test_the_read_limit_bounds_memory_as_well_as_time():
    # the text is held a few times over (up to 4 bytes a character); 128 MB keeps that to a few GB at worst,
    # and still reads a 100 MB log whole
    assert 100 << 20 <= explainer.MAX_INPUT <= 128 << 20


class CountingPattern:
    """Stands in for matcher.FRAME, counting the lines it is asked to parse."""

    def __init__(self, pattern) -> None:
        self.pattern, self.calls = pattern, 0

    def match(self, line):
        self.calls += 1
        return self.pattern.match(line)


def test_frames_of_a_long_traceback_are_parsed_once_not_once_per_hit(monkeypatch):
    # one traceback header, then thousands of lines that a frame-dependent signature (apex-fused-norm-dtype)
    # must look back from: the old matcher re-parsed the whole traceback for each of them
    unit = '  File "/work/model.py", line 7, in forward\n' + ERROR + "\n"
    text = "Traceback (most recent call last):\n" + unit * 3000
    counter = CountingPattern(matcher.FRAME)
    monkeypatch.setattr(matcher, "FRAME", counter)
    found = recognised(text)
    assert found == {"dtype-expected-scalar-type": 3}  # no apex frame: the generic explanation, at its first line
    assert counter.calls <= 2 * text.count("\n")


def test_a_log_of_repeated_tracebacks_costs_a_bounded_amount_per_line(monkeypatch):
    block = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 12, in <module>\n    loss = model(x)\n'
        '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call\n'
        f"    return forward_call(*args, **kwargs)\n{ERROR}\n"
    )
    text = block * 20_000  # 8 MB
    counter = CountingPattern(matcher.FRAME)
    monkeypatch.setattr(matcher, "FRAME", counter)
    report = explain(text, "a log")
    assert [(item.id, len(item.lines)) for item in report.recognised] == [("dtype-expected-scalar-type", 5)]
    assert counter.calls <= text.count("\n")  # each line of each traceback parsed at most once


def test_lines_are_redacted_before_they_are_cut():
    token = "hf_" + "Q" * 40
    for pad in (matcher.MAX_LINE - 30, matcher.MAX_LINE - 10, matcher.MAX_LINE - 3):
        line = ERROR + " " + "x" * (pad - len(ERROR) - 2) + " " + token
        report = explain(line + "\n", "argument")
        shown = report.recognised[0].lines[0].text
        assert "QQQ" not in shown and "hf_" not in shown and len(shown) <= matcher.MAX_LINE + 3


def test_the_source_is_redacted(tmp_path):
    log = tmp_path / "run-hf_SourceSourceSourceSource01.log"
    log.write_text(ERROR + "\n")
    for fmt in ("text", "json"):
        result = run_cli("explain", "--file", str(log), "--format", fmt, timeout=HANG_GUARD)
        assert result.returncode == 0, result.stderr
        assert "SourceSource" not in result.stdout and "<redacted>" in result.stdout
    missing = run_cli("explain", "--file", str(tmp_path / "gone-hf_SourceSourceSourceSource01.log"))
    assert missing.returncode == 2 and "SourceSource" not in missing.stderr
