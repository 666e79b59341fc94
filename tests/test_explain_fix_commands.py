"""explain's fix commands do no harm when pasted: none installs a torch it does not pin.

explain runs without knowing the user's torch or driver. A command it prints that installs torch unpinned
(``pip install --force-reinstall torch --index-url .../cu118``) replaces the user's torch with whatever that index
has newest: a downgrade from 2.13 to 2.7 on cu118, gigabytes of CUDA wheels from PyPI. Where the right build depends
on the machine, explain hands over to ``mpdoctor check``, which reads it and prints a pinned command.
"""

from __future__ import annotations

import re
import shlex

import pytest

from mpdoctor.explain.known import all_signatures
from mpdoctor.explain.shapes import SIGNATURES as GENERAL

PIP_INSTALL = re.compile(r"\bpip3? install\b")


def commands():
    for signature in list(all_signatures()) + list(GENERAL.values()):
        steps = list(signature.fixes) + [step for alt in signature.alternatives for step in alt.fixes]
        steps += [step for library_fix in getattr(signature, "library_fixes", ()) for step in library_fix[1:]]
        for step in steps:
            command = getattr(step, "command", None)
            if command:
                yield signature.id, command


def torch_requirements(command: str) -> list[str]:
    """The requirement arguments naming torch itself in a pip install command ('torch', 'torch==2.4.1', ...)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    return [w for w in words if re.fullmatch(r"torch(?:[<>=!~].*)?", w)]


@pytest.mark.parametrize("sid, command", sorted(set(commands())))
def test_no_fix_installs_a_torch_it_does_not_pin(sid, command):
    """A reinstall keeps the version (``torch==X``); any other install names a version or says it upgrades."""
    if not PIP_INSTALL.search(command):
        return
    words = command.split()
    for requirement in torch_requirements(command):
        if "--force-reinstall" in words:
            assert "==" in requirement, f"{sid}: a reinstall of no version in particular: {command}"
        elif not ({"-U", "--upgrade"} & set(words)):
            assert re.search(r"[<>=~]", requirement), f"{sid}: an install of no version in particular: {command}"


def test_fixes_that_depend_on_the_machine_hand_over_to_check():
    by_id = {}
    for sid, command in commands():
        by_id.setdefault(sid, []).append(command)
    assert "mpdoctor check --select TORCH005,TORCH006,TORCH009" in by_id["driver-torch-cpu-only"]
    assert "mpdoctor check --select TORCH007" in by_id["kernel-image-no-kernel-image"]
