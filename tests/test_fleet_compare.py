"""`mpdoctor fleet compare` and the pure comparison: one constructed fleet per finding kind, and the fleet schema.

The GPU fleets are constructed (labelled so): snapshots of this CPU machine's recorded
capture with GPUs, drivers and measured kernel times grafted on (tests/fixtures), since
CI has no GPU. The CLI runs for real on saved files.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace

import jsonschema
import pytest
from rich.console import Console
from typer.testing import CliRunner

from fixtures.base import (
    capture,
    cuda_torch,
    dist,
    with_distributions,
    with_env,
    with_environment,
    with_kernels,
    with_nvml,
)
from fixtures.machines import A100, H100_NODE, V100
from mpdoctor.checks.registry import RANKS, builtin_registry
from mpdoctor.cli import app
from mpdoctor.findings import warning
from mpdoctor.fleet.compare import compare, group_lines, worst
from mpdoctor.fleet.naming import rank_list
from mpdoctor.fleet.fingerprint import env_that_matters, rank_report
from mpdoctor.fleet.model import SCHEMA_PATH, FleetReport, RankState, fleet_data
from mpdoctor.fleet.schema import schema_text
from mpdoctor.render.wrap import shell_words
from mpdoctor.render.fleet import render_fleet_json, render_fleet_markdown, render_fleet_text
from mpdoctor.schema.serde import from_data, to_data
from mpdoctor.snapshot import DeviceKernels, KernelInfo, KernelResult, Snapshot

KERNELS = ("matmul/bfloat16", "matmul/float16", "conv2d/bfloat16", "softmax/bfloat16")


def h100_node(
    gpus: int = 2,
    slow: dict[int, float] | None = None,
    driver: str = "550.54.14",
    bf16_native: bool = True,
    torch: str = "2.13.0+cu130",
    torch_cuda: str = "13.0",
) -> Snapshot:
    """Constructed: one node with ``gpus`` H100s, torch CUDA, and measured kernels (``slow``: device -> factor)."""
    snap = with_nvml(capture("cpu-laptop"), H100_NODE[:gpus], driver=driver, cuda="12.4")
    snap = cuda_torch(snap, version=torch, cuda=torch_cuda)
    return with_kernels(snap, gpu_kernels(snap, slow or {}, bf16_native))


def gpu_kernels(snap: Snapshot, slow: dict[int, float], bf16_native: bool = True) -> KernelInfo:
    devices = []
    for device in snap.torch.devices:
        factor = slow.get(device.ordinal, 1.0)
        results = [
            KernelResult(op=key.split("/")[0], dtype=key.split("/")[1], status="ok", seconds=0.001 * (n + 1) * factor)
            for n, key in enumerate(KERNELS)
        ]
        devices.append(
            DeviceKernels(
                device=f"cuda:{device.ordinal}",
                name=device.name,
                compute_capability=device.compute_capability,
                bf16_native=bf16_native,
                status="ok",
                results=results,
            )
        )
    return KernelInfo(status="ok", mode="quick", devices=devices)


def fleet(snaps: list[Snapshot], per_node: int = 1, findings=None) -> list:
    """Rank reports: node n's snapshot serves its ``per_node`` ranks; local rank 0 keeps the kernels."""
    reports = []
    for n, snap in enumerate(snaps):
        for local in range(per_node):
            mine = snap if local == 0 else with_kernels(snap, KernelInfo(status="skipped"))
            rank = n * per_node + local
            reports.append(rank_report(rank, f"node-{chr(97 + n)}", local, mine, (findings or {}).get(rank, [])))
    return reports


def codes(report: FleetReport) -> list[str]:
    return [f.code for f in report.findings]


def test_identical_ranks_form_one_group_and_find_nothing():
    report = compare(fleet([h100_node()] * 4, per_node=2), 8, "torchrun")
    assert len(report.groups) == 1 and report.groups[0].ranks == list(range(8))
    assert report.findings == [] and worst(report) is None
    assert group_lines(report) == ["ranks 0-7 (8 ranks on 4 nodes) agree"]


def test_a_rank_that_never_reported_is_named_with_its_last_step():
    absent = [
        RankState(
            rank=3,
            host="node-b",
            local_rank=1,
            status="missing",
            last_step="importing torch",
            step_seconds=61.0,
            detail="still running at the deadline",
        )
    ]
    report = compare(fleet([h100_node()] * 2, per_node=2)[:3], 4, "torchrun", absent)
    (finding,) = report.findings
    assert finding.code == "FLEET001" and finding.severity == "error"
    assert finding.title == "rank 3 on node-b (local rank 1) sent no report: stuck importing torch for 61 s"
    assert [s.status for s in report.ranks] == ["reported", "reported", "reported", "missing"]


