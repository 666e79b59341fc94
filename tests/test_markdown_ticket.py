"""The support ticket (`--format markdown`): it fits in 20,000 characters for any environment, cuts out loud,
and names the snapshot file written beside it, with the command that re-judges it."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from helpers import fixture_path, load_fixture, run_cli, snapshot_fixture_names
from mpdoctor.analysis.gpu_map import device_table
from mpdoctor.doctor.judge import judge
from mpdoctor.analysis.kernel_matrix import kernel_table
from mpdoctor.doctor.report import Report, redacted
from mpdoctor.findings import Finding, FixStep
from mpdoctor.render.markdown import LIMIT, render_markdown

LARGEST = "h200-fork-refused"  # the fixture with the largest snapshot (the real H200 capture, Nov 2026)
TWO_GPUS = "kernels-titan-1080ti"  # the largest with two GPUs, both measured, and a capability matrix
SECTIONS = ("## mpdoctor report", "## Findings", "## Environment", "## Snapshot")


def report_of(name: str) -> Report:
    snap = load_fixture(name)
    return redacted(
        Report(
            created="2026-11-23T00:00:00+00:00",
            findings=judge(snap),
            snapshot=snap,
            gpus=device_table(snap),
            kernels=kernel_table(snap),
        )
    )


def fences_closed(text: str) -> bool:
    """Every code fence that opens also closes (a cut never leaves the rest of the ticket inside a fence)."""
    open_fence = ""
    for line in text.splitlines():
        match = re.match(r"^\s*(`{3,})", line)
        if not match:
            continue
        if not open_fence:
            open_fence = match.group(1)
        elif match.group(1) == open_fence and line.strip() == open_fence:
            open_fence = ""
    return not open_fence


def test_the_largest_fixture_is_a_ticket_with_everything_and_no_embedded_snapshot():
    sizes = {name: len(fixture_path(name).read_text(encoding="utf-8")) for name in snapshot_fixture_names()}
    assert max(sizes, key=sizes.get) == LARGEST  # keep LARGEST honest as fixtures are added
    report = report_of(LARGEST)
    text = render_markdown(report, "ticket.snapshot.json")
    assert len(text) <= LIMIT
    for section in SECTIONS + ("## GPUs", "## Precision, measured"):
        assert section in text
    assert text.count("\n### ") == len(report.findings)  # every finding in full: nothing had to be cut
    assert "NVIDIA H200" in text and "| matmul |" in text  # the device table and the capability matrix
    assert "more findings" not in text and "<details>" not in text and '"schema_version"' not in text
    assert "`ticket.snapshot.json`" in text and "mpdoctor check --snapshot ticket.snapshot.json" in text
    assert fences_closed(text)


@pytest.mark.parametrize("name", snapshot_fixture_names())
def test_every_fixture_fits(name):
    text = render_markdown(report_of(name))
    assert len(text) <= LIMIT and fences_closed(text)
    assert "--save-snapshot" in text  # to stdout with no snapshot file: it says how to get one


def worst_case(count: int = 400, width: int = 2_000, devices: int = 48) -> Report:
    """Hundreds of findings with long evidence and commands, 48 distinct GPUs, each measured: constructed."""
    snap = load_fixture(TWO_GPUS)
    gpus, torch_devices, measured = [], [], []
    for i in range(devices):
        bus = f"0000:{i + 1:02x}:00.0"
        name = f"NVIDIA Synthetic Accelerator {i:02d} " + "with a very long marketing name " * 3
        gpus.append(
            dataclasses.replace(snap.machine.nvml.gpus[i % 2], index=i, name=name, pci_bus_id=bus, uuid=f"GPU-{i:08d}")
        )
        torch_devices.append(
            dataclasses.replace(snap.torch.devices[i % 2], ordinal=i, name=name, pci_bus_id=bus, uuid=f"{i:08d}")
        )
        cuda = snap.kernels.devices[1 + i % 2]
        measured.append(dataclasses.replace(cuda, device=f"cuda:{i}", name=name))
    snap.machine.nvml.gpus, snap.torch.devices = gpus, torch_devices
    snap.torch.device_count = snap.torch.runtime_device_count = len(torch_devices)
    snap.kernels.devices = snap.kernels.devices[:1] + measured
    findings = []
    for i in range(count):
        severity = ("error", "warning", "info")[i % 3]
        findings.append(
            Finding(
                severity,
                f"synthetic finding {i} " + "that goes on " * (width // 50),
                [f"evidence line {j} " + "x" * width for j in range(30)] + ["```", "~~~ a fence inside"],
                [FixStep(f"step {j} " + "do this " * 100, "echo " + "y" * (500 if j % 2 else 5_000)) for j in range(3)],
                code=f"SYN{i:03d}",
                name=f"synthetic-{i}",
                family="torch",
            )
        )
    findings.sort(key=lambda f: (-f.level.rank, f.code))
    return Report(
        created="2026-11-23T00:00:00+00:00",
        findings=findings,
        snapshot=snap,
        gpus=device_table(snap),
        kernels=kernel_table(snap),
    )


def test_the_worst_case_is_cut_with_counts_not_silently():
    report = worst_case()
    text = render_markdown(report, "report.snapshot.json")
    assert len(text) <= LIMIT
    assert fences_closed(text)
    full = text.count("\n### ")
    listed = len(re.findall(r"^- \*\*(ERROR|WARNING|INFO)\*\* `SYN", text, re.M))
    more = re.search(
        r"\*\*\.\.\. (\d+) more findings \((.*?)\), see the snapshot: `mpdoctor check --snapshot "
        r"report\.snapshot\.json` lists them all\*\*",
        text,
    )
    assert full >= 1 and listed >= 1 and more, text[-3000:]
    assert full + listed + int(more.group(1)) == len(report.findings)  # every finding is shown, named or counted
    # errors first: while some error is left out, no warning or info takes room
    assert "error" in more.group(2) and "### ERROR `SYN000`" in text
    assert "WARNING" not in text and "**INFO**" not in text and "### INFO" not in text
    # long lines, evidence, commands and device lists are cut, each saying so
    assert "more characters)" in text and "more lines of evidence" in text
    assert "is too long for a ticket" in text
    assert re.search(r"\.\.\. \d+ more devices, see the snapshot", text)
    assert re.search(r"\.\.\. \d+ more devices measured, see the snapshot", text)
    for section in SECTIONS + ("## GPUs", "## Precision, measured"):
        assert section in text


@pytest.mark.parametrize(
    "count, width, devices",
    [(1, 20_000, 1), (5, 300, 4), (12, 200, 2), (40, 100, 16), (400, 10, 48), (2_000, 2_000, 200)],
)
def test_any_mix_fits_and_accounts_for_every_finding(count, width, devices):
    report = worst_case(count, width, devices)
    text = render_markdown(report)
    assert len(text) <= LIMIT and fences_closed(text)
    full = text.count("\n### ")
    listed = len(re.findall(r"^- \*\*(ERROR|WARNING|INFO)\*\* `SYN", text, re.M))
    more = re.search(r"\*\*\.\.\. (\d+) more findings", text)
    assert full + listed + (int(more.group(1)) if more else 0) == count


def test_no_findings_and_no_snapshot_file():
    text = render_markdown(report_of("h100-node-healthy"))
    assert len(text) <= LIMIT and "mpdoctor-report.snapshot.json" in text and "--save-snapshot" in text


# ---------------------------------------------------------------- the CLI writes the snapshot beside the ticket


def test_output_writes_the_snapshot_beside_the_ticket_and_it_rejudges(tmp_path):
    out = tmp_path / "report.md"
    result = run_cli(
        "check",
        "--snapshot",
        str(fixture_path(LARGEST)),
        "--format",
        "markdown",
        "--output",
        str(out),
        "--fail-on",
        "never",
    )
    assert result.returncode == 0 and result.stdout == "", result.stderr
    sidecar = tmp_path / "report.snapshot.json"
    text = out.read_text(encoding="utf-8")
    assert len(text) <= LIMIT and "mpdoctor check --snapshot report.snapshot.json" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "report.snapshot.json"]  # no temporary left
    again = run_cli("check", "--snapshot", str(sidecar), "--format", "json", "--fail-on", "never", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    codes = [f["code"] for f in json.loads(again.stdout)["findings"]]
    assert codes and all(f"`{code}`" in text for code in codes)  # the snapshot re-judges to the ticket's findings


def test_save_snapshot_names_that_file_and_writes_no_other(tmp_path):
    out, saved = tmp_path / "ticket.md", tmp_path / "mine.json"
    result = run_cli(
        "check",
        "--snapshot",
        str(fixture_path("v100-cu130")),
        "-f",
        "markdown",
        "-o",
        str(out),
        "--save-snapshot",
        str(saved),
        "--fail-on",
        "never",
    )
    assert result.returncode == 0, result.stderr
    assert "mpdoctor check --snapshot mine.json" in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json", "ticket.md"]
    assert json.loads(saved.read_text(encoding="utf-8"))["torch"]


def test_a_token_in_the_snapshot_file_name_is_not_written_into_the_ticket():
    token = "hf_" + "Kn9999" + "q" * 32
    text = render_markdown(report_of("v100-cu130"), f"/home/u/{token}.json")
    assert "Kn9999" not in text and "<redacted>" in text


def test_markdown_to_stdout_says_how_to_get_the_snapshot():
    result = run_cli("check", "--snapshot", str(fixture_path("v100-cu130")), "-f", "markdown", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert "--save-snapshot" in result.stdout and "--output mpdoctor-report.md" in result.stdout


def test_a_snapshot_that_cannot_be_written_is_refused_before_anything_else(tmp_path):
    (tmp_path / "report.snapshot.json").mkdir()
    out = tmp_path / "report.md"
    result = run_cli("check", "--snapshot", str(fixture_path("v100-cu130")), "-f", "markdown", "-o", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0  # one line
    assert f"--output {out}: its snapshot {tmp_path / 'report.snapshot.json'} cannot be written" in result.stderr
    assert "is a directory" in result.stderr and not out.exists()


def test_other_formats_write_no_snapshot_beside_their_output(tmp_path):
    for fmt in ("json", "text", "github", "junit"):
        out = tmp_path / f"report.{fmt}"
        result = run_cli(
            "check", "--snapshot", str(fixture_path("v100-cu130")), "-f", fmt, "-o", str(out), "--fail-on", "never"
        )
        assert result.returncode == 0, result.stderr
    assert not list(tmp_path.glob("*.snapshot.json"))


# ---------------------------------------------------------------- issue 30, item 7: the legend says what the data says


def _partly_disturbed():
    """kernels-cpu-busy, as a run where 5 of each op's 30 rounds were disturbed: every ratio rests on 25 of 30."""
    snap = load_fixture("kernels-cpu-busy")
    device = snap.kernels.devices[0]
    device.results = [
        dataclasses.replace(r, rounds=25, rounds_disturbed=5) if r.rounds is not None else r for r in device.results
    ]
    return snap


def test_the_legend_claims_no_busy_round_the_data_does_not_show():
    import io

    from mpdoctor.render.console import make_console
    from mpdoctor.render.text import render_text

    for snap, busy, said in (
        (load_fixture("kernels-cpu-busy"), True, "matmul 0 of 9; conv2d, layer norm, softmax, sdpa 0 of 5"),
        (_partly_disturbed(), False, "matmul, conv2d, layer norm, softmax, sdpa 25 of 30"),
    ):
        view = kernel_table(snap)
        assert any(cell.startswith("busy ") for d, _ in view.shown for r in d.rows for cell in r.cells) == busy
        assert ("every timing round" in view.legend) == busy
        assert f"cpu: undisturbed timing rounds behind each speed ratio: {said}" in view.notes
        report = Report(created="", findings=judge(snap), snapshot=snap, gpus=device_table(snap), kernels=view)
        out = io.StringIO()
        render_text(report, make_console(out, width=200, plain=True))
        for text in (render_markdown(report), out.getvalue()):
            assert said in text and ("every timing round" in text) == busy
    # A quiet run's matrix (no round disturbed) has nothing about rounds to add.
    assert not [n for n in kernel_table(load_fixture("cpu-kernels")).notes if "undisturbed" in n]
