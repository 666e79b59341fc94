"""explain at the speed of reading (issue 23): the one-pass needle search and the fast cleaning find exactly what
the plain definitions find, and reading a log posts its progress.

Nothing here is timed (bench/bench_explain.py measures). Every fast path is compared with a definition written
plainly in this file: cleaning is "decode, then three substitutions"; a line is a candidate for a needle when
the needle is in the lower-cased line. The inputs are the signatures' own messages, the held-out real messages,
mixed logs (colours, CRLF, non-ASCII, control bytes, broken UTF-8) and generated text made of needle fragments.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from helpers import run_cli
from mpdoctor.explain import cleaning, explainer, needles
from mpdoctor.explain.explainer import explain, read_file, read_stream
from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.matcher import find
from mpdoctor.probes.progress import ProgressBoard

SIGNATURES = all_signatures()
NEEDLES = list(dict.fromkeys(n for s in SIGNATURES for n in s.needles))
HELD_OUT = json.loads((Path(__file__).parent / "explain_heldout" / "messages.json").read_text(encoding="utf-8"))
MESSAGES = [t for s in SIGNATURES for t in s.examples + s.near_misses] + [
    e["message"] for key in ("mixed_precision", "not_mixed_precision") for e in HELD_OUT[key]
]
ERROR = "RuntimeError: expected scalar type Float but found Half"


# --- the definitions, written plainly -------------------------------------------------------------------------

DEF_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
DEF_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]+")
DEF_SPACES = re.compile(r"[\x0b\x0c]")  # vertical tab and form feed separate words: each becomes a space
DEF_SINGLE = re.compile("[\u2018\u2019\u201a\u201b\u2032]")  # ‘ ’ ‚ ‛ ′
DEF_DOUBLE = re.compile("[\u201c\u201d\u201e\u201f\u2033]")  # “ ” „ ‟ ″


def definition_clean(data: bytes | str) -> str:
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = DEF_SPACES.sub(" ", DEF_CONTROL.sub("", DEF_ANSI.sub("", text)))
    return DEF_DOUBLE.sub('"', DEF_SINGLE.sub("'", text))  # typographic quotes are the ASCII ones


def definition_lines(text: str, needles_: list[str]) -> dict[int, list[int]]:
    """{offset of a line in ``text``: the needles in it, lower-cased}, asking every line for every needle."""
    lower = text.replace("\u0130", "i").lower()  # 'İ' is the one character lower() lengthens
    assert len(lower) == len(text)
    found, offset = {}, 0
    for line in lower.split("\n"):
        held = [i for i, needle in enumerate(needles_) if needle in line]
        if held:
            found[offset] = held
        offset += len(line) + 1
    return found


def outcome(data, engine: str = "auto") -> list:
    return [(m.signature.id, m.lines, [str(f) for f in m.frames]) for m in find(data, SIGNATURES, engine)]


def mixed_log(seed: int, lines: int) -> str:
    """A log as they come: noise, real messages, colours, CRLF, non-ASCII, control bytes, needles in any case."""
    rnd = random.Random(seed)
    out = []
    for i in range(lines):
        r = rnd.random()
        if r < 0.05:
            out.append(rnd.choice(MESSAGES))
        elif r < 0.10:
            needle = rnd.choice(NEEDLES)
            out.append("".join(c.upper() if rnd.random() < 0.5 else c for c in needle) + " x " + needle[:-1])
        elif r < 0.15:
            out.append("\x1b[31m" + rnd.choice(MESSAGES)[:200] + "\x1b[0m\r")
        elif r < 0.20:
            out.append("\u0130step \u2713 \u00e9 \u6570\u636e " + rnd.choice(NEEDLES) + "\x00\x07")
        else:
            out.append(f"[rank0]: step {i} loss 0.25 dtype float16 half precision")
    return "\r\n".join(out)


# --- needles: one pass finds the lines one search per needle finds ---------------------------------------------


def test_the_automaton_is_installed_and_is_what_runs():
    # a declared dependency: the suite must exercise it, not only the fallback
    assert needles.ahocorasick_rs is not None
    expected = outcome(ERROR, "reference")
    with mock.patch.object(needles, "reference_lines", side_effect=AssertionError("the slow path ran")):
        assert outcome(ERROR) == expected and expected


@pytest.mark.parametrize("window", [needles.WINDOW, 4096, 64, 7])
def test_every_message_and_a_mixed_log_give_the_same_lines_both_ways(window):
    texts = [cleaning.clean(m.encode()) for m in MESSAGES]
    texts += [cleaning.clean(mixed_log(seed, 3000).encode()) for seed in (1, 2)]
    with mock.patch.object(needles, "WINDOW", window):  # small windows: needles cut at every possible place
        for text in texts:
            folded = cleaning.fold(text)
            expected = definition_lines(text, NEEDLES)
            assert needles.hit_lines(folded, NEEDLES, len(text), "automaton") == expected
            assert needles.hit_lines(folded, NEEDLES, len(text), "reference") == expected


PIECES = st.sampled_from(
    NEEDLES
    + [n[:-1] for n in NEEDLES]
    + [n[1:] for n in NEEDLES]
    + [
        "\n",
        "\r",
        "\r\n",
        " ",
        "\t",
        "\x1b[0m",
        "\x1b",
        "\x00",
        "\x7f",
        "\u0130",
        "\u00e9",
        "\u6570",
        "\U0001f525",
        "EXPECTED SCALAR TYPE",
        "No Module Named 'oneflow._oneflow_internal'",
        "vs hf vs hf ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(PIECES, max_size=40), window=st.sampled_from([5, 13, 64, 1 << 20]))
def test_generated_text_gives_the_same_lines_both_ways(pieces, window):
    text = cleaning.clean("".join(pieces))
    with mock.patch.object(needles, "WINDOW", window):
        expected = definition_lines(text, NEEDLES)
        assert needles.hit_lines(cleaning.fold(text), NEEDLES, len(text), "automaton") == expected
        assert needles.hit_lines(cleaning.fold(text), NEEDLES, len(text), "reference") == expected


def test_overlapping_needles_on_one_line_all_count():
    # "no module named" and "no module named 'oneflow._oneflow_internal'" overlap: both hold the line
    text = "ModuleNotFoundError: No module named 'oneflow._oneflow_internal'\nok\nno module named x"
    found = needles.hit_lines(cleaning.fold(text), NEEDLES, len(text), "automaton")
    assert found == definition_lines(text, NEEDLES)
    assert {NEEDLES[i] for i in found[0]} >= {
        "no module named",
        "no module named 'oneflow._oneflow_internal'",
        "no module named 'oneflow.",
        "no module named 'oneflow'",
    } - {"no module named 'oneflow'"}


def test_the_automaton_is_given_bounded_windows():
    """A log made of needles returns its occurrences a window at a time, never all at once."""
    sizes = []
    automaton, dense, longest = needles._automaton(tuple(NEEDLES))

    class Recording:
        def find_matches_as_indexes(self, haystack, overlapping=False):
            sizes.append(len(haystack))
            return automaton.find_matches_as_indexes(haystack, overlapping=overlapping)

    text = " ".join(NEEDLES) * 50
    with mock.patch.object(needles, "WINDOW", 1000), mock.patch.object(
        needles, "_automaton", lambda _: (Recording(), Recording(), longest)
    ):
        found = needles.hit_lines(cleaning.fold(text), NEEDLES, len(text), "automaton")
    assert found == definition_lines(text, NEEDLES)
    assert len(sizes) > 1 and max(sizes) <= 1000 + longest - 1


def test_dense_and_sparse_windows_find_what_the_definition_finds():
    """Windows dense with needles are read by the NFA, the others by the DFA; a log alternating the two (and each
    automaton on its own) finds the lines the definition finds."""
    text = cleaning.clean((mixed_log(11, 400) + "\n" + " ".join(NEEDLES) * 20 + "\n" + mixed_log(12, 400)).encode())
    folded = cleaning.fold(text)
    used = []
    sparse, dense, longest = needles._automaton(tuple(NEEDLES))

    class Named:
        def __init__(self, name, automaton):
            self.name, self.automaton = name, automaton

        def find_matches_as_indexes(self, haystack, overlapping=False):
            used.append(self.name)
            return self.automaton.find_matches_as_indexes(haystack, overlapping=overlapping)

    expected = definition_lines(text, NEEDLES)
    for pair in ((sparse, dense), (sparse, sparse), (dense, dense)):
        with mock.patch.object(needles, "WINDOW", 4096), mock.patch.object(
            needles, "_automaton", lambda _, pair=pair: (Named("sparse", pair[0]), Named("dense", pair[1]), longest)
        ):
            assert needles.hit_lines(folded, NEEDLES, len(text), "automaton") == expected
    assert "dense" in used and "sparse" in used


def test_lines_come_out_in_order_whatever_order_the_automaton_reports_in():
    """The library reports matches in the order they end, which keeps lines in order; were that to change, the
    lines still come out in order and whole (a stand-in automaton reporting each window backwards)."""
    automaton, _, longest = needles._automaton(tuple(NEEDLES))

    class Backwards:
        def find_matches_as_indexes(self, haystack, overlapping=False):
            return automaton.find_matches_as_indexes(haystack, overlapping=overlapping)[::-1]

    text = cleaning.clean(mixed_log(9, 3000).encode())
    with mock.patch.object(needles, "WINDOW", 4096), mock.patch.object(
        needles, "_automaton", lambda _: (Backwards(), Backwards(), longest)
    ):
        found = needles.hit_lines(cleaning.fold(text), NEEDLES, len(text), "automaton")
    assert list(found.items()) == list(definition_lines(text, NEEDLES).items())


def test_without_the_library_the_reference_search_runs_and_finds_the_same(monkeypatch):
    log = mixed_log(3, 2000)
    expected = outcome(log)
    monkeypatch.setattr(needles, "ahocorasick_rs", None)
    assert outcome(log) == expected


def test_an_empty_needle_is_refused_not_matched_everywhere():
    with pytest.raises(ValueError, match="empty"):
        needles.hit_lines(b"text", ["x", ""], 4)


# --- find: the same explanations, in the same order ----------------------------------------------------------


def test_find_gives_the_same_explanations_both_ways():
    junk = random.Random(23).randbytes(300_000)
    piece = "".join(f"{n} {n[:-1]} " for n in NEEDLES)
    inputs = [m.encode() for m in MESSAGES] + [
        "\n".join(MESSAGES).encode(),
        mixed_log(4, 5000).encode(),
        mixed_log(5, 500).encode() + b"\xff\xc3\x01\xa9" + ERROR.encode(),
        junk + b"\n" + ERROR.encode(),
        ((piece * 2 + "\n") * 50).encode(),
        ("\u0130" * 70 + "\nx \u0130 " + ERROR + "\n").encode() * 20,
    ]
    for data in inputs:
        assert outcome(data) == outcome(data, "reference")
        assert outcome(bytearray(data)) == outcome(data)  # a file is read into a bytearray


def test_a_big_log_ending_in_a_traceback_is_explained_at_its_last_lines():
    noise = "".join(
        f"[2026-11-21 10:00:00,000] INFO step {i} loss 0.25 dtype float16 half precision enabled\n"
        for i in range(40_000)
    )
    tail = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py", line 416, '
        "in forward\n    return fused_rms_norm_affine(input)\n" + ERROR + "\n"
    )
    found = outcome((noise + tail).encode())
    assert found == outcome((noise + tail).encode(), "reference")
    assert [(item[0], item[1][0][0]) for item in found] == [("apex-fused-norm-dtype", 40_004)]


# --- cleaning: the fast steps give the definition's text ------------------------------------------------------

BYTE_PIECES = st.one_of(
    st.binary(max_size=8),
    st.sampled_from(
        [
            b"\r\n",
            b"\r",
            b"\n",
            b"\x1b[31m",
            b"\x1b[0;1m",
            b"\x1b",
            b"\x1bM",
            b"\x00\x00",
            b"\x7f",
            b"\xc3",
            b"\xa9",
            b"\xe2\x82",
            b"\xac",
            b"\xff",
            b"\xed\xa0\x80",
            "\u0130".encode(),
            "\u00e9".encode(),
            "\u2018".encode(),
            "\u201d".encode(),
            b"Expected Scalar Type",
            b"half",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(BYTE_PIECES, max_size=30))
def test_cleaning_gives_the_definitions_text(pieces):
    data = b"".join(pieces)
    expected = definition_clean(data)
    assert cleaning.clean(data) == expected
    assert cleaning.clean(bytearray(data)) == expected
    text, folded = cleaning.prepare(data)
    assert (text if isinstance(text, str) else text.decode("ascii")) == expected  # ASCII stays bytes
    assert folded == expected.replace("\u0130", "i").lower().encode("utf-8", errors="surrogatepass")
    assert cleaning.clean(data.decode("utf-8", errors="replace")) == expected  # a str argument too


def test_the_byte_set_is_the_control_pattern():
    assert cleaning.CONTROL_BYTES == bytes(c for c in range(128) if DEF_CONTROL.fullmatch(chr(c)))
    assert cleaning.ANSI.pattern == DEF_ANSI.pattern and cleaning.CONTROL.pattern == DEF_CONTROL.pattern


def test_a_log_with_colours_crlf_and_control_bytes_is_cleaned_like_the_definition():
    for data in (mixed_log(6, 3000).encode(), mixed_log(7, 3000).encode().replace("\u0130".encode(), b"I")):
        assert cleaning.clean(data) == definition_clean(data)
        text = cleaning.prepare(data)[0]
        assert (text if isinstance(text, str) else text.decode("ascii")) == definition_clean(data)


# --- reading: whole, bounded, with progress -------------------------------------------------------------------


class Recorder(ProgressBoard):
    """A real board that also keeps every post, to count them."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[tuple] = []

    def update(self, name, text=None, completed=None, total=None, unit=None):
        self.posts.append((name, text, completed))
        super().update(name, text, completed, total, unit)


