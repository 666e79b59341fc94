"""Hostile sizes (issue 33, items 3, 4, 5 and 10): what a file claims or inflates to is bounded before it costs.

Each test failed on the code before the issue: a zip bomb was inflated by
torch.load (300 MB here; 3 GB took 6.3 GB and 23.6 s), a safetensors shape's
product became an integer of thousands of digits (exit 3) or never finished,
judging 2k GPUs was quadratic, and a 5000-digit CUDA_VISIBLE_DEVICES or an
``ordinal`` of -1e300 crashed every gpu check (MPD001).
"""

from __future__ import annotations

import copy
import json
import struct
import sys
import time
import zipfile
from pathlib import Path

import pytest

import mpdoctor
from helpers import load_fixture, run_cli
from mpdoctor.analysis.gpu_map import device_table, visible_devices_as_meant
from mpdoctor.doctor.judge import judge
from mpdoctor.schema.serde import to_data

MB = 1 << 20


def _audit(path) -> tuple[int, dict]:
    result = run_cli("audit", str(path), "-f", "json", timeout=60)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return result.returncode, json.loads(result.stdout)


def _pickled_string(size: int) -> tuple[bytes, bytes]:
    """A protocol-2 pickle of one str of ``size`` characters, as its head and its tail (the characters between)."""
    return b"\x80\x02X" + struct.pack("<I", size), b"."