def test_a_crashed_rank_is_named_as_crashed():
    absent = [
        RankState(
            rank=1,
            host="node-a",
            local_rank=1,
            status="crashed",
            last_step="starting CUDA",
            step_seconds=2.0,
            detail="mpdoctor's process on this rank ended before it finished",
        )
    ]
    report = compare(fleet([h100_node()])[:1], 2, "slurm", absent)
    assert report.findings[0].title.startswith("rank 1 on node-a (local rank 1) crashed; last step: starting CUDA")


def test_one_node_with_another_nccl_is_an_error_naming_that_rank():
    """NVIDIA/nccl#1267: one node had nvidia-nccl-cu12 2.20.5, the others 2.19.3."""
    nodes = [with_distributions(h100_node(), dist("nvidia-nccl-cu12", "2.19.3")) for _ in range(3)]
    nodes.append(with_distributions(h100_node(), dist("nvidia-nccl-cu12", "2.20.5")))
    report = compare(fleet(nodes, per_node=2), 8, "torchrun")
    (finding,) = [f for f in report.findings if f.code == "FLEET002"]
    assert finding.severity == "error"
    # These snapshots' torch said no NCCL version: the wheel's stands in, and the finding says so.
    assert finding.title == (
        "NCCL differs: 2.20.5 (nvidia-nccl-cu12 wheel) on ranks 6-7 (2 ranks on 1 node), "
        "2.19.3 (nvidia-nccl-cu12 wheel) on the other 6"
    )
    assert group_lines(report)[1] == (
        "ranks 6-7 (2 ranks on 1 node) differ: NCCL 2.20.5 (nvidia-nccl-cu12 wheel) "
        "(others: 2.19.3 (nvidia-nccl-cu12 wheel))"
    )


def test_nccl_as_torch_loads_it_is_compared_instead_of_the_wheel():
    """NVIDIA/nccl#1381: a system libnccl first on LD_LIBRARY_PATH on one node, the same wheels everywhere."""

    def node(loaded: str, wheel: str = "2.19.3"):
        snap = with_distributions(h100_node(), dist("nvidia-nccl-cu12", wheel))
        return replace(snap, torch=replace(snap.torch, nccl=loaded))

    report = compare(fleet([node("2.19.3"), node("2.19.3"), node("2.18.1")]), 3, "slurm")
    (finding,) = [f for f in report.findings if f.code == "FLEET002"]
    assert finding.title == (
        "NCCL differs: 2.18.1 (as torch loads it) on rank 2 on node-c, 2.19.3 (as torch loads it) on the other 2"
    )
    assert "torch.cuda.nccl.version()" in finding.fix[0].command
    # Torch loads the same NCCL everywhere: wheels that differ beside it are not what runs.
    quiet = compare(fleet([node("2.21.5", "2.21.5"), node("2.21.5", "2.20.5")]), 2, "slurm")
    assert not [f for f in quiet.findings if f.code == "FLEET002"]
    assert group_lines(quiet) == ["ranks 0-1 (2 ranks on 2 nodes) agree"]


def test_torch_versions_that_differ_are_an_error():
    report = compare(fleet([h100_node(), h100_node(torch="2.12.1+cu128")]), 2, "torchrun")
    [finding] = [f for f in report.findings if f.title.startswith("torch differs")]
    assert (finding.code, finding.severity) == ("FLEET002", "error")
    # the command that gives the odd rank the reference rank's torch, from the PyTorch index that build is on
    assert [(step.text, step.command) for step in finding.fix] == [
        (
            "Install torch 2.13.0+cu130 on the odd ranks' nodes (or the same image everywhere)",
            "python -m pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130",
        )
    ]


