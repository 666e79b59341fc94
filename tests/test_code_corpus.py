"""The code findings on real code: files of public training code, read verbatim at a fixed version.

Each case is a folder of tests/code_corpus/: ``SOURCE.json`` says where its files come from, their licence and
why they are there; ``expect.json`` says in which machine states (``STATES``) each code finding must fire, and
at which ``file:line`` its evidence must point. Every other code finding listed in ``CODES`` must stay quiet.
The files themselves are not in this repository (other people's code, under their own licences); they are
read, never edited, from one of two places:

* a pinned PyPI release (``"pypi": "NAME==VERSION"``, ``"archive": "wheel"`` or ``"sdist"``, its ``sha256``):
  ``pip download --no-deps`` fetches it once into a cache (``$MPDOCTOR_CODE_CORPUS_CACHE``, or
  ~/.cache/mpdoctor-tests/code-corpus/), and the named files are read out of the archive. Files of a wheel are
  named as the wheel holds them; files of an sdist below its top folder. A download that fails skips the case,
  saying why, except under ``CI=true``, where it fails: CI reaches PyPI, and the measure must not stop running
  there unnoticed.
* a repository at a commit (``"repository"``, ``"commit"``): read from git mirrors, a folder named by
  ``MPDOCTOR_CODE_MIRRORS`` that holds ``owner+name/repo`` (or ``owner+name``) git directories. Without it,
  or without the commit there, the case is skipped, saying which.

The test writes a case's files into a temporary project under their real names, scans it with the real
project scan (``scan.project_uses``, as the target interpreter runs it), judges the snapshot in each state and
prints precision and recall over all the cases it could read. A case whose ``expect.json`` says
``known_wrong`` (why) holds a finding the rules get wrong or miss today: it counts in precision and recall as
it is, the assertion leaves it out, and a test fails once it comes out right, so that the mark is taken off
(the list is a measurement, kept exact). Run as a script (``python tests/test_code_corpus.py``) it prints the
same measure.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fixtures.apex import apex_distribution, nvidia_apex, with_apex  # noqa: E402
from fixtures.base import laptop, with_environment  # noqa: E402
from fixtures.machines import h100_cu124  # noqa: E402
from fixtures.oneflow import oneflow_incident2  # noqa: E402
from mpdoctor.checks.registry import builtin_registry  # noqa: E402
from mpdoctor.doctor.judge import run_checks  # noqa: E402
from mpdoctor.probes.remote import scan  # noqa: E402
from mpdoctor.schema.serde import from_data  # noqa: E402
from mpdoctor.snapshot.project import ProjectScan  # noqa: E402

CORPUS = Path(__file__).parent / "code_corpus"
# The findings about the project's code. ONEFLOW005 counts in its code form only (it also reports what the
# coexistence run measured, which needs no code).
CODES = ("APEX006", "APEX007", "ONEFLOW005", "AMP001", "AMP002", "AMP003", "AMP004")
CODE_FORM = {"ONEFLOW005": "torch.autocast and OneFlow meet"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
ARCHIVES = ("wheel", "sdist")
MAX_FILE = 4 << 20  # the project scan reads no more of a file either
DOWNLOAD_TIMEOUT = 300


def _state(name: str, project: ProjectScan):
    """The machine a case is judged on: NVIDIA apex with amp (before 25.07), without (25.07 and later), no apex
    at all, or the OneDiff machine of incident 2 (OneFlow working, its coexistence run measured)."""
    if name == "oneflow":
        snap = oneflow_incident2()
        return with_environment(snap, project=project)
    base = h100_cu124(laptop())
    if name == "no-apex":
        return with_environment(base, project=project)
    return with_apex(base, nvidia_apex(amp=name == "apex-amp"), [apex_distribution()], [], project)


def cases() -> list[Path]:
    return sorted(path for path in CORPUS.iterdir() if (path / "expect.json").is_file())


class Unavailable(Exception):
    """The case's files cannot be read here: no mirrors named, the repository or commit not among them, or its
    PyPI release could not be downloaded."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def mirror_of(repository: str) -> Path:
    mirrors = os.environ.get("MPDOCTOR_CODE_MIRRORS", "")
    if not mirrors:
        raise Unavailable("MPDOCTOR_CODE_MIRRORS names no folder of git mirrors of the corpus' repositories")
    folder = Path(mirrors) / repository.replace("/", "+")
    for candidate in (folder / "repo", folder, Path(mirrors) / repository):
        if (candidate / "HEAD").is_file():
            return candidate
    raise Unavailable(f"no git mirror of {repository} in {mirrors}")


def mirror_file(source: dict, path: str) -> bytes:
    """One file of the case, as its repository holds it at the case's commit."""
    mirror = mirror_of(source["repository"])
    shown = subprocess.run(
        ["git", "--git-dir", str(mirror), "show", f"{source['commit']}:{path}"], capture_output=True, timeout=60
    )
    if shown.returncode != 0:
        raise Unavailable(f"{source['repository']}@{source['commit'][:10]}:{path}: {shown.stderr.decode().strip()}")
    return shown.stdout


