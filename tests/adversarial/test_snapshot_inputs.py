"""`check --snapshot` with hostile files: bounded reads, regular files only, a depth limit, never exit 3.

Before issue 22: ``/dev/zero`` grew to 16.5 GB of memory, a FIFO blocked forever,
an integer of 5,000 digits and a lone surrogate (``\\ud800``) ended in an internal
error (exit 3). Each is now a one-line usage error (exit 2), or, for the surrogate,
a report written with the character escaped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.running import assert_clean, mpdoctor
from helpers import fixture_path
from mpdoctor.snapshot import MAX_SNAPSHOT_BYTES, Snapshot, SnapshotError, load_snapshot, snapshot_from_data


def _laptop() -> dict:
    return json.loads(fixture_path("cpu-laptop").read_text(encoding="utf-8"))


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "snapshot.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["character device", "FIFO", "directory"])
def test_a_snapshot_that_is_not_a_regular_file_is_refused_unread(kind, fifo, tmp_path):
    path = {"character device": Path("/dev/zero"), "FIFO": fifo, "directory": tmp_path}[kind]
    result = mpdoctor("check", "--snapshot", str(path))
    assert_clean(result, 2)
    assert f"cannot read snapshot {path}: it is a {kind}" in result.stderr.replace("FIFO (named pipe)", "FIFO")


def test_a_snapshot_larger_than_the_bound_is_refused_without_trusting_its_size(tmp_path):
    """A sparse 2 GB file: its st_size is honest here, but the bound is what is read, not what st_size says."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(2 << 30)
    result = mpdoctor("check", "--snapshot", str(path))
    assert_clean(result, 2)
    assert f"larger than {MAX_SNAPSHOT_BYTES} bytes" in result.stderr


def test_an_integer_of_5000_digits_is_a_corrupt_snapshot(tmp_path):
    path = tmp_path / "digits.json"
    path.write_text('{"schema_version": 1, "machine": {"cpu_count": ' + "9" * 5000 + "}}")
    result = mpdoctor("check", "--snapshot", str(path))
    assert_clean(result, 2)
    assert "an integer of 5000 digits" in result.stderr


@pytest.mark.parametrize("depth", [200, 200_000])
def test_json_nested_deeper_than_the_limit_is_a_corrupt_snapshot(depth, tmp_path):
    """200 levels pass json's own recursion guard but not the loader's; 200,000 hit both."""
    data = _laptop()
    path = tmp_path / "deep.json"
    text = json.dumps(data)
    path.write_text(text[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}")
    result = mpdoctor("check", "--snapshot", str(path))
    assert_clean(result, 2)
    assert "nested too deeply" in result.stderr


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_a_lone_surrogate_in_a_snapshot_string_is_written_escaped(fmt, tmp_path):
    data = _laptop()
    snapshot = data.get("snapshot", data)
    snapshot["environment"]["python"]["executable"] = "/opt/\ud800/python"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # json escapes it: "\ud800"
    shown = mpdoctor("check", "--snapshot", str(path), "--format", fmt, "--fail-on", "never")
    assert_clean(shown, 0)
    assert "ud800" in shown.stdout
    out = tmp_path / f"report.{fmt}"
    written = mpdoctor("check", "--snapshot", str(path), "--format", fmt, "--fail-on", "never", "-o", str(out))
    assert_clean(written, 0)
    assert "ud800" in out.read_text(encoding="utf-8")


# ---------------------------------------------------------------- fuzzing the loader (hypothesis, bounded)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)


def _leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, (*path, index))
    yield path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_a_real_snapshot_with_one_part_replaced_loads_or_says_why(data):
    """Any part of a real snapshot replaced by any JSON value: a Snapshot, or a SnapshotError, nothing else."""
    snapshot = _laptop()
    paths = [p for p in _leaves(snapshot) if p]
    where = data.draw(st.sampled_from(paths))
    target = snapshot
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = data.draw(JSON)
    try:
        assert isinstance(snapshot_from_data(snapshot), Snapshot)
    except SnapshotError as exc:
        assert str(exc)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2000) | JSON.map(lambda value: json.dumps(value).encode()))
def test_fuzz_any_bytes_as_a_snapshot_file_load_or_say_why(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "snapshot.json"
    path.write_bytes(raw)
    try:
        load_snapshot(str(path))
    except SnapshotError as exc:
        assert str(exc).startswith(
            (
                "cannot read snapshot",
                "corrupt snapshot",
                "not a snapshot",
                "unknown snapshot",
                "snapshot schema version",
                "not a report",
                "unknown report",
                "report schema",
            )
        )