@pytest.mark.parametrize(
    "reference, command",
    [
        ("2.13.0", "python -m pip install torch==2.13.0"),  # no local label: PyPI's
        ("2.13.0+cpu", "python -m pip install torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu"),
        ("2.6.0a0+ecf3bae40a.nv25.01", None),  # NVIDIA's container build: on no index
        ("2.5.0a0+git1234abc", None),  # a source build
        ("2.5.1; rm -rf ~", None),  # no version at all (a report written by hand)
    ],
)
def test_the_torch_fix_installs_the_reference_build_only_where_an_index_serves_it(reference, command):
    nodes = [h100_node(torch=reference), h100_node(torch=reference), h100_node(torch="2.12.1+cu128")]
    [finding] = [f for f in compare(fleet(nodes), 3, "torchrun").findings if f.title.startswith("torch differs")]
    [step] = finding.fix
    assert step.command == command and reference in step.text
    if command is None:
        assert "no package index serves that build" in step.text


def test_a_package_only_the_odd_ranks_have_is_no_install_of_an_unset_version():
    nodes = [h100_node(), h100_node(), with_distributions(h100_node(), dist("apex", "0.1"))]
    [finding] = [f for f in compare(fleet(nodes), 3, "torchrun").findings if "package apex" in f.title]
    assert [(s.text, s.command) for s in finding.fix] == [
        ("Install the same packages on every node: only the odd ranks have apex", None)
    ]


def test_a_minor_package_difference_is_one_info_finding():
    nodes = [  # a package the fixture does not have: appended, it is the only copy
        with_distributions(h100_node(), dist("humanize", "4.8")),
        with_distributions(h100_node(), dist("humanize", "4.9")),
    ]
    (finding,) = compare(fleet(nodes), 2, "torchrun").findings
    assert (finding.code, finding.severity) == ("FLEET002", "info")
    assert finding.title == "1 other installed package(s) differ across ranks"


def test_a_shadowed_copy_is_not_what_a_rank_imports():
    """The inventory lists copies in sys.path order: the first is what imports (a PYTHONPATH copy first)."""
    from mpdoctor.fleet.fingerprint import unmeasured

    plain = h100_node()
    shadowed = with_distributions(h100_node(), dist("rich", "13.0"))  # after the fixture's rich 15.0.0: shadowed
    assert unmeasured(shadowed, 0).packages["rich"] == unmeasured(plain, 0).packages["rich"] == "15.0.0"
    assert not compare(fleet([plain, shadowed]), 2, "torchrun").findings
    shadowing = with_environment(plain, distributions=[dist("rich", "13.0"), *plain.environment.distributions])
    (finding,) = compare(fleet([plain, shadowing]), 2, "torchrun").findings
    assert "package rich = 13.0: rank 1" in " ".join(finding.evidence)


def test_another_driver_on_one_node_is_a_warning():
    """NVIDIA/nccl#1381: identical pip lists, different drivers."""
    report = compare(fleet([h100_node(), h100_node(), h100_node(driver="535.113.01")]), 3, "slurm")
    (finding,) = report.findings
    assert (finding.code, finding.severity) == ("FLEET003", "warning")
    assert finding.title == "NVIDIA driver differs: 535.113.01 on rank 2 on node-c, 550.54.14 on the other 2"


def test_a_node_whose_gpus_only_emulate_bf16_is_named():
    v100 = with_nvml(capture("cpu-laptop"), V100, driver="550.54.14", cuda="12.4")
    v100 = cuda_torch(v100)
    v100 = with_kernels(v100, gpu_kernels(v100, {}, bf16_native=False))
    report = compare(fleet([h100_node(gpus=1), h100_node(gpus=1), v100]), 3, "torchrun")
    titles = {f.title for f in report.findings if f.code == "FLEET004"}
    assert "bf16 native differs: false on rank 2 on node-c, true on the other 2" in titles
    assert "GPU differs: Tesla V100-SXM2-16GB on rank 2 on node-c, NVIDIA H100 80GB HBM3 on the other 2" in titles


def test_a_throttled_gpu_is_named_with_its_rank():
    nodes = [h100_node(), h100_node(slow={1: 2.0}), h100_node()]
    report = compare(fleet(nodes, per_node=2), 6, "torchrun")
    (finding,) = [f for f in report.findings if f.code == "FLEET005"]
    assert finding.title == (
        "cuda:1 on node-b (rank 3) (NVIDIA H100 80GB HBM3) is 2.0x slower than the same model on 5 other device(s)"
    )


def test_timing_noise_below_the_threshold_blames_no_gpu():
    nodes = [h100_node(), h100_node(slow={0: 1.3}), h100_node()]
    assert "FLEET005" not in codes(compare(fleet(nodes, per_node=2), 6, "torchrun"))


