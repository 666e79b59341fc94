"""The precision family judging recorded kernel results, and the capability matrix that shows them."""

from __future__ import annotations

import copy

from helpers import load_fixture, run_cli
from mpdoctor.doctor.judge import judge
from mpdoctor.analysis.kernel_matrix import kernel_notes, kernel_table, matrix
from mpdoctor.analysis.kernel_view import speed
from mpdoctor.render.markdown import render_markdown
from mpdoctor.doctor.report import Report
from mpdoctor.snapshot import KernelInfo


def findings(name, select=("PREC",)):
    return judge(load_fixture(name), select=list(select))


def by_code(name, code):
    return [f for f in findings(name, ["PREC", "TORCH", "GPU"]) if f.code == code]


def test_missing_arch_is_measured_and_sent_to_a_build_with_sm120():
    (finding,) = by_code("kernels-missing-arch", "PREC002")
    assert finding.severity == "error" and "RTX 5090" in finding.title
    assert "no code for sm_120" in " ".join(finding.evidence)
    # A 12.9 driver runs the cu129 build, the newest official one with sm_120 code.
    assert "--index-url https://download.pytorch.org/whl/cu129" in finding.fix[0].command
    assert not by_code("kernels-missing-arch", "TORCH007")  # measured beats predicted: no second error


def test_arch_prediction_still_fires_without_kernels():
    snap = load_fixture("kernels-missing-arch")
    snap.kernels = KernelInfo(status="skipped")
    codes = {f.code for f in judge(snap)}
    assert "TORCH007" in codes and "PREC002" not in codes


def test_t4_bf16_is_called_emulated_and_fp16_recommended():
    (finding,) = by_code("kernels-t4", "PREC005")
    assert "Tesla T4" in finding.title and "emulated" in finding.title
    assert "Train in fp16 with torch.amp.GradScaler" in finding.fix[0].text
    assert "including_emulation=False" in finding.fix[1].text
    # PREC004 leaves the T4's bf16 to PREC005: only the CPU gets a PREC004.
    assert all("CPU" in f.title for f in by_code("kernels-t4", "PREC004"))


def test_no_fused_attention_names_the_dtype_that_has_one():
    (finding,) = by_code("kernels-t4", "PREC006")
    assert "bf16" in finding.title and "math kernel" in finding.title
    assert "sm 7.5" in " ".join(finding.evidence)
    assert finding.fix[0].text == "Run attention in fp16 on this GPU: efficient ran"


def test_incident4_card_is_measured_as_no_faster_in_fp16():
    slow = [f for f in by_code("kernels-titan-1080ti", "PREC004") if "cuda:0" in f.title]
    (finding,) = slow
    assert "GTX 1080 Ti" in finding.title and finding.severity == "warning"
    assert "the hardware has slow fp16" in " ".join(finding.evidence)
    assert by_code("kernels-titan-1080ti", "GPU002")  # and the GPU family says which card to use instead


def test_cpu_fp16_missing_in_old_torch():
    (finding,) = by_code("kernels-cpu-old-torch", "PREC001")
    assert finding.severity == "error" and finding.title.startswith("fp16 does not run on the CPU")
    assert "matmul, conv2d" in finding.title
    assert any("addmm_impl_cpu_" in line for line in finding.evidence)
    assert any("upgrade torch" in step.text for step in finding.fix)
    (autocast,) = by_code("kernels-cpu-old-torch", "PREC007")
    assert "Disabling autocast" in autocast.evidence[0]
    assert autocast.fix[0].text.startswith("Autocast to bf16 on the CPU")


def test_faulty_gpu_wrong_results_overflow_and_crash():
    (wrong,) = by_code("kernels-faulty-gpu", "PREC003")
    assert wrong.severity == "error" and "fp16 matmul" in wrong.title
    (overflow,) = by_code("kernels-faulty-gpu", "PREC008")
    assert overflow.severity == "error" and "gradients finite: False" in overflow.evidence
    assert overflow.fix[0].text.startswith("Train in bf16")
    (crash,) = by_code("kernels-faulty-gpu", "PREC009")
    assert crash.severity == "error" and "sdpa/cudnn crashed" in crash.title
    assert any("SIGSEGV" in line for line in crash.evidence)


def test_healthy_gpus_raise_nothing_about_themselves():
    for name in ("kernels-h100", "kernels-a100"):
        assert all("CPU" in f.title for f in findings(name)), name


def test_old_snapshots_without_kernels_say_nothing():
    assert not findings("cpu-laptop") and not findings("titan-1080ti-fastest-first")


