"""The ecosystem's precision messages, mined from each library's own source (issue 38): coverage that cannot drop.

tests/explain_ecosystem/mine.py took each library at a pinned version from PyPI and kept, per library, every error,
warning and assertion that holds a precision word, with the verdict explain gave it (the signature that covers it,
why it is not a precision failure, or why it is a gap). Here each message is judged again from its text, without
downloading anything: a message that loses its coverage, or one explain starts to claim though it is no failure,
fails with the table's row. Where a pinned library is installed here, or its git mirror is here (apex, TGI,
TensorRT: MPDOCTOR_CODE_MIRRORS, default /work/.mirror), its messages are mined again from it; CI has neither for
most, and judges the committed tables.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL

HERE = Path(__file__).parent / "explain_ecosystem"
# loaded under its own name: tests/explain_torch has a mine.py too, imported as `mine` by its test
_SPEC = importlib.util.spec_from_file_location("mine_ecosystem", HERE / "mine.py")
mine = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = mine  # dataclasses resolve the module by name
_SPEC.loader.exec_module(mine)

TABLES = {lib.name: mine.load(lib.name) for lib in mine.LIBRARIES if not lib.skipped}
SIGNATURES = {s.id for s in [*all_signatures(), *GENERAL.values()]}
REGENERATE = "python tests/explain_ecosystem/mine.py --judge (then read the diff of the tables)"


def test_every_library_has_its_table_at_its_pinned_version():
    assert len(TABLES) >= 29
    assert all(
        lib.skipped and not (HERE / f"{lib.name}.json").exists() for lib in mine.LIBRARIES if lib.name not in TABLES
    )
    for lib in mine.LIBRARIES:
        if lib.skipped:
            continue
        table = TABLES[lib.name]
        assert (table["library"], table["pypi"], table["version"]) == (lib.name, lib.pypi, lib.version)
        if lib.repository:  # read from a git mirror: the table names the commit, its version is the commit's
            assert table["archive"] == f"github.com/{lib.repository}@{lib.commit}", table["archive"]
            assert lib.commit.startswith(lib.version) and len(lib.commit) == 40
        elif lib.installed:
            assert table["archive"].startswith(f"{lib.pypi} {lib.version}") and table["archive"].endswith(" installed")
        else:
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


MIRRORED = sorted(lib.name for lib in mine.LIBRARIES if lib.repository)


@pytest.mark.parametrize("name", MIRRORED + ["torch-fsdp"])
def test_a_mirrored_or_installed_library_is_mined_again(name):
    """The miner on the library's git mirror at the pinned commit, or on the installed torch: what it reads now is
    the committed table's messages (skipped, with the reason, where the mirror or that torch is not here)."""
    (lib,) = [lib for lib in mine.LIBRARIES if lib.name == name]
    try:
        rows, source = mine.mined_rows(lib)
    except mine.Unavailable as why:
        pytest.skip(str(why))
    kept = sorted((row["message"], row["where"], row["kind"]) for row in TABLES[name]["messages"])
    assert sorted(rows) == kept
    assert (source["archive"], source["licence"]) == (TABLES[name]["archive"], TABLES[name]["licence"])


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_a_git_mirror_is_read_at_its_commit_and_a_missing_one_is_named(tmp_path, monkeypatch):
    """A repository made here, mirrored as `fetch` leaves one (owner+name/repo, bare): the pinned commit's Python
    and C++ files are read, not what a later commit changed; without the mirror the reason names what is
    missing."""
    work = tmp_path / "work"
    (work / "pkg" / "csrc").mkdir(parents=True)
    (work / "pkg" / "ops.py").write_text(
        "def f():\n    raise ValueError('fused op only supports fp16 and bf16 inputs')\n"
    )
    (work / "pkg" / "csrc" / "k.cu").write_text('void k() { TORCH_CHECK(ok, "kernel needs half ", "or bfloat16"); }\n')
    (work / "LICENSE").write_text("Permission is hereby granted, free of charge, to any person\n")
    _git(tmp_path, "init", "-q", str(work))
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "one")
    commit = _git(work, "rev-parse", "HEAD")
    (work / "pkg" / "ops.py").write_text("raise ValueError('a later message about fp16 that the pin must not see')\n")
    _git(work, "commit", "-q", "-am", "two")
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "me+pkg" / "repo")], check=True)
    monkeypatch.setattr(mine, "MIRRORS", mirrors)
    lib = mine.Library("pkg", "", commit[:12], repository="me/pkg", commit=commit, roots=("pkg/",), cxx=("pkg/csrc/",))
    rows, source = mine.mined_rows(lib)
    assert rows == [
        ("fused op only supports fp16 and bf16 inputs", "pkg/ops.py:2", "ValueError"),
        ("kernel needs half or bfloat16", "pkg/csrc/k.cu:1", "RuntimeError"),
    ]
    assert source == {"archive": f"github.com/me/pkg@{commit}", "licence": "MIT (its LICENSE file)"}
    # `about` keeps only the messages that match it (torch's MPS/ROCm ones among all torch's)
    about = mine.Library("pkg", "", "0", repository="me/pkg", commit=commit, roots=("pkg/",), cxx=("pkg/csrc/",),
                         about=r"bfloat16")  # fmt: skip
    assert mine.mined_rows(about)[0] == [rows[1]]
    with pytest.raises(mine.Unavailable, match="has no commit 0{40}"):
        mine.mined_rows(mine.Library("pkg", "", "0", repository="me/pkg", commit="0" * 40, roots=("pkg/",)))
    monkeypatch.setattr(mine, "MIRRORS", tmp_path / "none")
    with pytest.raises(mine.Unavailable, match=r"no git mirror of me/pkg in .*none \(MPDOCTOR_CODE_MIRRORS\)"):
        mine.mined_rows(lib)