def test_gpus_of_different_models_are_not_compared_for_speed():
    a100 = with_nvml(capture("cpu-laptop"), A100, driver="550.54.14", cuda="12.4")
    a100 = cuda_torch(a100)
    a100 = with_kernels(a100, gpu_kernels(a100, {0: 3.0}))
    assert "FLEET005" not in codes(compare(fleet([h100_node(gpus=1), a100]), 2, "torchrun"))


def test_an_environment_variable_set_on_one_rank_is_named():
    nodes = [h100_node(), with_env(h100_node(), NVIDIA_TF32_OVERRIDE="0"), h100_node()]
    (finding,) = compare(fleet(nodes), 3, "torchrun").findings
    assert (finding.code, finding.severity) == ("FLEET006", "warning")
    assert finding.title == "env NVIDIA_TF32_OVERRIDE differs: 0 on rank 1 on node-b, (unset) on the other 2"
    assert finding.fix[0].command == "unset NVIDIA_TF32_OVERRIDE"


def test_variables_the_launcher_sets_per_rank_are_not_compared():
    env = {
        "CUDA_VISIBLE_DEVICES": "3",
        "TORCHELASTIC_ERROR_FILE": "/tmp/x",
        "NCCL_DEBUG": "INFO",
        "PATH": "/bin",
        "SLURM_PROCID": "3",
        "LD_LIBRARY_PATH": "/opt/nccl/lib",
    }
    assert env_that_matters(env) == {"LD_LIBRARY_PATH": "/opt/nccl/lib", "NCCL_DEBUG": "INFO"}


def test_a_finding_on_some_ranks_only_is_named_and_a_common_one_shown_once():
    apex = warning("apex is the unrelated PyPI package", ["..."])
    apex = replace(apex, code="APEX001", name="apex-impostor", family="apex")
    common = replace(warning("TF32 is off"), code="PREC002", name="tf32-off", family="precision")
    findings = {0: [common], 1: [common], 2: [common, apex]}
    report = compare(fleet([h100_node()] * 3, findings=findings), 3, "torchrun")
    (some,) = [f for f in report.findings if f.code == "FLEET007"]
    assert some.title == "APEX001 on rank 2 on node-c only: apex is the unrelated PyPI package"
    by_code = {s.finding.code: s for s in report.rank_findings}
    assert by_code["PREC002"].on_all and by_code["PREC002"].ranks == [0, 1, 2]
    assert not by_code["APEX001"].on_all and by_code["APEX001"].ranks == [2]


def test_ranks_that_ran_no_kernels_take_their_nodes_kernel_findings():
    """Only local rank 0 of a node times kernels (on all its GPUs); its kernel findings hold for the whole node."""
    measured = replace(warning("bf16 matmul is slow on cuda:0"), code="PREC004", name="x", family="precision")
    skipped = replace(warning("Precision was predicted, not measured"), code="PREC010", name="y", family="precision")
    findings = {0: [measured], 1: [skipped], 2: [measured], 3: [skipped]}
    report = compare(fleet([h100_node()] * 2, per_node=2, findings=findings), 4, "torchrun")
    assert [(s.finding.code, s.ranks, s.on_all) for s in report.rank_findings] == [("PREC004", [0, 1, 2, 3], True)]
    assert "FLEET007" not in codes(report)