def cache_dir() -> Path:
    named = os.environ.get("MPDOCTOR_CODE_CORPUS_CACHE", "")
    return Path(named) if named else Path.home() / ".cache" / "mpdoctor-tests" / "code-corpus"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cached(folder: Path, sha256: str) -> Path | None:
    """The archive in ``folder`` with the pinned hash; None when there is none (yet)."""
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in (".whl", ".gz", ".zip") and _sha256(path) == sha256:
                return path
    return None


@lru_cache(maxsize=None)
def pypi_archive(pin: str, archive: str, sha256: str) -> Path:
    """The release's wheel or sdist, from the cache or downloaded into it with pip (never built: wheels only
    for "wheel"; for "sdist" pip prepares its metadata, so only an sdist that needs no compiler for that fits)."""
    folder = cache_dir() / f"{pin.replace('==', '-')}-{archive}"
    found = _cached(folder, sha256)
    if found:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    kind = ["--only-binary=:all:"] if archive == "wheel" else ["--no-binary=:all:"]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
    try:
        done = subprocess.run(
            command + kind + ["-d", str(folder), pin], capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise Unavailable(f"pip download {pin} ({archive}) took over {DOWNLOAD_TIMEOUT} s") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
        raise Unavailable(f"pip download {pin} ({archive}) failed: {tail}")
    found = _cached(folder, sha256)
    if found is None:
        got = ", ".join(f"{p.name} sha256 {_sha256(p)[:16]}..." for p in sorted(folder.iterdir()) if p.is_file())
        raise Unavailable(f"pip download {pin} ({archive}) gave no file with sha256 {sha256[:16]}...: {got}")
    return found


def archive_files(archive: Path, paths: list[str]) -> dict[str, bytes]:
    """The named files out of a wheel (zip) or an sdist (tar.gz, below its one top folder), each at most
    MAX_FILE bytes; nothing else is extracted."""
    out: dict[str, bytes] = {}
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as wheel:
            for path in paths:
                try:
                    info = wheel.getinfo(path)
                except KeyError:
                    raise Unavailable(f"{archive.name} holds no {path}") from None
                if info.file_size > MAX_FILE:
                    raise Unavailable(f"{archive.name}: {path} is {info.file_size} bytes, over {MAX_FILE}")
                out[path] = wheel.read(info)
        return out
    with tarfile.open(archive, "r:gz") as sdist:
        tops = {name.split("/", 1)[0] for name in sdist.getnames()}
        if len(tops) != 1:
            raise Unavailable(f"{archive.name} has no single top folder: {sorted(tops)[:5]}")
        top = tops.pop()
        for path in paths:
            try:
                member = sdist.getmember(f"{top}/{path}")
            except KeyError:
                raise Unavailable(f"{archive.name} holds no {path}") from None
            if not member.isfile() or member.size > MAX_FILE:
                raise Unavailable(f"{archive.name}: {path} is not a regular file of at most {MAX_FILE} bytes")
            out[path] = sdist.extractfile(member).read()
    return out


def case_files(source: dict) -> dict[str, bytes]:
    """{path: bytes} of the case's files, from its PyPI release or its repository's mirror."""
    if "pypi" in source:
        archive = pypi_archive(source["pypi"], source.get("archive", "wheel"), source["sha256"])
        return archive_files(archive, source["files"])
    return {path: mirror_file(source, path) for path in source["files"]}


def scan_case(case: Path, into: Path) -> ProjectScan:
    """The project scan of the case's files, written under their real names into ``into``."""
    source = json.loads((case / "SOURCE.json").read_text())
    for path, data in case_files(source).items():
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    facts = scan.project_uses(str(into), 30.0)
    facts.setdefault("root_reason", "the working directory")
    facts["root"] = "/home/user/project"
    return from_data(ProjectScan, facts)


def findings(snap, checks) -> dict[str, list]:
    found: dict[str, list] = {}
    for finding in run_checks(snap, checks):
        if finding.code in CODES and CODE_FORM.get(finding.code, "") in finding.title:
            found.setdefault(finding.code, []).append(finding)
    return found


def fetch_all(every: list[Path]) -> None:
    """Download the PyPI releases of a cold cache side by side (each is one pip run); failures wait for
    their case, which reports them."""
    pins = set()
    for case in every:
        source = json.loads((case / "SOURCE.json").read_text())
        if "pypi" in source:
            pins.add((source["pypi"], source.get("archive", "wheel"), source["sha256"]))

    def one(pin):
        try:
            pypi_archive(*pin)
        except Unavailable:
            pass

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, sorted(pins)))


