"""STACK001 parses only the requirement lines that can matter, with the findings of parsing them all (issue 23).

``find_conflicts`` used to build a ``packaging`` Requirement for every Requires-Dist
line of every installed package (6,985 lines for 2,000 packages) before asking
whether the line touches the precision stack. It now reads the name first, with the
pattern packaging itself matches names with, and parses only the lines of stack
packages and the lines that name one. ``eager_conflicts`` below is the old loop,
kept here as the reference; both run on the same constructed environments (plain
data: no machine needed) and must agree conflict for conflict.
"""

from __future__ import annotations

import random

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from fixtures.base import dist, laptop, with_distributions, with_environment
from mpdoctor.checks import stack_versions
from mpdoctor.doctor.judge import judge
from mpdoctor.checks._apex import is_pypi_namesake
from mpdoctor.checks._common import requirement_applies
from mpdoctor.checks._oneflow import without_core
from mpdoctor.snapshot import canonical_name


def eager_conflicts(snap) -> list[str]:
    """find_conflicts before issue 23: every line parsed, then asked whether it matters."""
    installed = stack_versions._installed(snap)
    out = []
    for requirer in installed.values():
        if is_pypi_namesake(requirer) or (canonical_name(requirer.name) == "oneflow" and without_core(snap)):
            continue
        for line in requirer.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if not (
                stack_versions.in_scope(requirer.name) or stack_versions.in_scope(req.name)
            ) or not requirement_applies(req, snap.environment.markers):
                continue
            have = installed.get(canonical_name(req.name))
            if have is None:
                out.append(f"{requirer.name} {requirer.version} requires {req}, but it is not installed")
                continue
            try:
                ok = req.specifier.contains(Version(have.version), prereleases=True)
            except InvalidVersion:
                continue
            if not ok:
                out.append(
                    f"{requirer.name} {requirer.version} requires {req}, but {have.name} {have.version} is installed"
                )
    return out


def lazy_conflicts(snap) -> list[str]:
    return [conflict.describe() for conflict in stack_versions.find_conflicts(snap)]


# Lines a real METADATA holds, and some it should not: names spelt every legal way, extras, markers,
# parenthesised versions, leading blanks, names packaging refuses, and stack packages among the rest.
LINES = [
    "requests>=2.0",
    "numpy>=1.99",
    "NumPy<1",
    "numpy (>=1.20) ; python_version >= '3.8'",
    "  torch>=99",
    "torch==2.13.0",
    "Torch_Vision>=0.1",
    "flash_attn>=9; extra == 'gpu'",
    "safetensors",
    "triton>=2.0",
    "nvidia-cudnn-cu12==9.9.9",
    "nvidia-ml-py>=12",
    "tqdm[notebook]>=4",
    "-not-a-name>=1",
    "",
    "pkg7 @ https://x/y",
    "foo.bar_baz>=1",
    "accelerate>=0.20; sys_platform == 'win32'",
    "xformers==0.0.1",
    "peft; extra == 'x'",
    "transformers[torch]>=4.0,<5",
    "apex",
    "\tnumpy>1",
    "numpy>=1 ; python_version < '3'",
    "1numpy>=0",
    "datasets>=2",
    "Pillow",
    "typing-extensions>=4",
    "bitsandbytes>=9",
    "a",
    "_private>=1",
    "numpy.>=1",
]


def environment(seed: int, packages: int):
    rng = random.Random(seed)
    names = [f"pkg{i}" for i in range(packages)] + [
        "torchvision",
        "transformers",
        "accelerate",
        "numpy",
        "safetensors",
        "nvidia-ml-py",
        "tqdm",
        "foo.bar_baz",
    ]
    dists = [dist("torch", "2.13.0")]
    for name in names:
        lines = [rng.choice(LINES) for _ in range(rng.randint(0, 6))]
        lines += [f"pkg{rng.randrange(packages)}>={rng.randint(0, 3)}" for _ in range(rng.randint(0, 2))]
        dists.append(dist(name, rng.choice(["1.0", "0.5", "2.0.0", "not.a.version!!"]), requires=lines))
    return with_distributions(laptop(), *dists)


def test_lazy_parsing_finds_the_conflicts_parsing_every_line_finds():
    for seed in range(30):
        snap = environment(seed, 300)
        assert lazy_conflicts(snap) == eager_conflicts(snap), seed
    assert eager_conflicts(environment(0, 300))  # the environments do hold conflicts


def test_stack001_findings_are_unchanged_on_a_2000_package_environment():
    snap = environment(23, 2000)
    findings = [f for f in judge(snap, select=["STACK001"]) if f.code == "STACK001"]
    assert sorted(f.title for f in findings) == sorted(eager_conflicts(snap))
    assert len(findings) > 10


def test_a_line_outside_the_stack_is_not_parsed(monkeypatch):
    parsed = []
    real = stack_versions.Requirement
    monkeypatch.setattr(stack_versions, "Requirement", lambda line: parsed.append(line) or real(line))
    snap = with_environment(
        laptop(),
        distributions=[
            dist("torch", "2.13.0"),
            dist("webapp", "1.0", requires=["flask>=2", "  Jinja2<4", "torch>=99"]),
            dist("torchvision", "0.1", requires=["pillow", "torch==2.0"]),
        ],
    )
    conflicts = lazy_conflicts(snap)
    assert conflicts == eager_conflicts(snap)
    # torchvision is in the stack: all its lines count (pillow is missing); webapp's count only when they name it
    assert [line.split(", but")[0] for line in conflicts] == [
        "webapp 1.0 requires torch>=99",
        "torchvision 0.1 requires pillow",
        "torchvision 0.1 requires torch==2.0",
    ]
    assert sorted(parsed) == ["pillow", "torch==2.0", "torch>=99"]
