"""The shipped JSON Schemas say what the loader does: fields and vocabulary values may be added within a version.

docs/json.md: within schema version 1 a newer mpdoctor may add keys
anywhere and values to the vocabularies (``mpdoctor.snapshot.vocab``); a field with a
default may be missing; a value of the wrong type is refused. These tests hold the
shipped schemas, the loader and ``mpdoctor check --snapshot`` to each of those.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from typing import Any, Literal

import jsonschema
import pytest

from declared import undeclared_values
from helpers import run_cli
from mpdoctor.analysis import capability
from mpdoctor.analysis.gpu_table import ORDERS
from mpdoctor.checkpoint_audit import report as audit
from mpdoctor.doctor.report import SCHEMA_PATH, Report
from mpdoctor.explain import report as explain
from mpdoctor.explain.signature import FAMILIES
from mpdoctor.fleet import model as fleet
from mpdoctor.findings import Severity
from mpdoctor.probes.remote.kernel_measure import TOLERANCE
from mpdoctor.probes.remote.kernel_suite import OPS, SDPA_BACKENDS
from mpdoctor.schema.__main__ import schemas
from mpdoctor.schema.serde import OPEN_VOCABULARY, DataError, fact, from_data, json_schema
from mpdoctor.snapshot import SnapshotError, snapshot_from_data, vocab

SHIPPED = {  # each shipped schema and the dataclass it is generated from
    SCHEMA_PATH: Report,
    explain.SCHEMA_PATH: explain.ExplainReport,
    audit.SCHEMA_PATH: audit.AuditReport,
    fleet.SCHEMA_PATH: fleet.FleetReport,
}
UNKNOWN = "added_by_a_newer_mpdoctor"


def _validator(path) -> jsonschema.Draft202012Validator:
    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return _validator(SCHEMA_PATH)


@pytest.fixture()
def report(live_report_json) -> dict:
    """A real v1 report of this machine, with at least one finding (one is added when the machine has none)."""
    data = json.loads(live_report_json)
    if not data["findings"]:
        data["findings"].append(
            {
                "severity": "info",
                "title": "a finding",
                "evidence": [],
                "fix": [],
                "code": "TEST001",
                "name": "a-finding",
                "family": "test",
            }
        )
    return data


def _dataclasses(root: type) -> list[type]:
    """``root`` and every dataclass its fields reach."""
    seen: list[type] = []

    def walk(cls: Any) -> None:
        if dataclasses.is_dataclass(cls):
            if cls in seen:
                return
            seen.append(cls)
            for hint in typing.get_type_hints(cls).values():
                walk(hint)
        for arg in typing.get_args(cls):
            walk(arg)

    walk(root)
    return seen


def _literal(hint: Any) -> Any:
    """The Literal a field holds (alone, optional, or in a list or dict), or None."""
    if typing.get_origin(hint) is Literal:
        return hint
    return next((found for arg in typing.get_args(hint) if (found := _literal(arg)) is not None), None)


def _literal_fields(root: type) -> list[tuple[type, dataclasses.Field, Any]]:
    return [
        (cls, f, lit)
        for cls in _dataclasses(root)
        for f in dataclasses.fields(cls)
        if (lit := _literal(typing.get_type_hints(cls)[f.name])) is not None
    ]


ALL_LITERAL_FIELDS = [(path, cls, f, lit) for path, root in SHIPPED.items() for cls, f, lit in _literal_fields(root)]


# ---------------------------------------------------------------- additions within a version


def _add_unknown_keys(data: dict) -> dict:
    data = copy.deepcopy(data)
    data[UNKNOWN] = {"anything": [1, 2]}
    data["snapshot"][UNKNOWN] = 1
    data["snapshot"]["torch"][UNKNOWN] = "x"
    data["snapshot"]["torch"]["probe"][UNKNOWN] = None
    data["snapshot"]["machine"]["nvml"][UNKNOWN] = 1.5
    data["findings"][0][UNKNOWN] = True
    data["gpus"][UNKNOWN] = []
    return data


def test_a_report_with_added_keys_at_every_level_validates(report, validator):
    validator.validate(_add_unknown_keys(report))


def test_a_report_with_added_keys_still_loads(report, tmp_path):
    added = _add_unknown_keys(report)
    assert snapshot_from_data(added) == snapshot_from_data(report)
    assert from_data(Report, added) == from_data(Report, report)
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(added), encoding="utf-8")
    result = run_cli("check", "--snapshot", str(path), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["snapshot"]["torch"]["status"] == report["snapshot"]["torch"]["status"]


def test_explain_and_audit_reports_with_added_keys_validate():
    data = explain.explain_data(
        explain.ExplainReport(
            source="argument",
            recognised=[explain.Explanation(id="x", family="dtype", title="t", cause="c", findings=[])],
        )
    )
    data[UNKNOWN] = 1
    data["recognised"][0][UNKNOWN] = 1
    _validator(explain.SCHEMA_PATH).validate(data)
    data = audit.audit_data(audit.AuditReport(path="m.safetensors", files=[audit.FileSummary("m.safetensors")]))
    data[UNKNOWN] = 1
    data["files"][0][UNKNOWN] = 1
    _validator(audit.SCHEMA_PATH).validate(data)


@pytest.mark.parametrize(
    "where",
    [
        "torch.status",
        "machine.nvml.status",
        "kernels.status",
        "torch.probe.status",
        "environment.oneflow.runtime.status",
        "environment.apex.resolution",
    ],
)
def test_a_vocabulary_value_from_a_newer_mpdoctor_validates_and_loads(report, validator, where, tmp_path):
    data = copy.deepcopy(report)
    node = data["snapshot"]
    *parents, key = where.split(".")
    for part in parents:
        node = node[part]
    node[key] = "a-status-added-later"
    validator.validate(data)
    snap = snapshot_from_data(data)
    found = snap
    for part in where.split("."):
        found = getattr(found, part)
    assert found == "a-status-added-later"  # kept as it is: readers treat it as unknown
    assert undeclared_values(Report, data) == [f"$.snapshot.{where}: 'a-status-added-later'"]
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run_cli("check", "--snapshot", str(path), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    validator.validate(json.loads(result.stdout))


# ---------------------------------------------------------------- missing fields


@pytest.mark.parametrize(
    "path, default",
    [
        (("snapshot", "torch", "status"), "unknown"),
        (("snapshot", "machine", "nvml", "status"), "not-run"),
        (("snapshot", "kernels"), None),
        (("snapshot", "environment", "apex"), None),
        (("snapshot", "created"), ""),
    ],
)
def test_a_report_missing_a_defaulted_field_validates_and_loads_with_the_default(report, validator, path, default):
    data = copy.deepcopy(report)
    node = data
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    validator.validate(data)
    found = snapshot_from_data(data)
    for part in path[1:]:
        found = getattr(found, part)
    if default is not None:
        assert found == default
    else:
        assert found == type(found)()


def test_a_finding_missing_its_defaulted_fields_validates(report, validator):
    data = copy.deepcopy(report)
    data["findings"][0] = {"severity": "warning", "title": "only what is required"}
    validator.validate(data)
    finding = from_data(Report, data).findings[0]
    assert (finding.evidence, finding.fix, finding.code) == ([], [], "")


@pytest.mark.parametrize("path", [("created",), ("findings", 0, "severity"), ("findings", 0, "title")])
def test_a_report_missing_a_required_field_fails_both(report, validator, path):
    data = copy.deepcopy(report)
    node = data
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    with pytest.raises(DataError, match=f"missing required field '{path[-1]}'"):
        from_data(Report, data)


# ---------------------------------------------------------------- wrong types


@pytest.mark.parametrize(
    "where, value, message",
    [
        (("snapshot", "torch", "status"), 5, "$.torch.status: expected str, got int"),
        (("snapshot", "torch", "status"), None, "$.torch.status: expected str, got null"),
        (("snapshot", "torch", "version"), 5, "$.torch.version: expected str, got int"),
        (("snapshot", "machine", "nvml", "gpus"), {"a": 1}, "$.machine.nvml.gpus: expected a list"),
        (("snapshot", "kernels", "status"), ["ok"], "$.kernels.status: expected str, got list"),
        (("snapshot", "torch"), "imported", "$.torch: expected an object"),
    ],
)
def test_a_wrong_type_fails_the_schema_and_the_loader(report, validator, where, value, message, tmp_path):
    data = copy.deepcopy(report)
    node = data
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    with pytest.raises(SnapshotError) as info:
        snapshot_from_data(data)
    assert message in str(info.value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run_cli("check", "--snapshot", str(path), "--format", "json")
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("value", [3, None, ["error"]])
def test_a_finding_severity_of_the_wrong_type_fails_both(report, validator, value):
    data = copy.deepcopy(report)
    data["findings"][0]["severity"] = value
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    with pytest.raises(DataError, match=r"\$\.findings\[0\]\.severity: expected str"):
        from_data(Report, data)


# ---------------------------------------------------------------- the schema and the loader agree


def _set(data: dict, path: tuple, value: Any) -> dict:
    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()
AGREEMENT = {  # a mutation of a live report: (path, value), and whether both the schema and the loader take it
    "unchanged": ((), None, True),
    "snapshot-version-missing": (("snapshot", "schema_version"), _DELETE, False),
    "snapshot-version-2": (("snapshot", "schema_version"), 2, False),
    "snapshot-version-0": (("snapshot", "schema_version"), 0, False),
    "snapshot-version-1.0": (("snapshot", "schema_version"), 1.0, True),
    "snapshot-version-true": (("snapshot", "schema_version"), True, False),
    "snapshot-version-string": (("snapshot", "schema_version"), "1", False),
    "device-count-2.0": (("snapshot", "torch", "device_count"), 2.0, True),
    "device-count-2.5": (("snapshot", "torch", "device_count"), 2.5, False),
    "device-count-true": (("snapshot", "torch", "device_count"), True, False),
    "device-count-nan": (("snapshot", "torch", "device_count"), float("nan"), False),
    "device-count-inf": (("snapshot", "torch", "device_count"), float("inf"), False),
    "device-count-null": (("snapshot", "torch", "device_count"), None, True),
    "report-version-7": (("schema_version",), 7, False),
    "report-version-0": (("schema_version",), 0, False),
    "report-version-missing": (("schema_version",), _DELETE, False),
    "report-version-1.0": (("schema_version",), 1.0, True),
    "report-version-null": (("schema_version",), None, False),
}


def _loads(load, data) -> bool:
    try:
        load(data)
    except (SnapshotError, DataError):
        return False
    return True


@pytest.mark.parametrize("case", list(AGREEMENT))
def test_the_schema_and_the_loader_agree(report, validator, case):
    path, value, accepted = AGREEMENT[case]
    data = _set(report, path, value) if path else copy.deepcopy(report)
    assert validator.is_valid(data) is accepted, list(validator.iter_errors(data))[:1]
    assert _loads(snapshot_from_data, data) is accepted  # what `mpdoctor check --snapshot` does
    assert _loads(lambda d: from_data(Report, d), data) is accepted
    if path[:1] == ("snapshot",):  # the snapshot alone, as `mpdoctor snapshot` writes it: the same rule
        assert _loads(snapshot_from_data, data["snapshot"]) is accepted


def test_an_integral_float_loads_as_an_int(report):
    data = _set(_set(report, ("snapshot", "torch", "device_count"), 2.0), ("snapshot", "schema_version"), 1.0)
    snap = snapshot_from_data(data)
    assert snap.torch.device_count == 2 and type(snap.torch.device_count) is int
    assert snap.schema_version == 1 and type(snap.schema_version) is int


@pytest.mark.parametrize(
    "path, value, message",
    [
        (
            ("schema_version",),
            7,
            "report schema version 7 is newer than this mpdoctor understands (1); upgrade mpdoctor",
        ),
        (("schema_version",), 0, "unknown report schema version 0"),
        (("schema_version",), _DELETE, "not a report: no integer schema_version"),
        (("snapshot", "schema_version"), 2, "snapshot schema version 2 is newer than this mpdoctor understands"),
        (("snapshot", "schema_version"), 0, "unknown snapshot schema version 0"),
        (("snapshot", "schema_version"), _DELETE, "not a snapshot: no integer schema_version"),
        (("snapshot", "torch", "device_count"), 2.5, "$.torch.device_count: expected int, got float"),
    ],
)
def test_check_snapshot_refuses_a_report_whose_version_or_type_the_schema_refuses(
    report, path, value, message, tmp_path
):
    data = _set(report, path, value)
    file = tmp_path / "report.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    result = run_cli("check", "--snapshot", str(file), "--format", "json")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "path, make, cls",
    [
        (
            explain.SCHEMA_PATH,
            lambda: explain.explain_data(explain.ExplainReport(source="argument")),
            explain.ExplainReport,
        ),
        (audit.SCHEMA_PATH, lambda: audit.audit_data(audit.AuditReport(path="m.safetensors")), audit.AuditReport),
    ],
    ids=["explain", "audit"],
)
def test_explain_and_audit_schemas_and_from_data_agree_on_schema_version(path, make, cls):
    validator = _validator(path)
    for value, accepted in ((1, True), (1.0, True), (2, False), (0, False), (True, False), (_DELETE, False)):
        data = _set(make(), ("schema_version",), value)
        assert validator.is_valid(data) is accepted, value
        assert _loads(lambda d: from_data(cls, d), data) is accepted, value


# ---------------------------------------------------------------- the schema's shape


def _objects(node: Any):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


@pytest.mark.parametrize("path", list(SHIPPED), ids=lambda p: p.name)
def test_no_shipped_object_forbids_added_properties(path):
    schema = json.loads(path.read_text())
    objects = list(_objects(schema))
    assert objects
    assert all(obj.get("additionalProperties", True) is not False for obj in objects)


@pytest.mark.parametrize("path, root", list(SHIPPED.items()), ids=lambda p: getattr(p, "name", ""))
def test_required_lists_exactly_the_fields_without_a_default_and_schema_version(path, root):
    defs = json.loads(path.read_text())["$defs"]
    for cls in _dataclasses(root):
        wanted = [
            f.name
            for f in dataclasses.fields(cls)
            if (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            or f.name == "schema_version"
        ]
        assert defs[cls.__name__]["required"] == wanted, cls.__name__


@pytest.mark.parametrize("path, root", list(SHIPPED.items()), ids=lambda p: getattr(p, "name", ""))
def test_every_schema_version_is_required_and_pinned_to_the_files_version(path, root):
    version = int(path.name.split("-v")[1].split(".")[0])  # report-v1.schema.json -> 1
    defs = json.loads(path.read_text())["$defs"]
    holders = [cls for cls in _dataclasses(root) if "schema_version" in {f.name for f in dataclasses.fields(cls)}]
    assert root in holders
    for cls in holders:
        assert "schema_version" in defs[cls.__name__]["required"], cls.__name__
        assert defs[cls.__name__]["properties"]["schema_version"]["const"] == version, cls.__name__
        assert defs[cls.__name__]["properties"]["schema_version"]["type"] == "integer", cls.__name__


def test_every_shipped_schema_is_current():
    # Regenerate with: python -m mpdoctor.schema
    made = schemas()
    assert set(made) == set(SHIPPED)
    for path, make in made.items():
        assert json.loads(path.read_text()) == make(), path.name


def test_every_shipped_schema_states_how_it_evolves():
    for path in SHIPPED:
        description = json.loads(path.read_text())["description"]
        assert "may add fields" in description and "unknown" in description and "required" in description


# ---------------------------------------------------------------- vocabularies


def _property(path, cls: type, name: str) -> dict:
    return json.loads(path.read_text())["$defs"][cls.__name__]["properties"][name]


def _enum(prop: dict) -> list:
    """The enum of a vocabulary field's schema (it may sit under an Optional's or a list's schema)."""
    for key in ("anyOf", "items", "additionalProperties"):
        inner = prop.get(key)
        if key == "anyOf" and inner and "enum" in inner[0]:
            assert inner[1:] == [{"type": "string"}]
            return inner[0]["enum"]
        if isinstance(inner, list):
            return next(_enum(x) for x in inner if "null" != x.get("type"))
        if isinstance(inner, dict):
            return _enum(inner)
    raise AssertionError(f"no enum in {prop}")