def test_only_what_is_read_is_unpacked():
    """vLLM's wheel is 336 MB of CUDA libraries around its Python: only its Python, the one library whose strings are
    mined, its metadata and licence are unpacked; flash-attn's sdist without its vendored cutlass."""
    (vllm,) = [lib for lib in mine.LIBRARIES if lib.name == "vllm"]
    assert [
        mine._wanted(vllm, name)
        for name in (
            "vllm/config/model.py",
            "vllm/_C_stable_libtorch.abi3.so",
            "vllm-0.33.0.dist-info/METADATA",
            "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
            "vllm/third_party/deep_gemm/_C_extension.abi3.so",
        )
    ] == [True, True, True, False, False]
    (flash,) = [lib for lib in mine.LIBRARIES if lib.name == "flash-attn"]
    assert [
        mine._wanted(flash, name, sdist=True)
        for name in (
            "PKG-INFO",
            "flash_attn/flash_attn_interface.py",
            "csrc/flash_attn/flash_api.cpp",
            "csrc/cutlass/include/a.h",
            "csrc/composable_kernel/include/ck.hpp",
        )
    ] == [True, True, True, False, False]


def test_the_cxx_reader_joins_a_message_as_the_macro_does():
    """TORCH_CHECK's condition is not the message; literals, `#x`, `<<` and `+` join; other arguments are holes; a
    comment's apostrophe does not end the scan; AT_ERROR, TORCH_WARN and a thrown exception are read too."""
    source = (
        '#define CHECK_HALF(x) TORCH_CHECK(x.scalar_type() == at::kHalf, #x " must be fp16")\n'
        "void f(at::Tensor q) {\n"
        "  TORCH_CHECK(q.dtype() == torch::kFloat16 || q.dtype() == torch::kBFloat16,  // don't allow fp32\n"
        '              "FlashAttention only support fp16 and bf16 data type, got ", q.dtype());\n'
        '  AT_ERROR("bf16 needs compute capability ", 8, ".0");\n'
        '  TORCH_WARN("falling back to fp32: " "no half kernel");\n'
        '  throw std::runtime_error("unsupported dtype " + std::to_string(t) + " for fp8 gemm");\n'
        '  TORCH_CHECK(n > 0, "n must be positive, got ", n);\n'
        "}\n"
    )
    assert list(mine.cxx_messages("k.cu", source)) == [
        ("{x} must be fp16", "k.cu:1", "RuntimeError"),
        ("FlashAttention only support fp16 and bf16 data type, got {q.dtype()}", "k.cu:3", "RuntimeError"),
        ("bf16 needs compute capability {8}.0", "k.cu:5", "RuntimeError"),
        ("falling back to fp32: no half kernel", "k.cu:6", "UserWarning"),
        ("unsupported dtype {std::to_string(t)} for fp8 gemm", "k.cu:7", "RuntimeError"),
    ]


def test_a_librarys_own_message_functions_keep_their_warnings_and_drop_their_info(tmp_path):
    """log_single_rank(logger, logging.WARNING, msg), log_master(logger.warning, msg), maybe_print(msg): kept;
    the same at INFO is no failure; a library that does not name them reads none of them."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "log.py").write_text(
        "log_single_rank(logger, logging.WARNING, f'fp8 recipe {r} is not supported here')\n"
        "log_single_rank(logger, logging.INFO, 'using bf16 for the main params')\n"
        "log_master(logger.warning, 'float8_e5m2 KV cache is not supported on ROCm')\n"
        "maybe_print('Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to ' + str(s))\n"
    )
    calls = ("log_single_rank", "log_master", "maybe_print")
    lib = mine.Library("pkg", "pkg", "0", roots=("pkg/",), calls=calls)
    assert list(mine.python_messages(tmp_path, lib)) == [
        ("fp8 recipe {r} is not supported here", "pkg/log.py:1", "UserWarning"),
        ("float8_e5m2 KV cache is not supported on ROCm", "pkg/log.py:3", "UserWarning"),
        ("Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to", "pkg/log.py:4", "ERROR"),
    ]
    assert list(mine.python_messages(tmp_path, mine.Library("pkg", "pkg", "0", roots=("pkg/",)))) == []


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
