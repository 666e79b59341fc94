"""Fuzzing (hypothesis) of the redactor and of explain's matcher on adversarial text (issue 22).

The redactor: text built from long repeated runs of URL-ish pieces (the inputs that made the old regexes
quadratic), with a secret planted among them, must come out with the secret gone, everything outside secrets
kept, and the same again when redacted twice. Explain: junk of any kind (dotted capitals, random bytes, colour
codes, lone carriage returns) before a real error line must not hide it or shift its line number.

A hang guard (SIGALRM, far beyond what one example takes) turns a runaway regex into a failure instead of a
stuck suite; nothing here asserts a time. Figures: bench/bench_hostile.py.
"""

from __future__ import annotations

import contextlib
import signal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.cleaning import clean
from mpdoctor.explain.matcher import find
from mpdoctor.portable.redact import REDACTED, redact_clip, redact_text

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GUARD = 60  # seconds per example: the old redactor took over a minute on 200 KB; these take a fraction of one


@contextlib.contextmanager
def hang_guard(seconds: int = GUARD):
    def expire(signum, frame):
        raise AssertionError(f"still running after {seconds} s: not linear")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


URLISH = st.sampled_from(
    [
        "a",
        "B",
        "0",
        ".",
        "-",
        "_",
        "+",
        ":",
        "/",
        "//",
        "://",
        "@",
        "?",
        "&",
        "=",
        "%",
        "#",
        "'",
        '"',
        " ",
        "\t",
        "https://",
        "git+https://",
        "x-oauth-basic",
        "hf_",
        "ghp_",
        "sk-",
        "sk_live_",
        "AIza",
        "npm_",
        "eyJ",
        ".eyJ",
        "token",
        "token=",
        "password: ",
        "--hf_token ",
        "Bearer ",
        "Authorization: ",
        "api_key",
        '"api_key": ',
        "-----BEGIN PRIVATE KEY-----",
        "GPU-",
        ",",
        "layer.",
        "\u0130",
    ]
)
# A piece repeated to a long run: the shape of a torch stderr, an ImportError message, a tensor name.
RUNS = st.lists(
    st.tuples(st.lists(URLISH, min_size=1, max_size=6).map("".join), st.integers(1, 40_000)), min_size=1, max_size=4
).map(lambda runs: "".join(piece * count for piece, count in runs)[:400_000])
SECRETS = [
    "https://{S}:x-oauth-basic@github.com/x",
    "https://user:pa@{S}@host/simple",
    "Authorization: Bearer {S}",
    "Authorization: token {S}",
    "X-API-Key: {S}",
    'api_key = "{S}"',
    '{{"api_key": "{S}"}}',
    "password: {S}",
    "token: {S}",
    "--hf_token {S}",
    'os.environ["HF_TOKEN"] = "{S}"',
    "sk_live_{S}",
    "AIza{S}",
    "npm_{S}",
    "HF_COOKIEJAR=sessionid={S}",
    "hf_{S}",
    "ghp_{S}",
    "github_pat_{S}",
    "glpat-{S}",
    "sk-ant-api03-{S}",
    "pypi-{S}",
    "xoxb-{S}",
    "export AWS_SECRET_ACCESS_KEY={S}",
    "https://host/x?access_token={S}",
]
CANARY = "Fz9canary" + "q" * 32


@FUZZ
@given(RUNS, st.sampled_from(SECRETS), RUNS)
def test_a_secret_among_long_urlish_runs_never_survives(before, shape, after):
    secret = shape.format(S=CANARY)
    text = before + "\n" + secret + "\n" + after
    with hang_guard():
        once = redact_text(text)
        twice = redact_text(once)
    assert CANARY not in once
    assert twice == once
    assert REDACTED in once


@FUZZ
@given(RUNS)
def test_text_without_secrets_keeps_its_length_class(text):
    with hang_guard():
        once = redact_text(text)
        assert redact_text(once) == once
        clipped = redact_clip(text, 200)
    assert len(clipped) <= 200 + 3
    # only secret-looking parts change, and each becomes the one marker
    if REDACTED not in once:
        assert once == text


@FUZZ
@given(st.text(max_size=2000), st.sampled_from(SECRETS), st.text(max_size=2000))
def test_any_text_around_a_secret_on_its_own_line(before, shape, after):
    # any text at all (the shape is alone on its line; a quote or a --password on the line before cannot
    # swallow it, and nothing after can reveal it)
    text = before + "\n" + shape.format(S=CANARY) + "\n" + after
    with hang_guard():
        once = redact_text(text)
    assert CANARY not in once
    assert redact_text(once) == once


ERROR = "RuntimeError: expected scalar type Float but found Half"
JUNK = st.one_of(
    st.binary(max_size=200_000),
    st.text(max_size=20_000).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.lists(
        st.sampled_from(
            ["\u0130", "\r", "\r\n", "\x1b[31m", "\x1b", "\x00", "\ufffd", "x", " ", "\n", "é", "\U0001f600"]
        ),
        max_size=20_000,
    ).map(lambda s: "".join(s).encode()),
)


@FUZZ
@given(JUNK, JUNK)
def test_junk_before_an_error_line_neither_hides_it_nor_shifts_its_number(before, after):
    data = before + b"\n" + ERROR.encode() + b"\n" + after
    expected = clean(before + b"\n").count("\n") + 1
    with hang_guard():
        found = {m.signature.id: [n for n, _ in m.lines] for m in find(data, all_signatures())}
    assert expected in found.get("dtype-expected-scalar-type", []) or len(found["dtype-expected-scalar-type"]) == 5