def test_rank_lists_are_compressed():
    assert rank_list([0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7-8"
    assert rank_list([]) == ""


# ---------------------------------------------------------------- renderers and the schema


@pytest.fixture(scope="module")
def odd_fleet() -> FleetReport:
    nodes = [h100_node(), with_env(h100_node(slow={0: 2.5}), NCCL_ALGO="Ring"), h100_node()]
    absent = [RankState(rank=6, host="node-d", local_rank=0, status="missing", last_step="checking", step_seconds=30.0)]
    return compare(fleet(nodes, per_node=2), 7, "torchrun", absent)


def test_the_text_view_names_the_odd_ranks(odd_fleet):
    buffer = io.StringIO()
    render_fleet_text(odd_fleet, Console(file=buffer, width=100, no_color=True))
    text = buffer.getvalue()
    assert "ranks 0-1, 4-5 (4 ranks on 2 nodes) agree" in text
    assert "ranks 2-3 (2 ranks on 1 node) differ: env NCCL_ALGO Ring (others: (unset))" in text
    assert "rank 6 on node-d (local rank 0): missing, last step checking for 30 s" in text
    assert "FLEET005" in text and "FLEET001" in text


@pytest.mark.parametrize("width", [40, 80])
def test_the_text_view_piped_keeps_every_fact_on_one_line_and_wraps_at_words_on_a_terminal(odd_fleet, width):
    piped = io.StringIO()
    render_fleet_text(odd_fleet, Console(file=piped, width=width, force_terminal=False))
    wide = io.StringIO()
    render_fleet_text(odd_fleet, Console(file=wide, width=1000, force_terminal=False))
    assert piped.getvalue() == wide.getvalue()  # a pipe gets whole lines, whatever rich thinks its width is
    shown = io.StringIO()
    render_fleet_text(odd_fleet, Console(file=shown, width=width, force_terminal=True, color_system=None))
    # The same words, only the line breaks moved (a long fix command continued with a shell's backslash).
    assert [w for w in shown.getvalue().split() if w != "\\"] == wide.getvalue().split()
    for line in shown.getvalue().splitlines():
        body = line.strip().removeprefix("$ ").removesuffix(" \\")
        assert len(line) <= width or len(shell_words(body)) == 1, line  # too wide only for one unbreakable word


def test_the_markdown_view(odd_fleet):
    text = render_fleet_markdown(odd_fleet)
    assert text.startswith("# mpdoctor fleet: 7 rank(s), launched by torchrun")
    assert "- **error** `FLEET001` rank 6 on node-d (local rank 0) sent no report" in text


def test_the_json_is_valid_under_the_shipped_schema_and_round_trips(odd_fleet):
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data = json.loads(render_fleet_json(odd_fleet))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert list(data)[:3] == ["schema_version", "mpdoctor_version", "created"]
    assert to_data(from_data(FleetReport, data)) == to_data(odd_fleet)


def test_the_schema_refuses_another_version(odd_fleet):
    schema = json.loads(SCHEMA_PATH.read_text())
    data = fleet_data(odd_fleet)
    data["schema_version"] = 2
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_the_shipped_schema_is_up_to_date():
    assert SCHEMA_PATH.read_text() == schema_text(), "run: python -m mpdoctor.fleet.schema"


FLEET_RULES = {entry.code: entry for entry in builtin_registry().judging(RANKS)}


def test_every_rule_is_registered_and_documented():
    """The FLEET codes are the registry's codes that judge ranks, declared like every other rule."""
    assert list(FLEET_RULES) == [f"FLEET00{n}" for n in range(1, 9)]
    for rule in FLEET_RULES.values():
        assert rule.family == "fleet" and rule.func is None and not rule.runs_on_snapshot
        assert "## Why it matters" in rule.doc and "## Fix" in rule.doc
        assert rule.severities and rule.summary


# ---------------------------------------------------------------- the command, on saved files


def save(tmp_path, name: str, snap: Snapshot) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(to_data(snap)))
    return str(path)


def test_fleet_compare_of_saved_snapshots(tmp_path):
    a = save(tmp_path, "a.json", h100_node())
    b = save(tmp_path, "b.json", with_env(h100_node(), NVIDIA_TF32_OVERRIDE="0"))
    result = CliRunner().invoke(app, ["fleet", "compare", a, b, "--format", "json", "--fail-on", "warning"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    assert data["launcher"] == "compare" and [r["label"] for r in data["ranks"]] == ["a.json", "b.json"]
    assert [f["code"] for f in data["findings"]] == ["FLEET006"]
    # The default --fail-on error looks at the ranks' own findings too (these constructed GPUs on a CPU capture
    # have errors of their own); --fail-on never always exits 0.
    own_errors = any(s["finding"]["severity"] == "error" for s in data["rank_findings"])
    assert CliRunner().invoke(app, ["fleet", "compare", a, b]).exit_code == int(own_errors)
    assert CliRunner().invoke(app, ["fleet", "compare", a, b, "--fail-on", "never"]).exit_code == 0


def test_fleet_compare_takes_json_reports_with_their_findings(tmp_path):
    snap = save(tmp_path, "snap.json", capture("cpu-kernels"))
    report = tmp_path / "report.json"
    checked = CliRunner().invoke(app, ["check", "--snapshot", snap, "--format", "json", "-o", str(report)])
    assert checked.exit_code in (0, 1), checked.output
    result = CliRunner().invoke(app, ["fleet", "compare", str(report), snap, "--format", "markdown"])
    assert result.exit_code in (0, 1) and "# mpdoctor fleet: 2 rank(s), launched by compare" in result.output


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not a JSON snapshot or report"),
        ('{"schema_version": 99}', "newer than this mpdoctor understands"),
    ],
)
def test_fleet_compare_refuses_bad_files_in_one_line(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = save(tmp_path, "good.json", h100_node())
    result = CliRunner().invoke(app, ["fleet", "compare", good, str(bad)])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_fleet_compare_needs_two_files(tmp_path):
    result = CliRunner().invoke(app, ["fleet", "compare", save(tmp_path, "a.json", h100_node())])
    assert result.exit_code == 2 and "at least two files" in result.output


def test_fleet_rule_prints_the_documentation():
    result = CliRunner().invoke(app, ["fleet", "rule", "FLEET006"])
    assert result.exit_code == 0 and "## Fix" in result.output
    assert CliRunner().invoke(app, ["fleet", "rule", "NOPE1"]).exit_code == 2


def test_secrets_never_reach_the_fleet_report(tmp_path):
    """Values are redacted by the probe on each rank; the fleet report is scanned again before it is written."""
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuV"
    a = save(tmp_path, "a.json", with_env(h100_node(), TORCH_HOME="https://alice:hunter2secret@cache.example/t"))
    b = save(tmp_path, "b.json", with_env(h100_node(), NCCL_SOCKET_IFNAME=token))
    for format in ("text", "json", "markdown"):
        result = CliRunner().invoke(app, ["fleet", "compare", a, b, "--format", format, "--fail-on", "never"])
        assert result.exit_code == 0, result.output
        assert "hunter2secret" not in result.output and token not in result.output
        assert "TORCH_HOME" in result.output


def test_fleet_rules_lists_the_registrys_fleet_codes():
    result = CliRunner().invoke(app, ["fleet", "rules"])
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == list(FLEET_RULES)
    for line, rule in zip(result.output.splitlines(), FLEET_RULES.values()):
        assert line.split()[1] == rule.name and line.endswith(rule.summary)
    assert CliRunner().invoke(app, ["fleet", "rule", "TORCH005"]).exit_code == 2  # a code, not a fleet code


def test_every_fleet_finding_is_stamped_with_its_registered_rule(odd_fleet):
    assert odd_fleet.findings
    for finding in odd_fleet.findings:
        rule = FLEET_RULES[finding.code]
        assert (finding.name, finding.family) == (rule.name, "fleet"), finding.title
        assert finding.severity in rule.severities, finding.title


def _capped():
    """In the child: at most 2 GB of address space, so an unbounded read fails fast instead of eating the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: "/dev/zero", "cannot read /dev/zero: it is a character device, not a regular file"),
        (lambda tmp: _fifo(tmp), "it is a FIFO (named pipe), not a regular file"),
        (lambda tmp: _written(tmp, '{"a": ' + "7" * 5000 + "}"), "an integer of 5000 digits (at most 40 are read)"),
        (lambda tmp: _written(tmp, "[" * 100_000), "nested too deeply (at most 64 levels are read)"),
        (lambda tmp: _written(tmp, "\ufeff{}".encode("utf-16")), "not a JSON snapshot or report"),
    ],
    ids=["dev-zero", "fifo", "5000-digits", "100k-deep", "utf-16"],
)
def test_fleet_compare_reads_through_the_bounded_reader(tmp_path, make, message):
    """Once plain open() + json.load: /dev/zero grew to 24 GB, a FIFO hung, a 5000-digit number exited 3."""
    import subprocess
    import sys

    good = save(tmp_path, "good.json", h100_node())
    result = subprocess.run(
        [sys.executable, "-m", "mpdoctor", "fleet", "compare", make(tmp_path), good],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_capped,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr and "Traceback" not in result.stderr


def _fifo(tmp_path) -> str:
    import os

    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return str(path)


def _written(tmp_path, content) -> str:
    path = tmp_path / "hostile.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return str(path)


def test_torch_cuda_that_differs_is_fixed_by_the_reference_ranks_torch_build():
    nodes = [h100_node(), h100_node(), h100_node(torch="2.13.0+cu126", torch_cuda="12.6")]
    report = compare(fleet(nodes), 3, "torchrun")
    [finding] = [f for f in report.findings if f.title.startswith("torch's CUDA differs")]
    assert finding.severity == "error"
    # the same command as torch's own difference: one build of torch names its CUDA
    assert [step.command for step in finding.fix] == [
        "python -m pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
    ]