def test_the_shipped_schemas_have_vocabulary_fields():
    assert len(ALL_LITERAL_FIELDS) >= 25


@pytest.mark.parametrize(
    "path, cls, field, literal",
    ALL_LITERAL_FIELDS,
    ids=[f"{p.stem}:{c.__name__}.{f.name}" for p, c, f, _ in ALL_LITERAL_FIELDS],
)
def test_each_enum_lists_its_literal_type(path, cls, field, literal):
    prop = _property(path, cls, field.name)
    assert _enum(prop) == list(typing.get_args(literal))
    assert prop["description"].endswith(OPEN_VOCABULARY)


@pytest.mark.parametrize(
    "path, cls, field, literal",
    ALL_LITERAL_FIELDS,
    ids=[f"{p.stem}:{c.__name__}.{f.name}" for p, c, f, _ in ALL_LITERAL_FIELDS],
)
def test_each_vocabulary_field_defaults_to_one_of_its_values(path, cls, field, literal):
    if field.default is not dataclasses.MISSING:
        assert field.default in typing.get_args(literal)
    else:
        assert field.default_factory is dataclasses.MISSING  # no factory makes a string


def test_every_vocabulary_is_used_and_declared_in_vocab():
    # ExplainFamily is declared in mpdoctor.explain.report (explain does not load the snapshot package), a rank's
    # status in the fleet model beside the report it belongs to
    declared = {
        **{name: getattr(vocab, name) for name in vocab.__all__},
        "ExplainFamily": explain.ExplainFamily,
        "RankStatus": fleet.RankStatus,
    }
    assert all(typing.get_origin(lit) is Literal for lit in declared.values())
    used = {lit for *_, lit in ALL_LITERAL_FIELDS}
    assert used <= set(declared.values())
    assert set(declared.values()) <= used


