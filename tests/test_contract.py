"""The JSON contract: versioned, schema-checked, round-trips, and the shipped schema is current."""

from __future__ import annotations

import json

import jsonschema
import pytest

from declared import undeclared_values
from helpers import fixture_path, load_fixture, run_cli, snapshot_fixture_names
from mpdoctor.doctor.report import SCHEMA_PATH, Report, report_schema
from mpdoctor.schema.serde import to_data
from mpdoctor.snapshot import SCHEMA_VERSION, SnapshotError, snapshot_from_data


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_shipped_schema_is_generated_from_the_dataclasses():
    # Regenerate with: python -m mpdoctor.schema
    assert json.loads(SCHEMA_PATH.read_text()) == report_schema()


def test_live_report_validates(live_report_json, validator):
    data = json.loads(live_report_json)
    validator.validate(data)
    assert list(data)[:3] == ["schema_version", "mpdoctor_version", "created"]
    assert data["schema_version"] == SCHEMA_VERSION
    assert {"findings", "snapshot"} <= set(data)
    assert undeclared_values(Report, data) == []  # the schema accepts any string there; this version writes its own


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_fixture_reports_validate(name, validator):
    result = run_cli("check", "--snapshot", str(fixture_path(name)), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    validator.validate(data)
    for finding in data["findings"]:
        assert set(finding) >= {"code", "name", "severity", "title", "evidence", "fix"}
        assert finding["severity"] in ("error", "warning", "info")
    assert undeclared_values(Report, data) == []


@pytest.mark.parametrize("path", [("schema_version",), ("snapshot", "schema_version")])
def test_schema_version_is_required_and_pinned_in_the_schema(live_report_json, validator, path):
    # How a report and a snapshot are recognised: the loader refuses one without it, or with another version,
    # although the dataclasses give Python code a default.
    for value in (None, SCHEMA_VERSION + 1, SCHEMA_VERSION - 1):
        data = json.loads(live_report_json)
        node = data if len(path) == 1 else data["snapshot"]
        if value is None:
            del node["schema_version"]
        else:
            node["schema_version"] = value
        assert not validator.is_valid(data), (path, value)
        with pytest.raises(SnapshotError, match="schema"):
            snapshot_from_data(data)


def test_schema_rejects_a_report_with_a_missing_field(live_report_json, validator):
    # A field without a default: `required` lists only those (snapshot.torch.status has a default, so a report
    # without it validates and loads as "unknown": see tests/test_schema.py).
    data = json.loads(live_report_json)
    del data["created"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_snapshot_round_trips(name):
    snap = load_fixture(name)
    assert snapshot_from_data(json.loads(json.dumps(to_data(snap)))) == snap


def test_a_whole_report_is_accepted_as_a_snapshot(live_report_json):
    snap = snapshot_from_data(json.loads(live_report_json))
    assert snap.torch.status == "imported"


def test_unknown_keys_are_ignored_and_missing_ones_defaulted():
    data = json.loads(fixture_path("cpu-laptop").read_text())
    data["torch"]["added_by_a_newer_minor_release"] = 1
    del data["machine"]
    snap = snapshot_from_data(data)
    assert snap.machine.nvml.status == "not-run"


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "expected a JSON object"),
        ({"torch": {}}, "no integer schema_version"),
        ({"schema_version": 99}, "newer than this mpdoctor"),
        ({"schema_version": 1.5}, "no integer schema_version"),
        ({"schema_version": 1, "torch": {"device_count": 2.5}}, "$.torch.device_count: expected int, got float"),
        ({"schema_version": 7, "findings": [], "snapshot": {"schema_version": 1}}, "report schema version 7 is newer"),
        ({"findings": [], "snapshot": {"schema_version": 1}}, "not a report: no integer schema_version"),
        ({"schema_version": 1, "findings": [], "snapshot": {"schema_version": 0}}, "unknown snapshot schema version 0"),
        ({"schema_version": 1, "torch": {"version": 5}}, "$.torch.version: expected str, got int"),
        ({"schema_version": 1, "environment": {"distributions": {"a": 1}}}, "expected a list"),
    ],
)
def test_bad_snapshots_say_what_is_wrong(data, message):
    with pytest.raises(SnapshotError, match=None) as info:
        snapshot_from_data(data)
    assert message in str(info.value)