def _write_bomb(path, inflates_to: int) -> None:
    """A torch.save-shaped archive whose data.pkl (one pickled string) is deflated: ~1 MB on disk."""
    head, tail = _pickled_string(inflates_to)
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("archive/data.pkl")
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = 1  # fast to write; a 300:1 ratio is bomb enough
        with archive.open(info, "w", force_zip64=True) as entry:
            entry.write(head)
            chunk = b"a" * (4 * MB)
            for _ in range(inflates_to // len(chunk)):
                entry.write(chunk)
            entry.write(b"a" * (inflates_to % len(chunk)) + tail)
        archive.writestr("archive/version", "3\n")


def test_zip_bomb_is_refused_by_what_it_inflates_to_before_torch_reads_it(tmp_path):
    bomb = tmp_path / "bomb.pt"
    _write_bomb(bomb, 300 * MB)
    assert bomb.stat().st_size < 2 * MB
    started = time.perf_counter()
    code, report = _audit(bomb)
    (file,) = report["files"]
    assert code == 1 and "its pickle inflates to 314572808 bytes" in file["error"], file
    assert "decompression bomb" in file["error"]
    assert "inflates far past its size" in report["findings"][0]["fix"][0]["text"]
    assert time.perf_counter() - started < 20  # the directory is read, the pickle never inflated


def test_zip_entry_that_inflates_past_its_header_is_caught_by_the_capped_read(tmp_path):
    """The central directory says 4 KB; the deflated stream goes on to 64 MB. The streamed read stops at the claim."""
    liar = tmp_path / "liar.pt"
    head, tail = _pickled_string(64 * MB)
    with zipfile.ZipFile(liar, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("archive/data.pkl", head + b"a" * (64 * MB) + tail)
        archive.writestr("archive/version", "3\n")
    raw = bytearray(liar.read_bytes())
    real = len(head) + 64 * MB + len(tail)
    for signature, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local header and directory: the size claimed
        header = raw.index(signature)
        assert struct.unpack_from("<I", raw, header + at)[0] == real
        struct.pack_into("<I", raw, header + at, 4096)
    liar.write_bytes(bytes(raw))
    code, report = _audit(liar)
    error = report["files"][0]["error"]
    assert code == 1 and "'archive/data.pkl' does not inflate to the 4096 bytes its zip header claims" in error, error


def _safetensors(path, shape) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header)


@pytest.mark.parametrize(
    "rank,dim,said",
    [
        (120, 10**39, "has a dimension of 40 digits, past torch's int64 sizes"),  # was exit 3: a 4,700-digit product
        (200_000, 10**39, "has 200000 dimensions, more than the 1024"),  # an 8 MB header: never finished
        (1000, 1 << 62, "needs more than 18446744073709551616 bytes"),  # within bounds: the product stops early
    ],
)
def test_safetensors_shape_is_bounded_before_its_product_is_taken(tmp_path, rank, dim, said):
    path = tmp_path / "w.safetensors"
    _safetensors(path, [dim] * rank)
    started = time.perf_counter()
    code, report = _audit(path)
    assert code == 1 and said in report["files"][0]["error"]
    assert len(report["files"][0]["error"]) - len(str(path)) < 400  # the shape is quoted, not repeated whole
    assert time.perf_counter() - started < 20


def _many_gpus(count: int, variant: str):
    """The 8-GPU H100 node's snapshot grown to ``count`` GPUs, each with its own UUID and PCI id."""
    snap = load_fixture("h100-node-healthy")
    gpu0, dev0 = snap.machine.nvml.gpus[0], snap.torch.devices[0]
    gpus, devices = [], []
    for i in range(count):
        gpu = copy.copy(gpu0)
        gpu.index, gpu.uuid, gpu.pci_bus_id = (
            i,
            f"GPU-{i:08x}-0000-4000-8000-{i:012x}",
            f"{i >> 8:08x}:{i & 255:02x}:00.0",
        )
        dev = copy.copy(dev0)
        dev.ordinal, dev.uuid, dev.pci_bus_id = i, gpu.uuid[4:], gpu.pci_bus_id
        gpus.append(gpu)
        devices.append(dev)
    snap.machine.nvml.gpus = gpus
    snap.torch.devices, snap.torch.device_count = devices, count
    if variant == "half selected by UUID prefix":  # torch gives PCI ids only; the rest are hidden rows
        half = count // 2
        snap.environment.env["CUDA_VISIBLE_DEVICES"] = ",".join(g.uuid[:13] for g in reversed(gpus[:half]))
        snap.torch.devices = [copy.copy(d) for d in reversed(devices[:half])]
        for ordinal, dev in enumerate(snap.torch.devices):
            dev.ordinal, dev.uuid = ordinal, ""
        snap.torch.device_count = half
    return snap


def _lines_run_judging(snap) -> int:
    """How many lines of mpdoctor's own code judging ``snap`` executes: a count, the same on a busy machine.

    A loop over the GPUs inside a loop over the GPUs, comprehensions and generators included, shows here as the
    square of the count; a scan done in C (``x in a_list``) does not, and ``bench/bench_hostile.py`` times that.
    """
    executed = 0

    def count_lines(frame, event, arg):
        nonlocal executed
        executed += event == "line"
        return count_lines

    def ours_only(frame, event, arg):
        return count_lines if frame.f_code.co_filename.startswith(MPDOCTOR_CODE) else None

    sys.settrace(ours_only)
    try:
        judge(snap)
        device_table(snap)
        visible_devices_as_meant(snap)
    finally:
        sys.settrace(None)
    return executed


MPDOCTOR_CODE = str(Path(mpdoctor.__file__).parent)
# 8x the GPUs: linear is 8x the lines (measured 7.8x), quadratic up to 64x (44x from 100 to 800). The code before issue 33 scanned every GPU
# for each one's UUID (1k GPUs 3.2 s, 8k 269 s). Lines, not seconds: a timed ratio failed on a busy CI machine.
GROWTH_BOUND = 10


@pytest.mark.parametrize("variant", ["all matched by UUID", "half selected by UUID prefix"])
def test_judging_gpus_grows_linearly_100_to_800(variant):
    small, large = _many_gpus(100, variant), _many_gpus(800, variant)
    assert any(row.matched_by for row in device_table(large).visible)  # the mapping did its work
    base, taken = _lines_run_judging(small), _lines_run_judging(large)
    assert taken < GROWTH_BOUND * base, f"100 GPUs {base} lines, 800 GPUs {taken}: {taken / base:.1f}x"


def test_the_line_count_sees_a_quadratic_lookup(monkeypatch):
    """The measure above can fail: a GPU found by a scan of every GPU (the code before issue 33) is caught."""
    from mpdoctor.analysis import gpu_map

    def scan_every_gpu(self, uuid):
        wanted = gpu_map.strip_prefix(uuid)
        for gpu in self.gpus:
            if gpu.uuid and gpu_map.strip_prefix(gpu.uuid) == wanted:
                return gpu
        return None

    monkeypatch.setattr(gpu_map._Mapper, "_by_uuid", scan_every_gpu)
    small, large = _many_gpus(100, "all matched by UUID"), _many_gpus(800, "all matched by UUID")
    assert _lines_run_judging(large) > 2 * GROWTH_BOUND * _lines_run_judging(small)  # measured 44x


@pytest.mark.parametrize("value", ["9" * 5000, "-" + "9" * 5000, "0," + "0" * 5000 + "1"])
def test_a_5000_digit_cuda_visible_devices_is_a_finding_about_the_value(value):
    snap = load_fixture("h100-node-healthy")
    snap.environment.env["CUDA_VISIBLE_DEVICES"] = value
    findings = judge(snap)
    assert "MPD001" not in {f.code for f in findings}, [f.title[:200] for f in findings if f.code == "MPD001"]
    entries = device_table(snap).visible_entries
    assert entries[-1].kind == ("index" if value.endswith("01") else "invalid")
    if not value.endswith("01"):
        assert "digits" in entries[-1].problem and len(entries[-1].problem) < 200
        assert {"GPU005"} <= {f.code for f in findings}  # every GPU hidden: said, about the value


def test_an_ordinal_of_minus_1e300_refuses_the_snapshot_naming_the_field(tmp_path):
    data = to_data(load_fixture("h100-node-healthy"))
    data["torch"]["devices"][0]["ordinal"] = -1e300
    data["environment"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    result = run_cli("check", "--snapshot", str(path), "-f", "json", timeout=60)
    assert result.returncode == 2, result.stdout[-2000:]
    assert "corrupt snapshot: $.torch.devices[0].ordinal: expected a device number from 0 to" in result.stderr
    assert "a negative 301-digit number" in result.stderr and "Traceback" not in result.stderr