@pytest.mark.parametrize(
    "literal, table",
    [
        (vocab.KernelOp, OPS + ("",)),
        (vocab.KernelDtype, tuple(TOLERANCE) + ("",)),
        (vocab.SdpaBackend, tuple(name for name, _, _ in SDPA_BACKENDS) + ("",)),
        (explain.ExplainFamily, FAMILIES),
        (vocab.CudaOrder, ORDERS + ("unknown",)),
        (vocab.SeverityName, tuple(s.value for s in Severity)),
    ],
    ids=["KernelOp", "KernelDtype", "SdpaBackend", "ExplainFamily", "CudaOrder", "SeverityName"],
)
def test_vocabularies_with_a_table_in_code_match_it(literal, table):
    assert set(typing.get_args(literal)) == set(table)


def test_precision_levels_match_capability():
    assert set(typing.get_args(vocab.PrecisionLevel)) == set(capability.LEVELS) | {""}
    assert {level for cc in range(10, 130) for level in capability.support(cc).values()} <= set(capability.LEVELS)


def test_the_live_report_uses_only_declared_values(live_report_json):
    assert undeclared_values(Report, json.loads(live_report_json)) == []


# ---------------------------------------------------------------- serde on Literal, directly


Mode = Literal["quick", "full"]


@dataclasses.dataclass
class _Holder:
    mode: Mode = "quick"
    modes: list[Mode] = dataclasses.field(default_factory=list)
    maybe: typing.Optional[Mode] = None