def test_speed_text():
    assert [speed(r) for r in (11.0, 3.14, 1.0, 0.97, 0.55, 0.0089)] == [
        "11x",
        "3.1x",
        "1x",
        "1/1.03",
        "1/1.82",
        "1/112",
    ]


def test_matrix_of_a_t4():
    snap = load_fixture("kernels-t4")
    headers, rows = matrix(snap, snap.kernels.devices[1])
    assert headers == ["op", "fp32", "tf32", "fp16", "bf16"]  # no fp8 column: nothing to say there
    table = {row[0]: dict(zip(headers, row)) for row in rows}
    assert table["matmul"]["fp32"] == "477 us" and table["matmul"]["fp16"] == "5.6x"
    assert table["matmul"]["bf16"] == "slow 1/1.25"
    assert table["sdpa flash"]["fp16"] == "fails" and table["sdpa efficient"]["fp16"] == "3.4x"
    assert table["autocast"]["bf16"] == "ok"


def test_identical_gpus_share_one_table():
    snap = load_fixture("kernels-h100")
    gpu = snap.kernels.devices[1]
    for ordinal in range(1, 8):
        twin = copy.deepcopy(gpu)
        twin.device = f"cuda:{ordinal}"
        for r in twin.results:  # different numbers, same verdicts
            r.seconds = r.seconds * 1.07 if r.seconds else r.seconds
        snap.kernels.devices.append(twin)
    view = kernel_table(snap)
    assert [(d.device, alike) for d, alike in view.shown] == [
        ("cpu", []),
        ("cuda:0", [f"cuda:{i}" for i in range(1, 8)]),
    ]
    assert [d.same_as for d in view.devices] == ["", ""] + ["cuda:0"] * 7
    assert all(len(d.verdicts) == len(gpu.results) for d in view.devices[1:])  # every twin's verdicts, in the JSON
    twin = copy.deepcopy(gpu)
    twin.device = "cuda:8"
    next(r for r in twin.results if (r.op, r.dtype) == ("matmul", "float16")).seconds *= 40  # now slow: drawn apart
    snap.kernels.devices.append(twin)
    assert kernel_table(snap).devices[-1].same_as == ""


def test_markdown_has_the_matrix_and_the_reason_a_device_is_missing():
    snap = load_fixture("kernels-missing-arch")
    text = render_markdown(Report(created="now", findings=judge(snap), snapshot=snap, kernels=kernel_table(snap)))
    assert "## Precision, measured" in text and "| matmul | 334 us |" in text
    assert "cuda:0: error: AcceleratorError: CUDA error: no kernel image" in text
    assert kernel_notes(load_fixture("kernels-skipped")) == [
        "Precision microkernels: skipped (--no-kernels, or no precision check selected)"
    ]


def test_cli_no_kernels_and_unselected_precision_skip_the_kernels(tmp_path):
    for args in (["--no-kernels"], ["--select", "TORCH"]):
        saved = tmp_path / "snap.json"
        result = run_cli("check", "--format", "json", "--save-snapshot", str(saved), *args)
        assert result.returncode in (0, 1), result.stderr
        assert '"status": "skipped"' in saved.read_text().split('"kernels"')[1][:200]


# ---------------------------------------------------------------- busy machines: inconclusive, never wrong


def test_a_shared_gpu_gives_inconclusive_ratios_and_prec011_names_the_other_job():
    snap = load_fixture("kernels-gpu-shared")
    busy, idle = snap.kernels.devices[1], snap.kernels.devices[2]
    headers, rows = matrix(snap, busy)
    table = {row[0]: dict(zip(headers, row)) for row in rows}
    assert table["matmul"]["fp32"] == "153 us"  # a time, not a verdict
    assert table["matmul"]["fp16"] == table["matmul"]["bf16"] == "inconclusive"
    assert table["autocast"]["bf16"] == "ok"  # not timed: unaffected
    assert "inconclusive" not in {c for row in matrix(snap, idle)[1] for c in row}  # the idle twin holds
    (finding,) = [f for f in findings("kernels-gpu-shared") if f.code == "PREC011"]
    assert finding.severity == "info" and "cuda:0" in finding.title
    assert "the GPU was shared with pid 41877 (python, 31.0 GiB), 98% busy" in finding.evidence[0]
    assert "52310" not in " ".join(finding.evidence)  # mpdoctor's own worker is not "another process"
    commands = [step.command for step in finding.fix]
    assert commands[0] == "nvidia-smi"
    assert any(c and c.startswith("CUDA_VISIBLE_DEVICES=GPU-f5a6b7c8") and "--kernels full" in c for c in commands)
    notes = kernel_notes(snap)
    assert any(n.startswith("cuda:0: ") and "inconclusive: the GPU was shared" in n for n in notes)