def measure() -> dict:
    """{case: [(state, code, verdict, detail)]} over the cases that could be read, {case: why} for the others,
    and the totals: true and false positives, misses."""
    registry = builtin_registry()
    checks = [registry.get(code) for code in CODES if registry.get(code) is not None]
    every = cases()
    fetch_all(every)
    results, unavailable, known, tp, fp, fn = {}, {}, {}, 0, 0, 0
    for case in every:
        expect = json.loads((case / "expect.json").read_text())
        try:
            with tempfile.TemporaryDirectory() as tmp:
                project = scan_case(case, Path(tmp))
        except Unavailable as why:
            unavailable[case.name] = str(why)
            continue
        if expect.get("known_wrong"):
            known[case.name] = expect["known_wrong"]
        rows = []
        for state in expect["states"]:
            found = findings(_state(state, replace(project)), checks)
            wanted = {code for code, rule in expect["fire"].items() if state in rule["states"]}
            for code in sorted(set(found) | wanted):
                at = expect["fire"].get(code, {}).get("at", "")
                evidence = " | ".join(line for f in found.get(code, []) for line in f.evidence)
                if code in wanted and code in found and at in evidence:
                    tp += 1
                    rows.append((state, code, "right", at))
                elif code in wanted:
                    fn += 1
                    rows.append((state, code, "missed", at if code not in found else f"not at {at}"))
                else:
                    fp += 1
                    rows.append((state, code, "wrong", found[code][0].title))
        results[case.name] = rows
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {
        "cases": results,
        "unavailable": unavailable,
        "known_wrong": known,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": precision,
        "recall": recall,
    }


def report(result: dict) -> str:
    lines = []
    for name, rows in result["cases"].items():
        for state, code, verdict, detail in rows:
            lines.append(f"  {name} [{state}] {code}: {verdict} ({detail})")
        if not rows:
            lines.append(f"  {name}: quiet, as expected" if name not in result["known_wrong"] else f"  {name}: quiet")
    for name, why in result["known_wrong"].items():
        lines.append(f"  known wrong: {name}: {why}")
    for name, why in result["unavailable"].items():
        lines.append(f"  not read: {name}: {why}")
    lines.append(
        f"code findings on {len(result['cases'])} real cases ({len(result['unavailable'])} not read here): "
        f"precision {result['precision']:.0%} ({result['tp']} right, {result['fp']} wrong), "
        f"recall {result['recall']:.0%} ({result['fn']} missed)"
    )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def measured():
    started = time.monotonic()
    result = measure()
    result["seconds"] = time.monotonic() - started
    return result


def _pypi_failures(result: dict) -> dict[str, str]:
    return {
        name: why
        for name, why in result["unavailable"].items()
        if "pypi" in json.loads((CORPUS / name / "SOURCE.json").read_text())
    }


def test_the_code_findings_on_real_code(measured, capsys):
    with capsys.disabled():
        print("\n" + report(measured) + f" [{measured['seconds']:.1f} s]")
    failed = _pypi_failures(measured)
    if in_ci():
        # CI reaches PyPI: a pinned release that cannot be read there means the measure stopped running.
        assert not failed, failed
    if not measured["cases"]:
        pytest.skip(f"no case of the real-code corpus can be read here: {measured['unavailable']}")
    wrong = [
        (name, row)
        for name, rows in measured["cases"].items()
        if name not in measured["known_wrong"]
        for row in rows
        if row[2] != "right"
    ]
    assert not wrong, wrong


def test_the_known_wrong_cases_are_still_wrong(measured):
    if not measured["known_wrong"]:
        pytest.skip("no known-wrong case can be read here")
    right = [name for name in measured["known_wrong"] if all(row[2] == "right" for row in measured["cases"][name])]
    assert not right, f"right now: take known_wrong out of their expect.json: {right}"


def test_every_case_says_where_it_comes_from():
    pypi = 0
    for case in cases():
        source = json.loads((case / "SOURCE.json").read_text())
        if "pypi" in source:
            pypi += 1
            assert PIN.match(source["pypi"]), case.name  # pinned: the same bytes every run
            assert source.get("archive", "wheel") in ARCHIVES, case.name
            assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"]), case.name
            assert "repository" not in source and "commit" not in source, case.name
        else:
            assert len(source["commit"]) == 40 and source["repository"].count("/") == 1, case.name
        assert source["license"], case.name
        assert all(not p.startswith("/") and ".." not in p.split("/") for p in source["files"]), case.name
        assert source["files"] and not (case / "files").exists(), case.name  # read at test time, never copied
        expect = json.loads((case / "expect.json").read_text())
        cited = {rule["at"].split(":")[0] for rule in expect["fire"].values() if rule.get("at")}
        assert cited <= set(source["files"]), case.name
        assert set(expect) <= {"states", "fire", "known_wrong"}, case.name
    assert pypi >= 6  # the part of the measure CI can read


if __name__ == "__main__":
    print(report(measure()))