def test_from_data_takes_declared_and_unknown_strings_and_refuses_other_types():
    assert from_data(Mode, "full") == "full"
    assert from_data(Mode, "turbo") == "turbo"  # a newer mpdoctor's value: kept, never an error
    assert from_data(_Holder, {"modes": ["quick", "new"], "maybe": None}) == _Holder("quick", ["quick", "new"], None)
    for bad in (1, None, True, ["quick"], {"a": 1}):
        with pytest.raises(DataError, match=r"\$: expected str"):
            from_data(Mode, bad)
    with pytest.raises(DataError, match=r"\$\.modes\[0\]: expected str, got int"):
        from_data(_Holder, {"modes": [1]})


def test_undeclared_values_names_where_they_are():
    assert undeclared_values(_Holder, {"mode": "turbo", "modes": ["full", "x"], "maybe": "y"}) == [
        "$.mode: 'turbo'",
        "$.modes[1]: 'x'",
        "$.maybe: 'y'",
    ]
    assert undeclared_values(_Holder, {"mode": "quick", "maybe": None}) == []


def test_json_schema_of_a_literal_is_its_enum_or_any_string():
    defs: dict = {}
    assert json_schema(Mode, defs) == {"anyOf": [{"enum": ["quick", "full"]}, {"type": "string"}]}
    json_schema(_Holder, defs)
    holder = defs["_Holder"]
    assert holder["required"] == [] and "additionalProperties" not in holder
    validator = jsonschema.Draft202012Validator({**json_schema(_Holder, defs), "$defs": defs})
    validator.validate({"mode": "turbo", "modes": ["full"], "extra": 1})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"mode": 1})