def test_a_busy_cpu_repeats_no_verdict_of_the_quiet_run():
    quiet = {f.code for f in findings("cpu-kernels")}
    busy = findings("kernels-cpu-busy")
    assert "PREC004" in quiet and "PREC004" not in {f.code for f in busy}
    (finding,) = [f for f in busy if f.code == "PREC011"]
    assert "the CPU" in finding.title and "busy" in finding.title
    assert finding.evidence[0] == (
        "while timed: 16 other runnable processes; others used 1.8 of 2 cores; load average 10.59"
    )
    assert finding.evidence[1] == (
        "matmul fp16, matmul bf16: inconclusive: other processes crowded the cores in 9 of 9 "
        "timing rounds; fp32 matmul varied 1106x between repeats"
    )
    assert finding.evidence[-1] == "29 of 29 timing rounds disturbed; extra rounds stopped at their budget after 0.62 s"
    assert finding.fix[0].command.startswith("top")
    snap = load_fixture("kernels-cpu-busy")
    headers, rows = matrix(snap, snap.kernels.devices[0])
    table = {row[0]: dict(zip(headers, row)) for row in rows}
    assert table["matmul"] == {"op": "matmul", "fp32": "busy 105 us", "fp16": "inconclusive", "bf16": "inconclusive"}
    assert table["autocast"]["bf16"] == "ok"


def test_slow_findings_show_the_ratio_with_its_spread():
    (finding,) = [f for f in by_code("kernels-titan-1080ti", "PREC004") if "cuda:0" in f.title]
    assert any("over 5 rounds)" in line and "slower than fp32 (" in line for line in finding.evidence)
    # An older snapshot timed each kernel once: its ratio is shown as such, not as a spread it does not have.
    (cpu,) = by_code("cpu-kernels", "PREC004")
    assert any("(timed once, no spread)" in line for line in cpu.evidence)


def test_a_ratio_whose_spread_straddles_the_line_is_inconclusive():
    from mpdoctor.analysis.kernel_view import verdict

    snap = load_fixture("kernels-t4")
    t4 = snap.kernels.devices[1]
    bf16 = next(r for r in t4.results if (r.op, r.dtype) == ("matmul", "bfloat16"))
    assert verdict(snap, t4, bf16) == ("slow", "")  # 0.8x of fp32 on emulated bf16: below the 1.5x line
    bf16.seconds = bf16.seconds / 2  # its best round 1.6x, its median round 0.78x: across the 1.5x line
    word, why = verdict(snap, t4, bf16)
    assert word == "inconclusive" and "across the 1.5x line" in why
    assert "PREC005" not in {f.code for f in judge(snap, select=["PREC"])}  # no finding rests on it


def test_an_unseen_pid_on_the_gpu_may_be_our_own_worker():
    """In a container NVML can list host PIDs: one process without a name is not taken for another job."""
    from mpdoctor.analysis.kernel_view import gpu_sharers

    snap = load_fixture("kernels-gpu-shared")
    busy = snap.kernels.devices[1]
    gpu = snap.machine.nvml.gpus[0]
    for p in gpu.processes:
        p.name, p.ours = "", False  # nothing visible: the container case
    assert gpu_sharers(snap, busy) == ["pid 52310 (compute, 1.0 GiB)"]  # one of two unseen is taken to be ours
    gpu.processes = gpu.processes[:1]
    assert gpu_sharers(snap, busy) == []
    assert "PREC011" not in {f.code for f in judge(snap, select=["PREC"])}


# ---------------------------------------------------------------- verdicts judged once, in the report


