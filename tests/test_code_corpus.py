"""The code findings on real code: files of public training repositories, read at a fixed commit.

Each case is a folder of tests/code_corpus/: ``SOURCE.json`` names the repository, the commit, the files and
their licence, and why they are there; ``expect.json`` says in which machine states (``STATES``) each code
finding must fire, and at which ``file:line`` its evidence must point. Every other code finding listed in
``CODES`` must stay quiet. The files themselves are not in this repository (other people's code, under their
own licences): they are read, verbatim and never edited, from git mirrors of those repositories, a folder
named by ``MPDOCTOR_CODE_MIRRORS`` that holds ``owner+name/repo`` (or ``owner+name``) git directories. Without
it, or without a commit there, the measure is skipped, saying which.

The test writes a case's files into a temporary project under their real names, scans it with the real
project scan (``scan.project_uses``, as the target interpreter runs it), judges the snapshot in each state and
prints precision and recall over all cases. Run as a script (``python tests/test_code_corpus.py``) it prints
the same measure, which is how the numbers before the code-path rules were taken (on a copy of the code before).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
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
    """The case's files cannot be read here: no mirrors named, or the repository or commit is not among them."""


def mirror_of(repository: str) -> Path:
    mirrors = os.environ.get("MPDOCTOR_CODE_MIRRORS", "")
    if not mirrors:
        raise Unavailable("MPDOCTOR_CODE_MIRRORS names no folder of git mirrors of the corpus' repositories")
    folder = Path(mirrors) / repository.replace("/", "+")
    for candidate in (folder / "repo", folder, Path(mirrors) / repository):
        if (candidate / "HEAD").is_file():
            return candidate
    raise Unavailable(f"no git mirror of {repository} in {mirrors}")


def source_file(source: dict, path: str) -> bytes:
    """One file of the case, as its repository holds it at the case's commit."""
    mirror = mirror_of(source["repository"])
    shown = subprocess.run(
        ["git", "--git-dir", str(mirror), "show", f"{source['commit']}:{path}"], capture_output=True, timeout=60
    )
    if shown.returncode != 0:
        raise Unavailable(f"{source['repository']}@{source['commit'][:10]}:{path}: {shown.stderr.decode().strip()}")
    return shown.stdout


def scan_case(case: Path, into: Path) -> ProjectScan:
    """The project scan of the case's files, written under their real names into ``into``."""
    source = json.loads((case / "SOURCE.json").read_text())
    for path in source["files"]:
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source_file(source, path))
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


def measure() -> dict:
    """{case: [(state, code, verdict, detail)]} and the totals: true and false positives, misses."""
    registry = builtin_registry()
    checks = [registry.get(code) for code in CODES if registry.get(code) is not None]
    results, tp, fp, fn = {}, 0, 0, 0
    for case in cases():
        expect = json.loads((case / "expect.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            project = scan_case(case, Path(tmp))
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
    return {"cases": results, "tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall}


def report(result: dict) -> str:
    lines = []
    for name, rows in result["cases"].items():
        for state, code, verdict, detail in rows:
            lines.append(f"  {name} [{state}] {code}: {verdict} ({detail})")
    lines.append(
        f"code findings on {len(result['cases'])} real cases: precision {result['precision']:.0%} "
        f"({result['tp']} right, {result['fp']} wrong), recall {result['recall']:.0%} ({result['fn']} missed)"
    )
    return "\n".join(lines)


def test_the_code_findings_on_real_repositories(capsys):
    try:
        result = measure()
    except Unavailable as why:
        pytest.skip(f"the real-code corpus cannot be read here: {why}")
    with capsys.disabled():
        print("\n" + report(result))
    wrong = [row for rows in result["cases"].values() for row in rows if row[2] != "right"]
    assert result["precision"] >= 0.95 and result["recall"] == 1.0, wrong


def test_every_case_says_where_it_comes_from():
    for case in cases():
        source = json.loads((case / "SOURCE.json").read_text())
        assert len(source["commit"]) == 40 and source["repository"].count("/") == 1 and source["license"]
        assert source["files"] and not (case / "files").exists(), case.name  # read from the mirror, never copied
        expect = json.loads((case / "expect.json").read_text())
        cited = {rule["at"].split(":")[0] for rule in expect["fire"].values() if rule.get("at")}
        assert cited <= set(source["files"]), case.name


if __name__ == "__main__":
    print(report(measure()))
