"""The registry owns every code mpdoctor reports: the snapshot checks, the checkpoint-audit and fleet rules, MPD00N.

Families are declared with their prefixes, a code must carry its family's, relations are
validated, and the CLI lists, documents and accepts codes according to what they judge.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from helpers import fixture_path, load_fixture, run_cli, snapshot_fixture_names
from mpdoctor.checkpoint_audit.report import audit_files
from mpdoctor.checkpoint_audit.safetensors import TensorEntry
from mpdoctor.checkpoint_audit.sources import WeightFile
from mpdoctor.checks.registry import (
    CHECK_CRASHED,
    CHECKPOINT,
    DOC_SECTIONS,
    FAMILIES,
    INTERNAL,
    RANKS,
    SNAPSHOT,
    SUBJECTS,
    Registry,
    builtin_registry,
    check,
    rule,
)
from mpdoctor.cli import app
from mpdoctor.doctor.judge import judge, run_checks
from mpdoctor.snapshot import Snapshot

runner = CliRunner()

DECLARED_PREFIXES = {
    "environment": "ENV",
    "torch": "TORCH",
    "driver": "DRV",
    "gpu": "GPU",
    "stack": "STACK",
    "precision": "PREC",
    "apex": "APEX",
    "oneflow": "ONEFLOW",
    "amp": "AMP",
    "audit": "AUDIT",
    "fleet": "FLEET",
    "mpdoctor": "MPD",
}
OUTSIDE_CHECK = {
    "AUDIT001": ("unreadable-weights", CHECKPOINT),
    "AUDIT002": ("module-mixes-dtypes", CHECKPOINT),
    "AUDIT003": ("checkpoint-mixes-dtypes", CHECKPOINT),
    "AUDIT004": ("module-in-another-dtype", CHECKPOINT),
    "AUDIT005": ("module-kept-in-float32", CHECKPOINT),
    "AUDIT006": ("weights-outside-the-layout", CHECKPOINT),
    "AUDIT007": ("quantized-modules", CHECKPOINT),
    "MPD001": ("check-crashed", INTERNAL),
    "MPD002": ("fact-not-taken", INTERNAL),
    "MPD003": ("device-not-measured", INTERNAL),
    "FLEET001": ("rank-never-reported", RANKS),
    "FLEET002": ("versions-differ-across-ranks", RANKS),
    "FLEET003": ("driver-differs-across-ranks", RANKS),
    "FLEET004": ("gpu-differs-across-ranks", RANKS),
    "FLEET005": ("gpu-slower-than-its-peers", RANKS),
    "FLEET006": ("environment-differs-across-ranks", RANKS),
    "FLEET007": ("finding-on-some-ranks-only", RANKS),
    "FLEET008": ("rank-without-a-gpu-of-its-own", RANKS),
}


def _nothing(snap):
    """Finds nothing."""
    return []


# ---------------------------------------------------------------- families and prefixes


def test_every_family_is_declared_with_its_prefix():
    assert FAMILIES == DECLARED_PREFIXES
    assert builtin_registry().families == DECLARED_PREFIXES


def test_every_code_carries_its_familys_prefix_and_is_documented():
    entries = list(builtin_registry())
    assert len({e.code for e in entries}) == len(entries) and len({e.name for e in entries}) == len(entries)
    assert {e.family for e in entries} == set(FAMILIES)  # every declared family is in use
    for entry in entries:
        assert re.fullmatch(FAMILIES[entry.family] + r"[0-9]{3}", entry.code), entry.code
        assert entry.summary, entry.code
        for section in DOC_SECTIONS:
            assert section in entry.doc, f"{entry.code} lacks {section}"


@pytest.mark.parametrize(
    "code, family, message",
    [
        ("GPU010", "torch", "family torch has the prefix TORCH, not GPU"),
        ("TORCH099", "gpu", "family gpu has the prefix GPU, not TORCH"),
        ("PRECISION001", "precision", "family precision has the prefix PREC, not PRECISION"),
        ("TST001", "testing", "unknown family 'testing'"),
    ],
)
def test_a_code_outside_its_familys_prefix_is_refused(code, family, message):
    registry = Registry({**FAMILIES, "test": "TST"})
    with pytest.raises(ValueError, match=re.escape(message)):
        registry.add(code, "some-check", family, _nothing)


# ---------------------------------------------------------------- codes that judge no snapshot


def test_audit_and_internal_codes_are_registered_with_what_they_judge():
    registry = builtin_registry()
    for code, (name, subject) in OUTSIDE_CHECK.items():
        entry = registry.get(code)
        assert entry is not None and entry.name == name and entry.subject == subject, code
        assert registry.get(name) is entry
        assert not entry.runs_on_snapshot
    assert {e.code for e in registry if e.subject != SNAPSHOT} == set(OUTSIDE_CHECK)


def test_mpdoctor_check_runs_only_snapshot_checks():
    registry = builtin_registry()
    assert all(c.subject == SNAPSHOT and c.func for c in registry.select())
    assert not {c.code for c in registry.select(select=["A", "M"])} & set(OUTSIDE_CHECK)
    for name in snapshot_fixture_names():
        assert not {f.code for f in judge(load_fixture(name))} & {"AUDIT001", "AUDIT002", "AUDIT003"}, name


def _tensor(name: str, dtype: str, nbytes: int = 8) -> TensorEntry:
    return TensorEntry(name, dtype, (2,), nbytes, "m.safetensors")


def test_audit_findings_are_stamped_with_the_registered_rules():
    mixed = WeightFile(
        "m.safetensors",
        format="safetensors",
        tensors=[_tensor("down.conv.weight", "float16"), _tensor("down.conv.bias", "float32", 4)],
    )
    parts = [
        WeightFile("unet.safetensors", "unet", "safetensors", [_tensor("conv.weight", "float16")]),
        WeightFile("te.safetensors", "text_encoder", "safetensors", [_tensor("embed.weight", "float32")]),
    ]
    broken = WeightFile("bad.safetensors", format="safetensors", error="bad.safetensors: truncated")
    found = {f.code: f for files in ([mixed], parts, [broken]) for f in audit_files("x", files).findings}
    assert set(found) == {"AUDIT001", "AUDIT002", "AUDIT003"}
    for code, finding in found.items():
        entry = builtin_registry().get(code)
        assert (finding.name, finding.family) == (entry.name, entry.family) == (OUTSIDE_CHECK[code][0], "audit")


def test_a_crash_is_stamped_with_the_registered_mpd001():
    registry = Registry({"test": "TST"})

    def explodes(snap):
        """Raises."""
        raise KeyError("gone")

    registry.add("TST001", "test-explodes", "test", explodes)
    (crash,) = run_checks(Snapshot(), registry.select())
    entry = builtin_registry().get("MPD001")
    assert entry is CHECK_CRASHED
    assert (crash.code, crash.name, crash.family) == (entry.code, entry.name, entry.family)


def test_what_a_rule_is_keeps_its_import_path_in_the_registry():
    """checks/rule.py holds the rule type and MPD001's declaration; every name the families, the doctor, the
    fleet and the renderers import from registry is still there, the very same object."""
    from mpdoctor.checks import registry, rule

    for name in ("Check", "CheckFunc", "Deferred", "Outcome", "defer", "SUBJECTS", "NAME_PATTERN"):
        assert getattr(registry, name) is getattr(rule, name), name
    for name in ("SNAPSHOT", "CHECKPOINT", "RANKS", "INTERNAL"):
        assert getattr(registry, name) == getattr(rule, name), name
    assert registry._fixture_names is rule.fixture_names and registry._severities is rule.severity_names
    # The registered MPD001 is the declaration rule.py's Check stamps its crashes with.
    assert registry.CHECK_CRASHED == rule.CHECK_CRASHED and registry.CHECK_CRASHED.doc == rule.CHECK_CRASHED.doc


def test_one_way_to_declare_for_every_subject():
    """``rule()`` and ``@check`` take the same declaration (code, name, family, ...) into the same ``Registry.add``;
    @check's documentation is its function's docstring, rule()'s is ``doc``."""
    import inspect

    shared = ["code", "name", "family", "severities"]
    for declare in (rule, check):
        assert all(p in inspect.signature(declare).parameters for p in shared), declare.__name__
    assert set(SUBJECTS) == {SNAPSHOT, CHECKPOINT, RANKS, INTERNAL}
    by_subject = {subject: builtin_registry().judging(subject) for subject in SUBJECTS}
    assert all(by_subject.values())  # each subject has rules
    assert sum(map(len, by_subject.values())) == len(list(builtin_registry()))
    with pytest.raises(ValueError, match="unknown subject"):
        builtin_registry().judging("weights")