def test_the_json_report_carries_each_kernel_verdict():
    import json

    from helpers import fixture_path

    result = run_cli("check", "--snapshot", str(fixture_path("kernels-t4")), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    devices = {d["device"]: d for d in json.loads(result.stdout)["kernels"]["devices"]}
    t4 = devices["cuda:0"]
    assert t4["label"] == "cuda:0 (Tesla T4, cc 7.5)" and t4["dtypes"] == ["float32", "tf32", "float16", "bfloat16"]
    assert t4["rows"][0] == {
        "op": "matmul",
        "backend": "",
        "name": "matmul",
        "cells": ["477 us", "1x", "5.6x", "slow 1/1.25"],
    }
    verdicts = {v["test"]: v for v in t4["verdicts"]}
    bf16 = verdicts["matmul/bfloat16"]
    assert (bf16["speed"], bf16["conclusive"], bf16["why"], bf16["cell"]) == ("slow", True, "", "slow 1/1.25")
    assert bf16["hardware"] == "emulated" and bf16["line"] == 1.5 and bf16["accuracy"] == "ok"  # emulated: 1.5x line
    assert bf16["ratio_low"] <= bf16["ratio"] <= bf16["ratio_high"] and bf16["rounds"] == 5
    assert verdicts["matmul/float16"]["speed"] == "fast" and verdicts["matmul/float16"]["line"] == 0.67
    assert verdicts["matmul/float32"]["speed"] == "baseline" and verdicts["matmul/float32"]["conclusive"] is True
    flash = verdicts["sdpa/float16/flash"]
    assert (flash["status"], flash["accuracy"], flash["speed"], flash["cell"]) == (
        "unsupported",
        "unchecked",
        "",
        "fails",
    )
    assert verdicts["autocast/bfloat16"]["speed"] == "" and verdicts["autocast/bfloat16"]["conclusive"] is None


def test_an_inconclusive_verdict_says_why_in_the_json():
    snap = load_fixture("kernels-gpu-shared")
    view = kernel_table(snap)
    busy = next(d for d in view.devices if d.device == "cuda:0")
    fp16 = next(v for v in busy.verdicts if v.test == "matmul/float16")
    assert (fp16.speed, fp16.conclusive, fp16.cell) == ("inconclusive", False, "inconclusive")
    assert fp16.why.startswith("the GPU was shared with pid 41877")
    base = next(v for v in busy.verdicts if v.test == "matmul/float32")
    assert base.speed == "baseline" and base.conclusive is False and base.why == fp16.why
    assert view.notes == kernel_notes(snap)
    cpu = next(d for d in kernel_table(load_fixture("kernels-cpu-busy")).devices if d.device == "cpu")
    fp32 = next(v for v in cpu.verdicts if v.test == "matmul/float32")
    assert fp32.cell == "busy 105 us" and fp32.conclusive is False and "crowded the cores" in fp32.why


def test_the_renderers_draw_the_reports_verdicts_and_judge_nothing():
    import ast
    import io
    from pathlib import Path

    from rich.console import Console

    from mpdoctor.render import markdown, text

    for module in (text, markdown):  # from the kernel view only a dtype's short name; no verdict, no threshold
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        taken = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "mpdoctor.analysis.kernel_view"
            for alias in node.names
        }
        assert taken <= {"short"}, (module.__name__, taken)
    snap = load_fixture("kernels-t4")
    report = Report(created="now", findings=[], snapshot=snap, kernels=kernel_table(snap))
    report.kernels.devices[1].rows[0].cells[3] = "drawn-as-judged"
    buffer = io.StringIO()
    text.render_text(report, Console(file=buffer, width=120, color_system=None))
    assert "drawn-as-judged" in buffer.getvalue() and "drawn-as-judged" in render_markdown(report)
    bare = Report(created="now", findings=[], snapshot=snap)  # verdicts not judged: nothing is re-judged to draw
    buffer = io.StringIO()
    text.render_text(bare, Console(file=buffer, width=120, color_system=None))
    assert "Measured on" not in buffer.getvalue() and "| matmul |" not in render_markdown(bare)


def test_predicted_and_measured_slowness_have_different_words():
    from mpdoctor.analysis.kernel_table import MATRIX_LEGEND
    from mpdoctor.render.devices import LEGEND, SHORT

    assert SHORT["slow"] != "slow" and f"{SHORT['slow']}: " in LEGEND and "predicted" in LEGEND
    assert "slow: measured" in MATRIX_LEGEND and "slow:" not in LEGEND


def test_a_cpu_that_could_not_run_kernels_is_no_gpu_to_inspect():
    """On a machine without a GPU, a kernel worker that dies before its first step points at torch itself: the fix
    runs one op with the target's own interpreter, never `nvidia-smi` (there is no GPU, nor an nvidia-smi)."""
    from mpdoctor.snapshot.kernels import DeviceKernels

    snap = load_fixture("cpu-laptop")
    device = DeviceKernels(device="cpu", status="error", detail="the worker exited with status 70 between steps")
    snap.kernels = KernelInfo(status="ok", mode="quick", devices=[device])
    (finding,) = judge(snap, select=["PREC009"])
    commands = [step.command or "" for step in finding.fix]
    assert not any("nvidia-smi" in c for c in commands), commands
    assert any(c.startswith(snap.python_command()) and "torch.ones(2)" in c for c in commands), commands
    snap.torch.status = "import-error"  # torch does not even import: the TORCH checks say why, this says nothing
    assert judge(snap, select=["PREC009"]) == []
