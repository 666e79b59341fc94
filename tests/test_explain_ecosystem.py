"""The ecosystem's precision messages, mined from each library's own source (issue 38): coverage that cannot drop.

tests/explain_ecosystem/mine.py took each library at a pinned version from PyPI and kept, per library, every error,
warning and assertion that holds a precision word, with the verdict explain gave it (the signature that covers it,
why it is not a precision failure, or why it is a gap). Here each message is judged again from its text, without
downloading anything: a message that loses its coverage, or one explain starts to claim though it is no failure,
fails with the table's row. Where a pinned library is installed here, its messages are mined again from it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from mpdoctor.explain.known import all_signatures

HERE = Path(__file__).parent / "explain_ecosystem"
# loaded under its own name: tests/explain_torch has a mine.py too, imported as `mine` by its test
_SPEC = importlib.util.spec_from_file_location("mine_ecosystem", HERE / "mine.py")
mine = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = mine  # dataclasses resolve the module by name
_SPEC.loader.exec_module(mine)

TABLES = {lib.name: mine.load(lib.name) for lib in mine.LIBRARIES if not lib.skipped}
SIGNATURES = {s.id for s in all_signatures()}
REGENERATE = "python tests/explain_ecosystem/mine.py --judge (then read the diff of the tables)"


def test_every_library_has_its_table_at_its_pinned_version():
    assert len(TABLES) >= 19
    assert all(
        lib.skipped and not (HERE / f"{lib.name}.json").exists() for lib in mine.LIBRARIES if lib.name not in TABLES
    )
    for lib in mine.LIBRARIES:
        if lib.skipped:
            continue
        table = TABLES[lib.name]
        assert (table["library"], table["pypi"], table["version"]) == (lib.name, lib.pypi, lib.version)
        assert table["archive"].startswith((lib.pypi.replace("-", "_"), lib.pypi)), table["archive"]
        assert table["licence"] != "unknown", lib.name
        assert table["messages"], lib.name
        for row in table["messages"]:
            assert set(row) == {"message", "where", "kind", "verdict", "signature", "why"}, row
            assert row["verdict"] in ("covered", "not-precision", "gap"), row  # none claimed though no failure
            assert (row["signature"] in SIGNATURES) if row["verdict"] == "covered" else row["why"], row


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_mined_message_keeps_its_verdict(name):
    """Judged again from the text: a covered message still gets its signature, a non-failure still none."""
    changed = []
    for row in TABLES[name]["messages"]:
        now = mine.judge(name, row["message"], row["kind"])
        if (now["verdict"], now["signature"]) != (row["verdict"], row["signature"]):
            changed.append((row["message"], row["where"], f"{row['verdict']} {row['signature']}", now))
    lost = [c for c in changed if c[2].startswith("covered") or c[3]["verdict"] == "claimed"]
    assert not lost, f"coverage lost or a non-failure claimed: {lost}"
    assert not changed, f"the table is stale (coverage grew): {REGENERATE}: {changed}"


def test_the_reports_are_the_tables():
    """Each <library>.md and the README's summary are what mine.py writes from the committed tables."""
    for name, table in TABLES.items():
        assert (HERE / f"{name}.md").read_text(encoding="utf-8") == mine.report(table), name
    summary = mine.summary([TABLES[lib.name] for lib in mine.LIBRARIES if not lib.skipped])
    assert (HERE / "README.md").read_text(encoding="utf-8") == summary


@pytest.mark.parametrize("name", ["diffusers", "faster-whisper", "accelerate", "peft"])
def test_a_pinned_library_installed_here_is_mined_again(name):
    """The miner itself, on the library's files installed here (when they are the pinned version)."""
    (lib,) = [lib for lib in mine.LIBRARIES if lib.name == name]
    spec = importlib.util.find_spec(lib.roots[0].strip("/").replace("/", "."))
    if spec is None or not spec.origin:
        pytest.skip(f"{name} is not installed here")
    from importlib.metadata import version

    if version(lib.pypi) != lib.version:
        pytest.skip(f"{name} {version(lib.pypi)} installed, the table is of {lib.version}")
    root = Path(spec.origin).parents[1]
    mined = sorted((text, where, kind) for text, where, kind in mine.python_messages(root, lib))
    kept = sorted((row["message"], row["where"], row["kind"]) for row in TABLES[name]["messages"])
    assert mined == kept


def test_the_miner_reads_what_it_says_it_reads(tmp_path):
    """A package written here: raise, warn, a logger, assert and f-string holes; tests and non-precision skipped."""
    package = tmp_path / "pkg"
    (package / "tests").mkdir(parents=True)
    (package / "core.py").write_text(
        "import warnings, logging\n"
        "logger = logging.getLogger(__name__)\n"
        "def f(x, dtype):\n"
        "    if dtype == 'fp16':\n"
        "        raise ValueError(f'fp16 is not supported on this device, got {x.dtype}')\n"
        "    warnings.warn('bf16 requested but this GPU has no bf16: falling back to fp32', UserWarning)\n"
        "    logger.warning_once('Using %s precision with autocast' % dtype)\n"
        "    assert x.dtype == dtype, 'expected dtype {} got {}'.format(dtype, x.dtype)\n"
        "    raise RuntimeError('file not found: a message with no word of that kind')\n"
    )
    (package / "tests" / "test_core.py").write_text("raise ValueError('fp16 is tested here, not mined')\n")
    lib = mine.Library("pkg", "pkg", "0", roots=("pkg/",))
    found = sorted(mine.python_messages(tmp_path, lib), key=lambda row: row[1])
    assert found == [
        ("fp16 is not supported on this device, got {x.dtype}", "pkg/core.py:5", "ValueError"),
        ("bf16 requested but this GPU has no bf16: falling back to fp32", "pkg/core.py:6", "UserWarning"),
        ("Using {...} precision with autocast", "pkg/core.py:7", "UserWarning"),
        ("expected dtype {} got {}", "pkg/core.py:8", "AssertionError"),
    ]
    assert (
        mine.sample(found[0][0], "ValueError") == "ValueError: fp16 is not supported on this device, got torch.float16"
    )


def test_totals_are_reported_per_library():
    text = (HERE / "README.md").read_text(encoding="utf-8")
    for name, table in TABLES.items():
        counts = mine.counts(table)
        assert f"| {counts['mined']} | {counts['covered']} | {counts['not-precision']} | {counts['gap']} |" in text
    assert json.dumps(TABLES)  # plain data