def task(board: ProgressBoard):
    (state,) = [t for t in board.tasks() if t.name == "explain"]
    return state


def test_reading_a_file_posts_bytes_read_of_its_size_every_few_megabytes(tmp_path):
    log = tmp_path / "run.log"
    size = 3 * explainer.PROGRESS_STEP + 12345
    log.write_bytes(
        b"x\n" * ((size - len(ERROR) - 1) // 2) + b"x" * ((size - len(ERROR) - 1) % 2) + ERROR.encode() + b"\n"
    )
    board = Recorder()
    data, cut = read_file(str(log), progress=board)
    assert data == log.read_bytes() and not cut
    state = task(board)
    assert (state.unit, state.total, state.completed, state.finished) == ("bytes", size, size, False)
    counts = [completed for _, _, completed in board.posts if completed is not None]
    assert counts == sorted(counts) and len(counts) <= size // explainer.PROGRESS_STEP + 2  # never per chunk
    report = explain(data, str(log), cut, progress=board)
    assert report.recognised and task(board).finished


def test_reading_a_stream_posts_bytes_read_without_a_total():
    board = Recorder()
    data, cut = read_stream(io.BytesIO(b"y\n" * (5 << 20)), progress=board)
    state = task(board)
    assert (state.unit, state.total, state.completed) == ("bytes", None, len(data)) and not cut
    assert len(board.posts) <= len(data) // explainer.PROGRESS_STEP + 2


def test_a_named_pipe_posts_bytes_without_a_total(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    # the writer may open the pipe after the reader: the reader waits for it, as a shell pipe does
    writer = subprocess.Popen(["sh", "-c", f'printf "noise\\n%s\\n" "{ERROR}" > "{fifo}"'])
    try:
        board = Recorder()
        data, _ = read_file(str(fifo), progress=board)
    finally:
        try:
            writer.wait(timeout=60)
        finally:
            if writer.poll() is None:  # it never found a reader: leave no process behind
                writer.kill()
                writer.wait()
    assert data.endswith(ERROR.encode() + b"\n") and task(board).total is None


def test_stdin_from_a_file_is_read_like_the_file(tmp_path):
    log = tmp_path / "run.log"
    content = b"noise\n" * 3000 + ERROR.encode() + b"\n"
    log.write_bytes(content)
    with open(log, "rb") as stdin:
        board = Recorder()
        assert read_stream(stdin, progress=board) == (content, False)
        assert (task(board).total, task(board).completed) == (len(content), len(content))
    with open(log, "rb") as stdin:
        stdin.read(6)  # what was already taken from it is not read again
        assert read_stream(stdin, limit=len(content)) == (content[6:], False)
    with open(log, "rb") as stdin:
        assert read_stream(stdin, limit=1000) == (content[-1000:], True)
    with open(log, "rb") as stdin:
        piped = run_cli("explain", "-", "--format", "json", stdin=stdin)
    named = run_cli("explain", "--file", str(log), "--format", "json")
    assert piped.returncode == named.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["recognised"] == json.loads(named.stdout)["recognised"]


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_a_file_is_read_whole_at_any_chunk_size(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(explainer, "CHUNK", chunk)
    log = tmp_path / "run.log"
    for size in (0, 1, 6, 7, 8, 999, 1000, 1001, 1007):
        content = random.Random(size).randbytes(size)
        log.write_bytes(content)
        assert read_file(str(log), limit=1000) == (content[-1000:], size > 1000)
    log.write_bytes(b"a" * 1500 + b"END")
    assert read_file(str(log), limit=1000) == (b"a" * 997 + b"END", True)


def fake_size(size: int):
    """os.fstat as it answered a moment earlier, when the file had ``size`` bytes: a stand-in for a log that
    grows or shrinks between stat and read (a real race is not reproducible)."""
    real = os.fstat

    def fstat(fd):
        info = real(fd)
        return os.stat_result(
            (
                info.st_mode,
                info.st_ino,
                info.st_dev,
                info.st_nlink,
                info.st_uid,
                info.st_gid,
                size,
                info.st_atime,
                info.st_mtime,
                info.st_ctime,
            )
        )

    return fstat


def test_a_file_that_grew_or_shrank_after_stat_is_read_as_it_is(tmp_path, monkeypatch):
    log = tmp_path / "run.log"
    log.write_bytes(b"0123456789" * 100)
    monkeypatch.setattr(explainer, "CHUNK", 64)
    with monkeypatch.context() as m:
        m.setattr(os, "fstat", fake_size(400))  # it grew from 400 to 1000 bytes: all of it is read
        assert read_file(str(log)) == (log.read_bytes(), False)
    with monkeypatch.context() as m:
        m.setattr(os, "fstat", fake_size(400))  # grew past the limit: its last 700 bytes, cut
        assert read_file(str(log), limit=700) == (log.read_bytes()[-700:], True)
    with monkeypatch.context() as m:
        m.setattr(os, "fstat", fake_size(5000))  # it shrank: what is there
        assert read_file(str(log), limit=10_000) == (log.read_bytes(), False)


def test_the_cli_reads_a_mixed_log_as_the_reference_search_explains_it(tmp_path, monkeypatch):
    log = tmp_path / "mixed.log"
    log.write_bytes(mixed_log(8, 20_000).encode() + b"\n" + ERROR.encode() + b"\n")
    result = run_cli("explain", "--file", str(log), "--format", "json")
    assert result.returncode == 0, result.stderr
    monkeypatch.setattr(needles, "ahocorasick_rs", None)
    expected = explain(log.read_bytes(), str(log))
    got = json.loads(result.stdout)
    assert [(r["id"], [(x["line"], x["text"]) for x in r["lines"]], r["frames"]) for r in got["recognised"]] == [
        (e.id, [(x.line, x.text) for x in e.lines], e.frames) for e in expected.recognised
    ]
    assert (got["input_lines"], got["input_bytes"]) == (expected.input_lines, expected.input_bytes)