def test_from_data_takes_an_integral_float_as_an_int_and_refuses_other_floats():
    assert from_data(int, 2.0) == 2 and type(from_data(int, 2.0)) is int
    assert from_data(int, -0.0) == 0 and type(from_data(int, -0.0)) is int
    assert from_data(typing.Optional[int], 3.0) == 3
    for bad in (2.5, float("nan"), float("inf"), True, False, "2"):
        with pytest.raises(DataError, match=r"\$: expected int"):
            from_data(int, bad)
    assert type(from_data(float, 2)) is float  # the other way round, as before


@dataclasses.dataclass
class _Versioned:
    schema_version: int = fact("v", 3, required=True, schema={"const": 3})
    other: int = fact("o", 0)


def test_a_fact_can_be_required_and_pinned_though_it_has_a_default():
    assert _Versioned().schema_version == 3  # Python code still gets the default
    defs: dict = {}
    json_schema(_Versioned, defs)
    assert defs["_Versioned"]["required"] == ["schema_version"]
    assert defs["_Versioned"]["properties"]["schema_version"] == {"description": "v", "type": "integer", "const": 3}
    assert from_data(_Versioned, {"schema_version": 3}) == _Versioned()
    assert from_data(_Versioned, {"schema_version": 3.0}) == _Versioned()
    with pytest.raises(DataError, match="missing required field 'schema_version'"):
        from_data(_Versioned, {"other": 1})
    with pytest.raises(DataError, match=r"\$\.schema_version: expected 3, got 4"):
        from_data(_Versioned, {"schema_version": 4})


def test_a_fact_carries_only_keywords_the_loader_enforces():
    with pytest.raises(TypeError, match="const"):
        fact("x", 0, schema={"minimum": 0})


def test_only_literals_of_strings_are_supported():
    with pytest.raises(TypeError):
        json_schema(Literal[1, 2], {})
    with pytest.raises(TypeError):
        from_data(Literal[1, 2], 1)