@pytest.mark.parametrize(
    "severities, message",
    [
        ("warning", "severities takes a tuple of severities, not the string 'warning'"),
        (("error", "fatal"), "severities names 'fatal', which is no severity"),
        (("warning", "error"), "must be distinct and worst first"),
        (("warning", "warning"), "must be distinct and worst first"),
    ],
)
def test_malformed_severities_are_refused(severities, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Registry().add("FLEET099", "fleet-thing", "fleet", subject=RANKS, doc="x", severities=severities)


def test_a_rule_declares_the_severities_of_its_findings():
    entry = Registry().add("FLEET099", "fleet-thing", "fleet", subject=RANKS, doc="x", severities=["error", "info"])
    assert entry.severities == ("error", "info")
    assert Registry().add("GPU099", "gpu-thing", "gpu", _nothing).severities == ()


def test_a_rule_without_a_function_takes_only_documentation():
    registry = Registry()
    with pytest.raises(ValueError, match="needs its documentation"):
        registry.add("AUDIT009", "audit-thing", "audit", subject=CHECKPOINT)
    with pytest.raises(ValueError, match="documentation only"):
        registry.add("AUDIT009", "audit-thing", "audit", _nothing, subject=CHECKPOINT, doc="x")
    with pytest.raises(ValueError, match="documentation only"):
        registry.add("AUDIT009", "audit-thing", "audit", subject=CHECKPOINT, doc="x", needs=["kernels"])
    with pytest.raises(ValueError, match="needs a function"):
        registry.add("GPU099", "gpu-thing", "gpu")
    with pytest.raises(ValueError, match="unknown subject"):
        registry.add("GPU099", "gpu-thing", "gpu", _nothing, subject="weights")


# ---------------------------------------------------------------- relations and needs are validated


def _two(**relations) -> Registry:
    registry = Registry({"test": "TST", "audit": "AUDIT"})
    registry.add("TST001", "test-one", "test", _nothing, **relations)
    registry.add("TST002", "test-two", "test", _nothing)
    return registry


def test_the_builtin_relations_are_valid():
    builtin_registry().validate()


def test_a_supersession_naming_an_unknown_code_is_refused():
    with pytest.raises(ValueError, match="TST001 is superseded by TST404, which is no registered code"):
        _two(superseded_by=["TST404"]).validate()
    with pytest.raises(ValueError, match="TST404, which is no registered code"):
        _two(defers_to=["TST404"]).validate()


def test_a_supersession_by_a_code_that_judges_no_snapshot_is_refused():
    registry = _two(superseded_by=["AUDIT001"])
    registry.add("AUDIT001", "audit-one", "audit", subject=CHECKPOINT, doc="An audit rule.")
    with pytest.raises(ValueError, match="judges checkpoint, not a snapshot"):
        registry.validate()


def test_a_check_superseded_by_itself_is_refused():
    with pytest.raises(ValueError, match="cannot be superseded by itself"):
        _two(superseded_by=["TST001"])


@pytest.mark.parametrize(
    "links",
    [
        {"TST001": ["TST002"], "TST002": ["TST001"]},
        {"TST001": ["TST002"], "TST002": ["TST003"], "TST003": ["TST001"]},
        {"TST001": ["TST003"], "TST002": ["TST003"], "TST003": ["TST004"], "TST004": ["TST002"]},
    ],
)
def test_a_cycle_of_supersessions_is_refused(links):
    registry = Registry({"test": "TST"})
    for n in range(1, 5):
        code = f"TST00{n}"
        relation = {"defers_to": links.get(code, [])} if n == 4 else {"superseded_by": links.get(code, [])}
        registry.add(code, f"test-{n}", "test", _nothing, **relation)
    with pytest.raises(ValueError, match="cycle") as raised:
        registry.validate()
    cycle = str(raised.value).split(": ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1] and len(cycle) >= 3


def test_a_chain_without_a_cycle_is_fine():
    registry = Registry({"test": "TST"})
    registry.add("TST001", "test-1", "test", _nothing, superseded_by=["TST002", "TST003"])
    registry.add("TST002", "test-2", "test", _nothing, superseded_by=["TST003"])
    registry.add("TST003", "test-3", "test", _nothing)
    registry.validate()


def test_an_unknown_fact_is_refused():
    with pytest.raises(ValueError, match="no fact a run can take"):
        _two(needs=["weights"])


# ---------------------------------------------------------------- fixtures a check declares


def test_a_check_carries_the_fixture_names_it_declares():
    registry = _two(fires_on=["titan-1080ti-visible-devices-1"], quiet_on=("titan-1080ti-pci-order", "cpu-laptop"))
    entry = registry.get("TST001")
    assert entry.fires_on == ("titan-1080ti-visible-devices-1",)
    assert entry.quiet_on == ("titan-1080ti-pci-order", "cpu-laptop")
    assert registry.get("TST002").fires_on == registry.get("TST002").quiet_on == ()


def test_every_builtin_check_declares_names_not_snapshots():
    for entry in builtin_registry().snapshot_checks():
        assert entry.fires_on and entry.quiet_on, entry.code  # held to the catalogue in test_checks_fixtures.py
        assert all(isinstance(name, str) for name in entry.fires_on + entry.quiet_on), entry.code


@pytest.mark.parametrize(
    "fixtures, message",
    [
        ({"fires_on": "cpu-laptop"}, "fires_on takes a tuple of fixture names, not the string 'cpu-laptop'"),
        ({"quiet_on": "cpu-laptop"}, "quiet_on takes a tuple of fixture names, not the string 'cpu-laptop'"),
        ({"fires_on": ["cpu-laptop.json"]}, "fires_on names 'cpu-laptop.json', which is no fixture name"),
        ({"quiet_on": [Snapshot()]}, "quiet_on names Snapshot("),
        ({"fires_on": ["cpu-laptop", "cpu-laptop"]}, "fires_on names cpu-laptop more than once"),
        (
            {"fires_on": ["cpu-laptop", "cpu-kernels"], "quiet_on": ["cpu-kernels"]},
            "TST001 both fires_on and is quiet_on cpu-kernels",
        ),
    ],
)
def test_malformed_fixture_declarations_are_refused(fixtures, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _two(**fixtures)


def test_a_rule_without_a_function_declares_no_fixtures():
    for fixtures in ({"fires_on": ["cpu-laptop"]}, {"quiet_on": ["cpu-laptop"]}):
        with pytest.raises(ValueError, match="documentation only, no function, relations, needs or fixtures"):
            Registry().add("AUDIT009", "audit-thing", "audit", subject=CHECKPOINT, doc="x", **fixtures)


# ---------------------------------------------------------------- the command line


def test_checks_lists_every_code_in_columns_under_a_header():
    result = runner.invoke(app, ["checks"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    header, *rows = result.output.splitlines()
    assert header.split() == ["CODE", "NAME", "FAMILY", "JUDGES", "WHAT", "IT", "FINDS"]
    entries = list(builtin_registry())  # the fleet's codes among them: one registry
    assert [row.split()[0] for row in rows] == [entry.code for entry in entries]
    assert {entry.subject for entry in entries} == set(SUBJECTS)
    columns = [header.index(title) for title in ("NAME", "FAMILY", "JUDGES", "WHAT IT FINDS")]
    for row, entry in zip(rows, entries):
        # Every column starts where its title does, however long the names are.
        assert row.startswith(entry.code + " ")
        for start, value in zip(columns, (entry.name, entry.family, entry.subject, entry.summary)):
            assert row[start:].startswith(value) and row[start - 1] == " ", (row, value)
    assert {row.split()[0] for row in rows} >= set(OUTSIDE_CHECK)
    longest = max(entries, key=lambda e: len(e.name))
    assert columns[1] > columns[0] + len(longest.name)


@pytest.mark.parametrize(
    "code, words",
    [
        ("AUDIT002", ["AUDIT002 module-mixes-dtypes (audit", "mpdoctor audit PATH", "## Why it matters", "## Fix"]),
        ("unreadable-weights", ["AUDIT001 unreadable-weights", "## Fix"]),
        ("audit003", ["AUDIT003 checkpoint-mixes-dtypes", "## Why it matters"]),
        ("MPD001", ["MPD001 check-crashed (mpdoctor", "## Why it matters", "## Fix"]),
        ("TORCH005", ["TORCH005 cpu-only-torch-with-gpus (torch)", "## Fix"]),
        ("FLEET001", ["FLEET001 rank-never-reported (fleet", "`mpdoctor fleet`", "## Why it matters", "## Fix"]),
        ("gpu-slower-than-its-peers", ["FLEET005 gpu-slower-than-its-peers (fleet", "## Fix"]),
    ],
)
def test_rule_documents_every_code(code, words):
    result = runner.invoke(app, ["rule", code])
    assert result.exit_code == 0, result.output
    for text in words:
        assert text in result.output


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--select", "AUDIT", "judge a checkpoint, not this environment: `mpdoctor audit PATH`"),
        ("--ignore", "AUDIT002", "judge a checkpoint, not this environment: `mpdoctor audit PATH`"),
        ("--select", "TORCH005,AUDIT001", "`mpdoctor audit PATH`"),
        ("--ignore", "MPD001", "mpdoctor's own codes (a check that crashed, facts a snapshot lacked)"),
        ("--select", "MPD", "--ignore the check concerned instead"),
        ("--ignore", "MPD002", "cannot be selected or ignored"),
        ("--select", "FLEET", "names fleet codes, which compare the ranks of one job, not this environment"),
        ("--ignore", "FLEET002", "`mpdoctor fleet` reports them"),
        ("--select", "NOPE", "no check code starts with 'NOPE'"),
    ],
)
def test_select_and_ignore_take_only_codes_that_check_runs(option, value, message):
    result = run_cli("check", "--snapshot", str(fixture_path("cpu-laptop")), option, value)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_prefix_that_also_starts_an_audit_code_is_fine():
    result = runner.invoke(
        app, ["check", "--snapshot", str(fixture_path("apex-pypi-impostor")), "--select", "A", "--fail-on", "never"]
    )
    assert result.exit_code == 0 and "APEX001" in result.output
